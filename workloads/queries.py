"""The engine-neutral query model: selection predicates, logical aggregation, sort / count / limit.

A query is what every engine adapter translates (SQL for SQLite and PostgreSQL, MQL for MongoDB): one or more
predicates (eq, lt, lte, gt, gte, between, in) joined by ``and`` or ``or``, then a global aggregation: sort
keys and a limit (a document query), or ``count``. Queries are immutable, hashable and validated on
construction; ``validate`` checks them against a collection's fields. ``shape()`` hashes the structure with
predicate values stripped (to measure how many test queries were seen in training), ``key()`` hashes the
whole query (a cache key). The template a query came from is metadata: it is in neither hash.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from wield.errors import ConfigError, DataError

OPERATORS = ("eq", "lt", "lte", "gt", "gte", "between", "in")
LOGIC = ("and", "or")
DIRECTIONS = ("asc", "desc")
AGGREGATES = (None, "count")
_QUERY_KEYS = ("predicates", "logic", "sort", "aggregate", "limit", "template")


def _native(value: Any) -> Any:
    """Python int/float/str for numpy scalars; tuples for lists and arrays."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_native(v) for v in value)
    return str(value) if isinstance(value, str) else value


def _check_scalar(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"predicate '{field}'.value", value, reason="values are int, float or str")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"predicate '{field}'.value", value, reason="values must be finite numbers")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ConfigError(f"predicate '{field}'.value", value,
                          reason="integers must fit in 64 bits (-2**63 to 2**63 - 1), as the engines store them")


def remembered_hash(item: Any, fields: tuple) -> int:
    """The hash a frozen dataclass gives, ``hash(fields)``, computed once per object (queries, predicates and
    indexes are dictionary keys of every cost estimate); ``_hash`` is left out of copies and pickles
    (``state_without_hash``, a ``__getstate__``)."""
    try:
        return item.__dict__["_hash"]
    except KeyError:
        found = item.__dict__["_hash"] = hash(fields)
        return found


def state_without_hash(item: Any) -> dict:
    """The state a copy or another process gets: without the hash (strings hash differently per process)."""
    return {key: value for key, value in item.__dict__.items() if key != "_hash"}


@dataclass(frozen=True)
class Predicate:
    """``field op value``: ``between`` takes an inclusive ``(low, high)``, ``in`` a non-empty tuple."""

    field: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise ConfigError("predicate.field", self.field, reason="a field name (non-empty str) is required")
        if self.op not in OPERATORS:
            raise ConfigError(f"predicate '{self.field}'.op", self.op, OPERATORS)
        value = _native(self.value)
        if self.op == "between":
            if not (isinstance(value, tuple) and len(value) == 2):
                raise ConfigError(f"predicate '{self.field}'.value", value,
                                  reason="'between' takes a (low, high) pair, both inclusive")
        elif self.op == "in":
            if not (isinstance(value, tuple) and value):
                raise ConfigError(f"predicate '{self.field}'.value", value, reason="'in' takes a non-empty tuple")
        elif isinstance(value, tuple):
            raise ConfigError(f"predicate '{self.field}'.value", value, reason=f"'{self.op}' takes one value")
        for item in value if isinstance(value, tuple) else (value,):
            _check_scalar(self.field, item)
        object.__setattr__(self, "value", value)

    def __hash__(self) -> int:
        return remembered_hash(self, (self.field, self.op, self.value))

    def __getstate__(self) -> dict:
        return state_without_hash(self)

    def values(self) -> tuple:
        """The predicate's values as a tuple (one for comparisons, two for between, all for in)."""
        return self.value if isinstance(self.value, tuple) else (self.value,)

    def to_dict(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"field": self.field, "op": self.op, "value": value}


@dataclass(frozen=True)
class SortKey:
    """Sort on ``field`` in ``direction`` ("asc" or "desc")."""

    field: str
    direction: str = "asc"

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise ConfigError("sort.field", self.field, reason="a field name (non-empty str) is required")
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"sort '{self.field}'.direction", self.direction, DIRECTIONS)

    def to_dict(self) -> dict:
        return {"field": self.field, "direction": self.direction}


@dataclass(frozen=True)
class Query:
    """One query of a workload; ``template`` names the template it was drawn from ("" if hand-made)."""

    predicates: tuple[Predicate, ...]
    logic: str = "and"
    sort: tuple[SortKey, ...] = ()
    aggregate: str | None = None
    limit: int | None = None
    template: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", tuple(self.predicates))
        object.__setattr__(self, "sort", tuple(self.sort))
        if not self.predicates:
            raise ConfigError("query.predicates", [], reason="a query needs at least one predicate")
        for predicate in self.predicates:
            if not isinstance(predicate, Predicate):
                raise ConfigError("query.predicates", predicate, reason="expected Predicate objects")
        for key in self.sort:
            if not isinstance(key, SortKey):
                raise ConfigError("query.sort", key, reason="expected SortKey objects")
        sort_fields = [key.field for key in self.sort]
        if len(set(sort_fields)) != len(sort_fields):
            raise ConfigError("query.sort", sort_fields, reason="a field can be sorted on only once")
        if self.logic not in LOGIC:
            raise ConfigError("query.logic", self.logic, LOGIC)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("query.aggregate", self.aggregate, AGGREGATES)
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or not 1 <= self.limit < 2**63):
            raise ConfigError("query.limit", self.limit, reason="must be None or an integer from 1 to 2**63 - 1")
        if self.aggregate == "count" and (self.sort or self.limit is not None):
            raise ConfigError("query.aggregate", "count", reason="a count query takes no sort and no limit")
        if not isinstance(self.template, str):
            raise ConfigError("query.template", self.template, reason="must be a str")

    def __hash__(self) -> int:
        return remembered_hash(self, (self.predicates, self.logic, self.sort, self.aggregate, self.limit,
                                      self.template))

    def __getstate__(self) -> dict:
        return state_without_hash(self)

    def attributes(self) -> list[str]:
        """Distinct fields the query touches: predicate fields in order, then sort fields."""
        return list(dict.fromkeys([p.field for p in self.predicates] + [s.field for s in self.sort]))

    def to_dict(self) -> dict:
        """JSON-safe form (tuples become lists); ``Query.from_dict`` inverts it."""
        return {"predicates": [p.to_dict() for p in self.predicates], "logic": self.logic,
                "sort": [s.to_dict() for s in self.sort], "aggregate": self.aggregate, "limit": self.limit,
                "template": self.template}

    @staticmethod
    def _digest(data: Any) -> str:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def key(self) -> str:
        """Stable hex hash of the query including predicate values (not the template name): a cache key."""
        data = self.to_dict()
        del data["template"]
        return self._digest(data)

    def shape(self) -> str:
        """Stable hex hash of the structure: fields, operators, logic, sort, aggregate, whether a limit."""
        return self._digest({"predicates": [[p.field, p.op] for p in self.predicates], "logic": self.logic,
                             "sort": [[s.field, s.direction] for s in self.sort], "aggregate": self.aggregate,
                             "limit": self.limit is not None})

    def validate(self, collection_or_fields: Any) -> "Query":
        """Check every attribute against a Collection (names and value kinds) or an iterable of field names.

        Raises ConfigError naming the unknown attribute (or mistyped value) and listing the allowed fields.
        Returns the query, so calls can be chained.
        """
        kinds = {f.name: f.kind for f in getattr(collection_or_fields, "fields", ())}
        names = tuple(kinds) or tuple(getattr(collection_or_fields, "field_names", collection_or_fields))
        for predicate in self.predicates:
            if predicate.field not in names:
                raise ConfigError("query.field", predicate.field, names)
            kind = kinds.get(predicate.field)
            for value in predicate.values():
                if kind == "text" and not isinstance(value, str):
                    raise ConfigError(f"predicate '{predicate.field}'.value", value,
                                      reason=f"field '{predicate.field}' is text, the value must be a str")
                if kind in ("int", "float") and isinstance(value, str):
                    raise ConfigError(f"predicate '{predicate.field}'.value", value,
                                      reason=f"field '{predicate.field}' is {kind}, the value must be a number")
        for key in self.sort:
            if key.field not in names:
                raise ConfigError("query.sort.field", key.field, names)
        return self

    @classmethod
    def from_dict(cls, data: Mapping) -> "Query":
        """Inverse of ``to_dict``: lists become tuples. Malformed structure raises DataError, bad values
        (unknown operator, direction, logic) raise ConfigError."""
        if not isinstance(data, Mapping):
            raise DataError(f"malformed query: expected an object, found {type(data).__name__}")
        unknown = sorted(set(data) - set(_QUERY_KEYS))
        if unknown:
            raise DataError(f"malformed query: unknown keys {unknown}; allowed: {list(_QUERY_KEYS)}")
        predicates = data.get("predicates")
        if not isinstance(predicates, list) or not predicates:
            raise DataError(f"malformed query: 'predicates' must be a non-empty list, found {predicates!r}")
        sort = data.get("sort") or []
        if not isinstance(sort, list):
            raise DataError(f"malformed query: 'sort' must be a list, found {sort!r}")
        return cls(tuple(Predicate(**_entry(p, "predicate", ("field", "op", "value"))) for p in predicates),
                   data.get("logic", "and"),
                   tuple(SortKey(**_entry(s, "sort key", ("field", "direction"))) for s in sort),
                   data.get("aggregate"), data.get("limit"), data.get("template", ""))


def _entry(item: Any, what: str, keys: Iterable[str]) -> dict:
    keys = tuple(keys)
    if not isinstance(item, Mapping) or set(item) != set(keys):
        found = sorted(item) if isinstance(item, Mapping) else type(item).__name__
        raise DataError(f"malformed query: a {what} needs exactly the keys {list(keys)}, found {found}")
    return dict(item)
