"""Objectives: a success predicate over a trial's evaluation metrics, and the verdict per trial.

An objective is a conjunction of conditions ``metric >= threshold`` or ``metric <= threshold``: the first
(the *primary* condition: ``metric``, ``threshold``, ``higher_is_better``) and any further ones in ``also``,
e.g. indexing's "mean latency improvement >= 50% and index bytes <= 50% of the full index". One objective
serves a run's success line, every trial's outcome and the classification, so they cannot disagree.

A trial *succeeds* when every condition holds, is a *straggler* when the primary metric improved (above
``straggler_above``, 0 by default; below it for a lower-is-better metric) without the objective being met,
and *fails* otherwise.

``as_dict()`` writes ``also`` only when there are further conditions, so objectives recorded before
conjunctions existed (``experiment.json`` of older experiments) read back unchanged and compare equal.
``parse_objective("a >= 0.5 and b <= 0.5")`` reads the text form ``describe()`` prints.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from wield.errors import ConfigError

OUTCOMES = ("success", "straggler", "failure")
OPERATORS = (">=", "<=")


@dataclass(frozen=True)
class Condition:
    """One clause of an objective: ``metric operator threshold`` with ``operator`` ">=" or "<="."""

    metric: str
    operator: str
    threshold: float

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise ConfigError("objective.operator", self.operator, OPERATORS)
        if not isinstance(self.threshold, (int, float)) or isinstance(self.threshold, bool) \
                or not math.isfinite(self.threshold):
            raise ConfigError("objective.threshold", self.threshold, reason="must be a finite number")

    @classmethod
    def of(cls, value: "Condition | Mapping[str, Any] | Iterable[Any]") -> "Condition":
        """A condition from a ``Condition``, a dict ``{"metric", "operator", "threshold"}`` or a triple."""
        if isinstance(value, Condition):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"metric", "operator", "threshold"})
            if unknown:
                raise ConfigError("objective.also", unknown[0], ("metric", "operator", "threshold"))
            return cls(str(value.get("metric")), str(value.get("operator")), value.get("threshold"))  # type: ignore[arg-type]
        metric, operator, threshold = value
        return cls(str(metric), str(operator), threshold)  # type: ignore[arg-type]  # checked in __post_init__

    @property
    def higher_is_better(self) -> bool:
        return self.operator == ">="

    def value(self, metrics: Mapping[str, Any]) -> float:
        if self.metric not in metrics:
            raise ConfigError("objective.metric", self.metric, sorted(metrics))
        return float(metrics[self.metric])

    def met(self, metrics: Mapping[str, Any]) -> bool:
        value = self.value(metrics)
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    def describe(self) -> str:
        return f"{self.metric} {self.operator} {self.threshold:g}"

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "operator": self.operator, "threshold": self.threshold}


@dataclass(frozen=True)
class Objective:
    """``metric >= threshold`` (or ``<=`` with ``higher_is_better=False``), and every condition in ``also``
    (``Condition``s, or their dicts as ``as_dict`` writes them)."""

    metric: str
    threshold: float
    higher_is_better: bool = True
    straggler_above: float = 0.0
    also: tuple[Condition, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.also, (str, bytes)) or not isinstance(self.also, Iterable):
            raise ConfigError("objective.also", self.also, reason="a list of conditions")
        object.__setattr__(self, "also", tuple(Condition.of(c) for c in self.also))
        Condition(self.metric, ">=", self.threshold)  # checks the primary threshold

    @property
    def primary(self) -> Condition:
        return Condition(self.metric, ">=" if self.higher_is_better else "<=", self.threshold)

    @property
    def conditions(self) -> tuple[Condition, ...]:
        """Every condition, the primary one first."""
        return (self.primary, *self.also)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the objective reads, the primary one first."""
        return tuple(dict.fromkeys(c.metric for c in self.conditions))

    def validate(self, available: Iterable[str]) -> "Objective":
        available = sorted(available)
        for condition in self.conditions:
            if condition.metric not in available:
                raise ConfigError("objective.metric", condition.metric, available)
        return self

    def readable(self, metrics: Mapping[str, Any]) -> bool:
        """Whether ``metrics`` holds a finite number for every metric the objective reads."""
        return all(isinstance(metrics.get(name), (int, float)) and not isinstance(metrics.get(name), bool)
                   and math.isfinite(metrics[name]) for name in self.metrics)

    def met(self, metrics: Mapping[str, Any]) -> bool:
        return all(condition.met(metrics) for condition in self.conditions)

    def outcome(self, metrics: Mapping[str, Any]) -> str:
        if self.met(metrics):
            return "success"
        value = self.primary.value(metrics)
        improved = value > self.straggler_above if self.higher_is_better else value < self.straggler_above
        return "straggler" if improved else "failure"

    def failed_conditions(self, metrics: Mapping[str, Any]) -> list[Condition]:
        """The conditions ``metrics`` does not meet (empty when the objective is met)."""
        return [condition for condition in self.conditions if not condition.met(metrics)]

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"metric": self.metric, "threshold": self.threshold,
                                "higher_is_better": self.higher_is_better, "straggler_above": self.straggler_above}
        if self.also:
            data["also"] = [condition.as_dict() for condition in self.also]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Objective":
        """The objective of ``as_dict()`` (also one recorded before ``also`` existed)."""
        return cls(**dict(data))

    def describe(self) -> str:
        return " and ".join(condition.describe() for condition in self.conditions)


_CLAUSE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=)\s*([-+0-9.eE]+)\s*$")


def parse_objective(text: str, straggler_above: float = 0.0) -> Objective:
    """The objective of ``describe()``'s text form: ``metric >= x`` clauses joined by ``and``."""
    clauses = [part for part in re.split(r"\s+and\s+", str(text).strip()) if part.strip()]
    if not clauses:
        raise ConfigError("objective", text, reason="give clauses like 'metric >= 0.5 and other <= 0.5'")
    conditions = []
    for clause in clauses:
        match = _CLAUSE.match(clause)
        if match is None:
            raise ConfigError("objective", clause, reason="each clause is 'METRIC >= NUMBER' or 'METRIC <= NUMBER'")
        try:
            threshold = float(match.group(3))
        except ValueError:
            raise ConfigError("objective", clause, reason=f"{match.group(3)!r} is not a number") from None
        conditions.append(Condition(match.group(1), match.group(2), threshold))
    first = conditions[0]
    return Objective(first.metric, first.threshold, first.higher_is_better, straggler_above, tuple(conditions[1:]))
