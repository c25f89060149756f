"""Translate engine-neutral queries and indexes into MongoDB's query language (MQL), as plain documents.

The translation is pure (no server needed), so tests can compare exact documents:

- a predicate becomes ``{field: {"$eq" | "$lt" | "$lte" | "$gt" | "$gte": value}}``, ``between`` becomes
  ``{field: {"$gte": low, "$lte": high}}`` and ``in`` becomes ``{field: {"$in": [values]}}``; values are
  always operands of an explicit operator, never keys and never parsed, so a string such as
  ``"{'$gt': ''}"`` or ``"$where"`` is compared as data;
- one predicate is the filter itself; several are combined with ``$and`` / ``$or`` (a list, so a field
  may appear twice);
- sort keys become ``{field: 1 | -1}`` in order; ``count`` becomes the aggregation pipeline that
  pymongo's ``count_documents`` runs (``$match`` then ``$group`` with ``$sum: 1``);
- an IndexSpec becomes ``[(field, ASCENDING | DESCENDING), ...]``.

Field names are validated against the collection's fields (identifiers: no ``$`` and no dots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sql import quote_identifier
from wield.errors import ConfigError

ASCENDING, DESCENDING = 1, -1
_COMPARISONS = {"eq": "$eq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}


@dataclass(frozen=True)
class MQLQuery:
    """A translated query: a find (filter, sort, limit) or a count pipeline."""

    filter: dict
    sort: dict | None = None
    limit: int | None = None
    count_pipeline: list | None = None

    @property
    def is_count(self) -> bool:
        return self.count_pipeline is not None

    def command(self, collection: str) -> dict:
        """The database command that runs this query (what ``explain`` is given)."""
        if self.is_count:
            return {"aggregate": collection, "pipeline": self.count_pipeline, "cursor": {}}
        command: dict[str, Any] = {"find": collection, "filter": self.filter}
        if self.sort:
            command["sort"] = self.sort
        if self.limit is not None:
            command["limit"] = self.limit
        return command


class MQLTranslator:
    """Builds MQL for one collection with known fields."""

    def __init__(self, fields: Iterable[str]) -> None:
        self.fields = tuple(fields)
        self._field_set = set(self.fields)

    def field(self, name: str) -> str:
        if name not in self._field_set:
            raise ConfigError("query.field", name, self.fields)
        quote_identifier(name)  # letters, digits, underscores: never an operator or a dotted path
        return name

    def predicate(self, predicate) -> dict:
        field = self.field(predicate.field)
        if predicate.op in _COMPARISONS:
            return {field: {_COMPARISONS[predicate.op]: predicate.value}}
        if predicate.op == "between":
            low, high = predicate.value
            return {field: {"$gte": low, "$lte": high}}
        if predicate.op == "in":
            values = list(predicate.value)
            if not values:
                raise ConfigError("query.in", values, reason="'in' needs at least one value")
            return {field: {"$in": values}}
        raise ConfigError("query.op", predicate.op, [*_COMPARISONS, "between", "in"])

    def filter(self, query) -> dict:
        if query.logic not in ("and", "or"):
            raise ConfigError("query.logic", query.logic, ("and", "or"))
        clauses = [self.predicate(p) for p in query.predicates]
        if len(clauses) == 1:
            return clauses[0]
        return {f"${query.logic}": clauses}

    def query(self, query) -> MQLQuery:
        """The MQL of a workloads.Query."""
        match = self.filter(query)
        if query.aggregate == "count":
            return MQLQuery(match, count_pipeline=[{"$match": match},
                                                   {"$group": {"_id": 1, "n": {"$sum": 1}}}])
        if query.aggregate is not None:
            raise ConfigError("query.aggregate", query.aggregate, (None, "count"))
        sort = None
        if query.sort:
            sort = {}
            for key in query.sort:
                if key.direction not in ("asc", "desc"):
                    raise ConfigError("query.sort.direction", key.direction, ("asc", "desc"))
                sort[self.field(key.field)] = ASCENDING if key.direction == "asc" else DESCENDING
        return MQLQuery(match, sort=sort, limit=None if query.limit is None else int(query.limit))

    def index_keys(self, spec: IndexSpec) -> list[tuple[str, int]]:
        """``create_index`` keys of an IndexSpec."""
        return [(self.field(f), ASCENDING if d == "asc" else DESCENDING) for f, d in spec.keys]


def spec_from_keys(keys: Iterable[tuple[str, Any]]) -> IndexSpec:
    """The IndexSpec of a MongoDB index key document (1 / -1 directions)."""
    return IndexSpec.of((field, "desc" if int(direction) < 0 else "asc") for field, direction in keys)
