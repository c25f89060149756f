"""Error types shared across Wield: every user-facing error names the field and what is allowed."""

from __future__ import annotations

from typing import Any, Iterable


SHOWN_CHARACTERS = 60  # the most of a value an error message quotes


def shown(value: Any) -> str:
    """``repr(value)`` as an error message quotes it: cut after ``SHOWN_CHARACTERS`` characters with the
    whole length noted, so a 10,000-character name or a 400-digit number is never echoed back whole."""
    text = repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[:SHOWN_CHARACTERS]}... ({len(text):,} characters)"


class WieldError(Exception):
    """Base class of every error Wield raises on purpose."""


class ConfigError(WieldError, ValueError):
    """A configuration value, CLI option or input field is invalid.

    The message always names the field, the offending value and, where there is a closed set, the allowed
    values, so a user can correct the input without reading the source.
    """

    def __init__(self, field: str, value: Any, allowed: Iterable[Any] | str | None = None,
                 reason: str | None = None) -> None:
        self.field = field
        self.value = value
        if allowed is not None and not isinstance(allowed, str):
            allowed = ", ".join(repr(a) for a in allowed)
        self.allowed = allowed
        parts = [f"invalid value for '{field}': {shown(value)}"]
        if reason:
            parts.append(reason)
        if allowed:
            parts.append(f"allowed: {allowed}")
        super().__init__("; ".join(parts))


class MissingDependency(WieldError, ImportError):
    """An optional extra is not installed; the message is one line saying what to install."""


class DataError(WieldError, ValueError):
    """Input data (a collection file, a trace, a schedule) is malformed; the message says where."""


class SystemFailure(WieldError, RuntimeError):
    """The system under control failed (connection lost, statement rejected)."""


class Terminated(KeyboardInterrupt):
    """The process was asked to stop (SIGTERM): handled like Ctrl-C, so what was recorded stays and the
    run is marked "interrupted" (see ``wield.workflows.signals``)."""

    def __init__(self, signal_name: str = "SIGTERM") -> None:
        super().__init__(f"stopped by {signal_name}")
        self.signal_name = signal_name
