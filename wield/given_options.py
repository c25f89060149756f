"""Which case-study options a command line set itself, as flags: the record ``CaseStudy.check_given`` reads.

A case study's options are added with the ``RecordedStore`` action (``wield.plugins.CaseStudy.add_arguments``),
which notes each destination it stores on the namespace being parsed (``OPTIONS_SEEN``);
``wield.cli.config_file.parse_arguments`` then puts the set the user's own command line gave on the
namespace as ``OPTIONS_GIVEN`` (with ``--set``'s keys; a ``--config`` file's are not among them). A module that
imports nothing of Wield, so both the plugin API and the command line's option parsing can use it.
"""

from __future__ import annotations

import argparse
from typing import Any

# The case-study options a command line set itself (a frozenset of destinations): ``wield.cli.config_file.
# parse_arguments`` puts it on the namespace of the user's command (flags and --set keys; not a --config file's
# keys, which are recorded values, e.g. a run's config.toml); ``CaseStudy.config`` hands it to ``check_given``.
OPTIONS_GIVEN = "options_given"
OPTIONS_SEEN = "_case_study_options_seen"  # what every parse records, the config file's tokens included


class RecordedStore(argparse._StoreAction):
    """``store`` that also records its destination as set on the command line being parsed."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        setattr(namespace, OPTIONS_SEEN, frozenset(getattr(namespace, OPTIONS_SEEN, frozenset())) | {self.dest})


def options_seen(args: argparse.Namespace) -> frozenset[str]:
    """The case-study options (by destination) that the tokens ``args`` was parsed from set."""
    return frozenset(getattr(args, OPTIONS_SEEN, frozenset()))
