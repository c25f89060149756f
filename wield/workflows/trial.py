"""One trial of a registered case study, with the run record owned by the core.

``run_trial(case_study, config, seeds, directory[, objective])`` starts the run record (``config.json``,
``seeds.json``, ``run.json`` with the objective the trial judges by, ``versions.json``, status "running") and, in
the objective's context (``wield.workflows.objective_settings``: the case study's unless given), calls the case
study's trial function with it, times it (a ``Stopwatch`` the trial function reaches through ``trial_stopwatch()``
splits the time: the study's Table 6.2, stored as the summary's ``timing`` when the trial measured any category,
and its phases, the summary's ``phases``), logs into the record's ``wield.log`` (``wield.logs.record_log``: the
trial's messages, whichever process runs it), writes ``summary.json`` (with the trial's ``identity``,
``trial_identity``: an experiment refuses a summary of another's) and marks the record complete (in the process
that ran the trial, with stop signals held back for the write, so a finished trial is kept whoever dies next); if
the trial function raises, the record is marked failed (or interrupted, on Ctrl-C or SIGTERM) and everything
written so far stays. It is a top-level function of picklable arguments, so every executor runs it (the case study
is loaded by name in the worker).

``reproduce_run(run_dir)`` reruns a recorded run of a case study that declares itself ``reproducible``
into a temporary directory, under the objective its ``run.json`` names, and compares the two summaries
exactly.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import math
import os
import signal
import tempfile
import time
from typing import Any, Iterable, Iterator, Mapping

from wield.io import read_json
from wield.logs import attach_record_log, detach_record_log, get_logger
from wield.protocols import Objective, TrialSeeds, TrialSummary
from wield.tracking import TrackingSpec, current_request, learner_hyperparameters, trial_session
from wield.workflows.run_record import RunRecord
from wield.workflows.objective_settings import as_objective, objective_settings, recorded_objective, run_objective
from wield.workflows.signals import deferred_signals
from wield.workflows.timing import Stopwatch, time_split
from wield.workflows.verdict_settings import verdict_settings

SUMMARY = "summary.json"
log = get_logger(__name__)
# Fault injection for tests only: set, the process that ran a trial kills itself (SIGKILL) between writing
# the trial's summary.json and marking its record "complete" (the window a resume repairs).
FAULT_KILL_AFTER_SUMMARY = "WIELD_FAULT_KILL_AFTER_SUMMARY"
_PROGRESS = contextvars.ContextVar("wield_trial_progress", default=False)
_STOPWATCH: contextvars.ContextVar[Stopwatch | None] = contextvars.ContextVar("wield_trial_stopwatch", default=None)


def progress_wanted() -> bool:
    """Whether the running trial may show progress bars and messages (``run_trial(..., progress=True)``, as
    in ``wield run NAME`` without ``--quiet``); trials of an experiment run quietly."""
    return _PROGRESS.get()


def trial_stopwatch() -> Stopwatch:
    """The running trial's stopwatch: what the trial function adds to it (the system's seconds, the agent
    acting and updating; ``wield.workflows.timing``) becomes the summary's ``timing``, with Wield's own code
    as the rest of the trial's wall time. Outside a trial, a fresh stopwatch nobody reads."""
    stopwatch = _STOPWATCH.get()
    return stopwatch if stopwatch is not None else Stopwatch()


def trial_identity(case_study: str, config: Mapping[str, Any], seeds: TrialSeeds,
                   volatile: Iterable[str] = ()) -> dict[str, Any]:
    """Which experiment's trial a summary belongs to: ``{"digest": ..., "volatile": [...]}``, a digest of
    the case study, the configuration without its ``volatile`` keys (where a server is; keys set to None
    count as absent) and the trial's seeds, and the volatile keys it left out (so a reader recomputes it
    without knowing the case study)."""
    left_out = sorted(set(volatile))
    kept = {key: value for key, value in config.items() if key not in left_out and value is not None}
    body = json.dumps({"case_study": case_study, "config": kept, "seeds": seeds.as_dict()}, sort_keys=True,
                      default=str)
    return {"digest": hashlib.sha256(body.encode("utf-8")).hexdigest()[:32], "volatile": left_out}


@contextlib.contextmanager
def showing_progress(enabled: bool = True) -> Iterator[None]:
    """Trials run in this context without an explicit ``progress`` show progress (``enabled``), e.g. the
    rerun of ``wield reproduce``, which a case study's reproduce hook starts."""
    token = _PROGRESS.set(enabled)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def run_trial(case_study: str, config: Mapping[str, Any], seeds: TrialSeeds, directory: str,
              objective: Objective | Mapping[str, Any] | None = None, *, progress: bool | None = None,
              tracking: TrackingSpec | None = None, verdict_cap: int | None = None) -> TrialSummary:
    """Run one trial of ``case_study`` into the run record ``directory``; returns its summary. ``objective``
    (an ``Objective`` or its dict; default: as the context says, ``wield.workflows.objective_settings``, else
    the case study's) is the one the trial judges by, checked against the case study's metrics and recorded
    in ``run.json``. With ``progress`` the trial function may show progress (``progress_wanted()``; default:
    as the context says, ``showing_progress``, else not). ``tracking`` (default: what
    ``wield.tracking.requested`` asks for around the call) mirrors the trial to experiment trackers.
    ``verdict_cap`` (default: as the context says, ``wield.workflows.verdict_settings``) caps the instances
    of the learning verdict's rungs."""
    from wield.plugins import get_case_study

    study = get_case_study(case_study)
    judged = (as_objective(objective) if objective else run_objective(study.objective)).validate(study.metric_names)
    shown = _PROGRESS.get() if progress is None else progress
    token, watch = _PROGRESS.set(shown), _STOPWATCH.set(Stopwatch())
    try:
        with verdict_settings(verdict_cap), objective_settings(judged):
            return _run_trial(study, config, seeds, directory, tracking or current_request(), judged)
    finally:
        _STOPWATCH.reset(watch)
        _PROGRESS.reset(token)


def _run_trial(study, config: Mapping[str, Any], seeds: TrialSeeds, directory: str,
               tracking: TrackingSpec | None, objective: Objective) -> TrialSummary:
    started = time.perf_counter()
    method = {"method": config["method"]} if "method" in config else {}
    record = RunRecord.start(directory, case_study=study.name, config=dict(config), seeds=seeds.as_dict(),
                             versions=study.versions, **method, objective=objective.as_dict())
    with record.outcome_on_error():  # a log that cannot be written: the record says why it failed
        handler = attach_record_log(record.path)  # wield.log: this trial's messages, in its process
    try:
        log.info("trial %s of %s started in %s (process %d)", seeds.trial, study.name, record.path, os.getpid())
        log.debug("seeds: %s", json.dumps(seeds.as_dict(), sort_keys=True))
        log.debug("configuration: %s", json.dumps(dict(config), sort_keys=True, default=str))
        summary = _trial_in_record(study, config, seeds, record, tracking, started)
        log.info("trial %s finished in %.1f s: %s transitions", seeds.trial, summary.seconds, summary.transitions)
        return summary
    except BaseException as exc:
        log.info("trial %s ended %s: %s", seeds.trial, "interrupted" if isinstance(exc, KeyboardInterrupt)
                 else "failed", f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        detach_record_log(handler)


def _trial_in_record(study, config: Mapping[str, Any], seeds: TrialSeeds, record: RunRecord,
                     tracking: TrackingSpec | None, started: float) -> TrialSummary:
    """The trial function called on the started ``record``, which ends "complete" (or failed, interrupted)."""
    tracked = tracking is not None and bool(tracking.names)
    with record.outcome_on_error(), trial_session(tracking, case_study=study.name, directory=record.path,
                                                  config=config, seeds=seeds.as_dict(),
                                                  hyperparameters=learner_hyperparameters(study, config)
                                                  if tracked else None) as session:
        summary = study.trial_function(config, seeds, record)
        if not isinstance(summary, TrialSummary):
            raise TypeError(f"the trial function of {study.name!r} returned {type(summary).__name__}, "
                            "not a wield.protocols.TrialSummary")
        summary.seconds = time.perf_counter() - started
        stopwatch = trial_stopwatch()
        if stopwatch.seconds and not summary.timing:
            summary.timing = time_split(stopwatch.seconds, summary.seconds)
        if stopwatch.phases and not summary.phases:
            summary.phases = {name: dict(figures) for name, figures in stopwatch.phases.items()}
        summary.identity = trial_identity(study.name, config, seeds, study.volatile_config)
        if session is not None:  # closed as the block ends, before the record's checksums are written
            session.log_summary(summary)
            session.log_artifacts(record.path)  # config.toml, results.png, model.pt: to MLflow
    recorded = False
    try:
        with deferred_signals():  # a finished trial is recorded whole, whichever process is stopped next
            record.write_json(SUMMARY, summary.as_dict())
            if os.environ.get(FAULT_KILL_AFTER_SUMMARY):
                os.kill(os.getpid(), signal.SIGKILL)
            record.mark("complete", seconds=summary.seconds)
            recorded = True
    except BaseException as exc:  # a stop signal held back above arrives after "complete": keep that
        if not recorded:
            record.mark_final("failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return summary


def reproduce_run(run_dir: str) -> dict[str, Any]:
    """Rerun ``run_dir`` from its ``config.json`` and ``seeds.json``, under the objective its ``run.json``
    names (the case study's for a record that names none); every difference of the summaries'
    numbers (transitions, evaluations, each method's metrics) is listed, and so is a difference of the
    model: a recorded ``model.pt`` is read as weights only (``load_weights``: one carrying code is refused
    before the rerun) and must hold the rerun's weights exactly. The recorded configuration is checked
    against the case study's options first (``CaseStudy.check_recorded_config``)."""
    from wield.plugins import get_case_study
    from wield.workflows.run_record import load_weights
    from wield.workflows.weights import same_weights

    original = RunRecord(run_dir)
    for name in ("run.json", "config.json", "seeds.json", SUMMARY):
        if not original.exists(name):
            raise FileNotFoundError(f"{run_dir} is not a finished run record: {name} is missing")
    run = read_json(original.file("run.json"))
    case_study = run["case_study"]
    objective = recorded_objective(run, str(original.file("run.json")))  # the one it judged by; None: older
    config = original.read_json("config.json")
    get_case_study(case_study).check_recorded_config(config, str(original.file("config.json")))
    seeds = TrialSeeds.from_dict(original.read_json("seeds.json"))
    old = TrialSummary.from_dict(original.read_json(SUMMARY))
    recorded_model = load_weights(original.file("model.pt")) if original.exists("model.pt") else None
    with tempfile.TemporaryDirectory(prefix="wield-reproduce-") as scratch:
        new = run_trial(case_study, config, seeds, f"{scratch}/run", objective)
        rerun_model = f"{scratch}/run/model.pt"
        model_differences = []
        if recorded_model is not None or os.path.exists(rerun_model):
            if recorded_model is None:
                model_differences.append("model.pt: the rerun saved a model, the record has none")
            elif not os.path.exists(rerun_model):
                model_differences.append("model.pt: the record has a model, the rerun saved none")
            elif not same_weights(recorded_model, load_weights(rerun_model)):
                model_differences.append("model.pt: the recorded weights differ from the rerun's")
    differences = [f"{name}: recorded {getattr(old, name)!r}, rerun {getattr(new, name)!r}"
                   for name in ("transitions", "evaluations") if getattr(old, name) != getattr(new, name)]
    for method in sorted(set(old.methods) | set(new.methods) | {old.method}):
        before = old.methods.get(method, old.metrics if method == old.method else {})
        after = new.methods.get(method, new.metrics if method == new.method else {})
        for metric in sorted(set(before) | set(after)):
            if not _same(before.get(metric), after.get(metric)):
                differences.append(f"{method}.{metric}: recorded {before.get(metric)!r}, "
                                   f"rerun {after.get(metric)!r}")
    differences += model_differences
    return {"run": str(run_dir), "deterministic": True, "match": not differences, "differences": differences,
            "model_compared": recorded_model is not None}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
