"""Trial plans: (randomisation class, number of trials, base seed) -> the seeds of every trial.

A trial's seeds are derived from the base seed and a name path. What a class fixes is derived without the
trial index (so every trial shares it); what it randomises is derived with it (so every trial differs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

from wield.configs import is_integer
from wield.tables import format_table
from wield.errors import ConfigError
from wield.protocols.classes import RandomisationClass, get_class
from wield.seeding import derive_seed

SEED_FIELDS = ("train_workload_seed", "test_workload_seed", "optimisation_seed")
MAX_TRIALS = 100_000
MODES = ("blackbox", "generalisation")
DISTRIBUTIONS = ("in", "out")

TRAIN_WORKLOAD_STREAM = "train-workload"  # the seed stream of training workloads
EVALUATION_STREAM = "evaluation-instances"  # the verdict's evaluation instances (wield.protocols.verdict)
SELECTION_STREAM = "selection-instances"  # instances that choose a checkpoint, never evaluated on


@dataclass(frozen=True)
class TrialSeeds:
    """Everything random about one trial: the core's seed vocabulary, handed to every trial function.

    ``train_workload_seed`` generates the training workload: the one instance in blackbox mode, the
    per-episode instances in generalisation mode. ``test_workload_seed`` generates the test workload
    (equal to the training seed in blackbox mode) from ``test_distribution`` ("in" or "out"). A workload
    seed of ``None`` means the case study's default instance (a single run that randomises nothing).
    ``optimisation_seed`` seeds weight initialisation, minibatch sampling and exploration; ``derive(name)``
    gives further independent streams of the trial (a random policy, a baseline's exploration).
    ``base_seed`` is the experiment's base seed; ``shared(name)`` gives streams that every trial of the plan
    shares (a deployment, e.g. the indexing collection). Recorded as ``seeds.json`` in every run record.
    """

    trial: int
    mode: str
    train_workload_seed: int | None
    test_workload_seed: int | None
    test_distribution: str
    optimisation_seed: int
    base_seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError("seeds.mode", self.mode, MODES)
        if self.test_distribution not in DISTRIBUTIONS:
            raise ConfigError("seeds.test_distribution", self.test_distribution, DISTRIBUTIONS)
        if not is_integer(self.trial) or not 0 <= self.trial < MAX_TRIALS:
            raise ConfigError("seeds.trial", self.trial, reason=f"must be an integer from 0 to {MAX_TRIALS - 1:,}")
        for name in (*SEED_FIELDS, "base_seed"):
            value = getattr(self, name)
            if not (value is None and name in SEED_FIELDS[:2]) and not (is_integer(value) and 0 <= value < 2**63):
                raise ConfigError(f"seeds.{name}", value, reason="a seed is an integer from 0 to 2**63 - 1")

    @property
    def blackbox(self) -> bool:
        """Train and evaluate on one workload instance (classes C0-C2)."""
        return self.mode == "blackbox"

    def train_seeds(self, episodes: int) -> list[int | None]:
        """The workload seed of each training episode: blackbox, the one training workload (every episode
        plays it); generalisation, a new workload per episode, derived from ``train_workload_seed``."""
        if self.blackbox or self.train_workload_seed is None:
            return [self.train_workload_seed]
        return [derive_seed(self.train_workload_seed, episode) for episode in range(episodes)]

    @property
    def randomised_workload(self) -> bool:
        """Whether this trial's training workload seed is its own (classes C2, C4, C6) rather than the one
        every trial of the plan shares (C0, C1, C3, C5): a case study may then also draw the task's shape
        (rates, sizes) from the seed, not only its instance."""
        return self.train_workload_seed is not None and \
            self.train_workload_seed != derive_seed(self.base_seed, TRAIN_WORKLOAD_STREAM)

    def evaluation_seeds(self, count: int) -> tuple[int, ...]:
        """Seeds of ``count`` evaluation instances for the learning verdict: draws of the test distribution
        (fresh draws of the training workload's distribution in blackbox mode) from a stream that no
        training episode, selection instance or other stream of the trial uses."""
        return self._instance_seeds(EVALUATION_STREAM, count)

    def selection_seeds(self, count: int) -> tuple[int, ...]:
        """Seeds of ``count`` validation instances that choose a checkpoint (model selection): disjoint from
        the evaluation seeds, so no verdict is computed where the model was selected."""
        return self._instance_seeds(SELECTION_STREAM, count)

    def _instance_seeds(self, stream: str, count: int) -> tuple[int, ...]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError("instances", count, reason="must be a positive integer")
        root = self.test_workload_seed if self.test_workload_seed is not None else self.shared("test-workload")
        return tuple(derive_seed(root, stream, index) for index in range(count))

    def derive(self, *names: object) -> int:
        """An independent seed of this trial for the stream ``names`` (from the optimisation seed)."""
        return derive_seed(self.optimisation_seed, *names)

    def shared(self, *names: object) -> int:
        """A seed for the stream ``names`` that every trial of the plan shares (from the base seed)."""
        return derive_seed(self.base_seed, *names)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrialSeeds":
        """Seeds from ``as_dict()`` (a ``seeds.json``); a missing or unknown key is an error naming it."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError("seeds", unknown[0], names, reason="not a seed of wield.protocols.TrialSeeds "
                              "(a record written before Wield's seed vocabulary cannot be rerun)")
        missing = [n for n in names if n not in data and n != "base_seed"]
        if missing:
            raise ConfigError("seeds", missing[0], reason="missing from the recorded seeds")
        return cls(**dict(data))

    @classmethod
    def single_run(cls, seed: int) -> "TrialSeeds":
        """The seeds of ``wield run NAME --seed SEED`` without ``--class``: trial 0 of the C0 plan."""
        return TrialPlan.make("C0", 1, seed).trials[0]


@dataclass(frozen=True)
class TrialPlan:
    """The seeds of every trial of an experiment under one randomisation class."""

    randomisation_class: RandomisationClass
    trials: tuple[TrialSeeds, ...]
    base_seed: int

    @classmethod
    def make(cls, class_name: str, trials: int, base_seed: int = 0) -> "TrialPlan":
        rc = get_class(class_name)
        if not isinstance(trials, int) or isinstance(trials, bool) or not 1 <= trials <= MAX_TRIALS:
            raise ConfigError("trials", trials, reason=f"must be an integer from 1 to {MAX_TRIALS:,} "
                                                       "(the plan lists every trial's seeds)")
        if not isinstance(base_seed, int) or isinstance(base_seed, bool) or not 0 <= base_seed < 2**63:
            raise ConfigError("seed", base_seed, reason="a base seed is an integer from 0 to 2**63 - 1")

        def seed(name: str, trial: int, randomised: bool) -> int:
            return derive_seed(base_seed, name, trial) if randomised else derive_seed(base_seed, name)

        plan = []
        for t in range(trials):
            train = seed(TRAIN_WORKLOAD_STREAM, t, rc.randomised_workload)
            test = train if not rc.generalisation else seed("test-workload", t, rc.randomised_workload)
            plan.append(TrialSeeds(
                trial=t, mode=rc.mode, train_workload_seed=train, test_workload_seed=test,
                test_distribution="out" if rc.out_of_distribution else "in",
                optimisation_seed=seed("optimisation", t, rc.random_optimisation_seed), base_seed=int(base_seed)))
        return cls(rc, tuple(plan), int(base_seed))

    def pin_task(self, task: Mapping[str, Any]) -> "TrialPlan":
        """The same plan with every trial on one given task (``train_workload_seed``,
        ``test_workload_seed``, ``test_distribution``): what varies is then only the optimisation seed.
        Used to rerun a failing task with more seeds, separating a hard task from a bad seed."""
        trials = tuple(replace(t, train_workload_seed=int(task["train_workload_seed"]),
                               test_workload_seed=int(task["test_workload_seed"]),
                               test_distribution=str(task["test_distribution"])) for t in self.trials)
        return TrialPlan(self.randomisation_class, trials, self.base_seed)

    def shared(self) -> dict[str, bool]:
        """For each seed field, whether every trial uses the same value."""
        return {name: len({getattr(t, name) for t in self.trials}) == 1 for name in SEED_FIELDS}

    def describe(self) -> str:
        """A table of the plan with a line saying which seeds are shared between trials."""
        rc = self.randomisation_class
        shared = self.shared()
        lines = [f"{rc.name} ({rc.mode}; {rc.use}): {len(self.trials)} trials from base seed {self.base_seed}",
                 "shared by all trials: " + (", ".join(k for k, v in shared.items() if v) or "none"),
                 "different per trial:  " + (", ".join(k for k, v in shared.items() if not v) or "none"),
                 format_table([t.as_dict() for t in self.trials],
                              [("trial", "trial", "d"), ("train_workload_seed", "train workload", "d"),
                               ("test_workload_seed", "test workload", "d"),
                               ("test_distribution", "test dist.", None),
                               ("optimisation_seed", "optimisation", "d")])]
        return "\n".join(lines)
