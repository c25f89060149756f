"""The ``wield`` command: one module per command group (run / experiments, compare, demonstrate, progress,
report), assembled by ``wield.cli.main``. Case studies and extra commands plug in through entry points
(``wield.plugins``), so the core names none of them."""

from wield.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
