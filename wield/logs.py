"""Wield's diagnostics through the standard ``logging`` module, and the ``wield.log`` of every run record.

Every module logs through its own logger under ``wield`` (``get_logger(__name__)``: ``wield.workflows.trial``;
a case study's ``case_studies.indexing.plugin`` becomes ``wield.case_studies.indexing.plugin``, so one
logger, ``wield``, routes them all). The library configures nothing when imported: ``wield`` has a
``NullHandler`` only (``wield/__init__.py``), so a program that uses Wield's Python API sees none of its
messages until it configures logging itself (``logging.basicConfig(level=logging.INFO)``, or a handler on
``logging.getLogger("wield")``). The ``wield`` command configures its own stderr handler
(``wield.cli.verbosity``). What a command prints as its output (tables, verdicts, the run header, progress
bars) is not logged: it is printed.

Levels: DEBUG for details worth having in a log file (configurations, paths, cache hits, executor set-up);
INFO for the steps of a run (a trial starts and ends, a resume decision, a database engine starts);
WARNING for what the user should act on or know about the results; ERROR for what failed.

``record_log(directory)`` writes ``DIRECTORY/wield.log`` while a run record (or an experiment or comparison
directory: ``attach_record_log(..., trial=False)``) is written: one line per message, with its time, level and
logger. The file takes every message the ``wield`` logger passes on (the command sets that logger to DEBUG;
a library user chooses with ``logging.getLogger("wield").setLevel``); it is opened without following a
symbolic link and must be a regular file. A directory's log (an experiment's, a comparison's) holds what
this process logged outside trials; a trial's messages go to the trial's own record, whichever process runs
it. Passwords in URIs (``postgresql://user:secret@host``) and ``password=...`` settings are replaced by
``***`` in every line the handlers of this module write (``redact_secrets``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import sys
from pathlib import Path
from typing import Iterator

LOGGER = "wield"
LOG_FILE = "wield.log"
RECORD_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

_URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*):(?P<secret>[^\s@]*)@")
_PASSWORD_SETTING = re.compile(r"(?P<head>password\s*=\s*)"  # a quoted value (libpq), else up to a separator
                               r"(?P<secret>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&;,]+)", re.IGNORECASE)
_trials_logging = 0  # trial logs attached in this process: directory logs leave the trial's messages to them


def get_logger(name: str) -> logging.Logger:
    """The logger of the module ``name`` (``__name__``), under ``wield``."""
    return logging.getLogger(name if name == LOGGER or name.startswith(LOGGER + ".") else f"{LOGGER}.{name}")


def redact_secrets(text: str) -> str:
    """``text`` with the password of every URI (``scheme://user:PASSWORD@host``) and every ``password=VALUE``
    setting (a URI's query, a libpq connection string, ``PGPASSWORD=``) replaced by ``***``."""
    text = _URI_PASSWORD.sub(r"\g<head>:***@", text)
    return _PASSWORD_SETTING.sub(r"\g<head>***", text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose lines never hold a password (``redact_secrets``), tracebacks included."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_secrets(super().format(record))


class RecordLogHandler(logging.StreamHandler):
    """``wield.log`` of one directory: appended to, one formatted line per message (see the module docstring)."""

    def __init__(self, path: Path, trial: bool) -> None:
        super().__init__(_open_log(path))
        self.path = path
        self.trial = trial
        self.setLevel(logging.DEBUG)
        self.setFormatter(RedactingFormatter(RECORD_FORMAT))
        if not trial:
            self.addFilter(lambda record: _trials_logging == 0)

    def close(self) -> None:
        self.acquire()
        try:
            stream, self.stream = self.stream, None  # type: ignore[assignment]
            if stream is not None:
                stream.close()
        finally:
            self.release()
            super().close()

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is not None:
            super().emit(record)


class ConsoleFormatter(RedactingFormatter):
    """``wield: warning: MESSAGE`` (the command's own error lines read ``wield: error: ...``); a DEBUG line ends
    with its logger's name."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        where = f"  [{record.name}]" if record.levelno < logging.INFO else ""
        return f"wield: {record.levelname.lower()}: {text}{where}"


class ConsoleHandler(logging.StreamHandler):
    """The ``wield`` command's handler: standard error as it is when a message is written (a test's capture,
    a redirected stream), through ``tqdm.write`` when tqdm is loaded, so a progress bar is redrawn below the
    message instead of being cut by it."""

    wield_console = True

    def __init__(self, level: int) -> None:
        super().__init__()
        self.setLevel(level)
        self.setFormatter(ConsoleFormatter())

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ sets it: standard error is read when used
        pass

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            tqdm = sys.modules.get("tqdm")
            if tqdm is not None:
                tqdm.tqdm.write(text, file=sys.stderr)
            else:
                sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


def _open_log(path: Path):
    """``path`` opened for appending text: created with the permissions ``open`` gives (``0o666`` less the
    umask, as the record's other files), never through a symbolic link, never a FIFO or a device."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        from wield.errors import DataError

        why = "a symbolic link is not followed" if os.path.islink(path) else exc.strerror or str(exc)
        raise DataError(f"{path}: the run's log cannot be written ({why})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        from wield.errors import DataError

        raise DataError(f"{path}: the run's log is not a regular file; remove it")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")


def attach_record_log(directory: str | os.PathLike, *, trial: bool = True) -> RecordLogHandler:
    """Start writing ``DIRECTORY/wield.log`` (a trial's run record with ``trial``; an experiment's or a
    comparison's directory without); ``detach_record_log`` ends it."""
    global _trials_logging
    handler = RecordLogHandler(Path(directory) / LOG_FILE, trial)
    logging.getLogger(LOGGER).addHandler(handler)
    if trial:
        _trials_logging += 1
    return handler


def detach_record_log(handler: RecordLogHandler | None) -> None:
    """Stop writing the log ``attach_record_log`` started and close its file (``None``: nothing to do)."""
    global _trials_logging
    if handler is None:
        return
    logger = logging.getLogger(LOGGER)
    if handler in logger.handlers:
        logger.removeHandler(handler)
        if handler.trial:
            _trials_logging = max(0, _trials_logging - 1)
    handler.close()


@contextlib.contextmanager
def record_log(directory: str | os.PathLike, *, trial: bool = True) -> Iterator[Path]:
    """``DIRECTORY/wield.log`` written while the block runs; yields its path."""
    handler = attach_record_log(directory, trial=trial)
    try:
        yield handler.path
    finally:
        detach_record_log(handler)


def forget_inherited_record_logs() -> None:
    """In a forked worker: stop writing the logs of the parent's directories (the worker writes its trials'
    own), without closing the parent's files."""
    global _trials_logging
    logger = logging.getLogger(LOGGER)
    for handler in [h for h in logger.handlers if isinstance(h, RecordLogHandler)]:
        logger.removeHandler(handler)
    _trials_logging = 0


def logging_state() -> tuple[int, int | None]:
    """What a worker process needs to log as this one does: the ``wield`` logger's level and the level of the
    command's stderr handler (``None`` without one)."""
    logger = logging.getLogger(LOGGER)
    shown = next((h.level for h in logger.handlers if getattr(h, "wield_console", False)), None)
    return logger.level, shown


def apply_logging_state(state: tuple[int, int | None] | None) -> None:
    """In a spawned worker (or a Ray task): the ``wield`` logger's level and, where the command had one, a
    stderr handler as the parent's (``logging_state``); nothing when the process already has them."""
    if state is None:
        return
    level, shown = state
    logger = logging.getLogger(LOGGER)
    if level != logging.NOTSET and logger.level == logging.NOTSET:
        logger.setLevel(level)
    if shown is not None and not any(getattr(h, "wield_console", False) for h in logger.handlers):
        logger.addHandler(ConsoleHandler(shown))
        logger.propagate = False
