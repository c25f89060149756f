"""The run-wide settings of the learning verdict: how many instances a rung may be decided on, and which
held-out stream its instances come from.

``verdict_settings(cap)`` is a context (``wield run --verdict-cap N`` opens it around the command, and
``run_trial(..., verdict_cap=N)`` around a trial, so that trials in worker processes get it too) in which
``verdict_cap()`` is ``cap``; outside any, 50 (``wield.protocols.sequential.DEFAULT_CAP``).

``verdict_stream()`` is ``"evaluation"`` (the trial's evaluation seeds, ``TrialSeeds.evaluation_seeds``)
unless ``instance_stream("selection")`` is open: then a case study that honours it (indexing) draws its
verdict's instances from the selection seeds (``TrialSeeds.selection_seeds``), a stream disjoint from the
evaluation one. Choosing between task designs or recipes on the verdict's own instances would make the
verdict a selection score; a benchmark that compares variants (``benchmarks/redraw_protocol.py
--instances selection``) chooses on this stream and reports the chosen one on the evaluation stream. A
light module: the command line imports it before any learner.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from wield.errors import ConfigError
from wield.protocols.sequential import DEFAULT_CAP

_CAP: contextvars.ContextVar[int] = contextvars.ContextVar("wield_verdict_cap", default=DEFAULT_CAP)
STREAMS = ("evaluation", "selection")
_STREAM: contextvars.ContextVar[str] = contextvars.ContextVar("wield_verdict_stream", default=STREAMS[0])


def verdict_cap() -> int:
    """The most instances a rung of a sequential verdict is decided on here (50 unless set)."""
    return _CAP.get()


@contextlib.contextmanager
def verdict_settings(cap: int | None) -> Iterator[None]:
    """Verdicts computed in this context cap their rungs at ``cap`` instances (None: unchanged)."""
    if cap is None:
        yield
        return
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 2:
        raise ConfigError("verdict-cap", cap, reason="must be an integer >= 2 (held-out instances per rung at most)")
    token = _CAP.set(cap)
    try:
        yield
    finally:
        _CAP.reset(token)


def verdict_stream() -> str:
    """The held-out stream the verdict's instances come from here: "evaluation" unless set (module docstring)."""
    return _STREAM.get()


@contextlib.contextmanager
def instance_stream(stream: str) -> Iterator[None]:
    """Verdicts computed in this context draw their instances from ``stream`` (one of ``STREAMS``)."""
    if stream not in STREAMS:
        raise ConfigError("instances", stream, STREAMS)
    token = _STREAM.set(stream)
    try:
        yield
    finally:
        _STREAM.reset(token)
