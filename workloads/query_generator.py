"""Query workload generator: templates whose predicate values are drawn from the actual data.

Each query picks an eligible template and one *anchor* document (optionally among rows of a kind, e.g.
episodes for a season query), so its predicates describe a real document and correlated fields stay
consistent: ``eq`` takes the anchor's value; ``between`` spans from the anchor's value up a quantile width set
by ``difficulty``; ``in`` takes the anchor's value and 1-3 values of other random documents; ``lt`` / ``gt``
cut at a low / high quantile of the same width (never at the extreme value itself, so they match something).
Widths are log-uniform, so most queries are selective and a few are not. Logic, sort, count and limit follow
the template and the configured probabilities. A workload comes sorted longest first (most attributes, then
most predicates), so later, shorter queries can reuse prefixes of indexes built for earlier ones.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

import numpy as np

from wield.errors import ConfigError
from wield.seeding import make_rng
from workloads.collection import Collection
from workloads.imdb import FIELDS as IMDB_FIELDS
from workloads.queries import Predicate, Query, SortKey
from workloads.templates import ANY_OP, IMDB_TEMPLATES, RANGE_OP, QueryTemplate, generic_templates

OPERATOR_CLASSES = ("eq", "range", "in", "lt", "gt")
DEFAULT_OPERATOR_WEIGHTS = {"eq": 0.4, "range": 0.25, "in": 0.15, "lt": 0.1, "gt": 0.1}
_CLASS_OPS = {"eq": ("eq",), "range": ("between",), "in": ("in",), "lt": ("lt", "lte"), "gt": ("gt", "gte")}
_OP_CLASS = {op: cls for cls, ops in _CLASS_OPS.items() for op in ops}
_TEXT_CLASSES = ("eq", "in")
_RANGE_CLASSES = ("range", "lt", "gt")

__all__ = ["QueryTemplate", "QueryWorkloadConfig", "QueryWorkloadGenerator", "IMDB_TEMPLATES",
           "DEFAULT_OPERATOR_WEIGHTS", "OPERATOR_CLASSES"]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(name, value, reason="must be a number in [0, 1]")
    return float(value)


def _names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigError(name, value, reason="must be a list of template names")
    return tuple(value)


@dataclass(frozen=True)
class QueryWorkloadConfig:
    """Parameters of a query workload; every field is validated on construction with a clear error.

    ``operator_weights`` weigh the operator classes eq, range (between), in, lt (lt/lte) and gt (gt/gte) where
    a template leaves the operator open; a template whose fixed operator has weight 0 is not drawn.
    ``difficulty`` in [0, 1] widens ranges (less selective predicates). ``templates`` restricts the draw to
    the named templates, ``exclude_templates`` holds some out (e.g. for out-of-distribution tests).
    """

    n_queries: int = 20
    min_predicates: int = 1
    max_predicates: int = 3
    max_attributes: int = 3
    operator_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_OPERATOR_WEIGHTS))
    or_probability: float = 0.2
    sort_probability: float = 0.35
    count_probability: float = 0.3
    limit_probability: float = 0.5
    limit_values: tuple[int, ...] = (10, 20, 50, 100)
    difficulty: float = 0.3
    templates: tuple[str, ...] | None = None
    exclude_templates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, low, high in (("n_queries", 1, 100_000), ("min_predicates", 1, 8), ("max_predicates", 1, 8),
                                ("max_attributes", 1, 16)):
            value = getattr(self, name)
            if not _is_int(value) or not low <= value <= high:
                raise ConfigError(name, value, reason=f"must be an integer in [{low}, {high}]")
        if self.max_predicates < self.min_predicates:
            raise ConfigError("max_predicates", self.max_predicates,
                              reason=f"must be >= min_predicates ({self.min_predicates})")
        self._set("operator_weights", self._weights(self.operator_weights))
        for name in ("or_probability", "sort_probability", "count_probability", "limit_probability", "difficulty"):
            self._set(name, _probability(name, getattr(self, name)))
        limits = self.limit_values
        if isinstance(limits, (str, bytes)) or not hasattr(limits, "__iter__") or not limits \
                or not all(_is_int(v) and v >= 1 for v in limits):
            raise ConfigError("limit_values", limits, reason="must be a non-empty list of integers >= 1")
        self._set("limit_values", tuple(int(v) for v in limits))
        if self.templates is not None:
            self._set("templates", _names("templates", self.templates))
            if not self.templates:
                raise ConfigError("templates", [], reason="name at least one template, or None for all")
        self._set("exclude_templates", _names("exclude_templates", self.exclude_templates))
        both = sorted(set(self.templates or ()) & set(self.exclude_templates))
        if both:
            raise ConfigError("exclude_templates", both, reason="a template cannot be both included and excluded")

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # normalising a frozen dataclass during construction

    @staticmethod
    def _weights(weights: Any) -> dict[str, float]:
        if not isinstance(weights, Mapping):
            raise ConfigError("operator_weights", weights, OPERATOR_CLASSES,
                              reason="must map operator classes to weights")
        for key, value in weights.items():
            if key not in OPERATOR_CLASSES:
                raise ConfigError("operator_weights", key, OPERATOR_CLASSES, reason="unknown operator class")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < math.inf):
                raise ConfigError(f"operator_weights['{key}']", value, reason="must be a finite number >= 0")
        result = {key: float(weights.get(key, 0.0)) for key in OPERATOR_CLASSES}
        if sum(result.values()) <= 0:
            raise ConfigError("operator_weights", dict(weights), reason="at least one weight must be > 0")
        return result

    def as_dict(self) -> dict:
        """JSON-ready parameters (tuples become lists); ``from_dict`` inverts it."""
        data = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "QueryWorkloadConfig":
        known = [f.name for f in fields(cls)]
        if not isinstance(data, Mapping):
            raise ConfigError("QueryWorkloadConfig", data, reason="expected an object of parameters")
        for key in data:
            if key not in known:
                raise ConfigError("QueryWorkloadConfig", key, known, reason="unknown parameter")
        return cls(**dict(data))


class QueryWorkloadGenerator:
    """Draws query workloads over one collection: IMDB templates for IMDB-shaped collections, else generic."""

    def __init__(self, collection: Collection, config: QueryWorkloadConfig | None = None) -> None:
        self.collection = collection
        self.config = config or QueryWorkloadConfig()
        if len(collection) == 0:
            raise ConfigError("collection", collection.name, reason="the collection has no documents")
        kinds = {f.name: f.kind for f in collection.fields}
        imdb_shaped = all(kinds.get(f.name) == f.kind for f in IMDB_FIELDS)
        self.all_templates: tuple[QueryTemplate, ...] = (IMDB_TEMPLATES if imdb_shaped
                                                         else generic_templates(collection))
        if not self.all_templates:
            raise ConfigError("collection", collection.name, reason="every field holds a single value, so no "
                              "predicate or sort can tell its documents apart: no query can be generated")
        known = [t.name for t in self.all_templates]
        for name in (self.config.templates or ()) + self.config.exclude_templates:
            if name not in known:
                raise ConfigError("templates", name, known,
                                  reason=f"no such template for collection '{collection.name}'")
        self.templates = tuple(t for t in self.all_templates if self._eligible(t))
        if not self.templates:
            raise ConfigError("templates", list(self.config.templates or known), known,
                              reason="no template satisfies the configuration (predicate counts, max_attributes, "
                                     "operator_weights, exclusions)")
        self._sorted: dict[str, np.ndarray] = {}
        self._anchor_rows: dict[tuple, np.ndarray] = {}

    @property
    def available_templates(self) -> list[str]:
        """Names of the templates this generator draws from (after the configuration's filters)."""
        return [t.name for t in self.templates]

    # -- eligibility -------------------------------------------------------------------------------
    def _op_choices(self, field_name: str, spec: str) -> list[tuple[str, float]]:
        """(operator class, weight > 0) pairs a predicate spec can become on this field."""
        kind = self.collection.field(field_name).kind
        if spec == ANY_OP:
            classes = _TEXT_CLASSES if kind == "text" else OPERATOR_CLASSES
        elif spec == RANGE_OP:
            classes = () if kind == "text" else _RANGE_CLASSES
        else:
            classes = (_OP_CLASS[spec],) if kind != "text" or _OP_CLASS[spec] in _TEXT_CLASSES else ()
        weights = self.config.operator_weights
        return [(c, weights[c]) for c in classes if weights[c] > 0]

    def _eligible(self, template: QueryTemplate) -> bool:
        config = self.config
        if config.templates is not None and template.name not in config.templates:
            return False
        if template.name in config.exclude_templates:
            return False
        if not config.min_predicates <= len(template.predicates) <= config.max_predicates:
            return False
        if len(template.fields()) > config.max_attributes:
            return False
        if not template.referenced_fields() <= set(self.collection.field_names):
            return False
        return all(self._op_choices(f, op) for f, op in template.predicates)

    # -- sampling ----------------------------------------------------------------------------------
    def _sorted_column(self, name: str) -> np.ndarray:
        if name not in self._sorted:
            self._sorted[name] = np.sort(self.collection.columns[name])
        return self._sorted[name]

    def _anchor(self, rng: np.random.Generator, template: QueryTemplate) -> int:
        """Row index of the document whose values the query describes."""
        n = len(self.collection)
        if template.anchor is None:
            return int(rng.integers(n))
        if template.anchor not in self._anchor_rows:
            name, value = template.anchor
            rows = np.flatnonzero(self.collection.columns[name] == value)
            self._anchor_rows[template.anchor] = rows if len(rows) else np.arange(n)
        rows = self._anchor_rows[template.anchor]
        return int(rows[int(rng.integers(len(rows)))])

    def _width(self, rng: np.random.Generator) -> float:
        """Fraction of the documents a range spans: log-uniform, both ends rising with difficulty."""
        d = self.config.difficulty
        low, high = 0.0005 + 0.05 * d * d, 0.002 + 0.3 * d
        return math.exp(rng.uniform(math.log(low), math.log(high)))

    def _operator(self, rng: np.random.Generator, field_name: str, spec: str) -> str:
        if spec not in (ANY_OP, RANGE_OP):
            return spec
        choices = self._op_choices(field_name, spec)
        weights = np.array([w for _, w in choices])
        cls = choices[int(rng.choice(len(choices), p=weights / weights.sum()))][0]
        options = _CLASS_OPS[cls]
        return options[int(rng.integers(len(options)))]

    def _predicate(self, rng: np.random.Generator, field_name: str, op: str, anchor: int) -> Predicate:
        column = self.collection.columns[field_name]
        value = column[anchor:anchor + 1].tolist()[0]
        if op == "eq":
            return Predicate(field_name, op, value)
        if op == "in":
            wanted = int(rng.integers(2, 5))
            others = column[rng.integers(0, len(column), size=4 * wanted)].tolist()
            values = list(dict.fromkeys([value, *others]))[:wanted]
            return Predicate(field_name, op, tuple(sorted(values)))
        ordered = self._sorted_column(field_name)
        n, span = len(ordered), max(1, math.ceil(self._width(rng) * len(ordered)))
        if op == "between":
            start = int(np.searchsorted(ordered, value, side="left"))
            return Predicate(field_name, op, (value, ordered[min(n - 1, start + span)]))
        if op in ("lt", "lte"):
            threshold = ordered[min(n - 1, span)]
            if op == "lt" and threshold == ordered[0]:  # ties at the minimum: cut above them, not below
                threshold = ordered[min(n - 1, int(np.searchsorted(ordered, threshold, side="right")))]
            return Predicate(field_name, op, threshold)
        threshold = ordered[max(0, n - 1 - span)]
        if op == "gt" and threshold == ordered[-1]:  # ties at the maximum: cut below them
            threshold = ordered[max(0, int(np.searchsorted(ordered, threshold, side="left")) - 1)]
        return Predicate(field_name, op, threshold)

    def _other_row(self, rng: np.random.Generator, name: str, taken: list) -> int:
        """A random row whose value of ``name`` is not taken yet (for a field repeated in one query)."""
        column = self.collection.columns[name]
        rows = rng.integers(0, len(column), size=16).tolist()
        return next((row for row in rows if column[row] not in taken), rows[0])

    def _sort(self, rng: np.random.Generator, template: QueryTemplate, used: list[str]) -> tuple[SortKey, ...]:
        keys: list[SortKey] = []
        for _ in range(2):
            room = self.config.max_attributes - len(used)
            candidates = [(f, d) for f, d in template.sort
                          if (f in used or room > 0) and f not in [k.field for k in keys]]
            if not candidates or (keys and rng.random() >= 0.25):
                break
            name, direction = candidates[int(rng.integers(len(candidates)))]
            if direction == "*":
                direction = ("asc", "desc")[int(rng.integers(2))]
            keys.append(SortKey(name, direction))
            used = used + [name] if name not in used else used
        return tuple(keys)

    def _query(self, rng: np.random.Generator, template: QueryTemplate) -> Query:
        config = self.config
        anchor = self._anchor(rng, template)
        predicates: list[Predicate] = []
        for name, spec in template.predicates:
            taken = [v for p in predicates if p.field == name for v in p.values()]
            row = self._other_row(rng, name, taken) if taken else anchor
            predicates.append(self._predicate(rng, name, self._operator(rng, name, spec), row))
        logic = template.logic or ("or" if rng.random() < config.or_probability else "and")
        if len(predicates) == 1:
            logic = "and"
        output = template.output
        if output == "any":
            output = "count" if rng.random() < config.count_probability else "documents"
        if output == "count":
            query = Query(tuple(predicates), logic, aggregate="count", template=template.name)
            return query.validate(self.collection)
        sort: tuple[SortKey, ...] = ()
        if template.sort and (output == "sorted" or rng.random() < config.sort_probability):
            sort = self._sort(rng, template, template.fields())
        limit = None
        if rng.random() < config.limit_probability:
            limit = config.limit_values[int(rng.integers(len(config.limit_values)))]
        return Query(tuple(predicates), logic, sort, None, limit, template.name).validate(self.collection)

    def redraw(self, queries: list[Query], seed: int) -> list[Query]:
        """The same queries (fields, operators, logic, sort, aggregate, limit: every ``Query.shape``) with their
        predicate values drawn anew from the data with ``seed``, in the same order: a fresh instance of the
        same workload, as a recurring workload's parameters change between executions."""
        rng = make_rng(seed, "query-values")
        templates = {template.name: template for template in self.all_templates}
        drawn = []
        for query in queries:
            template = templates.get(query.template)
            anchor = self._anchor(rng, template) if template is not None else int(rng.integers(len(self.collection)))
            predicates: list[Predicate] = []
            for old in query.predicates:
                taken = [v for p in predicates if p.field == old.field for v in p.values()]
                row = self._other_row(rng, old.field, taken) if taken else anchor
                predicates.append(self._predicate(rng, old.field, old.op, row))
            drawn.append(Query(tuple(predicates), query.logic, query.sort, query.aggregate, query.limit,
                               query.template).validate(self.collection))
        return drawn

    def generate(self, seed: int) -> list[Query]:
        """``n_queries`` queries sorted longest first; the same seed, collection and config give the same list."""
        rng = make_rng(seed, "query-workload")
        queries = [self._query(rng, self.templates[int(rng.integers(len(self.templates)))])
                   for _ in range(self.config.n_queries)]
        return sorted(queries, key=lambda q: (-len(q.attributes()), -len(q.predicates)))
