"""SIGTERM stops a run the way Ctrl-C does.

Timeouts and job schedulers end a process with SIGTERM. By default Python dies on it at once, leaving a
run record that says "running" forever. ``stop_on_sigterm()`` makes SIGTERM raise ``Terminated`` (a
``KeyboardInterrupt``) in the main thread instead, so the same code that handles Ctrl-C marks the record
"interrupted", stops worker processes and exits; a second SIGTERM during that clean-up ends the process
at once, as usual. ``deferred_signals()`` holds SIGINT and SIGTERM back while a few lines that must not be
cut in half (writing a finished trial's summary) run.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

from wield.errors import Terminated

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated(signal.Signals(signum).name)


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
    """Block SIGINT and SIGTERM for the body; a signal that arrives meanwhile is delivered after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
