"""The walk over the ``wield`` command tree that adds options to every command (``--config`` / ``--set``,
``-v`` / ``-q``): ``every_command(parser, visit)``. It knows a case study's sub-command only as a pending
entry of its sub-parsers action (``wield.cli.studies.CaseStudyParsers._pending``: configure, offers, why
not), so it imports nothing of Wield and both option modules can use it without an import circle.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable


def every_command(parser: argparse.ArgumentParser, visit: Callable[[argparse.ArgumentParser, bool], None], *,
                  case_studies_configured: bool = False) -> None:
    """Call ``visit(command, pending)`` on every command of ``parser``: each parser of its sub-command tree that
    has no sub-commands of its own (``parser`` itself when it has none). A case study's sub-command, whose
    options are added only when it is chosen (``CaseStudyParsers``), is visited now with ``pending`` True
    (before its options exist), or, with ``case_studies_configured``, once it is configured, after its
    options (``pending`` False). The one walk behind ``--config`` / ``--set`` and ``-v`` / ``-q`` on every
    command (``wield.cli.config_file``, ``wield.cli.verbosity``)."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None:
        visit(parser, False)
        return
    pending: dict[str, Any] = getattr(sub, "_pending", {})
    for name, child in sub.choices.items():
        if name in pending and case_studies_configured:
            configure, *rest = pending[name]
            pending[name] = (_then_visit(configure, visit), *rest)
        elif name in pending:
            visit(child, True)
        else:
            every_command(child, visit, case_studies_configured=case_studies_configured)


def _then_visit(configure: Callable[..., None],
                visit: Callable[[argparse.ArgumentParser, bool], None]) -> Callable[..., None]:
    def configured(study: Any, subparser: argparse.ArgumentParser) -> None:
        configure(study, subparser)
        visit(subparser, False)
    return configured
