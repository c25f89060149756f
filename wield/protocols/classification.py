"""Classification: from trial results to C_i(n, s, f) with a 95% confidence interval for f.

n is the number of transitions each trial experienced (the median over trials, with the range reported
when trials differ), s the number of seeds (trials) and f the observed frequency of meeting the objective.
The interval is the exact Clopper-Pearson interval from SciPy's binomial test.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np
from wield.errors import ConfigError


@dataclass(frozen=True)
class TrialOutcome:
    """One trial's verdict and the figures behind it."""

    trial: int
    transitions: int
    outcome: str  # success | straggler | failure
    value: float


@dataclass(frozen=True)
class Classification:
    """C_i(n, s, f) and the per-trial verdicts."""

    class_name: str
    n: int
    s: int
    f: float
    ci_low: float
    ci_high: float
    met: bool
    trials: tuple[TrialOutcome, ...] = field(default=())
    confidence: float = 0.95

    def label(self) -> str:
        return (f"{self.class_name}(n={self.n}, s={self.s}, f={self.f:.2f}) "
                f"[{int(self.confidence * 100)}% CI {self.ci_low:.2f}-{self.ci_high:.2f}]")

    def as_dict(self) -> dict:
        data = asdict(self)
        data["label"] = self.label()
        return data


def classify(class_name: str, outcomes: Sequence[TrialOutcome], confidence: float = 0.95,
             required_frequency: float = 0.5) -> Classification:
    """Classify a set of trials; ``met`` says whether f reaches ``required_frequency``."""
    from scipy.stats import binomtest  # imported here: scipy.stats takes a second to import

    if not outcomes:
        raise ConfigError("trials", 0, reason="nothing to classify: no finished trial")
    successes = sum(o.outcome == "success" for o in outcomes)
    s = len(outcomes)
    interval = binomtest(successes, s).proportion_ci(confidence_level=confidence, method="exact")
    f = successes / s
    return Classification(class_name, int(np.median([o.transitions for o in outcomes])), s, f,
                          float(interval.low), float(interval.high), f >= required_frequency,
                          tuple(outcomes), confidence)
