"""Schedules: a value that changes with a step counter (exploration rate, importance-sampling exponent)."""

from __future__ import annotations

import math

from wield.errors import ConfigError


class LinearSchedule:
    """Goes linearly from ``start`` to ``end`` over ``steps`` steps, then stays at ``end``."""

    def __init__(self, start: float, end: float, steps: int) -> None:
        for name, value in (("start", start), ("end", end)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ConfigError(name, value, "a finite number")
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise ConfigError("steps", steps, "an integer >= 0")
        self.start = float(start)
        self.end = float(end)
        self.steps = steps

    def value(self, t: int) -> float:
        """The value after ``t`` steps (``t`` < 0 counts as 0)."""
        if self.steps == 0 or t >= self.steps:
            return self.end
        fraction = max(t, 0) / self.steps
        return self.start + (self.end - self.start) * fraction

    def __repr__(self) -> str:
        return f"LinearSchedule(start={self.start}, end={self.end}, steps={self.steps})"
