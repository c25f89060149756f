"""How ``wield``'s help shows options: each option's default, except where there is none.

argparse's ``ArgumentDefaultsHelpFormatter`` appends ``(default: None)`` to every option whose default is
``None``: an option that is simply absent unless given (``--out``, ``--collection``, ``--config``), where
"None" tells the reader nothing or the wrong thing (issue 46). These formatters leave such an option's help
as written; every other default is shown as before.
"""

from __future__ import annotations

import argparse


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show each option's default, but no ``(default: None)``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class CommandFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """Show defaults (not ``None``) and keep the descriptions' line breaks: the ``wield`` command's formatter."""
