"""The learning verdict: does the trained policy beat what a researcher would do without learning?

A run can meet its objective without learning anything, and beating a uniformly random policy says little:
a policy that only learned "do nothing" can do that. The verdict is therefore a *ladder* of comparators,
each a rung the trained (greedy) policy is compared with, paired on the same evaluation instances:

- ``random``: the masked uniformly random policy (several episodes per instance, averaged);
- ``trivial``: policies that need no learning (indexing: build no index; scheduling: never dispatch, or
  run the most urgent model's largest feasible batch; placement: everything on the fastest device);
- ``heuristic``: the field's non-learning baseline (an index advisor, HEFT, Clockwork, LRU).

``learned: yes`` requires beating the random rung and every trivial rung, a training curve that rose and
enough evidence (below). Beating the heuristic is reported on its own line and never required nor hidden:
"learned" is not "worth using".

**Instances.** Scores come per evaluation instance (a workload, an arrival trace, a graph) and are compared
instance by instance: the difference per instance, its mean, the 95% t confidence interval over instances,
the effect size d_z (mean difference / sd of the differences) and the two-sided paired t-test p. A rung is
``better`` when the CI lies above 0, ``worse`` when below, else ``indistinguishable``. With a single instance
(a blackbox run of a deterministic task) the comparison is exact when both sides are deterministic, and a
Welch interval over the episodes otherwise. ``EvaluationInstances`` says where the instances came from; the
verdict refuses instances whose seeds were used for model selection, and for training unless the
evaluation is declared blackbox (the test workload *is* the training workload), which the printed lines
then say, so no generalisation claim rests on training instances.

**Minimum evidence.** ``learned: yes`` needs at least ``MIN_INSTANCES`` paired instances (or, on one
instance, ``MIN_INSTANCES`` episodes of the stochastic side; an exact comparison needs none), and, when the
method trained online, a training curve of at least ``2 * MIN_WINDOW`` episodes, so that its trend test
compares ``MIN_WINDOW`` episodes or more at each end (Welch's one-sided t-test; no test is run on one-episode
ends). Below that the verdict says ``too little evidence`` instead of yes or no.

``ladder_verdict`` computes it from scores; ``wield.workflows.assess_learning`` plays the policies on an
environment and calls it; ``wield.workflows.trial_verdict`` returns the dict a ``TrialSummary.verdict``
holds; ``verdict_lines`` prints such a dict.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from wield.errors import ConfigError
from wield.protocols.sequential import BOUND, DEFAULT_CAP, SequentialDesign

KINDS = ("random", "trivial", "heuristic")  # the rungs of the ladder, in the order they are printed
RUNG_OUTCOMES = ("better", "worse", "indistinguishable")
STATUSES = ("yes", "no", "too little evidence")
CONFIDENCE = 0.95
MIN_INSTANCES = 5  # paired instances (or episodes of the stochastic side on one instance) for a yes
TREND_WINDOW = 10  # episodes at each end of the training curve
TREND_ALPHA = 0.05  # the curve rose when its one-sided Welch p is below this
MIN_WINDOW = 3  # fewest episodes at each end for the trend test
RANDOM_EPISODES = 5  # random-policy episodes per instance, averaged (20 on a single instance)


@dataclass(frozen=True)
class EvaluationInstances:
    """Where a verdict's instances come from: one seed per instance (``seeds``), the environment episodes
    that hold them (``episodes``, the same length), what they are (``description``), whether they are
    held out (drawn from the test distribution with seeds never used in training or selection) or the
    training instance itself (``held_out=False``: a blackbox evaluation), and whether playing a policy on
    one is deterministic (a single deterministic instance then gives an exact comparison)."""

    seeds: tuple[int, ...]
    description: str
    held_out: bool = True
    deterministic: bool = False
    episodes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        episodes = tuple(int(e) for e in self.episodes) or tuple(range(len(self.seeds)))
        object.__setattr__(self, "episodes", episodes)
        if not self.seeds:
            raise ConfigError("instances", [], reason="the verdict needs at least one evaluation instance")
        if len(episodes) != len(self.seeds):
            raise ConfigError("instances.episodes", len(episodes), reason=f"must be one per seed ({len(self.seeds)})")

    @property
    def count(self) -> int:
        return len(self.seeds)

    def check_unused(self, training: Iterable[int] = (), selection: Iterable[int] = ()) -> None:
        """Refuse instances drawn with seeds used for model selection, or for training when they are said
        to be held out: a verdict on them would measure what the run was tuned on."""
        chosen = set(self.seeds)
        selected = sorted(chosen & {int(s) for s in selection})
        if selected:
            raise ConfigError("instances", selected[:3], reason=(
                "these evaluation seeds were used to select the model (validation); a verdict must be computed "
                "on instances never used in training or selection"))
        trained = sorted(chosen & {int(s) for s in training})
        if trained and self.held_out:
            raise ConfigError("instances", trained[:3], reason=(
                "these evaluation seeds were used in training, so the instances are not held out; draw new "
                "ones, or declare a blackbox evaluation (held_out=False), which the verdict then states"))

    def phrase(self) -> str:
        """E.g. ``10 held-out instances (...)`` or ``1 training instance (blackbox: ...)``."""
        count = self.count
        plural = "s" if count != 1 else ""
        if self.held_out:
            return (f"{count} held-out instance{plural} ({self.description}; seeds never used in training or "
                    f"selection)")
        return (f"{count} instance{plural} of the training workload ({self.description}; blackbox: the test "
                f"workload is the training workload, so this is no generalisation claim)")

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "seeds": list(self.seeds), "description": self.description,
                "held_out": self.held_out, "deterministic": self.deterministic}


@dataclass(frozen=True)
class Rung:
    """The greedy policy against one comparator, paired on the same instances."""

    name: str
    kind: str
    instances: int
    samples: int  # what the CI rests on: instances, or episodes on a single instance; 0 for an exact comparison
    learner_mean: float
    comparator_mean: float
    mean_difference: float
    ci_low: float | None
    ci_high: float | None
    effect_size: float | None
    p: float | None
    outcome: str
    description: str = ""
    cost: str = ""
    wins: int | None = None  # instances on which the learner's mean score beat the comparator's
    level: float = 1 - CONFIDENCE  # the two-sided level the decision was held to (Pocock's nominal one)
    cap: int | None = None  # the most instances the rung could be decided on (None: a fixed count)

    @property
    def at_cap(self) -> bool:
        """Undecided on the most instances the design allows (and more than its first look)."""
        return self.cap is not None and self.outcome == "indistinguishable" and self.instances >= self.cap

    @property
    def label(self) -> str:
        """``random`` for the random rung, else kind and name: ``trivial no-index``, ``heuristic advisor``."""
        return "random" if self.kind == "random" else f"{self.kind} {self.name}"

    @property
    def exact(self) -> bool:
        return self.samples == 0 and self.ci_low is not None

    @property
    def enough_evidence(self) -> bool:
        return self.exact or self.samples >= MIN_INSTANCES

    def counts(self) -> str:
        """``30 instances, learner better on 1/30`` (empty for a single instance)."""
        if self.instances < 2 or self.wins is None:
            return ""
        return f"{self.instances} instances, learner better on {self.wins}/{self.instances}"

    def line(self) -> str:
        """E.g. ``vs heuristic sed: worse (-0.24 [-0.31, -0.17], d = -1.20, p < 0.001; 30 instances, learner
        better on 1/30)``; an undecided rung at the cap says so."""
        if self.ci_low is None or self.ci_high is None:
            figures = f"{_signed(self.mean_difference)}, no CI: too little evidence"
        elif self.exact:
            figures = f"{_signed(self.mean_difference)}, exact: deterministic"
        else:
            figures = (f"{_signed(self.mean_difference)} [{_signed(self.ci_low)}, {_signed(self.ci_high)}], "
                       f"d = {_number(self.effect_size)}, p {_p(self.p)}")
            if self.outcome == "indistinguishable" and self.p is not None and self.p < 1 - CONFIDENCE:
                figures += f", not below the sequential bound {self.level:.3g}"
        if self.counts():
            figures += f"; {self.counts()}"
        outcome = f"{self.outcome} at the cap of {self.cap} instances" if self.at_cap else self.outcome
        text = f"vs {self.label}: {outcome} ({figures})"
        if self.cost:
            text += f"; {self.cost}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "mean_difference": _json(self.mean_difference),
                "ci_low": _json(self.ci_low), "ci_high": _json(self.ci_high),
                "effect_size": _json(self.effect_size), "p": _json(self.p), "outcome": self.outcome,
                "instances": self.instances, "samples": self.samples, "learner_mean": _json(self.learner_mean),
                "comparator_mean": _json(self.comparator_mean), "description": self.description, "cost": self.cost,
                "wins": self.wins, "level": self.level, "cap": self.cap, "at_cap": self.at_cap}


@dataclass(frozen=True)
class Trend:
    """The training curve's first and last ``window`` episodes and Welch's one-sided test of a rise. The
    curve ``rose`` when its last episodes' mean is above its first's with one-sided p < ``TREND_ALPHA``: a
    rise that is not significant does not count."""

    first_mean: float
    last_mean: float
    window: int
    p: float | None

    @property
    def higher(self) -> bool:
        """The last episodes' mean is above the first's (significant or not)."""
        return self.last_mean > self.first_mean

    @property
    def rose(self) -> bool:
        """The condition of ``learned: yes``: higher, with one-sided p < ``TREND_ALPHA``."""
        return self.higher and self.p is not None and self.p < TREND_ALPHA

    def reason(self) -> str:
        """Why the curve does not count as a rise (empty when it does)."""
        if self.rose:
            return ""
        if not self.higher:
            return "the training curve did not rise (last episodes no better than the first)"
        return (f"the training curve's rise is not significant ({self.first_mean:.4g} -> {self.last_mean:.4g}, "
                f"one-sided Welch p {_p(self.p)}, needs < {TREND_ALPHA:g})")

    def line(self) -> str:
        return (f"training curve {self.first_mean:.4g} -> {self.last_mean:.4g} (first/last {self.window} "
                f"episodes, p {_p(self.p)})")


@dataclass(frozen=True)
class LadderVerdict:
    """The verdict (see the module docstring): ``status`` yes / no / too little evidence, the rungs, the
    instances, the training curve's trend and the reasons behind a no."""

    status: str
    rungs: tuple[Rung, ...]
    instances: EvaluationInstances
    score: str
    trend: Trend | None = None
    curve_episodes: int = 0
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    design: SequentialDesign | None = None  # the looks the rungs were decided at (None: one fixed look)

    @property
    def learned(self) -> bool:
        return self.status == "yes"

    def rung(self, name: str) -> Rung:
        for rung in self.rungs:
            if rung.name == name:
                return rung
        raise KeyError(name)

    def headline(self) -> str:
        """The one ``learned:`` line."""
        required = [r for r in self.rungs if r.kind != "heuristic"]
        heuristics = [r for r in self.rungs if r.kind == "heuristic"]
        if self.status == "yes":
            counts = sorted({r.instances for r in required})
            many = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
            text = ("learned: yes - beats the " + ", the ".join(r.label for r in required)
                    + f" on {many} {'held-out ' if self.instances.held_out else ''}instance"
                    + ("s" if counts[-1] != 1 else ""))
        else:
            text = f"learned: {self.status} - " + "; ".join(self.reasons)
        for rung in heuristics:
            text += (f"; against the {rung.name} heuristic: {rung.outcome} (reported, not required)")
        return text

    def lines(self) -> list[str]:
        """What a run prints: where the instances come from, one line per rung, the curve, the verdict."""
        lines = [f"verdict on {self.instances.phrase()}; score: {self.score}"]
        lines += [f"  {rung.line()}" for rung in self.rungs]
        if self.design is not None and self.design.sequential:
            lines.append(f"  instances: {self.design.describe()}")
        if self.trend is not None:
            lines.append(f"  {self.trend.line()}")
        elif self.curve_episodes:
            lines.append(f"  training curve of {self.curve_episodes} episode(s): too short for a trend test "
                         f"(needs {2 * MIN_WINDOW})")
        lines += [f"  note: {note}" for note in self.notes]
        lines.append(self.headline())
        return lines

    def line(self) -> str:
        return self.headline()

    def as_dict(self) -> dict[str, Any]:
        """The verdict for ``TrialSummary.verdict`` and ``--json``: ``learned``, ``status``, ``rungs`` (a list of
        ``Rung.as_dict``), ``instances``, ``trend``, ``reasons``, ``lines``; and, for the tables that read
        them, the random rung's figures as ``greedy_return``, ``random_mean``, ``effect_size``, ``p_value``."""
        data: dict[str, Any] = {
            "learned": self.learned, "status": self.status, "score": self.score,
            "rungs": [rung.as_dict() for rung in self.rungs], "instances": self.instances.as_dict(),
            "trend": None if self.trend is None else {
                "first_mean": self.trend.first_mean, "last_mean": self.trend.last_mean,
                "window": self.trend.window, "p": _json(self.trend.p), "rose": self.trend.rose,
                "higher": self.trend.higher, "alpha": TREND_ALPHA},
            "curve_episodes": self.curve_episodes, "reasons": list(self.reasons), "notes": list(self.notes),
            "sequential": None if self.design is None else self.design.as_dict(),
            "line": self.headline(), "lines": self.lines()}
        random = next((r for r in self.rungs if r.kind == "random"), None)
        if random is not None:
            data.update({"greedy_return": _json(random.learner_mean), "random_mean": _json(random.comparator_mean),
                         "effect_size": _json(random.effect_size), "p_value": _json(random.p)})
        if self.trend is not None:
            data.update({"first_mean": self.trend.first_mean, "last_mean": self.trend.last_mean,
                         "trend_p_value": _json(self.trend.p)})
        return data


@dataclass(frozen=True)
class ComparatorScores:
    """One comparator's scores: per instance (in the instances' order), the score of each episode played
    there (one for a deterministic policy). ``cost`` says what producing them took (e.g. a heuristic's
    engine evaluations), printed beside the rung."""

    name: str
    kind: str
    scores: Sequence[Sequence[float]]
    description: str = ""
    cost: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError("comparator.kind", self.kind, KINDS)


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return "inf" if math.isinf(value) and value > 0 else "-inf" if math.isinf(value) else f"{value:.2f}"


def _signed(value: float | None) -> str:
    """A difference with its sign and three significant digits: ``+1.83``, ``-0.0412``, ``+inf``."""
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:+.3g}"


def _p(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"= {value:.3f}"


def _json(value: float | None) -> float | None:
    """A figure for JSON: None for a missing one; infinities stay (``json`` writes them as ``Infinity``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def _per_instance(name: str, scores: Sequence[Sequence[float]], count: int) -> list[np.ndarray]:
    if len(scores) != count:
        raise ConfigError(f"{name}.scores", len(scores), reason=f"must hold one entry per instance ({count})")
    arrays = []
    for entry in scores:
        values = np.asarray([entry] if np.isscalar(entry) else list(entry), dtype=float)
        if values.size == 0:
            raise ConfigError(f"{name}.scores", [], reason="every instance needs at least one episode's score")
        if not np.all(np.isfinite(values)):
            raise ConfigError(f"{name}.scores", "non-finite values", reason="scores must be finite numbers")
        arrays.append(values)
    return arrays


def _exact(mean: float) -> tuple[float, float, float, float]:
    """(CI low, CI high, effect size, p) of a difference that does not vary: the CI is the difference
    itself, the effect infinite in its direction (0 for none), p 0 for a difference and 1 for none."""
    effect = math.inf if mean > 0 else (-math.inf if mean < 0 else 0.0)
    return mean, mean, effect, 0.0 if mean != 0 else 1.0


def paired_rung(name: str, kind: str, learner: Sequence[Sequence[float]], comparator: Sequence[Sequence[float]],
                *, deterministic: bool = False, description: str = "", cost: str = "",
                confidence: float = CONFIDENCE, cap: int | None = None) -> Rung:
    """The greedy policy against one comparator from their per-instance episode scores (higher is better;
    see the module docstring for the statistics). ``confidence`` is the interval's (a sequential look's
    ``SequentialDesign.confidence``); ``cap`` the most instances a sequential design allows."""
    from scipy import stats

    if kind not in KINDS:
        raise ConfigError("comparator.kind", kind, KINDS)
    count = len(learner)
    ours, theirs = _per_instance("learner", learner, count), _per_instance(name, comparator, count)
    ours_mean = np.array([v.mean() for v in ours])
    theirs_mean = np.array([v.mean() for v in theirs])
    differences = ours_mean - theirs_mean
    mean = float(differences.mean())
    ci_low = ci_high = effect = p = None
    samples = count
    if count >= 2:
        sd = float(differences.std(ddof=1))
        if sd > 0:
            se = sd / math.sqrt(count)
            half = float(stats.t.ppf(0.5 + confidence / 2, count - 1)) * se
            ci_low, ci_high, effect = mean - half, mean + half, mean / sd
            p = float(2 * stats.t.sf(abs(mean) / se, count - 1))
        else:  # every instance differs by the same amount: nothing varies between instances
            ci_low, ci_high, effect, p = _exact(mean)
    else:
        a, b = ours[0], theirs[0]
        samples = max(a.size, b.size)
        if a.size == 1 and b.size == 1:
            if deterministic:
                samples = 0
                ci_low, ci_high, effect, p = _exact(mean)
        else:
            var_a = float(a.var(ddof=1)) / a.size if a.size > 1 else 0.0
            var_b = float(b.var(ddof=1)) / b.size if b.size > 1 else 0.0
            se = math.sqrt(var_a + var_b)
            spread = math.sqrt(max(float(a.var(ddof=1)) if a.size > 1 else 0.0,
                                   float(b.var(ddof=1)) if b.size > 1 else 0.0))
            if se > 0:
                # Welch-Satterthwaite degrees of freedom (a side with one sample contributes none)
                parts = [(v, n) for v, n in ((var_a, a.size), (var_b, b.size)) if n > 1 and v > 0]
                df = (var_a + var_b) ** 2 / sum(v ** 2 / (n - 1) for v, n in parts)
                half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
                ci_low, ci_high = mean - half, mean + half
                effect, p = mean / spread, float(2 * stats.t.sf(abs(mean) / se, df))
            else:
                ci_low, ci_high, effect, p = _exact(mean)
    if ci_low is not None and ci_high is not None and ci_low > 0:
        outcome = "better"
    elif ci_low is not None and ci_high is not None and ci_high < 0:
        outcome = "worse"
    else:
        outcome = "indistinguishable"
    return Rung(name, kind, count, samples, float(ours_mean.mean()), float(theirs_mean.mean()), mean, ci_low,
                ci_high, effect, p, outcome, description, cost, int((differences > 0).sum()), 1 - confidence, cap)


def trend_of(curve: Sequence[float], window: int = TREND_WINDOW) -> Trend | None:
    """The training curve's trend, or None when it has fewer than ``2 * MIN_WINDOW`` episodes."""
    from scipy import stats

    values = np.asarray(list(curve), dtype=float)
    if not np.all(np.isfinite(values)):
        raise ConfigError("training_returns", "non-finite values", reason="returns must be finite numbers")
    window = min(window, values.size // 2)
    if window < MIN_WINDOW:
        return None
    first, last = values[:window], values[-window:]
    if first.std() > 0 or last.std() > 0:
        with warnings.catch_warnings():  # nearly constant windows: scipy warns of precision loss, p stays usable
            warnings.simplefilter("ignore", RuntimeWarning)
            p = float(stats.ttest_ind(last, first, equal_var=False, alternative="greater").pvalue)
    else:
        p = 0.0 if last.mean() > first.mean() else 1.0
    return Trend(float(first.mean()), float(last.mean()), int(window), p)


@dataclass(frozen=True)
class InstanceScores:
    """Scores played on a batch of further instances for a sequential verdict: the batch's
    ``instances``, the learner's per-instance episode scores and those of the comparators asked for."""

    instances: EvaluationInstances
    learner: Sequence[Sequence[float]]
    comparators: Sequence[ComparatorScores]


# (first, count, names): the scores on instances first .. first + count - 1 of the same held-out stream, for
# the learner and the comparators named (those whose rung is still undecided).
MoreScores = Callable[[int, int, frozenset[str]], InstanceScores]


def ladder_verdict(learner: Sequence[Sequence[float]], comparators: Sequence[ComparatorScores],
                   instances: EvaluationInstances, training_returns: Sequence[float] = (), *,
                   score: str = "episode return", notes: Sequence[str] = (), more: MoreScores | None = None,
                   cap: int = DEFAULT_CAP, batch: int | None = None) -> LadderVerdict:
    """The verdict from the greedy policy's per-instance scores (``learner``: per instance, its episodes'
    scores), the comparators' on the same instances, and the training curve (per-episode returns in
    order; empty when the method did not train online). Comparators are printed random first, then
    trivial, then heuristic. A ``random`` comparator is required: it is the floor of the ladder.

    With ``more`` (a source of further instances of the same held-out stream), a rung whose interval
    straddles 0 is looked at again on ``batch`` more instances (default: as many as the first look's), up to
    ``cap`` instances, under Pocock's group-sequential bound (``wield.protocols.sequential``); without it,
    the first instances decide at the fixed 95% level."""
    if len(learner) != instances.count:
        raise ConfigError("learner.scores", len(learner), reason=f"must hold one entry per instance "
                                                                 f"({instances.count})")
    if not any(c.kind == "random" for c in comparators):
        raise ConfigError("comparators", [c.name for c in comparators],
                          reason="the ladder needs a random rung (the masked random policy)")
    names = [c.name for c in comparators]
    if len(set(names)) != len(names):
        raise ConfigError("comparators", names, reason="comparator names must be distinct")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError("verdict_cap", cap, reason="must be a positive integer (instances per rung at most)")
    ordered = sorted(comparators, key=lambda c: KINDS.index(c.kind))
    first = instances.count
    sequential = more is not None and first >= 2 and cap > first
    design = SequentialDesign(first, batch or first, cap) if sequential else SequentialDesign.fixed(first)
    rung_cap = design.cap if design.sequential else None
    ours = list(learner)
    theirs = {c.name: list(c.scores) for c in ordered}

    def decide(c: ComparatorScores, count: int) -> Rung:
        return paired_rung(c.name, c.kind, ours[:count], theirs[c.name], deterministic=instances.deterministic,
                           description=c.description, cost=c.cost, confidence=design.confidence, cap=rung_cap)

    rungs = {c.name: decide(c, first) for c in ordered}
    seeds, count = list(instances.seeds), first
    while more is not None and design.sequential:
        undecided = frozenset(name for name, rung in rungs.items() if rung.outcome == "indistinguishable")
        following = design.next_count(count)
        if not undecided or following is None:
            break
        batch_scores = more(count, following - count, undecided)
        added = following - count
        if batch_scores.instances.count != added or len(batch_scores.learner) != added:
            raise ConfigError("verdict.more", batch_scores.instances.count,
                              reason=f"must give the {added} instances asked for, with the learner's scores")
        given = {c.name: c for c in batch_scores.comparators}
        missing = sorted(undecided - set(given))
        if missing:
            raise ConfigError("verdict.more", missing, reason="must score every comparator asked for")
        ours += list(batch_scores.learner)
        for name in undecided:
            theirs[name] += [list(values) for values in _per_instance(name, given[name].scores, added)]
        seeds += list(batch_scores.instances.seeds)
        count = following
        rungs.update({c.name: decide(c, count) for c in ordered if c.name in undecided})
    played = instances if count == first else EvaluationInstances(
        tuple(seeds), instances.description, instances.held_out, instances.deterministic)
    return _decided(tuple(rungs[c.name] for c in ordered), played, training_returns, score, notes, design)


def _decided(rungs: tuple[Rung, ...], instances: EvaluationInstances, training_returns: Sequence[float],
             score: str, notes: Sequence[str], design: SequentialDesign) -> LadderVerdict:
    """The verdict's status and reasons from its decided rungs and the training curve."""
    curve = list(training_returns)
    trend = trend_of(curve)
    reasons: list[str] = []
    short: list[str] = []
    for rung in rungs:
        if rung.kind == "heuristic":
            continue
        if not rung.enough_evidence:
            short.append(f"{rung.samples} sample(s) against the {rung.label}, fewer than the {MIN_INSTANCES} "
                         f"a decision needs")
        elif rung.outcome != "better":
            where = f"; indistinguishable at the cap of {rung.cap} instances" if rung.at_cap else ""
            reasons.append(f"{'does not beat' if rung.outcome == 'indistinguishable' else 'loses to'} the "
                           f"{rung.label} ({_signed(rung.mean_difference)}{where})")
    if curve and trend is None:
        short.append(f"a training curve of {len(curve)} episode(s), fewer than the {2 * MIN_WINDOW} its trend "
                     f"test needs")
    elif trend is not None and not trend.rose:
        reasons.append(trend.reason())
    if reasons:
        status = "no"
    elif short:
        status = "too little evidence"
        reasons = short
    else:
        status = "yes"
    return LadderVerdict(status, rungs, instances, score, trend, len(curve), tuple(reasons), tuple(notes),
                         design if design.sequential else None)


def learned_definition(cap: int = DEFAULT_CAP) -> str:
    """What ``learned: yes`` means, written from the constants ``ladder_verdict`` decides with (reports print
    it, so the definition cannot drift from the code)."""
    design = SequentialDesign(10, 10, cap) if cap > 10 else SequentialDesign.fixed(10)
    return (f"learned: yes when the trained greedy policy is better than every {KINDS[0]} and every {KINDS[1]} "
            f"rung: the {CONFIDENCE:.0%} confidence interval of its per-instance score difference, paired on "
            f"held-out instances, lies above 0 (a rung its first {design.first} instances cannot decide is decided "
            f"on {design.batch} more at a time, up to {design.cap}, each look held to {BOUND}'s group-sequential "
            f"bound, p < {design.nominal_alpha:.3g}, so the error rate stays {design.alpha:.0%}, where the case "
            f"study can draw more); its training curve rose (the last {TREND_WINDOW} episodes' mean above "
            f"the first {TREND_WINDOW}'s, one-sided Welch p < {TREND_ALPHA:g}); and the evidence suffices (at least "
            f"{MIN_INSTANCES} paired instances per rung and a curve of at least {2 * MIN_WINDOW} episodes, else "
            f"'too little evidence'). {KINDS[2].capitalize()} rungs are reported, never required; meeting the "
            f"objective alone does not show learning.")


def verdict_lines(verdict: Mapping[str, Any] | None) -> list[str]:
    """The lines a run prints for a ``TrialSummary.verdict`` dict: the verdict's lines, and the search
    outcome a blackbox run reports beside it (``search_outcome``: ``{"line": ...}``); none without a
    verdict."""
    if not verdict:
        return []
    stored = verdict.get("lines")
    lines = [str(line) for line in stored] if isinstance(stored, list) else [str(verdict.get("line", ""))]
    outcome = verdict.get("search_outcome")
    if isinstance(outcome, Mapping) and outcome.get("line"):
        lines.append(str(outcome["line"]))
    return lines
