"""The benchmarks' confidence interval of a mean over seeds (imported by the scripts beside it)."""

from __future__ import annotations

import math

import numpy as np


def ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of the 95% t-interval (NaN for one value: one seed has no interval)."""
    from scipy import stats

    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return float(array.mean()), math.nan
    return float(array.mean()), float(stats.t.ppf(0.975, array.size - 1) * array.std(ddof=1) / math.sqrt(array.size))


def mean_ci_text(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    """``"mean<unit> +- half"`` of ``values`` x ``scale`` (``ci95``), ``"+- n/a (1 seed)"`` for one value."""
    mean, half = ci95(values)
    interval = "n/a (1 seed)" if math.isnan(half) else f"{half * scale:.1f}"
    return f"{mean * scale:.1f}{unit} +- {interval}"
