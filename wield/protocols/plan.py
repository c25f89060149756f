"""Trial plans: (randomisation class, number of trials, base seed) -> the seeds of every trial.

A trial's seeds are derived from the base seed and a name path. What a class fixes is derived without the
trial index (so every trial shares it); what it randomises is derived with it (so every trial differs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping

from wield.tables import format_table
from wield.errors import ConfigError
from wield.protocols.classes import RandomisationClass, get_class
from wield.seeding import derive_seed

SEED_FIELDS = ("train_workload_seed", "test_workload_seed", "optimisation_seed")
MAX_TRIALS = 100_000


@dataclass(frozen=True)
class TrialSeeds:
    """Everything random about one trial.

    ``train_workload_seed`` generates the training workload: the one instance in blackbox mode, the
    per-episode instances in generalisation mode. ``test_workload_seed`` generates the test workload
    (equal to the training seed in blackbox mode) from ``test_distribution`` ("in" or "out").
    ``optimisation_seed`` seeds weight initialisation, minibatch sampling and exploration.
    """

    trial: int
    mode: str
    train_workload_seed: int
    test_workload_seed: int
    test_distribution: str
    optimisation_seed: int

    def as_dict(self) -> dict:
        return asdict(self)


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
            train = seed("train-workload", t, rc.randomised_workload)
            test = train if not rc.generalisation else seed("test-workload", t, rc.randomised_workload)
            plan.append(TrialSeeds(
                trial=t, mode=rc.mode, train_workload_seed=train, test_workload_seed=test,
                test_distribution="out" if rc.out_of_distribution else "in",
                optimisation_seed=seed("optimisation", t, rc.random_optimisation_seed)))
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
