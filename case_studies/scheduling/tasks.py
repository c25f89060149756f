"""Which workloads a scheduling trial trains and tests on, under each randomisation class C0-C6.

A task shape is a low-SLO workload's ``(rate, models, slo_ms, gpus)``. The configured shape (default: the
hard training workload, 2,400 r/s over 48 ResNet-50 instances, SLO 24 ms, 6 GPUs) is the task of the fixed
classes; the randomised ones draw shapes from ``SHAPES`` with the workload seed:

| class  | training workloads                                  | test workload                              |
|--------|-----------------------------------------------------|--------------------------------------------|
| C0, C1 | the configured shape, one fixed instance            | the same instance                          |
| C2     | a shape and instance drawn per trial                | the same instance                          |
| C3     | a drawn shape per episode (fixed list)              | a drawn low-SLO shape (fixed)              |
| C4     | a drawn shape per episode (new list per trial)      | a drawn low-SLO shape (new per trial)      |
| C5     | as C3                                               | held out: the Azure-like workload (fixed)  |
| C6     | as C4                                               | held out: the Azure-like workload (new)    |

The held-out test is the SYNTHETIC Azure-like workload (``families.azure_like_workload``: 4,026 instances,
about 9,500 r/s, SLO 100 ms, 12 GPUs; no real trace ships with Wield), or, with ``trace``, minutes of a real
Azure Functions trace file. Its shape (thousands of models with heavy-tailed popularity, bursty rates, 12
GPUs, a 100 ms SLO) appears in no training workload.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from case_studies.scheduling.azure_trace import FunctionTrace, azure_trace_workload, read_azure_trace
from case_studies.scheduling.families import AZURE_GPUS, azure_like_workload, low_slo_workload, multi_slo_workload
from case_studies.scheduling.workload import Workload
from wield.configs import is_finite_number
from wield.errors import ConfigError
from wield.protocols import TrialSeeds
from wield.seeding import make_rng

# The shapes the randomised classes draw from (the low-SLO experiment's grid without its trivial and its
# impossible corners: 600 r/s is easy for any policy, and SLOs of 3-6 ms are below the 1 ms decision
# interval's reach).
SHAPE_RATES = (1200.0, 2400.0)
SHAPE_MODELS = (12, 48)
SHAPE_SLOS_MS = (12.0, 24.0, 48.0)


# The workloads of the configured task (``--workload``), each served on --gpus GPUs at --rate r/s in total:
# hard (the modelled study's hard workload: one SLO over --models ResNet-50 instances, 2,400 r/s, 48 models,
# 24 ms by default; --slo-ms, --models and --rate apply), easy (the same at the study's 96 ms SLO; --slo-ms
# does not apply), low-slo (another name of hard, as before), multi-slo (SLO classes 10, 25 and 100 ms, 4
# ResNet-50 instances each), azure-like (the SYNTHETIC Azure-like workload, 4,026 instances of 11 ASSUMED
# model families, SLO 100 ms; whole seconds) and trace (minutes of a real Azure Functions trace file,
# --trace FILE, on the Azure-like workload's instances and families, SLO 100 ms).
WORKLOAD_FAMILIES = ("hard", "easy", "low-slo", "multi-slo", "azure-like", "trace")
LOW_SLO_NAMES = ("hard", "easy", "low-slo")  # one SLO over ResNet-50 instances: the low-slo family
DEFAULT_SLO_MS = 24.0  # --slo-ms: the hard workload's SLO
EASY_SLO_MS = 96.0  # the modelled study's easy workload
# the task design's mask designs (task_design; the first is the default), here where the command line reads them
# without importing the simulator
MASK_DESIGNS = ("fit", "late", "late-idle", "late-idle-joint")


@lru_cache(maxsize=2)
def _read_trace(path: str, stamp: tuple[int, int]) -> FunctionTrace:
    """A trace file parsed once per (path, modification time and size): a trial builds several workloads."""
    return read_azure_trace(path)


def trace_file(path: str) -> FunctionTrace:
    """The parsed trace at ``path`` (re-read when the file changes)."""
    stat = os.stat(path) if os.path.isfile(path) else None
    return _read_trace(path, (stat.st_mtime_ns, stat.st_size)) if stat else read_azure_trace(path)


@dataclass(frozen=True)
class Shape:
    """A task: ``rate`` r/s in total, ``gpus`` GPUs and the ``family``'s workload: for low-slo ``models``
    instances with one SLO (``slo_ms``); multi-slo and azure-like have their own models and SLOs."""

    rate: float
    models: int
    slo_ms: float
    gpus: int
    family: str = "low-slo"
    trace: str = ""  # the trace file of the trace family

    def workload(self, duration_s: float, seed: int) -> Workload:
        if self.family == "multi-slo":
            return multi_slo_workload(self.rate, duration_s=duration_s, seed=seed)
        if self.family == "azure-like":
            return azure_like_workload(duration_s=max(1, int(round(duration_s))), seed=seed, total_rate=self.rate)
        if self.family == "trace":  # the first duration_s seconds of the trace's first minutes
            return azure_trace_workload(trace_file(self.trace), minutes=max(1, math.ceil(duration_s / 60.0)),
                                        total_rate=self.rate, seed=seed, seconds=float(duration_s))
        return low_slo_workload(self.rate, self.models, self.slo_ms, duration_s, seed)


@dataclass(frozen=True)
class TrialTasks:
    """The training workloads (one per episode, cycled), their GPUs, the test workload and its GPUs, and the
    short validation workload of the training shape that the training curve evaluates on and the best
    checkpoint is chosen by (drawn with the trial's selection seed, never evaluated on)."""

    train: list[Workload]
    train_gpus: int
    test: Workload
    test_gpus: int
    curve: Workload
    held_out: bool
    train_seeds: tuple[int, ...] = ()
    selection_seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class VerdictTasks:
    """The learning verdict's instances: ``workloads`` drawn with ``seeds`` from the trial's test
    distribution, served on ``gpus`` GPUs each, and what they are (``description``)."""

    workloads: list[Workload]
    gpus: list[int]
    seeds: tuple[int, ...]
    description: str


# what each --workload ignores of --models and --slo-ms, and why (the rest of the shape options apply to all)
IGNORED_BY_WORKLOAD: dict[str, dict[str, str]] = {
    "easy": {"slo_ms": "the easy workload is the modelled study's 96 ms SLO; for another SLO use --workload hard "
                       "--slo-ms {value:g}"},
    "multi-slo": {"models": "its 12 ResNet-50 instances are fixed, 4 per SLO class",
                  "slo_ms": "its SLO classes are fixed at 10, 25 and 100 ms"},
    "azure-like": {"models": "its 4,026 instances are fixed", "slo_ms": "its SLO is fixed at 100 ms"},
    "trace": {"models": "the trace's instances are the Azure-like workload's 4,026",
              "slo_ms": "its SLO is fixed at 100 ms"},
}
TAKES = {"easy": "--rate, --models and --gpus", "multi-slo": "--rate and --gpus", "azure-like": "--rate and --gpus",
         "trace": "--trace, --rate and --gpus"}


def check_given(config: Mapping[str, Any], given: frozenset[str]) -> None:
    """Refuse a shape option given on the command line (``given``: destinations) that the configured workload
    ignores, even at its default value (``--workload easy --slo-ms 24``): a one-line ``ConfigError`` naming
    the option, the workload and what it takes (``CaseStudy.check_given``)."""
    workload = str(config.get("workload") or "low-slo")
    for name, why in IGNORED_BY_WORKLOAD.get(workload, {}).items():
        if name in given:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(name, config[name], reason=f"--workload {workload} ignores {flag} "
                              f"({why.format(value=config[name])}); it takes {TAKES[workload]}")


def configured_shape(config: Mapping[str, Any]) -> Shape:
    """The configured task (a record written before ``workload`` existed: low-slo); hard, easy and low-slo are
    the low-slo family (easy at 96 ms), and trace needs a trace file."""
    name = str(config.get("workload") or "low-slo")
    if name not in WORKLOAD_FAMILIES:
        raise ConfigError("workload", name, WORKLOAD_FAMILIES)
    slo_ms = float(config["slo_ms"])
    if name == "easy":
        if slo_ms != DEFAULT_SLO_MS:
            raise ConfigError("slo_ms", slo_ms, reason=f"--workload easy is the {EASY_SLO_MS:g} ms workload; for "
                              f"another SLO use --workload hard --slo-ms {slo_ms:g}")
        slo_ms = EASY_SLO_MS
    trace = str(config.get("trace") or "")
    if name == "trace" and not trace:
        raise ConfigError("trace", trace, reason="--workload trace needs --trace FILE (an Azure Functions trace "
                          "CSV, invocations_per_function_md.anon.dNN.csv)")
    family = "low-slo" if name in LOW_SLO_NAMES else name
    return Shape(float(config["rate"]), int(config["models"]), slo_ms, int(config["gpus"]), family,
                 trace if family == "trace" else "")


def drawn_shape(seed: int, gpus: int) -> Shape:
    """A shape drawn from the randomised classes' grid with ``seed``."""
    rng = make_rng(int(seed), "scheduling-shape")
    return Shape(float(rng.choice(SHAPE_RATES)), int(rng.choice(SHAPE_MODELS)), float(rng.choice(SHAPE_SLOS_MS)),
                 gpus)


def held_out_workload(config: Mapping[str, Any], seed: int) -> Workload:
    """The out-of-distribution test: the SYNTHETIC Azure-like workload, or minutes of a real trace file."""
    if config.get("trace"):
        minutes = max(1, math.ceil(float(config["test_s"]) / 60.0))
        return azure_trace_workload(trace_file(str(config["trace"])), minutes=minutes, seed=seed)
    return azure_like_workload(duration_s=max(1, int(round(float(config["test_s"])))), seed=seed)


def training_seed(seeds: TrialSeeds) -> int:
    """The trial's training workload seed (0 for a single run's default instance)."""
    return 0 if seeds.train_workload_seed is None else int(seeds.train_workload_seed)


def blackbox_shape(base: Shape, seeds: TrialSeeds) -> Shape:
    """The one task of a blackbox trial: drawn from the seed where the class randomises the workload (C2),
    else the configured shape."""
    if seeds.randomised_workload and base.family == "low-slo":
        return drawn_shape(training_seed(seeds), base.gpus)
    return base  # other families: the configured task, its instance drawn with the seed


def timed(workload: Workload, config: Mapping[str, Any]) -> Workload:
    """``workload`` timed with the run's ``profile`` (``Workload.with_timing``; a record written before the option:
    the default curve, the workload unchanged)."""
    return workload.with_timing(str(config.get("profile") or ""))


def trial_tasks(config: Mapping[str, Any], seeds: TrialSeeds, episodes: int) -> TrialTasks:
    """The workloads of one trial (see the module docstring), timed with the run's ``profile``."""
    tasks = _trial_tasks(config, seeds, episodes)
    return dataclasses.replace(tasks, train=[timed(w, config) for w in tasks.train], test=timed(tasks.test, config),
                               curve=timed(tasks.curve, config))


def _trial_tasks(config: Mapping[str, Any], seeds: TrialSeeds, episodes: int) -> TrialTasks:
    base = configured_shape(config)
    train_s, test_s, curve_s = float(config["train_s"]), float(config["test_s"]), float(config["curve_s"])
    train_seed = training_seed(seeds)
    selection = seeds.selection_seeds(1)
    if seeds.blackbox:
        shape = blackbox_shape(base, seeds)
        train = [shape.workload(train_s, train_seed)]
        test = shape.workload(test_s, train_seed)
        curve = shape.workload(curve_s, selection[0])
        return TrialTasks(train, shape.gpus, test, shape.gpus, curve, False, (train_seed,), selection)
    episode_seeds = [int(s) for s in seeds.train_seeds(episodes)]
    train = [drawn_shape(s, base.gpus).workload(train_s, s) for s in episode_seeds]
    curve = base.workload(curve_s, selection[0])
    test_seed = int(seeds.test_workload_seed if seeds.test_workload_seed is not None else train_seed)
    if seeds.test_distribution == "out":
        return TrialTasks(train, base.gpus, held_out_workload(config, test_seed), AZURE_GPUS, curve, True,
                          tuple(episode_seeds), selection)
    shape = drawn_shape(test_seed, base.gpus)
    return TrialTasks(train, base.gpus, shape.workload(test_s, test_seed), shape.gpus, curve, False,
                      tuple(episode_seeds), selection)


def verdict_tasks(config: Mapping[str, Any], seeds: TrialSeeds, count: int, first: int = 0) -> VerdictTasks:
    """``count`` instances of the trial's test distribution for the learning verdict (the evaluation seed
    stream's ``first .. first + count - 1``): in blackbox classes fresh arrival traces (``curve_s`` seconds) of
    the training task's shape; in generalisation classes a drawn low-SLO shape per instance, or the held-out
    workload (C5, C6). Timed with the run's ``profile``."""
    chosen = _verdict_tasks(config, seeds, count, first)
    return dataclasses.replace(chosen, workloads=[timed(w, config) for w in chosen.workloads])


def _verdict_tasks(config: Mapping[str, Any], seeds: TrialSeeds, count: int, first: int) -> VerdictTasks:
    base = configured_shape(config)
    chosen = seeds.evaluation_seeds(first + count)[first:]
    curve_s = float(config["curve_s"])
    if seeds.blackbox:
        shape = blackbox_shape(base, seeds)
        task = (f"{shape.rate:g} r/s, {shape.models} models, SLO {shape.slo_ms:g} ms" if shape.family == "low-slo"
                else f"{shape.family}, {shape.rate:g} r/s")
        return VerdictTasks([shape.workload(curve_s, s) for s in chosen], [shape.gpus] * count, chosen,
                            f"{curve_s:g} s arrival traces of the training task ({task}, {shape.gpus} GPUs), fresh "
                            "draws")
    if seeds.test_distribution == "out":
        return VerdictTasks([held_out_workload(config, s) for s in chosen], [AZURE_GPUS] * count, chosen,
                            "held-out workloads (" + ("the trace file" if config.get("trace") else
                                                      "the SYNTHETIC Azure-like workload") + ")")
    shapes = [drawn_shape(s, base.gpus) for s in chosen]
    return VerdictTasks([shape.workload(curve_s, s) for shape, s in zip(shapes, chosen)],
                        [shape.gpus for shape in shapes], chosen,
                        f"{curve_s:g} s workloads of drawn low-SLO shapes")


MAX_RATE = 100_000.0  # requests per second (the modelled study's: 2,400)
MAX_SECONDS = 3_600.0  # seconds of one workload
MAX_REQUESTS = 20_000_000  # requests of one workload (rate x seconds): their arrivals are held in memory
MAX_MODELS = 1_000
MAX_GPUS = 1_024
MAX_EPISODES = 1_000_000
MAX_DECISIONS = 100_000_000
MAX_ENVS = 256
DEFAULT_ENVS = 8  # environments MaskablePPO plays every episode in (vector_training)


def check_config(config: Mapping[str, Any]) -> None:
    """Bad values name their field before anything runs (the workload families check the rest): seconds
    above 0, and no workload of more than ``MAX_REQUESTS`` requests (``rate`` x seconds)."""
    for name in ("train_s", "test_s", "curve_s"):
        if not (is_finite_number(config[name]) and 0 < config[name] <= MAX_SECONDS):
            raise ConfigError(name, config[name], reason=f"must be a number of seconds in (0, {MAX_SECONDS:,.0f}]")
    longest = max(("train_s", "test_s", "curve_s"), key=lambda name: float(config[name]))
    rate = config.get("rate")
    if is_finite_number(rate) and rate * float(config[longest]) > MAX_REQUESTS:
        raise ConfigError("rate", rate, reason=(
            f"x {longest} ({config[longest]:g} s) makes {rate * float(config[longest]):,.0f} requests in one "
            f"workload; at most {MAX_REQUESTS:,} (their arrivals are held in memory): lower --rate or --{longest.replace('_', '-')}"))
    if config.get("trace") and not os.path.isfile(str(config["trace"])):
        raise ConfigError("trace", config["trace"], reason="must be an Azure Functions trace file (CSV) that exists")
    configured_shape(config)  # the workload's name, easy's SLO, trace's file
