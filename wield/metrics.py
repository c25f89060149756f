"""Metric declarations and the one place where metric values are formatted with their units.

A case study declares each evaluation metric once, as a ``Metric``: its name (the key in the metrics dicts),
a label saying what it is (and what it is relative to), its unit and its direction. Every table and figure
(``wield compare``, ``wield run --class`` / ``classify``, ``wield report``, ``wield.analysis.figures``)
formats values through ``Metric.format`` and labels axes through ``Metric.axis_label``, so a value prints the
same everywhere. Metrics nobody declared (records of a case study that is not installed) get a declaration
inferred from their name (``infer_metric``).

Units:

============ ========================================== ===================
unit         the value is                               printed as
============ ========================================== ===================
``fraction`` a share or an improvement (0.227)          ``22.7%``
``ratio``    a speed-up or a multiple (1.84)            ``1.84x``
``ms``       milliseconds                               ``3.142 ms``
``s``        seconds                                    ``12.3 s``
``bytes``    bytes                                      ``1.25 MB``
``count``    a count (may be a mean of counts)          ``12`` / ``3.5``
``number``   anything else                              ``0.123``
============ ========================================== ===================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from wield.errors import ConfigError

UNITS = ("fraction", "ratio", "ms", "s", "bytes", "count", "number")
_AXIS_UNITS = {"fraction": "%", "ratio": "×", "ms": "ms", "s": "s", "bytes": "MB", "count": "count", "number": ""}
_SCALES = {"fraction": 100.0, "bytes": 1e-6}


@dataclass(frozen=True)
class Metric:
    """One evaluation metric: ``name`` (its key), ``label`` (what it is), ``unit`` (one of ``UNITS``) and
    whether a higher value is better (``None``: neither, for a recorded quantity that is not a score, such as
    a count of measurement rounds or a flag)."""

    name: str
    label: str
    unit: str = "number"
    higher_is_better: bool | None = True

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ConfigError(f"metric {self.name!r}.unit", self.unit, UNITS)

    @property
    def scale(self) -> float:
        """Factor from the stored value to the shown one (fractions in percent, bytes in MB)."""
        return _SCALES.get(self.unit, 1.0)

    def format(self, value: Any, unit: bool = True) -> str:
        """``value`` as a table cell: scaled, rounded for the unit, with its symbol (``-`` when missing)."""
        if value is None or isinstance(value, str) or (isinstance(value, float) and math.isnan(value)):
            return "-" if value is None or not isinstance(value, str) else value
        shown = float(value) * self.scale
        if self.unit == "fraction":
            return f"{shown:.1f}%" if unit else f"{shown:.1f}"
        if self.unit == "ratio":
            return f"{shown:.2f}x" if unit else f"{shown:.2f}"
        if self.unit == "count":
            return f"{shown:.0f}" if shown == int(shown) else f"{shown:.1f}"
        text = f"{shown:.3g}" if abs(shown) < 1000 else f"{shown:,.0f}"
        symbol = {"ms": " ms", "s": " s", "bytes": " MB"}.get(self.unit, "")
        return text + symbol if unit else text

    def axis_label(self) -> str:
        """The label with its unit and direction (none when ``higher_is_better`` is None), for axes and table
        rows; a label that ends in a bracket takes them inside it (``goodput (requests meeting their SLO per
        second; higher is better)``), not in a second one."""
        symbol = _AXIS_UNITS[self.unit]
        hint = "" if self.higher_is_better is None else \
            ", higher is better" if self.higher_is_better else ", lower is better"
        inside = symbol + hint if symbol else hint[2:]
        if not inside:
            return self.label
        return f"{self.label[:-1]}; {inside})" if self.label.endswith(")") else f"{self.label} ({inside})"


def infer_metric(name: str) -> Metric:
    """A declaration guessed from a metric's name, for metrics no installed case study declares:
    ``improvement`` / ``*_improvement``, ``relative_*``, ``*_share``, ``*_similarity``, ``*_fraction`` and
    ``*_rate`` are fractions; ``speedup*`` a ratio; ``*_ms`` milliseconds; ``*_s`` / ``*_seconds`` seconds;
    ``*_bytes`` bytes; anything else a plain number."""
    words = name.replace("_", " ")
    if name.startswith("speedup"):
        return Metric(name, words, "ratio")
    if name.endswith("_bytes"):
        return Metric(name, words[:-6] + " size", "bytes", higher_is_better=False)
    if name == "improvement" or name.endswith(("_improvement", "_share", "_similarity", "_fraction", "_rate")) \
            or name.startswith("relative_"):
        return Metric(name, words, "fraction", higher_is_better=not name.startswith("relative_"))
    if name.endswith("_ms"):
        return Metric(name, words[:-3], "ms", higher_is_better=False)
    if name.endswith("_seconds") or name.endswith("_s"):
        return Metric(name, words.rsplit(" ", 1)[0], "s", higher_is_better=False)
    return Metric(name, words)


def metric_table(declared: Iterable[Metric] = ()) -> "MetricTable":
    """The declared metrics by name, inferring any other name on lookup."""
    return MetricTable({metric.name: metric for metric in declared})


class MetricTable(dict):
    """``table[name]``: the declared ``Metric``, or one inferred from the name (``infer_metric``)."""

    def __missing__(self, name: str) -> Metric:
        return infer_metric(name)


def labels_from(declared: Mapping[str, Metric] | Iterable[Metric]) -> dict[str, str]:
    """``{name: axis label}`` of declared metrics (for code that passes labels around)."""
    metrics = declared.values() if isinstance(declared, Mapping) else declared
    return {metric.name: metric.axis_label() for metric in metrics}
