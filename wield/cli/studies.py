"""Case-study sub-commands built on demand, so ``wield --help`` imports no case study (nor torch).

``wield run``, ``compare``, ``progress`` and ``demonstrate`` take a case study's name as a sub-command.
Every installed case study's name is known from its entry point's name (``wield.plugins``) without
importing it; its module (which may import torch, numba, a database driver) is loaded, and its options are
added to its sub-parser, only when that name is chosen on the command line. Listing the case studies with
their descriptions (``wield run --help``) loads every one of them.
"""

from __future__ import annotations

import argparse
from importlib import metadata
from typing import Any, Callable, Sequence

from wield.errors import ConfigError
from wield.plugins import ENTRY_POINT_GROUP, CaseStudy, get_case_study

Configure = Callable[[CaseStudy, argparse.ArgumentParser], None]


def case_study_names() -> list[str]:
    """The installed case studies' names, read from their entry points (nothing is imported)."""
    return sorted({entry.name for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)})


class CaseStudyParsers(argparse._SubParsersAction):
    """A sub-parser per installed case study, configured by ``configure(study, parser)`` when it is chosen.

    ``offers(study)`` says whether a case study has this command (e.g. ``compare`` needs ``methods``); one
    that does not is left out of the help's list and refused with a one-line usage error when named.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, tuple[Configure, Callable[[CaseStudy], bool], str]] = {}
        self._described = False

    def add_case_studies(self, configure: Configure, offers: Callable[[CaseStudy], bool] = lambda study: True,
                         why_not: str = "", **parser_options: Any) -> None:
        """One sub-parser per installed case study; ``why_not`` ends the error for a study ``offers`` refuses."""
        for name in case_study_names():
            self.add_parser(name, help="", **parser_options)
            self._pending[name] = (configure, offers, why_not)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        name = str(values[0]) if isinstance(values, (list, tuple)) and values else None
        if name in self._pending:
            self._configure(name)
        super().__call__(parser, namespace, values, option_string)

    def _configure(self, name: str) -> None:
        configure, offers, why_not = self._pending.pop(name)
        try:
            study = get_case_study(name)
        except ConfigError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        if not offers(study):
            raise argparse.ArgumentError(self, f"case study {name!r} {why_not}".rstrip())
        subparser = self._name_parser_map[name]
        if not subparser.description:
            subparser.description = study.description
        configure(study, subparser)

    def _get_subactions(self) -> list[argparse.Action]:
        """The help's list of case studies with their descriptions (this loads every case study)."""
        if not self._described:
            self._described = True
            kept = []
            for action in self._choices_actions:
                pending = self._pending.get(action.dest)
                try:
                    study = get_case_study(action.dest)
                except ConfigError:
                    continue
                if pending is None or pending[1](study):
                    action.help = study.description
                    kept.append(action)
            self._choices_actions[:] = kept
        return super()._get_subactions()


def case_study_commands(parser: argparse.ArgumentParser) -> CaseStudyParsers:
    """``parser``'s CASE_STUDY sub-commands (``dest="case_study"``), to be filled by ``add_case_studies``."""
    subs = parser.add_subparsers(dest="case_study", metavar="CASE_STUDY", required=True, action=CaseStudyParsers)
    assert isinstance(subs, CaseStudyParsers)
    return subs
