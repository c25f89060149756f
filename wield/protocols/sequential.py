"""The group-sequential design of the verdict's rungs: how many paired instances a rung is decided on.

A rung starts on the case's first ``first`` instances (M = 10 in every case study) and, while its interval
straddles 0, more instances are drawn in batches of ``batch`` from the same held-out stream, up to ``cap``:
the looks are at ``first, first + batch, ...`` and ``cap``. Looking at the data again after each batch and
stopping at the first clear interval would inflate the error rate of a fixed 95% interval (five looks at
alpha = 0.05 each call a difference that is not there about 14% of the time, not 5%). Each look therefore
uses **Pocock's group-sequential bound** (Pocock 1977; Jennison and Turnbull, *Group Sequential Methods*,
2000, chapters 2 and 9): one constant critical value c for every look, chosen so that under no difference the
standardised mean difference crosses +-c at *any* look with probability ``alpha`` (two-sided 0.05). The
probability is computed by recursive numerical integration over the looks (the score statistic has
independent normal increments) and c found by Brent's method (scipy). Each look then
uses the nominal level ``2 * (1 - Phi(c))`` (0.0158 for five equally spaced looks) for the paired t-test on
that look's instances (the significance-level form for t statistics, Jennison and Turnbull section 3.8), and
the interval printed is the matching *repeated confidence interval* at confidence ``1 - nominal``: the
intervals of all looks cover the true difference together with probability 95%, so the one a rung stops at
is a 95% interval in that sense. Pocock's bound, rather than O'Brien-Fleming's, because its first look is
usable: a rung that is clear on 10 instances is decided there (O'Brien-Fleming's first of five looks would
need p < 0.000005), so instances are added only where a rung is genuinely close.

With a single look (no way to draw more instances, or ``cap <= first``) the design is the ordinary fixed
95% interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from wield.errors import ConfigError

ALPHA = 0.05  # the two-sided error rate over all looks
DEFAULT_CAP = 50  # instances a rung may be decided on at most
BOUND = "Pocock"


@dataclass(frozen=True)
class SequentialDesign:
    """Looks at ``first``, ``first + batch``, ... and ``cap`` instances, each at Pocock's nominal level."""

    first: int
    batch: int
    cap: int
    alpha: float = ALPHA

    def __post_init__(self) -> None:
        for name in ("first", "batch", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"verdict.{name}", value, reason="must be a positive integer")
        if not 0 < self.alpha < 1:
            raise ConfigError("verdict.alpha", self.alpha, reason="must lie between 0 and 1")

    @classmethod
    def fixed(cls, instances: int) -> "SequentialDesign":
        """One look at ``instances``: the ordinary fixed-sample 95% interval."""
        return cls(max(1, instances), max(1, instances), max(1, instances))

    @property
    def looks(self) -> tuple[int, ...]:
        """The instance counts at which a rung is looked at (the last is the cap)."""
        if self.cap <= self.first:
            return (self.first,)
        counts = list(range(self.first, self.cap, self.batch))
        return tuple(counts) + (self.cap,)

    @property
    def sequential(self) -> bool:
        return len(self.looks) > 1

    @property
    def nominal_alpha(self) -> float:
        """The two-sided level each look's paired test is held to (``alpha`` with a single look)."""
        return _pocock_nominal(self.looks, self.alpha)

    @property
    def confidence(self) -> float:
        """The confidence of each look's (repeated) interval: ``1 - nominal_alpha``."""
        return 1.0 - self.nominal_alpha

    def next_count(self, count: int) -> int | None:
        """The next look after ``count`` instances, or None at the cap."""
        later = [look for look in self.looks if look > count]
        return later[0] if later else None

    def describe(self) -> str:
        """The rule, not what happened (each rung line says how many instances decided it): e.g. ``10, and 10
        more at a time while a rung is undecided, up to 50 (Pocock's group-sequential bound: p < 0.0158 at each
        look, 5% overall)``."""
        return (f"{self.first}, and {self.batch} more at a time while a rung is undecided, up to {self.cap} ({BOUND}'s "
                f"group-sequential bound: p < {self.nominal_alpha:.3g} at each look, {self.alpha:.0%} overall)")

    def as_dict(self) -> dict[str, object]:
        return {"first": self.first, "batch": self.batch, "cap": self.cap, "alpha": self.alpha,
                "looks": list(self.looks), "bound": BOUND, "nominal_alpha": self.nominal_alpha}


@lru_cache(maxsize=64)
def _pocock_nominal(looks: tuple[int, ...], alpha: float) -> float:
    """Pocock's nominal two-sided level for the ``looks`` (instance counts): ``2 * (1 - Phi(c))`` where c
    solves P(|Z_k| < c at every look k) = 1 - alpha under no difference (Brent's method on c)."""
    from scipy import optimize, stats

    if len(looks) == 1:
        return alpha
    z = float(stats.norm.isf(alpha / 2))
    critical = optimize.brentq(lambda c: 1.0 - _continuation(looks, c) - alpha, z, z + 3.0, xtol=1e-7)
    return float(2 * stats.norm.sf(critical))


def _continuation(looks: tuple[int, ...], c: float, points: int = 301) -> float:
    """P(|Z_k| < c at every look) under no difference, by recursive numerical integration (Armitage,
    McPherson and Rowe 1969; Jennison and Turnbull chapter 19): the score S_k = Z_k sqrt(n_k) has independent
    normal increments of variance n_k - n_(k-1), so its density on the continuation region at look k is the
    previous look's density convolved with the increment's, integrated with Simpson's rule on a grid."""
    from scipy import integrate, stats

    counts = np.asarray(looks, dtype=float)
    grid = np.linspace(-c * math.sqrt(counts[0]), c * math.sqrt(counts[0]), points)
    density = stats.norm.pdf(grid, scale=math.sqrt(counts[0]))
    for previous, current in zip(counts[:-1], counts[1:]):
        bound = c * math.sqrt(current)
        following = np.linspace(-bound, bound, points)
        kernel = stats.norm.pdf(following[:, None] - grid[None, :], scale=math.sqrt(current - previous))
        density = integrate.simpson(kernel * density[None, :], x=grid, axis=1)
        grid = following
    return float(integrate.simpson(density, x=grid))
