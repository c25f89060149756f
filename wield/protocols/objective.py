"""Objectives: a success predicate over a trial's evaluation metrics, and the verdict per trial.

An objective is a conjunction of conditions ``metric >= threshold`` or ``metric <= threshold``: the first
(the *primary* condition: ``metric``, ``threshold``, ``higher_is_better``) and any further ones in ``also``,
e.g. indexing's "mean latency improvement >= 50% and index bytes <= 50% of the full index". One objective
serves a run's success line, every trial's outcome and the classification, so they cannot disagree.

**Three decisions, not two.** A measured metric may come with a confidence interval: the metrics dict then
holds ``<metric>_ci: [low, high]`` beside ``<metric>`` (indexing's latency improvements, measured in
interleaved rounds until the interval decides: case_studies/indexing/evaluation.py). A condition on such a
metric is *met* when the whole interval lies on the good side of the threshold (``low >= threshold`` for
``>=``, ``high <= threshold`` for ``<=``), *not met* when it lies wholly on the other side, and
*inconclusive* when it straddles the threshold. A metric without an interval (a deterministic count, a size)
decides exactly on its value. The objective (a conjunction) is ``met`` when every condition is met, ``not
met`` when any condition is not met (an undecided latency clause cannot rescue a set that is too large) and
``inconclusive`` otherwise (``decide``).

A trial *succeeds* when the objective is met, is *inconclusive* when it cannot tell, is a *straggler* when it
is not met but the primary metric improved (above ``straggler_above``, 0 by default; below it for a
lower-is-better metric), and *fails* otherwise (``outcome``; the classification counts inconclusive trials
apart: wield/protocols/classification.py).

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

OUTCOMES = ("success", "straggler", "failure", "inconclusive")
MET, NOT_MET, INCONCLUSIVE = "met", "not met", "inconclusive"
DECISIONS = (MET, NOT_MET, INCONCLUSIVE)
OPERATORS = (">=", "<=")
CI_SUFFIX = "_ci"  # metrics[name + CI_SUFFIX] = [low, high]: the confidence interval of metrics[name]


def interval_of(metrics: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    """The confidence interval ``metrics`` holds for ``metric`` (``<metric>_ci``: two finite numbers, low
    first), or None when it holds none (a deterministic metric)."""
    ci = metrics.get(metric + CI_SUFFIX)
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in ci):
        return None
    low, high = float(ci[0]), float(ci[1])
    return (low, high) if low <= high else (high, low)


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

    def holds(self, value: float) -> bool:
        """Whether a single value meets the threshold."""
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    def decide(self, metrics: Mapping[str, Any]) -> str:
        """``met``, ``not met`` or ``inconclusive``: by the metric's confidence interval when ``metrics``
        holds one (``<metric>_ci``), wholly on one side of the threshold or straddling it; exactly by the
        value otherwise."""
        value = self.value(metrics)
        interval = interval_of(metrics, self.metric)
        if interval is None:
            return MET if self.holds(value) else NOT_MET
        good, bad = (interval[0], interval[1]) if self.higher_is_better else (interval[1], interval[0])
        if self.holds(good):
            return MET
        if not self.holds(bad):
            return NOT_MET
        return INCONCLUSIVE

    def met(self, metrics: Mapping[str, Any]) -> bool:
        """Whether the condition is decided met (an inconclusive one is not)."""
        return self.decide(metrics) == MET

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

    def decide(self, metrics: Mapping[str, Any]) -> str:
        """``met`` (every condition met), ``not met`` (some condition not met) or ``inconclusive`` (none
        failed, some undecided): see the module docstring."""
        decisions = [condition.decide(metrics) for condition in self.conditions]
        if NOT_MET in decisions:
            return NOT_MET
        return INCONCLUSIVE if INCONCLUSIVE in decisions else MET

    def met(self, metrics: Mapping[str, Any]) -> bool:
        """Whether the objective is decided met (an inconclusive one is not)."""
        return self.decide(metrics) == MET

    def outcome(self, metrics: Mapping[str, Any]) -> str:
        """``success`` (met), ``inconclusive``, ``straggler`` (not met, the primary metric improved) or
        ``failure``."""
        decision = self.decide(metrics)
        if decision == MET:
            return "success"
        if decision == INCONCLUSIVE:
            return "inconclusive"
        value = self.primary.value(metrics)
        improved = value > self.straggler_above if self.higher_is_better else value < self.straggler_above
        return "straggler" if improved else "failure"

    def failed_conditions(self, metrics: Mapping[str, Any]) -> list[Condition]:
        """The conditions decided not met (empty when the objective is met or inconclusive)."""
        return [condition for condition in self.conditions if condition.decide(metrics) == NOT_MET]

    def undecided_conditions(self, metrics: Mapping[str, Any]) -> list[Condition]:
        """The conditions whose confidence interval straddles the threshold."""
        return [condition for condition in self.conditions if condition.decide(metrics) == INCONCLUSIVE]

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
