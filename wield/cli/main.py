"""The ``wield`` command: runs installed case studies from the command line.

``wield run CASE_STUDY [options]`` trains and evaluates; ``wield list`` shows the installed case studies.
Case studies plug in through ``wield.plugins`` (entry points), so a new system gets the same command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from wield import __version__
from wield.cli.compare import add_compare_command
from wield.cli.demonstrate import add_demonstrate_command
from wield.errors import WieldError
from wield.cli.experiment import (GLOSSARY, add_classify_command, add_common_options, add_experiment_arguments,
                                  add_reproduce_command, run_command)
from wield.plugins import load_case_studies, load_commands
from wield.cli.progression import add_progress_command
from wield.cli.report import add_report_command


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Show defaults and keep the descriptions' line breaks."""


def build_parser() -> argparse.ArgumentParser:
    studies = load_case_studies()
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
    run_studies = run.add_subparsers(dest="case_study", metavar="CASE_STUDY", required=True)
    for study in studies.values():
        sub = run_studies.add_parser(study.name, help=study.description, description=study.description,
                                     epilog=GLOSSARY, formatter_class=_Formatter)
        study.add_options(sub)
        add_common_options(sub)
        add_experiment_arguments(sub)
        sub.set_defaults(handler=lambda args, study=study: run_command(study, args))

    add_classify_command(commands)
    add_reproduce_command(commands)
    add_progress_command(commands, studies)
    add_compare_command(commands, studies, _Formatter)
    add_demonstrate_command(commands, studies, _Formatter)
    for add_command in load_commands().values():  # extra commands of installed packages (e.g. wield db)
        add_command(commands, _Formatter)
    add_report_command(commands)
    listing = commands.add_parser("list", help="list the installed case studies")
    listing.set_defaults(handler=lambda args: _list(studies))
    return parser


def _list(studies) -> int:
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
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_threads()
    try:
        return int(args.handler(args) or 0)
    except WieldError as exc:
        print(f"wield: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wield: interrupted; everything recorded so far is intact", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
