"""Checks shared by every configuration dataclass (agents' hyperparameters, case studies' run configurations):
whole numbers with a minimum, finite numbers within bounds, booleans, and building a configuration from a
dict (a saved config.json) that refuses keys it does not know. Each check raises ``ConfigError`` naming the
first offending field and what it allows."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Iterable, Mapping, TypeVar

from wield.errors import ConfigError

T = TypeVar("T")
_FLOAT_MAX = 1.7976931348623157e308  # sys.float_info.max


def is_integer(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """An int or float (not a bool) that is finite (an int too large for a float, e.g. ``10**400``, is not:
    every reader turns it into one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return -_FLOAT_MAX <= value <= _FLOAT_MAX if isinstance(value, int) else math.isfinite(value)


def require_integers(config: Any, minimums: Mapping[str, int]) -> None:
    """Raise ``ConfigError`` naming the first field of ``config`` that is not an integer >= its minimum."""
    for name, minimum in minimums.items():
        value = getattr(config, name)
        if not is_integer(value) or value < minimum:
            raise ConfigError(name, value, reason=f"must be an integer >= {minimum}")


def require_numbers(config: Any, bounds: Mapping[str, tuple[float | None, float | None]],
                    exclusive_low: bool = False) -> None:
    """Raise ``ConfigError`` naming the first field of ``config`` that is not a finite number within its
    ``(low, high)`` bounds (``None``: unbounded on that side; ``exclusive_low``: the value must exceed low)."""
    for name, (low, high) in bounds.items():
        value = getattr(config, name)
        ok = is_finite_number(value) and (low is None or (value > low if exclusive_low else value >= low)) \
            and (high is None or value <= high)
        if not ok:
            if low is not None and high is not None:
                allowed = f"a number in [{low:g}, {high:g}]"
            elif low is not None:
                allowed = f"a finite number {'>' if exclusive_low else '>='} {low:g}"
            else:
                allowed = "a finite number" + (f" <= {high:g}" if high is not None else "")
            raise ConfigError(name, value, reason=f"must be {allowed}")


def require_booleans(config: Any, names: Iterable[str]) -> None:
    """Raise ``ConfigError`` naming the first of ``names`` whose value is not True or False."""
    for name in names:
        if not isinstance(getattr(config, name), bool):
            raise ConfigError(name, getattr(config, name), reason="must be True or False")


def dataclass_from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls(**data)``, after refusing a key that is not one of the dataclass's fields (listing them)."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]  # T is a dataclass by contract
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError("config", unknown[0], sorted(names))
    return cls(**dict(data))


def parse_name_list(text: str | Iterable[str], field: str, allowed: Iterable[str] | None = None, *,
                    what: str = "name") -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` -> ``["a", "b"]`` (blanks dropped), for every comma-separated option (methods,
    labelling rules, baselines, metrics). ``ConfigError`` naming ``field`` and the ``allowed`` names (when
    given) for an empty list, a name not allowed ("unknown ``what``") or a name given twice."""
    items = text.split(",") if isinstance(text, str) else list(text)
    names = [str(item).strip() for item in items if str(item).strip()]
    known = None if allowed is None else tuple(allowed)
    if not names:
        raise ConfigError(field, text, known, f"name at least one {what}")
    for name in names:
        if known is not None and name not in known:
            raise ConfigError(field, name, known, f"unknown {what}")
    for position, name in enumerate(names):
        if name in names[:position]:
            raise ConfigError(field, name, known, f"a {what} is named twice")
    return names
