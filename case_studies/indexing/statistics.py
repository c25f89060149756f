"""Column statistics gathered once when training starts: distinct counts and a value sample per field.

They give the schema its per-column selectivity estimates (1 / distinct values, as the study did) and the
converter a per-predicate selectivity estimate (the fraction of sampled rows a predicate matches).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

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
        """Take the statistics of ``collection``: its sample is a uniform draw of rows kept in the table's order
        (so where a predicate's matches lie in the table can be read off it: ``matching_rows``)."""
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

    @cached_property
    def _sorted(self) -> dict[str, tuple[np.ndarray, int, np.ndarray] | None]:
        """Per field, lazily: (its sample sorted, how many of it are not NaN, the sample positions in sorted
        order), or None where the values do not sort (mixed types); see ``predicate_selectivity``."""
        return {}

    def _sorted_sample(self, field: str) -> tuple[np.ndarray, int, np.ndarray] | None:
        found = self._sorted.get(field, False)
        if found is False:
            values = np.asarray(self.sample[field])
            try:
                order = np.argsort(values, kind="stable")
                numbers = int(np.count_nonzero(~np.isnan(values))) if values.dtype.kind in "fc" else len(values)
                found = (values[order], numbers, order)
            except TypeError:
                found = None
            self._sorted[field] = found
        return found

    def predicate_selectivity(self, predicate) -> float:
        """Fraction of the sample matched by one predicate (at least one sampled row's worth). Counted by binary
        search in the field's sorted sample (the same count as comparing every sampled value: NaN values match
        no comparison and sort last); by comparing every value where the sample does not sort or the
        predicate's value is not a plain comparable one."""
        if predicate.op not in _COUNTED_OPS:
            return 1.0
        ranges = self._sorted_ranges(predicate)
        hits = self._scanned_count(predicate) if ranges is None else sum(high - low for low, high in ranges)
        size = max(1, len(self.sample[predicate.field]))
        return float(max(hits, 0.5) / size)

    def _sorted_ranges(self, predicate) -> list[tuple[int, int]] | None:
        """The ranges of the field's sorted sample that ``predicate`` matches (disjoint, each ``low <= high``),
        by binary search; None where that would not match exactly what comparing every value matches."""
        if predicate.op not in _COUNTED_OPS:
            return None
        found = self._sorted_sample(predicate.field)
        op, value = predicate.op, predicate.value
        bounds = list(value) if op in ("between", "in") else [value]
        if found is None or not bounds:
            return None
        ordered, numbers, _ = found
        if not all(_comparable(ordered.dtype.kind, v) for v in bounds):
            return None
        try:
            def position(v: Any, side: str) -> int:
                return int(np.searchsorted(ordered, v, side=side))  # type: ignore[call-overload]

            if op == "eq":
                return [(position(value, "left"), position(value, "right"))]
            if op == "lt":
                return [(0, position(value, "left"))]
            if op == "lte":
                return [(0, position(value, "right"))]
            if op == "gt":
                return [(position(value, "right"), numbers)]
            if op == "gte":
                return [(position(value, "left"), numbers)]
            if op == "between":
                low = position(value[0], "left")
                return [(low, max(low, position(value[1], "right")))]
            return [(position(v, "left"), position(v, "right")) for v in set(bounds)]
        except TypeError:  # a value that does not compare with the field's
            return None

    def _scanned_count(self, predicate) -> int:
        return int(np.count_nonzero(self._compared(predicate)))

    def _hits(self, predicate) -> np.ndarray:
        """Per sampled row, whether it matches ``predicate``: the rows of its ranges in the sorted sample
        (``_sorted_ranges``), else comparing every value."""
        ranges = self._sorted_ranges(predicate)
        found = self._sorted_sample(predicate.field)
        if ranges is not None and found is not None:
            order = found[2]
            hits = np.zeros(len(order), dtype=bool)
            for low, high in ranges:
                hits[order[low:high]] = True
            return hits
        return self._compared(predicate)

    def _compared(self, predicate) -> np.ndarray:
        """Per sampled row, whether it matches ``predicate``, comparing every value."""
        values = self.sample[predicate.field]
        op, value = predicate.op, predicate.value
        if op == "eq":
            return np.asarray(values == value)
        if op == "lt":
            return np.asarray(values < value)
        if op == "lte":
            return np.asarray(values <= value)
        if op == "gt":
            return np.asarray(values > value)
        if op == "gte":
            return np.asarray(values >= value)
        if op == "between":
            return np.asarray((values >= value[0]) & (values <= value[1]))
        return np.isin(values, list(value))

    def matching_rows(self, query) -> np.ndarray | None:
        """The positions in the sample of the sampled rows ``query`` matches (every predicate of an ``and``, any
        of an ``or``), in the table's order (the sample keeps it); None where a predicate's value does not
        compare with its field's values."""
        masks = []
        for predicate in query.predicates:
            if predicate.op not in _COUNTED_OPS:
                return None
            try:
                masks.append(self._hits(predicate))
            except TypeError:
                return None
        either = query.logic == "or" and len(masks) > 1
        return np.flatnonzero(np.logical_or.reduce(masks) if either else np.logical_and.reduce(masks))


_COUNTED_OPS = ("eq", "lt", "lte", "gt", "gte", "between", "in")  # the operators whose matches are counted


def _comparable(kind: str, value: Any) -> bool:
    """Whether binary search in a sorted array of dtype kind ``kind`` counts ``value`` exactly as elementwise
    comparison does: a number (not NaN) in a numeric array, a string in a text array, either in an object
    array (a mixed comparison raises there, and the caller then compares every value)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    number = isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and not np.isnan(value))
    if kind in "iuf":
        return number
    if kind == "U":
        return isinstance(value, str)
    return kind == "O" and (number or isinstance(value, str))
