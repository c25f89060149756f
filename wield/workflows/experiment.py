"""Experiments: a trial plan run by an executor into one directory, resumable trial by trial.

Layout::

    EXPERIMENT/experiment.json        what was asked: case study, class, trials, base seed, config, objective
    EXPERIMENT/plan.txt               the trial plan as a table (which seeds are shared, which differ)
    EXPERIMENT/trials/trial-000/      one RunRecord per trial (its summary.json marks it finished)
    EXPERIMENT/classification.json    C_i(n, s, f) over the finished trials

Rerunning the same command on the same directory skips finished trials and reruns the others from scratch
(a trial's partial record is moved aside first, never half-reused). Asking for a different experiment in an
existing directory is an error naming the first field that differs, so nothing recorded is overwritten.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from wield.errors import ConfigError
from wield.io import atomic_write_json, atomic_write_text, read_json
from wield.protocols import TrialPlan
from wield.workflows.executors import Executor, InProcessExecutor

SUMMARY = "summary.json"


@dataclass
class ExperimentSpec:
    """What an experiment is: enough to rerun it, and compared on resume."""

    case_study: str
    class_name: str
    trials: int
    base_seed: int
    config: dict[str, Any] = field(default_factory=dict)
    objective: dict[str, Any] = field(default_factory=dict)
    pinned_task: dict[str, Any] | None = None

    def plan(self) -> TrialPlan:
        plan = TrialPlan.make(self.class_name, self.trials, self.base_seed)
        return plan.pin_task(self.pinned_task) if self.pinned_task else plan


class ExperimentDirectory:
    """The directory of one experiment."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def open(cls, path: str | Path, spec: ExperimentSpec, allow_more_trials: bool = True) -> "ExperimentDirectory":
        """Create the directory for ``spec``, or reopen it if it holds the same experiment."""
        directory = cls(path)
        manifest = directory.path / "experiment.json"
        wanted = asdict(spec)
        if manifest.exists():
            existing = read_json(manifest)
            for key in wanted:
                if key == "trials" and allow_more_trials:
                    continue
                if existing.get(key) != wanted[key]:
                    raise ConfigError(key, wanted[key], reason=(
                        f"{directory.path} holds a different experiment ({key} = {existing.get(key)!r}); "
                        "use another --out or the same settings to resume"))
        directory.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(manifest, wanted)
        atomic_write_text(directory.path / "plan.txt", spec.plan().describe() + "\n")
        return directory

    def spec(self) -> ExperimentSpec:
        return ExperimentSpec(**read_json(self.path / "experiment.json"))

    def trial_path(self, trial: int) -> Path:
        return self.path / "trials" / f"trial-{trial:03d}"

    def summary(self, trial: int) -> dict[str, Any] | None:
        path = self.trial_path(trial) / SUMMARY
        return read_json(path) if path.exists() else None

    def summaries(self) -> list[dict[str, Any]]:
        found = []
        for path in sorted((self.path / "trials").glob("trial-*/" + SUMMARY)):
            found.append(read_json(path))
        return sorted(found, key=lambda s: s["trial"])

    def clear_unfinished(self, trial: int) -> None:
        """Move a trial's partial record aside (kept under ``trials/.incomplete``) before rerunning it."""
        path = self.trial_path(trial)
        if path.exists() and not (path / SUMMARY).exists():
            graveyard = self.path / "trials" / ".incomplete"
            graveyard.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), str(graveyard / f"{path.name}-{time.strftime('%Y%m%d-%H%M%S')}"))


TrialFunction = Callable[[Mapping[str, Any], Mapping[str, Any], str], dict[str, Any]]


def run_trials(directory: ExperimentDirectory, spec: ExperimentSpec, trial_function: TrialFunction,
               executor: Executor | None = None, progress: bool = True,
               on_trial: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every unfinished trial of ``spec``; ``trial_function(config, seeds, directory)`` returns a summary.

    The summary is written last, atomically, as ``summary.json``: a trial without one is unfinished.
    """
    return run_experiments([(directory, spec)], trial_function, executor, progress, on_trial)[0]


def run_experiments(experiments: Sequence[tuple[ExperimentDirectory, ExperimentSpec]], trial_function: TrialFunction,
                    executor: Executor | None = None, progress: bool = True,
                    on_trial: Callable[[dict[str, Any]], None] | None = None) -> list[list[dict[str, Any]]]:
    """Run the unfinished trials of several experiments through one executor, as ``run_trials`` does for
    one; returns each experiment's summaries. Trials are submitted interleaved (trial 0 of every experiment,
    then trial 1, ...), so parallel workers stay busy until the last trial of the last experiment instead
    of waiting at the end of each experiment for its slowest trial."""
    from tqdm.auto import tqdm

    executor = executor or InProcessExecutor()
    todo, total = [], 0
    for directory, spec in experiments:
        trials = spec.plan().trials
        total += len(trials)
        for seeds in trials:
            if directory.summary(seeds.trial) is None:
                directory.clear_unfinished(seeds.trial)
                todo.append((seeds.trial, (dict(spec.config), seeds.as_dict(), str(directory.trial_path(seeds.trial)))))
    todo = [arguments for _, arguments in sorted(todo, key=lambda entry: entry[0])]  # stable: interleaved
    names = ", ".join(dict.fromkeys(spec.class_name for _, spec in experiments))
    with tqdm(total=total, initial=total - len(todo), desc=f"{names} trials", unit="trial",
              disable=not progress) as bar:
        for index, summary in executor.run(trial_function, todo):
            atomic_write_json(Path(todo[index][2]) / SUMMARY, summary)
            if on_trial:
                on_trial(summary)
            bar.update(1)
    return [directory.summaries() for directory, _ in experiments]


def classify_experiment(directory: ExperimentDirectory, objective: "Objective | None" = None,
                        summaries: list[dict[str, Any]] | None = None):
    """C_i(n, s, f) of an experiment's finished trials under its objective (or ``objective``)."""
    from wield.protocols import Objective, TrialOutcome, classify

    spec = directory.spec()
    objective = objective or Objective(**spec.objective)
    summaries = directory.summaries() if summaries is None else summaries
    if summaries:
        objective.validate(summaries[0]["metrics"])
    outcomes = [TrialOutcome(s["trial"], int(s["transitions"]), objective.outcome(s["metrics"]),
                             float(s["metrics"][objective.metric])) for s in summaries]
    return classify(spec.class_name, outcomes)
