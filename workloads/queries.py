"""The engine-neutral query model: predicates, logical and global aggregation, JSON round trip.

A query is what every engine adapter translates (SQL for SQLite and PostgreSQL, MQL for MongoDB):
1-3 selection predicates (eq, lt, lte, gt, gte, between, in) joined by ``and`` or ``or``, and a global
aggregation: sort (with direction) and limit, or count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from wield.errors import ConfigError, DataError

OPERATORS = ("eq", "lt", "lte", "gt", "gte", "between", "in")
LOGIC = ("and", "or")
DIRECTIONS = ("asc", "desc")
AGGREGATES = (None, "count")


def _native(value: Any) -> Any:
    """Python-native int/float/str (numpy scalars converted), tuples for sequences."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return tuple(_native(v) for v in value)
    return value


@dataclass(frozen=True)
class Predicate:
    """``field op value``; ``between`` takes an inclusive (low, high), ``in`` a tuple of values."""

    field: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _native(self.value))

    def to_dict(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"field": self.field, "op": self.op, "value": value}


@dataclass(frozen=True)
class SortKey:
    field: str
    direction: str = "asc"

    def to_dict(self) -> dict:
        return {"field": self.field, "direction": self.direction}


@dataclass(frozen=True)
class Query:
    """One query of a workload; ``template`` names the template it was drawn from (if any)."""

    predicates: tuple[Predicate, ...]
    logic: str = "and"
    sort: tuple[SortKey, ...] = ()
    aggregate: str | None = None
    limit: int | None = None
    template: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", tuple(self.predicates))
        object.__setattr__(self, "sort", tuple(self.sort))

    def attributes(self) -> list[str]:
        """Distinct fields: predicate fields in order, then sort fields."""
        fields = [p.field for p in self.predicates] + [s.field for s in self.sort]
        return list(dict.fromkeys(fields))

    def to_dict(self) -> dict:
        return {"predicates": [p.to_dict() for p in self.predicates], "logic": self.logic,
                "sort": [s.to_dict() for s in self.sort], "aggregate": self.aggregate, "limit": self.limit,
                "template": self.template}

    def _digest(self, data: Mapping) -> str:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def key(self) -> str:
        """Stable hash of the whole query, values included (a cache key)."""
        data = self.to_dict()
        data.pop("template")
        return self._digest(data)

    def shape(self) -> str:
        """Stable hash of the query's structure with predicate values stripped."""
        return self._digest({"predicates": [[p.field, p.op] for p in self.predicates], "logic": self.logic,
                             "sort": [[s.field, s.direction] for s in self.sort], "aggregate": self.aggregate,
                             "limit": self.limit is not None})

    def validate(self, fields: Iterable[str] | Any) -> "Query":
        """Check operators and structure, and that every field exists (a Collection or field names)."""
        names = tuple(getattr(fields, "field_names", fields))
        if not self.predicates:
            raise ConfigError("query.predicates", [], reason="a query needs at least one predicate")
        if self.logic not in LOGIC:
            raise ConfigError("query.logic", self.logic, LOGIC)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("query.aggregate", self.aggregate, AGGREGATES)
        for predicate in self.predicates:
            if predicate.field not in names:
                raise ConfigError("query.field", predicate.field, names)
            if predicate.op not in OPERATORS:
                raise ConfigError("query.op", predicate.op, OPERATORS)
            if predicate.op == "between" and not (isinstance(predicate.value, tuple) and len(predicate.value) == 2):
                raise ConfigError("query.value", predicate.value, reason="'between' takes [low, high]")
            if predicate.op == "in" and not (isinstance(predicate.value, tuple) and predicate.value):
                raise ConfigError("query.value", predicate.value, reason="'in' takes a non-empty list")
        for key in self.sort:
            if key.field not in names:
                raise ConfigError("query.sort.field", key.field, names)
            if key.direction not in DIRECTIONS:
                raise ConfigError("query.sort.direction", key.direction, DIRECTIONS)
        if self.aggregate == "count" and (self.sort or self.limit is not None):
            raise ConfigError("query.aggregate", "count", reason="a count query takes no sort or limit")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ConfigError("query.limit", self.limit, reason="must be a positive integer")
        return self

    @classmethod
    def from_dict(cls, data: Mapping) -> "Query":
        if not isinstance(data, Mapping):
            raise DataError(f"a query must be an object, not {type(data).__name__}")
        unknown = set(data) - {"predicates", "logic", "sort", "aggregate", "limit", "template"}
        if unknown:
            raise DataError(f"unknown query keys {sorted(unknown)}")
        try:
            predicates = tuple(Predicate(p["field"], p["op"], p["value"]) for p in data["predicates"])
            sort = tuple(SortKey(s["field"], s.get("direction", "asc")) for s in data.get("sort") or ())
        except (KeyError, TypeError) as exc:
            raise DataError(f"malformed query {dict(data)!r}: missing or bad {exc}") from exc
        return cls(predicates, data.get("logic", "and"), sort, data.get("aggregate"), data.get("limit"),
                   data.get("template", ""))
