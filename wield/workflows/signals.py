"""SIGTERM stops a run the way Ctrl-C does.

Timeouts and job schedulers end a process with SIGTERM. By default Python dies on it at once, leaving a
run record that says "running" forever. ``stop_on_sigterm()`` makes SIGTERM raise ``Terminated`` (a
``KeyboardInterrupt``) in the main thread instead, so the same code that handles Ctrl-C marks the record
"interrupted", stops worker processes and exits; a second SIGTERM during that clean-up ends the process
at once, as usual. ``deferred_signals()`` holds SIGINT and SIGTERM back while a few lines that must not be
cut in half (writing a finished trial's summary) run: a signal that arrives meanwhile is handled after them.

A stop raised inside a callback that C code runs (SQLite's progress handler) does not propagate: the library
swallows it and fails the call instead ("interrupted"). ``stop_requested()`` gives such code the stop to
raise in place of that failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator

from wield.errors import Terminated

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_last_stop: str | None = None  # the name of the stop signal handled last by this process


def stop(signum: int) -> Terminated:
    """Note that the stop signal ``signum`` arrived and return the ``Terminated`` to raise for it."""
    global _last_stop
    _last_stop = signal.Signals(signum).name
    return Terminated(_last_stop)


def stop_requested() -> KeyboardInterrupt:
    """The stop to raise for the stop signal that arrived last in this process: its ``Terminated``, or a
    plain ``KeyboardInterrupt`` when none was noted (Ctrl-C under Python's default handler notes nothing)."""
    return Terminated(_last_stop) if _last_stop else KeyboardInterrupt()


def _raise_terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise stop(signum)


def stop_on_sigterm() -> None:
    """Make SIGTERM raise ``Terminated`` in the main thread (idempotent; leaves a handler that someone
    else installed alone, and does nothing outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the body: a signal that arrives meanwhile is only noted, and handled
    (by the handler that was in place) once the body is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda received, frame: arrived.append(received))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for received in arrived[:1]:
            handler = previous[signal.Signals(received)]
            if callable(handler):
                handler(received, None)
            elif handler in (signal.SIG_DFL, None):
                os.kill(os.getpid(), received)
