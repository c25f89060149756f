"""Experiments: a trial plan run by an executor into one directory, resumable trial by trial.

Layout::

    EXPERIMENT/experiment.json        what was asked: case study, class, trials, base seed, config, objective
    EXPERIMENT/plan.txt               the trial plan as a table (which seeds are shared, which differ)
    EXPERIMENT/trials/trial-000/      one RunRecord per trial (its summary.json marks it finished)
    EXPERIMENT/classification.json    C_i(n, s, f) over the finished trials
    EXPERIMENT/wield.log              what the process running the experiment logged (each run appends;
                                      the trials' own messages are in their records' wield.log)

Rerunning the same command on the same directory skips finished trials and reruns the others from scratch
(a trial's partial record is moved aside first, never half-reused). Asking for a different experiment in an
existing directory is an error naming the first field that differs, so nothing recorded is overwritten;
configuration keys the case study calls *volatile* (where a server is: host, port) are not part of an
experiment's identity, so an experiment resumes against a restarted server. ``--trials`` may grow a plan,
never shrink it below the trials it already has.

One process runs an experiment: ``open`` claims the directory (``wield.workflows.ownership``) and a second
process is refused. Each trial's summary is written by the process that ran the trial, right after it
finished, so a finished trial is kept whichever process dies next.
"""

from __future__ import annotations

import contextlib
import functools
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from wield.errors import ConfigError, DataError, WieldError, shown
from wield.io import atomic_write_json, atomic_write_text, read_json
from wield.logs import RecordLogHandler, attach_record_log, detach_record_log, get_logger
from wield.protocols import Objective, TrialPlan, TrialSeeds, TrialSummary
from wield.protocols.plan import MAX_TRIALS
from wield.protocols.sequential import DEFAULT_CAP
from wield.tracking import current_request
from wield.workflows.executors import Executor, InProcessExecutor
from wield.workflows.ownership import DirectoryLock, is_claimed
from wield.workflows.signals import stop_on_sigterm
from wield.workflows.trial import SUMMARY, run_trial, trial_identity
from wield.workflows.verdict_settings import verdict_cap

MANIFEST = "experiment.json"
COMPARISON = "comparison.json"  # what 'wield compare' writes beside one experiment directory per method
# How long a rerun waits for a worker of a killed run to leave a trial it was still writing.
TRIAL_RELEASE_WAIT_S = 30.0
log = get_logger(__name__)


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

    @classmethod
    def from_dict(cls, data: Any, where: str = MANIFEST) -> "ExperimentSpec":
        """The spec of a manifest; unknown or missing keys and wrong types are a ``DataError`` naming it."""
        types: dict[str, type | tuple[type, ...]] = {"case_study": str, "class_name": str, "trials": int, "base_seed": int, "config": dict,
                 "objective": dict, "pinned_task": (dict, type(None))}
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected a JSON object, found {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise DataError(f"{where}: unknown key {unknown[0]!r}; an experiment manifest holds {names}")
        for name in names:
            if name not in data and name != "pinned_task":
                raise DataError(f"{where}: the key {name!r} is missing")
            if name in data and (not isinstance(data[name], types[name]) or isinstance(data[name], bool)):
                raise DataError(f"{where}: {name!r} must be {_type_name(types[name])}, found {data[name]!r:.80}")
        if not 1 <= data["trials"] <= MAX_TRIALS:
            raise DataError(f"{where}: 'trials' must be from 1 to {MAX_TRIALS:,}, found {shown(data['trials'])}")
        if not 0 <= data["base_seed"] < 2**63:
            raise DataError(f"{where}: 'base_seed' must be from 0 to 2**63 - 1, found {shown(data['base_seed'])}")
        return cls(**data)


def _volatile_of(case_study: str) -> tuple[str, ...]:
    """The configuration keys an installed case study calls volatile (none when it is not installed here)."""
    from wield.plugins import installed

    study = installed(case_study)
    return tuple(study.volatile_config) if study is not None else ()


def _first_difference(directory: Path, spec: ExperimentSpec, seeds: TrialSeeds, volatile: set[str]) -> str | None:
    """The first way a trial's record (``config.json``, ``seeds.json``) differs from ``spec``'s trial
    ``seeds``, as "KEY = THEIRS there, OURS here"; None when they agree or are missing."""
    for name, ours in (("config.json", spec.config), ("seeds.json", seeds.as_dict())):
        try:
            theirs = read_json(directory / name)
        except (OSError, DataError):
            continue
        if not isinstance(theirs, dict):
            return f"{name} is not a JSON object"
        for key in sorted(set(theirs) | set(ours)):
            if key not in volatile and theirs.get(key) != ours.get(key):
                return f"{key} = {theirs.get(key)!r:.60} there, {ours.get(key)!r:.60} in {MANIFEST}"
    return None


def _type_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", dict: "an object", type(None): "null"}
    return " or ".join(names[k] for k in kinds)


class ForeignTrial(DataError):
    """A trial's summary belongs to another experiment (copied in): refused, never counted or rerun over."""


def check_summary(summary: Any, where: str) -> TrialSummary:
    """A trial summary read from ``where`` (its ``trial``, ``transitions`` and ``metrics`` checked first), or
    a ``DataError`` naming the file and the key that is missing or of the wrong type."""
    if not isinstance(summary, dict):
        raise DataError(f"{where}: a trial summary is a JSON object, found {type(summary).__name__}")
    for key, kind in (("trial", int), ("transitions", int), ("metrics", dict)):
        if key not in summary:
            raise DataError(f"{where}: the key {key!r} is missing")
        if not isinstance(summary[key], kind) or isinstance(summary[key], bool):
            raise DataError(f"{where}: {key!r} must be {_type_name(kind)}, found {summary[key]!r:.80}")
    try:
        return TrialSummary.from_dict(summary)
    except (ConfigError, TypeError, ValueError) as exc:
        raise DataError(f"{where}: not a trial summary ({exc})") from None


class ExperimentDirectory:
    """The directory of one experiment. ``open`` claims it for this process until ``close``; as a context
    manager (``with ExperimentDirectory.open(path, spec) as directory:``) it is closed when the block ends,
    so readers in the same process (``wield report``, ``classify``) see it complete, not "running"."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock: DirectoryLock | None = None
        self._log: RecordLogHandler | None = None

    def __enter__(self) -> "ExperimentDirectory":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def open(cls, path: str | Path, spec: ExperimentSpec, allow_more_trials: bool = True,
             volatile: Iterable[str] = ()) -> "ExperimentDirectory":
        """Claim the directory for ``spec`` (created, or reopened if it holds the same experiment; see the
        module docstring); ``volatile`` names configuration keys that may differ on resume."""
        stop_on_sigterm()
        directory = cls(path)
        directory._check_resumable(spec, allow_more_trials, set(volatile))  # refuse before writing anything
        lock = DirectoryLock.acquire(directory.path, "out", what="experiment directory")
        try:
            directory._check_resumable(spec, allow_more_trials, set(volatile))  # again, now that it is ours
            resumed = (directory.path / MANIFEST).exists()
            atomic_write_json(directory.path / MANIFEST, asdict(spec))
            atomic_write_text(directory.path / "plan.txt", spec.plan().describe() + "\n")
            directory._log = attach_record_log(directory.path, trial=False)
        except BaseException:
            lock.release()
            raise
        directory._lock = lock
        log.info("experiment %s %s: %s, class %s, %d trials, base seed %d", directory.path,
                 "resumed" if resumed else "started", spec.case_study, spec.class_name, spec.trials, spec.base_seed)
        log.debug("experiment configuration: %s; objective %s", spec.config, spec.objective)
        return directory

    def _check_resumable(self, spec: ExperimentSpec, allow_more_trials: bool, volatile: set[str]) -> None:
        if (self.path / "trials").exists() and not (self.path / MANIFEST).exists():
            raise ConfigError("out", str(self.path), reason="holds trials but no experiment.json: not an "
                                                            "experiment Wield can resume; choose another --out")
        if (self.path / COMPARISON).exists() or any((child / MANIFEST).exists() for child in self._children()):
            raise ConfigError("out", str(self.path), reason="holds a comparison of methods ('wield compare'), "
                                                            "not one experiment; choose another --out")
        if not (self.path / MANIFEST).exists():
            return
        existing = asdict(self.spec())
        wanted = asdict(spec)
        for key in wanted:
            if key == "trials":
                if wanted[key] < existing[key] or (wanted[key] != existing[key] and not allow_more_trials):
                    raise ConfigError("trials", wanted[key], reason=(
                        f"{self.path} holds an experiment of {existing[key]} trials; resume it with --trials "
                        f"{existing[key]} (or more, to add trials), or use another --out"))
                continue
            if key == "config":
                for name in sorted(set(wanted[key]) | set(existing[key])):
                    if name not in volatile and wanted[key].get(name) != existing[key].get(name):
                        raise ConfigError(name, wanted[key].get(name), reason=(
                            f"{self.path} holds a different experiment ({name} = {existing[key].get(name)!r}); "
                            "use another --out or the same settings to resume"))
                continue
            if existing.get(key) != wanted[key]:
                raise ConfigError(key, wanted[key], reason=(
                    f"{self.path} holds a different experiment ({key} = {existing.get(key)!r}); "
                    "use another --out or the same settings to resume"))

    def _children(self) -> list[Path]:
        try:
            return [child for child in self.path.iterdir() if child.is_dir() and child.name != "trials"]
        except OSError:  # missing or unreadable: opening it says why
            return []

    def close(self) -> None:
        """Give up the claim on the directory (the end of the process does it too) and stop its log."""
        if self._log is not None:
            detach_record_log(self._log)
            self._log = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def spec(self) -> ExperimentSpec:
        path = self.path / MANIFEST
        return ExperimentSpec.from_dict(read_json(path), str(path))

    @property
    def state(self) -> str:
        """"running" while a live process holds the directory, else "complete" when every planned trial
        has its summary, else "unfinished" (rerun the same command to resume it)."""
        if is_claimed(self.path):
            return "running"
        finished = {s.trial for s in self.summaries()}
        return "complete" if set(range(self.spec().trials)) <= finished else "unfinished"

    def stale_trials(self) -> list[int]:
        """Trials whose record says "running" while no live process holds them (their process is gone)."""
        from wield.workflows.run_record import RunRecord

        stale = []
        for path in sorted((self.path / "trials").glob("trial-*")):
            if (path / "status.json").exists() and not (path / SUMMARY).exists() \
                    and RunRecord(path).state == "stale":
                stale.append(int(path.name.split("-")[-1]))
        return stale

    def trial_path(self, trial: int) -> Path:
        return self.path / "trials" / f"trial-{trial:03d}"

    def summary(self, trial: int, spec: ExperimentSpec | None = None) -> TrialSummary | None:
        """The summary of ``trial``, checked to be this experiment's (``check_identity``), else None."""
        path = self.trial_path(trial) / SUMMARY
        if not path.exists():
            return None
        summary = check_summary(read_json(path), str(path))
        self.check_identity(summary, path, spec or self.spec())
        return summary

    def summaries(self) -> list[TrialSummary]:
        """Every finished trial's summary, each checked to be this experiment's (``check_identity``)."""
        spec = self.spec()
        found = []
        for path in sorted((self.path / "trials").glob("trial-*/" + SUMMARY)):
            summary = check_summary(read_json(path), str(path))
            self.check_identity(summary, path, spec)
            found.append(summary)
        return sorted(found, key=lambda s: s.trial)

    def finished(self, trial: int, spec: ExperimentSpec | None = None) -> bool:
        """Whether ``trial`` has a readable summary (a damaged one counts as unfinished: it is moved aside
        with the rest of the trial's record and the trial is rerun); a foreign one is refused
        (``ForeignTrial``), never moved aside or overwritten."""
        try:
            return self.summary(trial, spec) is not None
        except ForeignTrial:
            raise
        except DataError:
            return False

    def repair_finished(self, trial: int) -> bool:
        """Mark "complete" a finished trial (its summary written) whose record still says "running" while
        no process holds it: its process was killed between writing the summary and marking the record,
        and the record is whole. True when it was repaired."""
        from wield.workflows.run_record import RunRecord

        path = self.trial_path(trial)
        record = RunRecord(path)
        if record.state != "stale":
            return False
        lock = DirectoryLock.acquire(path, "out", what="trial record")
        try:
            if record.status != "running":  # another process repaired it meanwhile
                return False
            summary = check_summary(read_json(path / SUMMARY), str(path / SUMMARY))
            record.mark("complete", seconds=summary.seconds, repaired="the process that ran this trial was "
                                                                      "killed after writing its summary")
        finally:
            lock.release()
        log.info("trial %d: its process was killed after writing its summary; marked complete", trial)
        return True

    def check_identity(self, summary: TrialSummary, path: Path, spec: ExperimentSpec) -> None:
        """Refuse (``ForeignTrial``) a summary that is not of this experiment's trial of its directory: its
        ``trial`` is another index, or its identity (``trial_identity``: case study, configuration, seeds)
        is not the one ``spec`` gives that trial. A summary written before identities were recorded is
        checked against its record's ``config.json`` and ``seeds.json``, where they are."""
        directory = path.parent
        index = directory.name.split("-")[-1]
        if not index.isdigit() or summary.trial != int(index):
            raise ForeignTrial(f"{path}: the summary of trial {summary.trial} in {directory.name}: a trial "
                               f"copied from elsewhere; move it out of {directory.parent} and rerun to resume")
        planned = {t.trial: t for t in spec.plan().trials}
        if summary.trial not in planned:
            return  # beyond the plan: never counted
        seeds = planned[summary.trial]
        identity = summary.identity
        if isinstance(identity, dict) and isinstance(identity.get("volatile"), list):
            volatile = [str(name) for name in identity["volatile"]]
            if identity == trial_identity(spec.case_study, spec.config, seeds, volatile):
                return
        elif identity is None:
            volatile = list(_volatile_of(spec.case_study))
        else:
            raise ForeignTrial(f"{path}: 'identity' is damaged ({identity!r:.80}); move the trial out of "
                               f"{directory.parent} and rerun to resume")
        difference = _first_difference(directory, spec, seeds, set(volatile))
        if identity is None and difference is None:
            return  # an older summary whose record agrees (or has no config.json / seeds.json to say)
        why = difference or "its configuration or seeds differ"
        raise ForeignTrial(f"{path}: a trial of another experiment ({why}); it is not counted here: move it out "
                           f"of {directory.parent} (rerun the command to run this experiment's trial instead)")

    def clear_unfinished(self, trial: int) -> None:
        """Move a trial's partial record aside (kept under ``trials/.incomplete``) before rerunning it. A
        trial still held by a live process (a worker of a run killed a moment ago finishing its clean-up)
        is waited for, then refused."""
        path = self.trial_path(trial)
        if not path.exists() or self.finished(trial):
            return
        deadline = time.monotonic() + TRIAL_RELEASE_WAIT_S
        while is_claimed(path):
            if time.monotonic() > deadline:
                raise ConfigError("out", str(self.path), reason=(
                    f"{path.name} is still being written by another process; stop it or wait, then rerun"))
            time.sleep(0.2)
        graveyard = self.path / "trials" / ".incomplete"
        graveyard.mkdir(parents=True, exist_ok=True)
        target = graveyard / f"{path.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        suffix = 1
        while target.exists():
            target = graveyard / f"{path.name}-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
            suffix += 1
        shutil.move(str(path), str(target))
        log.info("trial %d: unfinished record moved aside to %s; the trial is rerun", trial, target)


def run_trials(directory: ExperimentDirectory, spec: ExperimentSpec, executor: Executor | None = None,
               progress: bool = True, on_trial: Callable[[TrialSummary], None] | None = None) -> list[TrialSummary]:
    """Run every unfinished trial of ``spec`` with ``wield.workflows.run_trial`` (the case study's trial
    function inside a run record the core keeps, judging by the experiment's objective); returns every
    finished trial's summary.

    The process that ran a trial writes its summary atomically as ``summary.json`` right after it finished
    (stop signals wait for the write), so a finished trial is kept whichever process is stopped next; a
    trial without one is unfinished.
    """
    return run_experiments([(directory, spec)], executor, progress, on_trial)[0]


def run_experiments(experiments: Sequence[tuple[ExperimentDirectory, ExperimentSpec]],
                    executor: Executor | None = None, progress: bool = True,
                    on_trial: Callable[[TrialSummary], None] | None = None,
                    costs: Sequence[float] | None = None) -> list[list[TrialSummary]]:
    """Run the unfinished trials of several experiments through one executor, as ``run_trials`` does for
    one; returns each experiment's summaries.

    Trials are submitted costliest first: ``costs`` holds each experiment's expected time per trial
    (relative; all equal when omitted), and trials of equal cost are interleaved (trial 0 of every such
    experiment, then trial 1, ...). Parallel workers thus take the long trials first and fill the gaps with
    short ones, instead of one long trial running alone at the end. The order never changes a result."""
    from tqdm.auto import tqdm

    from wield.workflows.training import watching_episodes  # imports the learners (torch): not at start-up

    executor = executor or InProcessExecutor()
    tqdm.monitor_interval = 0  # no monitor thread: the local pool forks its workers only without threads
    costs = [1.0] * len(experiments) if costs is None else list(costs)
    if len(costs) != len(experiments):
        raise ValueError(f"{len(costs)} costs for {len(experiments)} experiments")
    found: list[tuple[float, int, tuple[str, dict[str, Any], TrialSeeds, str, dict[str, Any] | None],
                      ExperimentSpec]] = []
    total = 0
    for (directory, spec), cost in zip(experiments, costs):
        trials = spec.plan().trials
        total += len(trials)
        for seeds in trials:
            if directory.finished(seeds.trial, spec):
                log.debug("trial %d of %s: finished, kept", seeds.trial, directory.path)
                directory.repair_finished(seeds.trial)  # killed between its summary and "complete"
            else:
                directory.clear_unfinished(seeds.trial)
                # the trial judges by the experiment's objective (its evaluation.json, its measuring rounds)
                found.append((-cost, seeds.trial, (spec.case_study, dict(spec.config), seeds,
                                                   str(directory.trial_path(seeds.trial)),
                                                   dict(spec.objective) or None), spec))
    # Costliest first; among equal costs by trial index, and (a stable sort) in the experiments' order.
    ordered = sorted(found, key=lambda entry: entry[:2])
    todo = [entry[2] for entry in ordered]
    log.info("%d of %d trials to run on the %s executor; the others are finished and kept", len(todo), total,
             executor.name)
    names = ", ".join(dict.fromkeys(spec.class_name for _, spec in experiments))
    started = time.monotonic()
    if progress and todo:
        tqdm.write(f"{names}: {len(todo)} of {total} trials to run (a line as each one finishes)", file=sys.stderr)
    with tqdm(total=total, initial=total - len(todo), desc=f"{names} trials", unit="trial",
              disable=not progress) as bar:
        tracking = current_request()  # trials in worker processes are tracked as in this one
        settings: dict[str, Any] = {"tracking": tracking} if tracking else {}
        if verdict_cap() != DEFAULT_CAP:  # and decide their verdicts on as many instances (--verdict-cap)
            settings["verdict_cap"] = verdict_cap()
        function = functools.partial(run_trial, **settings) if settings else run_trial
        # Trials run here one after another: the running one's episodes show on the bar as they end.
        running = [0]  # the position in ``ordered`` of the trial running in this process
        watch = (watching_episodes(lambda episode: bar.set_postfix_str(
                     f"trial {ordered[min(running[0], len(ordered) - 1)][1]}: episode {episode.episode + 1}"))
                 if progress and isinstance(executor, InProcessExecutor) else contextlib.nullcontext())
        with watch:
            for index, summary in executor.run(function, todo):
                running[0] = index + 1
                log.debug("trial %d (%s) finished in %.1f s: %s", summary.trial, todo[index][3], summary.seconds,
                         _outcome(ordered[index][3], summary))
                path = Path(todo[index][3]) / SUMMARY
                if not path.exists():  # a remote worker (Ray) wrote it on its own machine
                    atomic_write_json(path, summary.as_dict())
                if on_trial:
                    on_trial(summary)
                bar.update(1)
                if progress:
                    tqdm.write(trial_line(ordered[index][3], summary, bar.n, total, time.monotonic() - started),
                               file=sys.stderr)
    return [directory.summaries() for directory, _ in experiments]


def trial_line(spec: ExperimentSpec, summary: TrialSummary, done: int, total: int, elapsed: float) -> str:
    """The line printed as a trial of an experiment finishes: which trial, its outcome under the
    experiment's objective, its time, and how far the experiments have come."""
    method = spec.config.get("method")
    outcome = _outcome(spec, summary)
    return (f"  {spec.class_name} trial {summary.trial}{f' ({method})' if method else ''}: {outcome} in "
            f"{summary.seconds:.0f} s, n = {summary.transitions}; {done}/{total} trials done after "
            f"{elapsed:.0f} s")


def _outcome(spec: ExperimentSpec, summary: TrialSummary) -> str:
    """The trial's outcome under the experiment's objective ("finished" when the summary cannot answer it)."""
    try:
        return Objective(**spec.objective).outcome(summary.metrics)
    except (TypeError, KeyError, ValueError, WieldError):  # an objective the summary cannot answer
        return "finished"


def classify_experiment(directory: ExperimentDirectory, objective: Objective | None = None,
                        summaries: list[TrialSummary] | None = None):
    """C_i(n, s, f) of an experiment's finished trials under its objective (or ``objective``)."""
    from wield.protocols import TrialOutcome, classify

    spec = directory.spec()
    try:
        objective = objective or Objective(**spec.objective)
    except TypeError as exc:
        raise DataError(f"{directory.path / MANIFEST}: 'objective' is malformed ({exc})") from None
    summaries = directory.summaries() if summaries is None else summaries
    summaries = [s for s in summaries if s.trial < spec.trials]
    if summaries:
        objective.validate(summaries[0].metrics)
    outcomes = []
    for s in summaries:
        for name in objective.metrics:  # a number, finite: Infinity (or 1e400) must never count as a success
            metric = s.metrics.get(name)
            if isinstance(metric, bool) or not isinstance(metric, (int, float)) or not math.isfinite(metric):
                raise DataError(f"{directory.trial_path(s.trial) / SUMMARY}: metric {name!r} must be a finite "
                                f"number, found {metric!r:.80}")
        outcomes.append(TrialOutcome(s.trial, s.transitions, objective.outcome(s.metrics),
                                     float(s.metrics[objective.metric])))
    return classify(spec.class_name, outcomes)
