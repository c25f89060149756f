"""Analysis: tables and figures of runs."""

from wield.analysis.tables import format_table

__all__ = ["format_table"]
