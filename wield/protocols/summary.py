"""TrialSummary: what a trial function returns to the core, written as the trial's ``summary.json``.

The classification reads ``transitions`` (n) and the objective's metric in ``metrics``; ``wield compare``
reads ``evaluations`` (its budget) and every declared compare metric; ``wield report`` and
``wield.analysis.load_results`` read ``methods`` (the baselines measured beside the method on the same test
workload) and the rest. The core fills ``seconds``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from wield.configs import is_finite_number, is_integer
from wield.errors import ConfigError
from wield.protocols.plan import MAX_TRIALS

MAX_COUNT = 2**63 - 1  # transitions and evaluations: 64-bit counters
MAX_NAME_CHARS = 64  # a method's or metric's name (Wield's are identifiers of at most 30 characters)
MAX_METHODS = 64  # methods measured in one trial
MAX_METRICS = 512  # metrics of one method
VERDICT_NUMBERS = ("greedy_return", "random_mean", "random_sd", "effect_size", "p_value")


@dataclass
class TrialSummary:
    """One finished trial.

    - ``trial``: its index in the plan; ``method``: the method it ran (a learner, an optimiser, a baseline);
    - ``transitions``: n, the transitions the method experienced (for optimisers, the evaluations spent);
    - ``evaluations``: the system evaluations charged to it (``wield compare``'s budget unit);
    - ``metrics``: the method's evaluated metrics (the objective reads one of them);
    - ``methods``: every evaluated method's metrics by name, the method's own and the baselines';
    - ``seconds``: the trial's wall time (filled by the core);
    - ``timing``: seconds by where they went (e.g. ``system``, ``agent``, ``wield``), when measured;
    - ``phases``: wall and CPU seconds by what the trial was doing (``{"training": {"wall": s, "cpu": s,
      "count": n}, "verdict: advisor": ...}``, ``wield.workflows.timing.Stopwatch.phase``), when measured;
    - ``verdict``: a learning verdict (greedy policy against the random policy), when computed;
    - ``extras``: case-study figures (e.g. ``train_test_similarity``, ``demonstrations``);
    - ``identity``: which experiment's trial this is (filled by the core, ``wield.workflows.trial_identity``:
      a digest of the case study, the configuration without its volatile keys and the seeds), so a trial
      copied in from another experiment is refused, never counted.
    """

    trial: int
    method: str
    transitions: int
    evaluations: int
    metrics: dict[str, Any]
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    identity: dict[str, Any] | None = None
    phases: dict[str, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Types and bounds of every field, checked before anything reads them (a hand-edited
        ``summary.json`` is a ``ConfigError`` naming the field, never an exception where it is used)."""
        if not is_integer(self.trial) or not 0 <= self.trial < MAX_TRIALS:
            raise ConfigError("summary.trial", self.trial, reason=f"must be an integer from 0 to {MAX_TRIALS - 1:,}")
        if not isinstance(self.method, str) or not self.method:
            raise ConfigError("summary.method", self.method, reason="must be a non-empty string")
        for name in ("transitions", "evaluations"):
            value = getattr(self, name)
            if not is_integer(value) or not 0 <= value <= MAX_COUNT:
                raise ConfigError(f"summary.{name}", value, reason="must be an integer from 0 to 2**63 - 1")
        for name in ("metrics", "methods", "timing", "extras", "phases"):
            value = getattr(self, name)
            if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
                raise ConfigError(f"summary.{name}", value, reason="must be an object with string keys")
        self._check_sizes()
        for method, metrics in self.methods.items():
            if not isinstance(metrics, dict):
                raise ConfigError(f"summary.methods[{method!r}]", metrics, reason="must be an object")
        for category, seconds in self.timing.items():
            if not is_finite_number(seconds) or seconds < 0:
                raise ConfigError(f"summary.timing[{category!r}]", seconds,
                                  reason="must be a finite number >= 0")
        for phase, figures in self.phases.items():
            if len(phase) > MAX_NAME_CHARS:
                raise ConfigError("summary.phases", phase,
                                  reason=f"a phase name longer than {MAX_NAME_CHARS} characters")
            if not isinstance(figures, dict) or not all(
                    isinstance(key, str) and is_finite_number(value) and value >= 0 for key, value in figures.items()):
                raise ConfigError(f"summary.phases[{phase!r}]", figures,
                                  reason="must be an object of finite numbers >= 0 (wall, cpu, count)")
        if len(self.phases) > MAX_METRICS:
            raise ConfigError("summary.phases", f"{len(self.phases):,} phases", reason=f"at most {MAX_METRICS}")
        if not is_finite_number(self.seconds) or self.seconds < 0:
            raise ConfigError("summary.seconds", self.seconds, reason="must be a finite number >= 0")
        if self.verdict is not None and not isinstance(self.verdict, dict):
            raise ConfigError("summary.verdict", self.verdict, reason="must be an object or null")
        for name, value in (self.verdict or {}).items():  # the figures every reader turns into numbers
            if name == "learned" and not isinstance(value, bool):
                raise ConfigError("summary.verdict.learned", value, (True, False))
            if name in VERDICT_NUMBERS and value is not None and not (
                    isinstance(value, float) or is_finite_number(value)):
                raise ConfigError(f"summary.verdict.{name}", value, reason="must be a number or null")

    def _check_sizes(self) -> None:
        """Caps on names and counts, checked before any reader draws or tabulates them (a crafted summary
        with a 5,000-character method name or 20,000 methods would otherwise exhaust memory in a report)."""
        if len(self.method) > MAX_NAME_CHARS:
            raise ConfigError("summary.method", self.method, reason=f"longer than {MAX_NAME_CHARS} characters")
        if len(self.methods) > MAX_METHODS:
            raise ConfigError("summary.methods", f"{len(self.methods):,} methods", reason=f"at most {MAX_METHODS}")
        for method, metrics in self.methods.items():
            if len(method) > MAX_NAME_CHARS:
                raise ConfigError("summary.methods", method, reason=f"a method name longer than {MAX_NAME_CHARS} "
                                                                    "characters")
            if isinstance(metrics, dict) and len(metrics) > MAX_METRICS:
                raise ConfigError(f"summary.methods[{method!r}]", f"{len(metrics):,} metrics",
                                  reason=f"at most {MAX_METRICS}")
        if len(self.metrics) > MAX_METRICS:
            raise ConfigError("summary.metrics", f"{len(self.metrics):,} metrics", reason=f"at most {MAX_METRICS}")
        for group in (self.metrics, *[m for m in self.methods.values() if isinstance(m, dict)]):
            for name in group:
                if len(name) > MAX_NAME_CHARS:
                    raise ConfigError("summary.metrics", name, reason=f"a metric name longer than {MAX_NAME_CHARS} "
                                                                      "characters")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrialSummary":
        """A summary from ``as_dict()`` (a ``summary.json``); keys of older summaries that are not fields are
        kept in ``extras``."""
        if not isinstance(data, Mapping):
            raise ConfigError("summary", type(data).__name__, reason="a trial summary is a JSON object")
        names = {f.name for f in fields(cls)}
        missing = [name for name in ("trial", "transitions", "metrics") if name not in data]
        if missing:
            raise ConfigError("summary", missing[0], reason="a key of every trial summary is missing")
        for name in ("metrics", "extras"):
            if not isinstance(data.get(name) or {}, dict):
                raise ConfigError(f"summary.{name}", data[name], reason="must be an object")
        known = {k: v for k, v in data.items() if k in names}
        extras = {**{k: v for k, v in data.items() if k not in names}, **dict(known.pop("extras", None) or {})}
        known.setdefault("method", str(dict(data.get("metrics") or {}).get("method", "learner")))
        known.setdefault("evaluations", known.get("transitions", 0))
        return cls(**known, extras=extras)
