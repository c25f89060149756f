"""TrialSummary: what a trial function returns to the core, written as the trial's ``summary.json``.

The classification reads ``transitions`` (n) and the objective's metric in ``metrics``; ``wield compare``
reads ``evaluations`` (its budget) and every declared compare metric; ``wield report`` and
``wield.analysis.load_results`` read ``methods`` (the baselines measured beside the method on the same test
workload) and the rest. The core fills ``seconds``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from wield.errors import ConfigError


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
    - ``verdict``: a learning verdict (greedy policy against the random policy), when computed;
    - ``extras``: case-study figures (e.g. ``train_test_similarity``, ``demonstrations``).
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

    def __post_init__(self) -> None:
        for name in ("transitions", "evaluations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"summary.{name}", value, reason="must be an integer >= 0")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrialSummary":
        """A summary from ``as_dict()`` (a ``summary.json``); keys of older summaries that are not fields are
        kept in ``extras``."""
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        extras = {**{k: v for k, v in data.items() if k not in names}, **dict(known.pop("extras", None) or {})}
        known.setdefault("method", str(dict(data.get("metrics") or {}).get("method", "learner")))
        known.setdefault("evaluations", int(known.get("transitions", 0)))
        return cls(**known, extras=extras)
