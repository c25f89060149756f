"""Classification: from trial results to C_i(n, s, f) with a 95% confidence interval for f.

n is the number of transitions each trial experienced (the median over trials, with the range reported
when trials differ), s the number of seeds (trials) and f the observed frequency of meeting the objective.
The interval is the exact Clopper-Pearson interval from SciPy's binomial test.

**Inconclusive trials** (an objective that cannot tell: a latency clause whose confidence interval straddles
its threshold, wield/protocols/objective.py) are counted apart and left out of f: f = successes / decided
trials, its interval over the decided trials only, and the label says how many were left out,
``C2(n=2000, s=5, f=0.75, 1 inconclusive)``. s stays the number of trials run. Counting an inconclusive trial
as a failure would let machine load lower f; counting it as a success would let it raise f; leaving it out
keeps f a frequency of decided outcomes, and the wider interval of fewer decided trials shows the cost.
With no decided trial at all f is undefined: 0 with the interval 0-1, ``met`` false, and the label says so.
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
    outcome: str  # success | straggler | failure | inconclusive
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
    inconclusive: int = 0  # trials whose objective could not tell; f is over the s - inconclusive others

    @property
    def decided(self) -> int:
        """Trials whose outcome was decided (f is their frequency of success)."""
        return self.s - self.inconclusive

    def label(self) -> str:
        if self.s and not self.decided:
            return f"{self.class_name}(n={self.n}, s={self.s}, f undecided: all {self.s} inconclusive)"
        left_out = f", {self.inconclusive} inconclusive" if self.inconclusive else ""
        return (f"{self.class_name}(n={self.n}, s={self.s}, f={self.f:.2f}{left_out}) "
                f"[{int(self.confidence * 100)}% CI {self.ci_low:.2f}-{self.ci_high:.2f}]")

    def as_dict(self) -> dict:
        data = asdict(self)
        data["label"] = self.label()
        return data


def classify(class_name: str, outcomes: Sequence[TrialOutcome], confidence: float = 0.95,
             required_frequency: float = 0.5) -> Classification:
    """Classify a set of trials; ``met`` says whether f (over the decided trials) reaches
    ``required_frequency``."""
    from scipy.stats import binomtest  # imported here: scipy.stats takes a second to import

    if not outcomes:
        raise ConfigError("trials", 0, reason="nothing to classify: no finished trial")
    successes = sum(o.outcome == "success" for o in outcomes)
    s = len(outcomes)
    inconclusive = sum(o.outcome == "inconclusive" for o in outcomes)
    decided = s - inconclusive
    n = int(np.median([o.transitions for o in outcomes]))
    if not decided:
        return Classification(class_name, n, s, 0.0, 0.0, 1.0, False, tuple(outcomes), confidence, inconclusive)
    interval = binomtest(successes, decided).proportion_ci(confidence_level=confidence, method="exact")
    f = successes / decided
    return Classification(class_name, n, s, f, float(interval.low), float(interval.high), f >= required_frequency,
                          tuple(outcomes), confidence, inconclusive)
