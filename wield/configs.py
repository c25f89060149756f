"""Checks shared by the run configurations of case studies: whole-number fields with a minimum, and building
a configuration dataclass from a dict (a saved config.json) that refuses keys it does not know."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping, TypeVar

from wield.errors import ConfigError

T = TypeVar("T")


def require_integers(config: Any, minimums: Mapping[str, int]) -> None:
    """Raise ``ConfigError`` naming the first field of ``config`` that is not an integer >= its minimum."""
    for name, minimum in minimums.items():
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ConfigError(name, value, reason=f"must be an integer >= {minimum}")


def dataclass_from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls(**data)``, after refusing a key that is not one of the dataclass's fields (listing them)."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError("config", unknown[0], sorted(names))
    return cls(**dict(data))
