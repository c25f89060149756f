"""The scheduling suite: four cells where the best tuned heuristic stays below 100% of the SLOs (issue 43).

On the default "hard" workload (2,400 r/s over 48 ResNet-50 instances, SLO 24 ms, 6 GPUs) every heuristic
meets every SLO under the ASSUMED batch-latency curve, so a learner can at best tie there. The suite's cells
are where the heuristics fall short, each reachable from the command line (``Cell.cli``):

- ``overload-4gpu``: the hard workload on 4 GPUs (more work than 4 GPUs can do at batch 1);
- ``multi-slo``: 12 ResNet-50 instances in SLO classes of 10, 25 and 100 ms, 1,200 r/s, 2 GPUs;
- ``tight-slo``: the hard workload at an 8 ms SLO (a batch of 1 takes 2.7 ms), 6 GPUs;
- ``azure-bursts``: the SYNTHETIC Azure-like workload (4,026 instances, 9,500 r/s, per-second log-normal
  bursts, SLO 100 ms) on 8 GPUs instead of 12, 2 s instances (its rates change every second).

Per seed ``s`` a cell has a validation draw (seed ``s + VALIDATION_OFFSET``: Clockwork's lookahead is tuned
on it, and the learner's checkpoints are chosen on it), a held-out test instance (seed ``s + TEST_OFFSET``:
every method is scored on it and on nothing else) and training instances (``training_seed``), three disjoint
seed ranges. ``heuristic_rows`` scores the heuristic rungs on the test instance: ``clockwork-tuned``
(Clockwork's lookahead chosen from ``runner.TUNED_LOOKAHEADS_MS`` on the validation draw; the grid holds the
shipped 5 ms and ties keep it, so on the validation draw it is never below the shipped setting), the shipped
``clockwork`` (5 ms), ``edf``, ``fifo`` (all three in the simulator's compiled event loop), the one-line
``urgent-batch`` rule (``rules.UrgentBatch``, played through the Wield environment) and the masked uniform
``random`` policy (through the vector environment). Clockwork's scheduler is event-driven here (it decides at
arrivals, completions and when a GPU's outstanding work falls to the lookahead), so it has no invocation
interval to tune; only the lookahead is. ``agent_row`` trains the findings benchmark's learner (sb3-contrib's
MaskablePPO on the vector environment, ``vector_training``) on the cell's training instances and scores it
on the same test instance (``masks``: with the task design's ``fit`` masks, the default, or its ``late``
masks, which also forbid batches that would finish late, ``late-idle``, which also wait for the GPU, or
``late-idle-joint``, which also judge an action's batches together).
``compare`` is the paired comparison of two methods over seeds.

``curve``: which batch-latency curve times the models. None (or the shipped share 0.8, or the profile name
``accelerator``): the workloads' own, the ASSUMED ResNet-50 curve ``2.7 * (0.8 + 0.2 * b)`` ms. A number: that
fixed share of the same linear curve, so the suite can be measured under a curve that gains less from batching.
A shipped profile's name (``profile.load_profile``), e.g. ``clockwork-resnet50``, the curve Clockwork's authors
measured on a GPU. The Azure-like workloads' model families are re-scaled from the chosen ResNet-50 curve
(``profile.family_curve``; from a named profile's least-squares line, ``profile.linear_fit``); their scaling
stays ASSUMED.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from case_studies.scheduling.profile import (ACCELERATOR_FIXED_SHARE, DEFAULT_PROFILE, BatchProfile, family_by_name,
                                             family_curve, linear_profile, workload_curves)
from case_studies.scheduling.tasks import Shape
from case_studies.scheduling.workload import Workload
from wield.errors import ConfigError

VALIDATION_OFFSET = 5000  # validation draw of seed s: s + 5000
TEST_OFFSET = 1000  # held-out test instance of seed s: s + 1000
TRAINING_BASE = 10_000  # training instance of (seed s, environment e, episode r): s * 100,000 + 10,000 + e * 100 + r
# seconds of each training instance: long enough for the longest episode's share of each environment (60,000
# decisions over 8 environments: 7,500, one per GPU and millisecond, 3.75 s on 2 GPUs), so no cell's workload is
# served before its decisions are played, which would cut the budget short (with 2 s instances a multi-slo agent
# given 186,000 decisions played about 156,500)
TRAIN_S = 4.0
MAX_TRAINING_ENVS, MAX_TRAINING_EPISODES = 90, 100  # keep the training seeds inside their range
HEURISTIC_ROWS = ("clockwork-tuned", "clockwork", "edf", "fifo", "urgent-batch", "random")
AGENT_ROW = "agent"


@dataclass(frozen=True)
class Cell:
    """One cell of the suite: a workload ``shape`` (``tasks.Shape``, the command line's task), the seconds of
    its validation and test instances, what it stresses, and the ``wield run scheduling`` flags that reach it."""

    name: str
    shape: Shape
    test_s: float
    what: str
    cli: str

    @property
    def gpus(self) -> int:
        return self.shape.gpus

    def workload(self, seed: int, duration_s: float | None = None) -> Workload:
        """An instance of the cell's workload drawn with ``seed`` (``test_s`` seconds unless given)."""
        return self.shape.workload(self.test_s if duration_s is None else duration_s, int(seed))

    def validation_workload(self, seed: int) -> Workload:
        """Seed ``seed``'s validation draw: what the lookahead is tuned on and the learner's checkpoints chosen on."""
        return self.workload(seed + VALIDATION_OFFSET)

    def test_workload(self, seed: int) -> Workload:
        """Seed ``seed``'s held-out test instance: every method's score."""
        return self.workload(seed + TEST_OFFSET)

    def training_workload(self, seed: int, env: int, episode: int) -> Workload:
        """The instance environment ``env`` trains on in ``episode`` (``TRAIN_S`` seconds)."""
        if not (0 <= env < MAX_TRAINING_ENVS and 0 <= episode < MAX_TRAINING_EPISODES):
            raise ConfigError("training instance", (env, episode), reason=f"needs env < {MAX_TRAINING_ENVS} and "
                              f"episode < {MAX_TRAINING_EPISODES} (the training seeds' range)")
        return self.workload(training_seed(seed, env, episode), TRAIN_S)


def training_seed(seed: int, env: int, episode: int) -> int:
    """The workload seed of a training instance (disjoint from every validation and test seed of seeds < 1,000)."""
    return int(seed) * 100_000 + TRAINING_BASE + int(env) * 100 + int(episode)


# (the multi-slo and azure-like families have their own models and SLOs: a Shape's models and slo_ms are unused there)
SUITE: tuple[Cell, ...] = (
    Cell("overload-4gpu", Shape(2400.0, 48, 24.0, 4), 1.0,
         "the hard workload overloaded: 2,400 r/s over 48 ResNet-50 instances, SLO 24 ms, on 4 GPUs instead of 6",
         "--workload hard --gpus 4"),
    Cell("multi-slo", Shape(1200.0, 12, 0.0, 2, "multi-slo"), 1.0,
         "SLO classes 10, 25 and 100 ms (4 ResNet-50 instances each), 1,200 r/s on 2 GPUs",
         "--workload multi-slo --rate 1200 --gpus 2"),
    Cell("tight-slo", Shape(2400.0, 48, 8.0, 6), 1.0,
         "the hard workload at an 8 ms SLO (batch 1 takes 2.7 ms) on 6 GPUs",
         "--workload hard --slo-ms 8"),
    Cell("azure-bursts", Shape(9500.0, 0, 0.0, 8, "azure-like"), 2.0,
         "the SYNTHETIC Azure-like workload (4,026 instances, 9,500 r/s, per-second bursts, SLO 100 ms) on 8 GPUs "
         "instead of 12; 2 s instances",
         "--workload azure-like --rate 9500 --gpus 8 --test-s 2"),
)
CELL_NAMES = tuple(cell.name for cell in SUITE)


def cell_named(name: str) -> Cell:
    """The suite's cell called ``name``."""
    for cell in SUITE:
        if cell.name == name:
            return cell
    raise ConfigError("cell", name, CELL_NAMES)


def agent_schedule(episodes: int, first: int, maximum: int, most: int | None = None) -> list[int]:
    """The learner's decisions per episode: the modelled study's schedule (``vector_training.thesis_schedule``),
    cut after the last whole episode within ``most`` decisions in all (at least one episode; None: not cut)."""
    from case_studies.scheduling.environment import episode_lengths

    lengths = episode_lengths(episodes, first, maximum)
    if most is None:
        return lengths
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ConfigError("agent_decisions", most, reason="must be an integer >= 1")
    kept: list[int] = []
    for length in lengths:
        if kept and sum(kept) + length > most:
            break
        kept.append(length)
    return kept


Curve = float | str | None
"""A batch-latency curve for the suite: None (the workloads' own), a fixed share, or a shipped profile's name."""


def curve_label(curve: Curve) -> str:
    """How reports name ``curve``: "fixed share 0.8" for the shipped one, else the share or the profile."""
    if curve is None or curve == DEFAULT_PROFILE:
        return f"fixed share {ACCELERATOR_FIXED_SHARE:g} (ASSUMED)"
    if isinstance(curve, str):
        return f"profile {curve}"
    return f"fixed share {curve:g} (ASSUMED)"


def curve_profile(workload: Workload, curve: Curve) -> BatchProfile | list[BatchProfile] | None:
    """The execution times of ``workload`` under ``curve`` (module docstring): None for the workload's own; the
    Azure-like families are re-scaled from the chosen ResNet-50 curve. An unknown profile name raises
    ``ConfigError`` naming the shipped ones."""
    if curve is None or curve == DEFAULT_PROFILE or curve == ACCELERATOR_FIXED_SHARE:
        return None
    if isinstance(curve, str):  # as ``wield run scheduling --profile`` times the workload
        return workload_curves(workload.model_profiles, curve, workload.n_models) or None
    if workload.model_profiles:
        curves = {name: family_curve(family_by_name(name), curve) for name in set(workload.model_profiles)}
        return [curves[name] for name in workload.model_profiles]
    return linear_profile(fixed_share=curve, name=f"accelerator-share-{curve:g}")


def share_profile(workload: Workload, fixed_share: float | None) -> BatchProfile | list[BatchProfile] | None:
    """Deprecated: ``curve_profile(workload, fixed_share)`` (removed in the next release)."""
    warnings.warn("suite.share_profile is deprecated and will be removed in the next release; use "
                  "suite.curve_profile(workload, curve)", DeprecationWarning, stacklevel=2)
    return curve_profile(workload, fixed_share)


def _curve(curve: Curve, deprecated: Mapping[str, Any], where: str) -> Curve:
    """``curve``, or the value of the deprecated keyword ``fixed_share=`` (with a ``DeprecationWarning``)."""
    unknown = sorted(set(deprecated) - {"fixed_share"})
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if "fixed_share" not in deprecated:
        return curve
    warnings.warn(f"{where}(fixed_share=...) is deprecated and will be removed in the next release; use "
                  f"{where}(curve=...)", DeprecationWarning, stacklevel=3)
    return deprecated["fixed_share"]


def _figures(metrics: Any, episode_return: float | None = None) -> dict[str, Any]:
    from case_studies.scheduling.plugin import served

    return served(metrics, episode_return)


def tune_clockwork(cell: Cell, seed: int, curve: Curve = None, **deprecated: Any) -> tuple[float, dict[float, float]]:
    """Clockwork's lookahead chosen on seed ``seed``'s validation draw (``runner.tune_lookahead``), and the SLO
    satisfaction (%) every value of the grid met there."""
    from case_studies.scheduling.runner import tune_lookahead

    curve = _curve(curve, deprecated, "tune_clockwork")

    validation = cell.validation_workload(seed)
    return tune_lookahead(validation, cell.gpus, profile=curve_profile(validation, curve))


def heuristic_rows(cell: Cell, seed: int, curve: Curve = None, **deprecated: Any) -> dict[str, Any]:
    """Every heuristic rung (``HEURISTIC_ROWS``) on seed ``seed``'s test instance: ``methods`` (name ->
    ``plugin.served`` figures), the chosen ``lookahead_ms`` and the ``validation`` grid ([ms, SLO %] pairs)."""
    from case_studies.scheduling.batched_policy import BatchedPolicy
    from case_studies.scheduling.environment import DEFAULT_REWARD, evaluation_env
    from case_studies.scheduling.rules import UrgentBatch
    from case_studies.scheduling.runner import run_baseline
    from case_studies.scheduling.simulator import SUPPORTED_BATCH_SIZES
    from case_studies.scheduling.system import SLOTS
    from case_studies.scheduling.vector_training import serve
    from wield.workflows import evaluate_policy

    curve = _curve(curve, deprecated, "heuristic_rows")
    chosen, grid = tune_clockwork(cell, seed, curve)
    test = cell.test_workload(seed)
    profile = curve_profile(test, curve)
    methods: dict[str, dict[str, Any]] = {
        "clockwork-tuned": _figures(run_baseline(test, "clockwork", cell.gpus, profile, lookahead_ms=chosen))}
    for name in ("clockwork", "edf", "fifo"):
        methods[name] = _figures(run_baseline(test, name, cell.gpus, profile))
    played = evaluate_policy(evaluation_env([test], cell.gpus, DEFAULT_REWARD, profile), UrgentBatch(profile), 1)
    methods["urgent-batch"] = _figures(played.metrics[0]["episode"], played.returns[0])
    uniform = BatchedPolicy.uniform([len(SUPPORTED_BATCH_SIZES), 2] * SLOTS, seed=int(seed))
    random = serve(uniform, [test], [cell.gpus], DEFAULT_REWARD, explore=True, profile=profile)[0]
    methods["random"] = _figures(random["episode"], random["return"])
    return {"methods": methods, "lookahead_ms": chosen, "validation": [[ms, score] for ms, score in grid.items()]}


def agent_row(cell: Cell, seed: int, lengths: Sequence[int], envs: int,
              curve: Curve = None, masks: str = "fit", **deprecated: Any) -> dict[str, Any]:
    """MaskablePPO trained on the cell (``lengths``: decisions per episode; ``envs`` environments; the
    checkpoint with the best validation score kept), scored on seed ``seed``'s test instance: its figures,
    the decisions trained on, the kept episode and the wall seconds of training. ``masks``: the task design's
    mask design (``task_design.MASK_DESIGNS``), in training, validation and test alike."""
    from case_studies.scheduling.environment import DEFAULT_REWARD
    from case_studies.scheduling.vector_training import serve, train_maskable_ppo

    curve = _curve(curve, deprecated, "agent_row")
    validation = cell.validation_workload(seed)
    profile = curve_profile(validation, curve)
    result = train_maskable_ppo(lambda env, episode: cell.training_workload(seed, env, episode), cell.gpus,
                                list(lengths), DEFAULT_REWARD, [validation], int(seed), envs=envs, profile=profile,
                                progress=False, masks=masks)
    test = cell.test_workload(seed)
    played = serve(result.policy, [test], [cell.gpus], DEFAULT_REWARD, profile=profile, masks=masks)[0]
    return {"figures": _figures(played["episode"], played["return"]), "decisions": result.decisions,
            "best_episode": result.best_episode, "train_s": result.train_s + result.evaluate_s,
            "curve": result.curve}


@dataclass(frozen=True)
class Comparison:
    """Method A against method B, paired by seed, in points of SLO satisfaction (A - B): the outcome
    (better, worse or indistinguishable at 95%), the mean difference, its 95% t-interval (None with fewer
    than two seeds) and the seeds where A was ahead."""

    outcome: str
    mean: float
    low: float | None
    high: float | None
    wins: int
    seeds: int

    def line(self, a: str = "agent", b: str = "tuned clockwork") -> str:
        interval = (f"[{self.low:+.1f}, {self.high:+.1f}]" if self.low is not None and self.high is not None
                    else "[no interval: one seed]")
        return (f"{a} vs {b}: {self.outcome} (mean difference {self.mean:+.1f} points {interval}, "
                f"wins {self.wins}/{self.seeds})")


def compare(a: Sequence[float], b: Sequence[float]) -> Comparison:
    """``a`` against ``b``, each one SLO satisfaction (%) per seed in the same order: the paired t-interval of
    the differences (``wield.protocols.paired_rung``); better or worse only when it excludes 0."""
    from wield.protocols import paired_rung

    if len(a) != len(b) or not a:
        raise ConfigError("compare", f"{len(a)} and {len(b)} values", reason="needs one value per seed for both")
    rung = paired_rung("b", "heuristic", [[float(v)] for v in a], [[float(v)] for v in b])
    return Comparison(rung.outcome, rung.mean_difference, rung.ci_low, rung.ci_high, int(rung.wins or 0), len(a))


def ceiling(rows: Mapping[str, Sequence[float]]) -> tuple[str, float]:
    """The best method of a cell by mean SLO satisfaction over seeds, and that mean: the cell's ceiling."""
    means = {name: sum(values) / len(values) for name, values in rows.items() if values}
    if not means:
        raise ConfigError("rows", {}, reason="needs at least one method's values")
    best = max(means, key=lambda name: means[name])
    return best, means[best]
