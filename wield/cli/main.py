"""The ``wield`` command: runs installed case studies from the command line.

``wield run CASE_STUDY [options]`` trains and evaluates; ``wield list`` shows the installed case studies.
Case studies plug in through ``wield.plugins`` (entry points), so a new system gets the same command.
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import Sequence

from wield import __version__
from wield.cli.cache import add_cache_command
from wield.cli.compare import add_compare_command
from wield.cli.demonstrate import add_demonstrate_command
from wield.errors import WieldError
from wield.cli.experiment import (GLOSSARY, add_classify_command, add_common_options, add_experiment_arguments,
                                  add_reproduce_command, run_command)
from wield.cli.studies import case_study_commands
from wield.plugins import CaseStudy, load_case_studies, load_commands
from wield.cli.progression import add_progress_command
from wield.cli.report import add_report_command
from wield.workflows.signals import stop_on_sigterm


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Show defaults and keep the descriptions' line breaks."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line. Case studies are named by their entry points and loaded only when one is
    chosen (``wield.cli.studies``), so building the parser imports neither torch nor any case study."""
    parser = argparse.ArgumentParser(
        prog="wield",
        description="Wield: design, train and honestly evaluate reinforcement learning in computer systems.",
        epilog="Run 'wield run CASE_STUDY --help' for a case study's options.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"wield {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="train and evaluate on a case study",
                              description="Train a learner on a case study, evaluate it beside the baselines "
                                          "and write a run record.", formatter_class=_Formatter)
    case_study_commands(run).add_case_studies(_add_run_options, epilog=GLOSSARY, formatter_class=_Formatter)

    add_classify_command(commands)
    add_reproduce_command(commands)
    add_progress_command(commands)
    add_compare_command(commands, _Formatter)
    add_demonstrate_command(commands, _Formatter)
    for add_command in load_commands().values():  # extra commands of installed packages (e.g. wield db)
        add_command(commands, _Formatter)
    add_report_command(commands)
    add_cache_command(commands)
    listing = commands.add_parser("list", help="list the installed case studies")
    listing.set_defaults(handler=lambda args: _list(load_case_studies()))
    return parser


def _add_run_options(study: CaseStudy, parser: argparse.ArgumentParser) -> None:
    """``wield run NAME``'s options: the case study's own, the common ones and the experiment's."""
    study.add_options(parser)
    add_common_options(parser)
    add_experiment_arguments(parser)
    parser.set_defaults(handler=lambda args: run_command(study, args))


def _list(studies: dict[str, CaseStudy]) -> int:
    for study in studies.values():
        print(f"{study.name:12s} {study.description}")
    return 0


def _configure_threads() -> None:
    """Wield's networks are small: one torch thread is fastest and leaves the other cores to the system
    under control and to parallel trials. Set WIELD_TORCH_THREADS to override."""
    import os

    import torch

    torch.set_num_threads(int(os.environ.get("WIELD_TORCH_THREADS", "1")))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``wield`` command. Errors Wield raises on purpose, and failures of the machine (a full disk,
    a read-only directory), print one line naming the problem and return 2; Ctrl-C returns 130 and
    SIGTERM 143, after the run in progress has been marked "interrupted"; a closed output pipe
    (``wield classify | head``) ends the command quietly with 141."""
    stop_on_sigterm()
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_threads()
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a reader that went away (``wield classify | head``) is found here, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a command killed by the signal; nothing printed
    except WieldError as exc:
        print(f"wield: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"wield: error: {describe_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signal_name = getattr(exc, "signal_name", "SIGINT")
        print(f"wield: interrupted ({signal_name}); everything recorded so far is intact (an experiment resumes "
              "when the same command is run again)", file=sys.stderr)
        return 143 if signal_name == "SIGTERM" else 130


def _silence_stdout() -> None:
    """Point standard output at /dev/null once its reader has gone, so the interpreter's last flush prints no
    "Exception ignored ... BrokenPipeError" either."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # not a real file (tests capture it)
        pass


def describe_os_error(exc: OSError) -> str:
    """One line for a failure of the machine: what happened, to which file, and what to do about it."""
    import errno

    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or str(exc) or type(exc).__name__
    advice: str | None = {errno.ENOSPC: "the disk is full: free some space and rerun",
              errno.EDQUOT: "the disk quota is exhausted: free some space and rerun",
              errno.EFBIG: "a file outgrew the file-size limit (ulimit -f): raise it and rerun",
              errno.EROFS: "the file system is read-only: choose a writable directory",
              errno.EACCES: "permission denied: choose a directory you can write to",
              errno.EPERM: "operation not permitted: choose a directory you can write to"}.get(exc.errno or 0)
    return f"{reason}{where}" + (f"; {advice}" if advice else "")


if __name__ == "__main__":
    sys.exit(main())
