"""Column statistics gathered once when training starts: distinct counts and a value sample per field.

They give the schema its per-column selectivity estimates (1 / distinct values, as the study did) and the
converter a per-predicate selectivity estimate (the fraction of sampled rows a predicate matches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from wield.seeding import make_rng

SAMPLE_SIZE = 20_000


@dataclass(frozen=True)
class ColumnStatistics:
    """Per-field distinct counts, row count and a fixed random sample of values."""

    n_rows: int
    distinct: Mapping[str, int]
    sample: Mapping[str, np.ndarray]

    @classmethod
    def from_collection(cls, collection, sample_size: int = SAMPLE_SIZE, seed: int = 0) -> "ColumnStatistics":
        n = len(collection)
        rng = make_rng(seed, "column-statistics")
        rows = np.sort(rng.choice(n, size=min(sample_size, n), replace=False)) if n else np.arange(0)
        return cls(
            n_rows=n,
            distinct={name: collection.distinct_count(name) for name in collection.field_names},
            sample={name: np.asarray(collection.columns[name])[rows] for name in collection.field_names},
        )

    def column_selectivity(self, field: str) -> float:
        """Expected fraction of rows matched by an equality predicate on ``field``."""
        return 1.0 / max(1, self.distinct[field])

    def predicate_selectivity(self, predicate) -> float:
        """Fraction of the sample matched by one predicate (at least one sampled row's worth)."""
        values = self.sample[predicate.field]
        op, value = predicate.op, predicate.value
        if op == "eq":
            hits = values == value
        elif op == "lt":
            hits = values < value
        elif op == "lte":
            hits = values <= value
        elif op == "gt":
            hits = values > value
        elif op == "gte":
            hits = values >= value
        elif op == "between":
            hits = (values >= value[0]) & (values <= value[1])
        elif op == "in":
            hits = np.isin(values, list(value))
        else:
            return 1.0
        size = max(1, len(values))
        return float(max(np.count_nonzero(hits), 0.5) / size)
