"""The learning verdict: did training produce a policy better than acting at random?

A run can meet its objective without learning anything (a random policy may meet it too), and a training
curve can look busy while staying flat. The verdict answers the narrower question honestly, from three sets
of returns on the same workload (or test set) with the same seeds discipline:

- the greedy policy's return after training (one episode for a deterministic environment, several
  otherwise);
- the random policy's returns over enough episodes to estimate its spread (uniform over the valid actions
  the masks allow);
- the training curve: the mean return of its first and its last ``window`` episodes.

``learned`` is "yes" when the greedy policy beats the random policy's mean by at least ``min_effect``
standard deviations of the random returns (the effect size d) and the training curve rose (last window above
the first). Both are reported with a test:

- ``p_value``: the chance that one more random episode would score at least the greedy return, from the
  t prediction interval of the random returns (one-sided; small means the greedy policy lies outside what
  random play reaches);
- ``trend_p_value``: Welch's one-sided t-test of the last window's returns above the first window's.

When the random returns do not vary (the reward does not depend on the action, or every action is the
same), d is defined by the sign of the difference alone: a greedy return equal to the random one is "no".
The verdict reads returns only, so it serves any case study: ``wield.workflows.assess_learning`` computes
the returns on an environment and calls ``learning_verdict``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np

MIN_EFFECT = 2.0  # greedy above the random mean by at least this many random standard deviations
TREND_WINDOW = 10  # episodes at each end of the training curve
MIN_RANDOM_EPISODES = 2  # a spread needs at least two samples


@dataclass(frozen=True)
class LearningVerdict:
    """The verdict and the figures behind it (see the module docstring)."""

    learned: bool
    greedy_return: float
    greedy_episodes: int
    random_mean: float
    random_sd: float
    random_episodes: int
    effect_size: float
    p_value: float
    first_mean: float | None
    last_mean: float | None
    trend_p_value: float | None
    window: int
    min_effect: float = MIN_EFFECT
    reasons: tuple[str, ...] = ()

    @property
    def trend_rose(self) -> bool | None:
        """Whether the training curve's last window beat its first (None without a curve)."""
        if self.first_mean is None or self.last_mean is None:
            return None
        return self.last_mean > self.first_mean

    def line(self) -> str:
        """One line for a run's summary, e.g. ``learned: yes - greedy return -17.60 vs random -21.40 +- 1.50
        (d = 2.5, p = 0.008); training curve -20.1 -> -17.9``."""
        verdict = "yes" if self.learned else "no"
        text = (f"learned: {verdict} - greedy return {self.greedy_return:.4g} vs random {self.random_mean:.4g} "
                f"+- {self.random_sd:.3g} over {self.random_episodes} episodes (d = {_number(self.effect_size)}, "
                f"p {_p(self.p_value)})")
        if self.first_mean is not None and self.last_mean is not None:
            text += (f"; training curve {self.first_mean:.4g} -> {self.last_mean:.4g} (first/last {self.window} "
                     f"episodes, p {_p(self.trend_p_value)})")
        if not self.learned and self.reasons:
            text += "; " + "; ".join(self.reasons)
        return text

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        data["trend_rose"] = self.trend_rose
        data["line"] = self.line()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LearningVerdict":
        names = set(cls.__dataclass_fields__)
        known = {k: v for k, v in data.items() if k in names}
        known["reasons"] = tuple(known.get("reasons", ()))
        return cls(**known)


def _number(value: float) -> str:
    return "inf" if math.isinf(value) and value > 0 else "-inf" if math.isinf(value) else f"{value:.2f}"


def _p(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"= {value:.3f}"


def learning_verdict(greedy_returns: Sequence[float], random_returns: Sequence[float],
                     training_returns: Sequence[float] = (), *, min_effect: float = MIN_EFFECT,
                     window: int = TREND_WINDOW) -> LearningVerdict:
    """The verdict from the greedy policy's returns, the random policy's returns and the training curve
    (per-episode returns in order; empty when the method did not train online)."""
    from scipy import stats

    from wield.errors import ConfigError

    greedy = np.asarray(list(greedy_returns), dtype=float)
    random = np.asarray(list(random_returns), dtype=float)
    curve = np.asarray(list(training_returns), dtype=float)
    if greedy.size == 0:
        raise ConfigError("greedy_returns", [], reason="the verdict needs at least one greedy episode")
    if random.size < MIN_RANDOM_EPISODES:
        raise ConfigError("random_returns", random.size,
                          reason=f"the random policy's spread needs at least {MIN_RANDOM_EPISODES} episodes")
    for name, values in (("greedy_returns", greedy), ("random_returns", random), ("training_returns", curve)):
        if not np.all(np.isfinite(values)):
            raise ConfigError(name, "non-finite values", reason="returns must be finite numbers")
    if min_effect <= 0 or window < 1:
        raise ConfigError("min_effect / window", (min_effect, window), reason="must be > 0 and >= 1")

    greedy_mean = float(greedy.mean())
    random_mean, random_sd = float(random.mean()), float(random.std(ddof=1))
    difference = greedy_mean - random_mean
    if random_sd > 0:
        effect = difference / random_sd
        # prediction interval of one more random episode: t with n - 1 degrees of freedom
        scale = random_sd * math.sqrt(1.0 + 1.0 / random.size)
        p_value = float(stats.t.sf(difference / scale, df=random.size - 1))
    else:  # random play always scores the same: any improvement is certain, none is none
        effect = math.inf if difference > 0 else (-math.inf if difference < 0 else 0.0)
        p_value = 0.0 if difference > 0 else 1.0

    first_mean = last_mean = trend_p = None
    window = min(window, curve.size // 2)
    if window >= 1:
        first, last = curve[:window], curve[-window:]
        first_mean, last_mean = float(first.mean()), float(last.mean())
        if window >= 2 and (first.std() > 0 or last.std() > 0):
            trend_p = float(stats.ttest_ind(last, first, equal_var=False, alternative="greater").pvalue)
        else:
            trend_p = 0.0 if last_mean > first_mean else 1.0

    reasons = []
    if effect < min_effect:
        reasons.append(f"the greedy return is {_number(effect)} random standard deviations above the random "
                       f"mean, below the {min_effect:g} required")
    if first_mean is not None and last_mean is not None and last_mean <= first_mean:
        reasons.append("the training curve did not rise (last episodes no better than the first)")
    return LearningVerdict(
        learned=not reasons, greedy_return=greedy_mean, greedy_episodes=int(greedy.size), random_mean=random_mean,
        random_sd=random_sd, random_episodes=int(random.size), effect_size=float(effect), p_value=p_value,
        first_mean=first_mean, last_mean=last_mean, trend_p_value=trend_p, window=max(window, 0),
        min_effect=float(min_effect), reasons=tuple(reasons))
