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
from wield.cli.formatting import CommandFormatter
from wield.cli.exits import BROKEN_PIPE, EPILOG as EXIT_CODES, INTERRUPTED, TERMINATED, error_exit
from wield.cli.config_file import add_to_every_command, options_table, parse_arguments
from wield.cli.verbosity import add_verbosity_to_every_command, command_logging, level_of
from wield.command_config import recording_command_config
from wield.errors import WieldError
from wield.numerics import apply_numerics_mode
from wield.tracking import requested
from wield.workflows.verdict_settings import verdict_settings
from wield.cli.experiment import (GLOSSARY, add_classify_command, add_common_options, add_experiment_arguments,
                                  add_reproduce_command, run_command)
from wield.cli.studies import case_study_commands
from wield.plugins import CaseStudy, load_case_studies, load_commands
from wield.cli.progression import add_progress_command
from wield.cli.report import add_report_command
from wield.cli.tune import add_tune_command
from wield.workflows.signals import stop_on_sigterm
from wield.workflows.threads import apply_torch_threads


class _Formatter(CommandFormatter):
    """Show defaults (no ``(default: None)``) and keep the descriptions' line breaks (``wield.cli.formatting``)."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line. Case studies are named by their entry points and loaded only when one is
    chosen (``wield.cli.studies``), so building the parser imports neither torch nor any case study."""
    parser = argparse.ArgumentParser(
        prog="wield",
        description="Wield: design, train and honestly evaluate reinforcement learning in computer systems.",
        epilog="Run 'wield run CASE_STUDY --help' for a case study's options.\n\n" + EXIT_CODES,
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
    add_tune_command(commands, _Formatter)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``wield`` command and return its exit code (``wield.cli.exits``): errors Wield raises on
    purpose print one line naming the problem and return 2 (usage) or 3 (the system or the machine failed:
    a dead database, a full disk); Ctrl-C returns 130 and SIGTERM 143, after the run in progress has been
    marked "interrupted"; a closed output pipe (``wield classify | head``) ends the command quietly with
    141; a bug prints its traceback and returns 70."""
    stop_on_sigterm()
    try:  # before anything imports torch: its kernels fix their code path at the first call
        apply_numerics_mode()  # WIELD_NUMERICS: reproducible (default) or native (wield.numerics)
    except WieldError as exc:
        return error_exit(exc)
    parser = build_parser()
    add_to_every_command(parser)  # --config FILE.toml and --set KEY=VALUE
    add_verbosity_to_every_command(parser)  # -v/--verbose, -q/--quiet: Wield's log on stderr
    try:
        args = parse_arguments(parser, sys.argv[1:] if argv is None else list(argv))
    except WieldError as exc:  # a config file or --set that does not fit: a usage error
        return error_exit(exc)
    try:
        if getattr(args, "case_study", None) is not None or args.command == "reproduce":
            apply_torch_threads()  # one torch thread unless the user chose (wield.workflows.threads)
        with command_logging(level_of(args)), \
                requested(getattr(args, "log", None), getattr(args, "out", None)), \
                verdict_settings(getattr(args, "verdict_cap", None)), \
                recording_command_config(getattr(args, "case_study", None), _run_options(parser, args), args.command):
            code = int(args.handler(args) or 0)  # --log tensorboard,mlflow; --verdict-cap; config.toml
        sys.stdout.flush()  # a reader that went away (``wield classify | head``) is found here, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE  # as a command killed by the signal; nothing printed
    except KeyboardInterrupt as exc:
        signal_name = getattr(exc, "signal_name", "SIGINT")
        print(f"wield: interrupted ({signal_name}); {_resume_hint(args)}", file=sys.stderr)
        return TERMINATED if signal_name == "SIGTERM" else INTERRUPTED
    except Exception as exc:  # every other failure: the exit code of its kind (wield.cli.exits)
        return error_exit(exc)


def _run_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict | None:
    """The ``config.toml`` table of ``wield run NAME`` and ``wield compare NAME`` (every option they use,
    ``wield.command_config``): the run record of a single run gets it, the experiment directory of ``--class``,
    the comparison directory of ``compare``; ``None`` for other commands. A comparison's ``[agent]`` block
    serves every method compared, so it is written as given (one learner's defaults would not fit another's)."""
    if args.command not in ("run", "compare"):
        return None
    from wield.plugins import get_case_study

    used = get_case_study(args.case_study).hyperparameters_used if args.command == "run" else None
    return options_table(parser, args, used)


def _resume_hint(args: argparse.Namespace) -> str:
    """What the user can do after an interruption: an experiment (``--class``, ``compare``) resumes when the same
    command runs again; a single run's record stays, marked interrupted, and is not resumed in place."""
    single_run = (getattr(args, "command", None) == "run" and getattr(args, "class_name", None) is None
                  and getattr(args, "out", None) is not None)
    if single_run:
        return (f"the run record in {args.out} is kept, marked interrupted; a single run does not resume in "
                "place: run it again with another --out, or use --class C0 --trials 1 for an experiment that "
                "resumes")
    return "everything recorded so far is intact (an experiment resumes when the same command is run again)"


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


if __name__ == "__main__":
    sys.exit(main())
