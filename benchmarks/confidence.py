"""The benchmarks' confidence interval of a mean over seeds (imported by the scripts beside it)."""

from __future__ import annotations

import math

import numpy as np


def ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of the 95% t-interval (0 for one value)."""
    from scipy import stats

    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return float(array.mean()), 0.0
    return float(array.mean()), float(stats.t.ppf(0.975, array.size - 1) * array.std(ddof=1) / math.sqrt(array.size))
