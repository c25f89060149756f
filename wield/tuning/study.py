"""A resumable Optuna study in a tune directory: ``wield tune CASE --out DIR``.

``DIR`` holds:

- ``tune.json``: what the study is (case study, learner, the base options of its runs, the search space, the
  seeds, the sampler's seed, pruning). Rerunning ``wield tune`` with the same settings and ``--out`` resumes the
  study (``--trials`` may be raised); other settings are refused, naming the first that differs;
- ``study.journal``: Optuna's journal storage (``JournalStorage`` over ``JournalFileBackend``; an append-only
  log, so ``kill -9`` loses at most the trial in progress);
- ``trials/NNNN/seed-S/``: the run record of trial NNNN's run with seed S (``wield run`` writes it, with its
  ``config.toml``);
- ``trials.json`` (every trial: number, state, hyperparameters, objective, score per seed) and ``best.toml``
  (the best trial's first run's ``config.toml``: ``wield run CASE --config DIR/best.toml`` reruns it), both
  written atomically after every trial.

A study is run by one process at a time (it claims ``DIR``, ``wield.workflows.ownership``), so a trial that
the journal says is running when the study opens belonged to a process that died (``kill -9``, a lost
machine): it is marked failed and its hyperparameters are queued to run again first (``study.enqueue_trial``,
with the user attribute ``retry_of``). Finished trials (complete or pruned) are never rerun; the study runs
trials until ``--trials`` of them have finished. A trial whose run raises an error is marked failed and the
study stops with that error (a rerun goes on with new trials; the failed one is not retried).

Trials run through one top-level function (``run_tuning_trial``), in this process or, with ``--workers W``, W at a
time in the local process pool of ``wield.workflows.executors`` (its workers end when this process dies): W
trials are asked of the sampler at once (TPE's constant liar keeps them apart), each reports its training
curve and its scores to the study itself, and this process tells each its outcome as it ends; the next W
start when the batch has ended.

Sampling: TPE (``TPESampler``) seeded with ``--sampler-seed`` (on a resume, with a seed derived from it and the
number of trials so far, so the resumed sampler does not replay the first trials' draws), with
``n_startup_trials`` = half the trials (at most 10) of random draws first. Pruning: ``MedianPruner`` on the
training curve: after every training episode, the running mean of the episode returns of the run in progress
is reported (step = episodes trained so far in the trial, over its seeds); from the sixth trial on, a trial
below the median of the earlier trials at the same step, past the first half of its first run's episodes, is
stopped and recorded as pruned (its run record says failed, ``TrialPruned``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from wield.errors import ConfigError, MissingDependency
from wield.io import atomic_write_json, atomic_write_text, read_json
from wield.seeding import derive_seed
from wield.tuning.runs import RunTemplate
from wield.tuning.space import Space
from wield.workflows.ownership import LOCK_FILE

SPEC_FILE = "tune.json"
JOURNAL = "study.journal"
TRIALS_FILE = "trials.json"
BEST_FILE = "best.toml"
STUDY_NAME = "wield-tune"
PRUNER_STARTUP_TRIALS = 5
MAX_STARTUP_TRIALS = 10
INSTALL_HINT = "pip install 'wield[tune]'"


def import_optuna() -> Any:
    """The ``optuna`` module, or a one-line ``MissingDependency`` naming the extra to install."""
    try:
        import optuna
    except ImportError:
        raise MissingDependency(f"wield tune needs Optuna: {INSTALL_HINT}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # Wield prints its own line per trial
    return optuna


@dataclass(frozen=True)
class TuneSpec:
    """What a study is; ``tune.json``. A resume must give the same (``trials`` may differ)."""

    case_study: str
    learner: str
    base: dict[str, Any]  # the base run's config.toml table, without its seed
    space: dict[str, Any]  # the [tune.space] table
    seeds: list[int]
    sampler_seed: int
    pruning: bool

    def differences(self, recorded: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        """Where ``recorded`` (a ``tune.json``) differs from this spec: (dotted key, recorded, now), innermost."""
        return _differences("", recorded, json.loads(json.dumps(asdict(self))))


def _differences(prefix: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in [*new, *(k for k in old if k not in new)]:
            found += _differences(f"{prefix}.{key}" if prefix else str(key), old.get(key), new.get(key))
        return found
    return [] if old == new else [(prefix, old, new)]


@dataclass
class TrialOutcome:
    """One Optuna trial as the table and ``trials.json`` show it."""

    number: int
    state: str
    params: dict[str, Any]
    objective: float | None
    scores: dict[str, float] = field(default_factory=dict)  # seed -> the run's held-out greedy score
    pruned_at: int | None = None  # the step (episodes trained in the trial) it was pruned at
    retry_of: int | None = None
    error: str | None = None


class Tuner:
    """A study in ``out``: open it (``open``), run trials until ``trials`` have finished (``run``), close it."""

    def __init__(self, out: Path, spec: TuneSpec, space: Space, template: RunTemplate,
                 echo: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> None:
        """``echo`` prints the progress lines (``silent``: none); ``template`` makes the trials' runs."""
        self.out = out
        self.spec = spec
        self.space = space
        self.template = template
        self.echo = echo
        self._lock: Any = None
        self.warmup_steps = 0
        self.study: Any = None
        self.optuna: Any = None

    def open(self, trials: int, warmup_steps: int) -> "Tuner":
        """Claim ``out``, check or write ``tune.json``, load or create the study and mark the trials of a
        dead process failed (queued to run again)."""
        from wield.workflows.ownership import DirectoryLock

        optuna = self.optuna = import_optuna()
        self.warmup_steps = warmup_steps
        self.check_spec()
        self._lock = DirectoryLock.acquire(self.out, "out", what="tune directory")
        try:
            self.check_spec()  # again, now that the directory is ours
            atomic_write_json(self.out / SPEC_FILE, asdict(self.spec))
            journal = self.out / JOURNAL
            if journal.is_symlink():
                raise ConfigError("out", str(self.out), reason=f"its {JOURNAL} is a symbolic link, which Wield does "
                                                               "not follow; remove it")
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            storage = JournalStorage(JournalFileBackend(str(journal)))
            existing = (optuna.load_study(study_name=STUDY_NAME, storage=storage)
                        if STUDY_NAME in optuna.get_all_study_names(storage) else None)
            done = len(existing.trials) if existing is not None else 0
            seed = self.spec.sampler_seed if done == 0 else derive_seed(self.spec.sampler_seed, "resume", done) % 2**32
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(1, min(MAX_STARTUP_TRIALS,
                                                                                       trials // 2)))
            pruner = make_pruner(optuna, self.spec.pruning, warmup_steps)
            self.study = optuna.create_study(study_name=STUDY_NAME, storage=storage, sampler=sampler, pruner=pruner,
                                             direction="maximize", load_if_exists=True)
            self._recover()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def check_spec(self) -> None:
        """Refuse an ``out`` that holds another study (or something else), before anything is written."""
        from wield.workflows.ownership import check_path

        check_path(self.out, "out")  # the ownership policy (planted links) before anything in it is read
        path = self.out / SPEC_FILE
        if not path.exists():
            found = sorted(p.name for p in self.out.iterdir() if p.name != LOCK_FILE) if self.out.is_dir() else []
            if found:
                raise ConfigError("out", str(self.out), reason=(
                    f"is not a wield tune directory (no {SPEC_FILE}; it holds {', '.join(found[:3])}"
                    f"{', ...' if len(found) > 3 else ''}): choose another --out"))
            return
        recorded = read_json(path)
        differing = self.spec.differences(recorded if isinstance(recorded, dict) else {})
        if differing:
            name, old, new = differing[0]
            raise ConfigError("out", str(self.out), reason=(
                f"holds a tune study with other settings ({name}: recorded {json.dumps(old)[:80]}, now "
                f"{json.dumps(new)[:80]}); rerun it with its own settings to resume it, or choose another --out"))

    def _recover(self) -> None:
        """Trials left running by a dead process: failed, and their hyperparameters queued to run again."""
        states = self.optuna.trial.TrialState
        for trial in self.study.get_trials(deepcopy=False, states=(states.RUNNING,)):
            self.study.tell(trial.number, state=states.FAIL)
            self.echo(f"tune: trial {trial.number} was left running by a process that is gone: marked failed, "
                      "its hyperparameters run again")
        retried = {t.user_attrs.get("retry_of") for t in self.study.get_trials(deepcopy=False)}
        for trial in self.study.get_trials(deepcopy=False, states=(states.FAIL,)):
            if "error" in trial.user_attrs or trial.number in retried or not trial.params:
                continue
            self.study.enqueue_trial(dict(trial.params), user_attrs={"retry_of": trial.number})

    def finished(self) -> list[Any]:
        states = self.optuna.trial.TrialState
        return self.study.get_trials(deepcopy=False, states=(states.COMPLETE, states.PRUNED))

    def run(self, trials: int, workers: int = 1, executor_kind: str = "local",
            address: str | None = None) -> list[TrialOutcome]:
        """Run trials until ``trials`` have finished (complete or pruned), ``workers`` at a time on the executor
        ``executor_kind`` of ``wield.workflows.executors`` ("local": a process pool, or this process when
        ``workers`` is 1; "ray": Ray tasks, on a local instance or the cluster at ``address``); every trial's
        outcome."""
        from wield.workflows.executors import make_executor

        if len(self.finished()) >= trials:
            self.echo(f"tune: {len(self.finished())} trials already finished in {self.out} (--trials {trials})")
        executor = make_executor(executor_kind, workers, address)
        try:
            while len(self.finished()) < trials:
                self._run_batch(executor, min(workers, trials - len(self.finished())), trials)
        finally:
            executor.close()
        return self.outcomes()

    def _run_batch(self, executor: Any, size: int, trials: int) -> None:
        """Ask ``size`` trials (TPE's constant liar keeps them apart), run them on ``executor`` and tell each
        its outcome as it ends. An error or an interruption marks the batch's unfinished trials failed (an
        interrupted one, without a recorded error, runs again on resume) and is raised."""
        optuna = self.optuna
        states = optuna.trial.TrialState
        asked: list[tuple[Any, dict[str, Any]]] = []
        for _ in range(size):
            trial = self.study.ask()
            params = {name: dimension.suggest(trial) for name, dimension in self.space.items()}
            retry = trial.user_attrs.get("retry_of")
            again = f", again as trial {retry} was interrupted" if retry is not None else ""
            self.echo(f"tune: trial {trial.number} ({len(self.finished()) + len(asked) + 1} of {trials}{again}): "
                      + ", ".join(f"{k}={_short(v)}" for k, v in params.items()))
            asked.append((trial, params))
        arguments = [(self.spec.case_study, self.template.base, params, list(self.spec.seeds), str(self.out),
                      trial.number, self.spec.pruning, self.warmup_steps, self.echo is not silent)
                     for trial, params in asked]
        told: set[int] = set()
        try:
            for index, result in executor.run(run_tuning_trial, arguments):
                trial = asked[index][0]
                told.add(index)
                if result["pruned_at"] is not None:
                    self.study.tell(trial, state=states.PRUNED)
                    self.echo(f"  trial {trial.number} pruned: below the median of earlier trials at step "
                              f"{result['pruned_at']}")
                else:
                    objective = sum(result["scores"].values()) / len(result["scores"])
                    self.study.tell(trial, objective)
                    best = self.study.best_trial.number == trial.number
                    self.echo(f"  trial {trial.number}: objective {objective:.4f} (mean over {len(result['scores'])} "
                              "seed(s))" + ("; best so far" if best else ""))
                self.write_results()
        except BaseException:
            for index, (trial, _) in enumerate(asked):
                if index not in told:
                    self.study.tell(trial, state=states.FAIL, skip_if_finished=True)
            self.write_results()
            raise

    def outcomes(self) -> list[TrialOutcome]:
        """Every trial so far; a failed trial that ran again (``retry_of``) says "interrupted"."""
        trials = self.study.get_trials(deepcopy=False)
        retried = {t.user_attrs.get("retry_of") for t in trials} - {None}
        rows = []
        for trial in trials:
            interrupted = trial.user_attrs.get("interrupted") or trial.number in retried
            rows.append(TrialOutcome(
                trial.number, trial.state.name.lower(), self.values(trial.params),
                trial.value if trial.state.name == "COMPLETE" else None,
                dict(trial.user_attrs.get("scores") or {}), trial.user_attrs.get("pruned_at"),
                trial.user_attrs.get("retry_of"),
                trial.user_attrs.get("error") or ("interrupted" if interrupted else None)))
        return rows

    def values(self, params: dict[str, Any]) -> dict[str, Any]:
        """The hyperparameters' values for what Optuna recorded (choices of lists are recorded as their text)."""
        return {name: self.space[name].value(value) if name in self.space else value for name, value in params.items()}

    def best(self, outcomes: list[TrialOutcome] | None = None) -> TrialOutcome | None:
        """The complete trial with the highest objective (the first such, on ties) of ``outcomes`` (default:
        every trial so far), or ``None``."""
        complete = [o for o in (self.outcomes() if outcomes is None else outcomes) if o.objective is not None]
        return max(complete, key=lambda o: (o.objective, -o.number)) if complete else None

    def write_results(self) -> None:
        """``trials.json`` and ``best.toml`` (the ``config.toml`` table of the best trial's run with the first
        seed), each written whole (a temporary file renamed over it)."""
        from wield.command_config import to_toml

        outcomes = self.outcomes()
        atomic_write_json(self.out / TRIALS_FILE, {"spec": asdict(self.spec), "trials": [asdict(o) for o in outcomes]})
        best = self.best(outcomes)
        if best is None:
            return
        table = self.template.run_table(best.params, self.spec.seeds[0])
        header = (f"# The best configuration of the tune study in this directory: trial {best.number}, objective "
                  f"{best.objective:.6g} (the held-out greedy score's mean over seeds "
                  f"{', '.join(map(str, self.spec.seeds))}); its run with seed {self.spec.seeds[0]}.\n"
                  f"# Rerun it: wield run {self.spec.case_study} --config {BEST_FILE} --out OTHER_DIR\n")
        atomic_write_text(self.out / BEST_FILE, header + to_toml(table))


def make_pruner(optuna: Any, pruning: bool, warmup_steps: int) -> Any:
    """``MedianPruner`` (from the sixth trial on, past ``warmup_steps``), or none."""
    if not pruning:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=warmup_steps)


def silent(line: str) -> None:
    """An echo that prints nothing (``--quiet``)."""


def run_tuning_trial(case_study: str, base: dict[str, Any], params: dict[str, Any], seeds: list[int], out: str,
                     number: int, pruning: bool, warmup_steps: int, echo: bool) -> dict[str, Any]:
    """Run trial ``number`` of the study in ``out``: ``wield run CASE`` with ``params`` once per seed, reporting
    its training curve to the study for pruning. Returns ``{"scores": {seed: score}, "pruned_at": step or
    None}``; an error is recorded as the trial's user attribute ``error`` and raised. A top-level function of
    picklable arguments: the executors run it in this process or in a pool worker."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    from wield.plugins import get_case_study

    optuna = import_optuna()
    storage = JournalStorage(JournalFileBackend(str(Path(out) / JOURNAL)))
    study = optuna.load_study(study_name=STUDY_NAME, storage=storage,
                              pruner=make_pruner(optuna, pruning, warmup_steps))
    trial = optuna.trial.Trial(study, storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(STUDY_NAME), number))
    template = RunTemplate(get_case_study(case_study), base)
    curve = _Curve(trial, optuna.TrialPruned)
    scores: dict[str, float] = {}
    try:
        for seed in seeds:
            curve.returns = []  # each run's curve: the running mean of its own episodes' returns
            started = time.monotonic()
            record = Path(out) / "trials" / f"{number:04d}" / f"seed-{seed}"
            scores[str(seed)] = template.run_seed(template.run_table(params, seed), record, curve)
            trial.set_user_attr("scores", dict(scores))
            if echo:
                print(f"  trial {number}, seed {seed}: held-out greedy score {scores[str(seed)]:.4f} "
                      f"({time.monotonic() - started:.0f} s; run record {record})", file=sys.stderr, flush=True)
    except optuna.TrialPruned:
        return {"scores": scores, "pruned_at": curve.step - 1}
    except Exception as exc:
        trial.set_user_attr("error", f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return {"scores": scores, "pruned_at": None}


class _Curve:
    """Reports a trial's training curve for pruning: after each training episode, the running mean of the
    returns of the run in progress at step = episodes trained so far in the trial; stops the trial (raises
    ``pruned``) when the pruner says so."""

    def __init__(self, trial: Any, pruned: type[Exception]) -> None:
        self.trial = trial
        self.pruned = pruned
        self.step = 0
        self.returns: list[float] = []

    def __call__(self, result: Any) -> None:
        step, self.step = self.step, self.step + 1
        reward = float(result.total_reward)
        if math.isfinite(reward):
            self.returns.append(reward)
        if self.returns:
            self.trial.report(sum(self.returns) / len(self.returns), step)
        if self.trial.should_prune():
            self.trial.set_user_attr("pruned_at", step)
            raise self.pruned(f"below the median of earlier trials at step {step}")


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)
