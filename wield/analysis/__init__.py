"""Analysis: results as tidy pandas DataFrames, readable figures and self-contained reports.

``load_results(path)`` reads an experiment, a comparison or a run record (columns documented in
``wield.analysis.records``); ``wield.analysis.figures`` draws them; ``wield.analysis.captions`` composes a
figure's caption from the artists it drew; ``wield.analysis.report`` writes the report of ``wield report``. ``format_table`` (plain-text tables, from ``wield.tables``) is imported eagerly;
the rest pulls in pandas and matplotlib, so it loads on first use.
"""

from wield.tables import format_table

REPORT_FORMATS = ("md", "html")  # what ``wield report --format`` writes (here: the parser needs no matplotlib)

_LAZY = {
    "Results": "wield.analysis.records", "load_results": "wield.analysis.records",
    "load_trials": "wield.analysis.records", "load_episodes": "wield.analysis.records",
    "summarise": "wield.analysis.records", "experiment_directories": "wield.analysis.records",
    "metric_label": "wield.analysis.figures", "write_report": "wield.analysis.report",
}

__all__ = ["format_table", "REPORT_FORMATS", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wield.analysis' has no attribute {name!r}")
