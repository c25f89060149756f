"""Objectives: a success predicate over a trial's evaluation metrics, and the verdict per trial.

A trial *succeeds* when the metric meets the threshold, is a *straggler* when it improved (metric above
``straggler_above``, 0 by default) without meeting it, and *fails* otherwise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from wield.errors import ConfigError

OUTCOMES = ("success", "straggler", "failure")


@dataclass(frozen=True)
class Objective:
    """``metric >= threshold`` (or ``<=`` with ``higher_is_better=False``)."""

    metric: str
    threshold: float
    higher_is_better: bool = True
    straggler_above: float = 0.0

    def validate(self, available: Iterable[str]) -> "Objective":
        available = sorted(available)
        if self.metric not in available:
            raise ConfigError("objective.metric", self.metric, available)
        if not math.isfinite(self.threshold):
            raise ConfigError("objective.threshold", self.threshold, reason="must be finite")
        return self

    def met(self, metrics: Mapping[str, float]) -> bool:
        value = self._value(metrics)
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    def outcome(self, metrics: Mapping[str, float]) -> str:
        if self.met(metrics):
            return "success"
        value = self._value(metrics)
        improved = value > self.straggler_above if self.higher_is_better else value < self.straggler_above
        return "straggler" if improved else "failure"

    def _value(self, metrics: Mapping[str, float]) -> float:
        if self.metric not in metrics:
            raise ConfigError("objective.metric", self.metric, sorted(metrics))
        return float(metrics[self.metric])

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.metric} {'>=' if self.higher_is_better else '<='} {self.threshold:g}"
