"""Reference evaluation of queries on a collection with numpy: which rows match, and how selective it is.

Engines answer queries for real; this is the engine-neutral ground truth used to check generated workloads
(selectivity) and engine adapters (result counts).
"""

from __future__ import annotations

import numpy as np

from workloads.collection import Collection
from workloads.queries import Predicate, Query


def predicate_mask(predicate: Predicate, column: np.ndarray) -> np.ndarray:
    """Boolean mask of the values of ``column`` that satisfy ``predicate``."""
    op, value = predicate.op, predicate.value
    if op == "eq":
        return np.asarray(column == value, dtype=bool)
    if op == "in":
        return np.isin(column, np.array(list(value), dtype=object if column.dtype == object else None))
    if op == "between":
        return (column >= value[0]) & (column <= value[1])
    comparisons = {"lt": np.less, "lte": np.less_equal, "gt": np.greater, "gte": np.greater_equal}
    return np.asarray(comparisons[op](column, value), dtype=bool)


def query_mask(query: Query, collection: Collection) -> np.ndarray:
    """Rows matching the query's predicates under its logic (sort, count and limit do not filter)."""
    masks = [predicate_mask(p, collection.columns[p.field]) for p in query.validate(collection).predicates]
    return np.logical_and.reduce(masks) if query.logic == "and" else np.logical_or.reduce(masks)


def selectivity(query: Query, collection: Collection) -> float:
    """Fraction of the collection's rows that the query's predicates match."""
    return float(query_mask(query, collection).mean()) if len(collection) else 0.0


def result_size(query: Query, collection: Collection) -> int:
    """Rows an engine returns: the match count (1 row for count queries), capped by the limit."""
    if query.aggregate == "count":
        return 1
    matched = int(query_mask(query, collection).sum())
    return matched if query.limit is None else min(matched, query.limit)
