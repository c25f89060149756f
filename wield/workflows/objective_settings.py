"""The objective a run judges its results by: its case study's own, or the one its command gave.

``objective_settings(objective)`` is a context in which ``run_objective(default)`` is ``objective``; outside
any, ``default`` (the case study's). ``wield run NAME`` without ``--class`` opens it around the run with the
objective of ``--objective`` / ``--objective-metric`` / ``--objective-threshold`` (``wield.cli.experiment``),
and ``run_trial(..., objective)`` opens it around a trial, so the trials of an experiment, in worker
processes too, judge by the experiment's objective. A case study's trial function reads
``run_objective(ITS_OBJECTIVE)`` wherever it judges: the ``objective`` and ``success`` of its
``evaluation.json``, an evaluation that measures until the objective can tell (indexing's latency rounds).
``run_trial`` records the objective in the run's ``run.json`` (``recorded_objective`` reads it back), so
``wield reproduce`` reruns under the same one. A light module: the command line imports it before any learner.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator, Mapping

from wield.errors import DataError
from wield.protocols.objective import Objective

_OBJECTIVE: contextvars.ContextVar[Objective | None] = contextvars.ContextVar("wield_run_objective", default=None)


def run_objective(default: Objective) -> Objective:
    """The objective the running command or trial judges by; ``default`` (the case study's) unless set."""
    chosen = _OBJECTIVE.get()
    return default if chosen is None else chosen


def as_objective(value: Objective | Mapping[str, Any]) -> Objective:
    """``value`` as an ``Objective`` (a dict as ``Objective.as_dict`` writes it, as ``experiment.json`` holds)."""
    return value if isinstance(value, Objective) else Objective.from_dict(value)


@contextlib.contextmanager
def objective_settings(objective: Objective | Mapping[str, Any] | None) -> Iterator[None]:
    """Runs and trials in this context judge by ``objective`` (None: unchanged)."""
    if objective is None:
        yield
        return
    token = _OBJECTIVE.set(as_objective(objective))
    try:
        yield
    finally:
        _OBJECTIVE.reset(token)


def recorded_objective(run: Any, where: str) -> Objective | None:
    """The objective a run record's ``run.json`` (``run``, read from ``where``) says its run judged by; None
    for a record written before runs recorded it. A malformed one is a ``DataError`` naming the file."""
    if not isinstance(run, Mapping) or run.get("objective") is None:
        return None
    value = run["objective"]
    try:
        if not isinstance(value, Mapping):
            raise TypeError(f"an object, found {type(value).__name__}")
        return Objective.from_dict(value)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: 'objective' is malformed ({exc})") from None
