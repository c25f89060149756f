"""The ``wield`` command's exit codes, one per kind of outcome, so a script can tell a typo from a dead
database, and a run that did not reproduce from one that could not run.

======  =====================================================================================================
code    meaning
======  =====================================================================================================
0       done
1       done, and the answer is no: ``wield reproduce`` found results that differ (``wield db status``: the
        server is not running)
2       usage error: an unknown option or value, an invalid configuration or objective, an input file or
        record that cannot be used, a directory another run holds (nothing was run, or the run refused)
3       system failure: the system under control or the machine failed (a database that died or refused, a
        trial worker killed, a full disk, a file that cannot be written)
70      internal error: a bug in Wield or a case study (the traceback is printed; please report it)
130     interrupted by Ctrl-C (SIGINT); 143 by SIGTERM: what was recorded stays, rerun to resume
141     the output pipe closed (``wield classify | head``); nothing more is printed
======  =====================================================================================================
"""

from __future__ import annotations

import errno
import sys
import traceback

from wield.errors import SystemFailure, WieldError

DONE = 0
MISMATCH = 1
USAGE = 2
SYSTEM_FAILURE = 3
INTERNAL = 70  # EX_SOFTWARE of sysexits.h
INTERRUPTED = 130  # 128 + SIGINT
BROKEN_PIPE = 141  # 128 + SIGPIPE
TERMINATED = 143  # 128 + SIGTERM

EPILOG = """exit codes:
  0    done
  1    done, and the answer is no (wield reproduce: the results differ)
  2    usage error (unknown option or value, invalid configuration, unusable input or record,
       a directory another run holds)
  3    system failure (the system under control or the machine failed: a database died,
       a worker was killed, the disk is full, a file cannot be written)
  70   internal error (a bug: the traceback is printed)
  130  interrupted (Ctrl-C; 143 for SIGTERM): what was recorded stays, rerun to resume
  141  the output pipe closed"""


def input_limit(exc: BaseException) -> str | None:
    """What an input beyond one of Python's own limits did, or None: an integer of more digits than Python
    converts (``ValueError: Exceeds the limit (4300 digits)``) or a value nested deeper than the recursion
    limit (``RecursionError``). Both come from input (a configuration, ``--set``, a record, a collection),
    so they are data errors, not bugs."""
    if isinstance(exc, RecursionError):
        return ("an input value is nested too deeply (beyond Python's recursion limit); Wield reads values "
                "nested a few levels at most")
    if isinstance(exc, ValueError) and "Exceeds the limit" in str(exc) and "digits" in str(exc):
        return ("an input holds an integer of more than 4,300 digits (Python's limit for converting "
                "integers); Wield's numbers fit in 64 bits")
    return None


def error_exit(exc: BaseException) -> int:
    """Print one line for ``exc`` (a traceback only for a bug) and return the exit code of its kind."""
    limit = input_limit(exc)
    if limit is not None:
        print(f"wield: error: {limit}", file=sys.stderr)
        return USAGE
    if isinstance(exc, SystemFailure):
        print(f"wield: error: {exc}", file=sys.stderr)
        return SYSTEM_FAILURE
    if isinstance(exc, WieldError):
        print(f"wield: error: {exc}", file=sys.stderr)
        return USAGE
    if isinstance(exc, OSError):
        print(f"wield: error: {describe_os_error(exc)}", file=sys.stderr)
        return SYSTEM_FAILURE
    traceback.print_exception(exc)
    print(f"wield: internal error ({type(exc).__name__}): a bug in Wield or the case study; please report it "
          "with the traceback above", file=sys.stderr)
    return INTERNAL


def describe_os_error(exc: OSError) -> str:
    """One line for a failure of the machine: what happened, to which file, and what to do about it."""
    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or str(exc) or type(exc).__name__
    advice: str | None = {errno.ENOSPC: "the disk is full: free some space and rerun",
              errno.EDQUOT: "the disk quota is exhausted: free some space and rerun",
              errno.EFBIG: "a file outgrew the file-size limit (ulimit -f): raise it and rerun",
              errno.EROFS: "the file system is read-only: choose a writable directory",
              errno.EACCES: "permission denied: choose a directory you can write to",
              errno.EPERM: "operation not permitted: choose a directory you can write to"}.get(exc.errno or 0)
    return f"{reason}{where}" + (f"; {advice}" if advice else "")
