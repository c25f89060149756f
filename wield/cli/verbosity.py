"""``-v/--verbose`` and ``-q/--quiet`` on every ``wield`` command, and the stderr handler they set.

The command's own output (tables, verdicts, the run header, progress bars) is printed whatever the level;
these options choose which of Wield's log messages (``wield.logs``) also reach standard error:

- by default, warnings and errors (``wield: warning: ...``);
- ``-v``: and the steps of the run (INFO: a trial starts and ends, a resume decision, a database engine
  starts); ``-vv``: and the details (DEBUG, each line ending with its logger's name);
- ``-q`` / ``--quiet``: errors only. Where a command already had ``--quiet`` (no progress bars, no plan, no
  per-trial lines), it keeps that meaning and takes ``-q`` as its short form.

Each ``-v`` lowers the threshold one level and ``-q`` raises it one (``-q -v`` is the default). Whatever is
shown on standard error, the ``wield.log`` of a run record gets every message from DEBUG up
(``wield.logs.record_log``). Neither option is written into ``config.toml`` (``wield.cli.config_file``): how a
command prints is not part of what it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from typing import Iterator

from wield.cli.command_tree import every_command
from wield.logs import LOGGER, ConsoleHandler

_HELP_VERBOSE = ("more of Wield's log on stderr: -v the steps of the run (INFO), -vv the details (DEBUG); "
                 "the run record's wield.log holds them all")
_HELP_QUIET = "only errors from Wield's log on stderr (no warnings)"


def add_verbosity_options(parser: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` on ``parser``, and ``-q``: the short form of its ``--quiet`` where it has one, else
    ``-q/--quiet`` of its own."""
    known = parser._option_string_actions
    if "-v" not in known and "--verbose" not in known:
        parser.add_argument("-v", "--verbose", action="count", default=0, help=_HELP_VERBOSE)
    if "-q" in known:
        return
    quiet = known.get("--quiet")
    if quiet is None:
        parser.add_argument("-q", "--quiet", action="store_true", help=_HELP_QUIET)
        return
    quiet.option_strings = ["-q", *quiet.option_strings]
    known["-q"] = quiet
    quiet.help = f"{quiet.help}; and {_HELP_QUIET}" if quiet.help else _HELP_QUIET


def add_verbosity_to_every_command(parser: argparse.ArgumentParser) -> None:
    """``add_verbosity_options`` on every command of ``parser`` that runs something; a case study's
    sub-command (configured only when chosen, ``wield.cli.studies``) gets them once configured, after its own
    options (its ``--quiet`` then takes ``-q``)."""
    every_command(parser, lambda command, _pending: add_verbosity_options(command), case_studies_configured=True)


def level_of(args: argparse.Namespace) -> int:
    """The threshold of Wield's messages on stderr: WARNING, one level lower per ``-v``, one higher with
    ``-q`` (between DEBUG and ERROR)."""
    steps = int(getattr(args, "verbose", 0) or 0) - int(bool(getattr(args, "quiet", False)))
    return min(logging.ERROR, max(logging.DEBUG, logging.WARNING - 10 * steps))


@contextlib.contextmanager
def command_logging(level: int) -> Iterator[None]:
    """While one command runs: the ``wield`` logger passes everything (DEBUG) on to its handlers, the run
    records' ``wield.log`` files among them, and shows messages from ``level`` up on stderr; it does not
    propagate to the root logger (a library that configured the root's handlers would print them twice).
    Everything is as before afterwards (``main`` may be called again in the same process)."""
    logger = logging.getLogger(LOGGER)
    handler = ConsoleHandler(level)
    saved = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
