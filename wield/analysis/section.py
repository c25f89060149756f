"""A report section: the unit that ``wield.analysis.report`` renders and ``wield.analysis.extras`` adds."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Section:
    """A heading, paragraphs, tables (DataFrames) and figures (file name, caption), in that order."""

    title: str
    text: list[str] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
