"""Query workload generator: templates whose predicate values are drawn from the actual data.

A template fixes a query's structure (fields, operators, logic, sort / count / limit); sampling functions
fill in values from the collection. Each query draws one *anchor* document (optionally among those of a
kind, e.g. episodes for a season query), so its predicates describe a real document and correlated fields
stay consistent: ``eq`` takes the anchor's value, ``between`` spans from the anchor's value up a quantile
width set by ``difficulty``, ``in`` takes the anchor's value and 1-3 values of other random documents, and
``lt`` / ``gt`` cut at a quantile. Queries come sorted longest first (most attributes, then most
predicates), so later, shorter queries can reuse the prefixes of indexes built for earlier ones.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from wield.errors import ConfigError
from wield.seeding import derive_seed, make_rng
from workloads.collection import Collection
from workloads.queries import Predicate, Query, SortKey

LIMITS = (10, 20, 50, 100)


@dataclass(frozen=True)
class QueryTemplate:
    """A query structure: predicates as (field, op), logic, optional sort key, count, limit."""

    name: str
    predicates: tuple[tuple[str, str], ...]
    logic: str = "and"
    sort: tuple[str, str] | None = None
    count: bool = False
    limit: bool = False
    anchor: tuple[str, object] | None = None  # draw the anchor document among those with field == value

    @property
    def attributes(self) -> list[str]:
        fields = [f for f, _ in self.predicates] + ([self.sort[0]] if self.sort else [])
        return list(dict.fromkeys(fields))


def _t(name, predicates, logic="and", sort=None, count=False, limit=False, anchor=None) -> QueryTemplate:
    return QueryTemplate(name, tuple(predicates), logic, sort, count, limit, anchor)


IMDB_TEMPLATES = (
    _t("director_filmography", [("director_id", "eq")], sort=("start_year", "desc")),
    _t("titles_by_name", [("primary_title", "eq")]),
    _t("genre_decade_top_rated", [("genre", "eq"), ("start_year", "between")], sort=("average_rating", "desc"), limit=True),
    _t("popular_in_region", [("region", "eq"), ("num_votes", "gt")], sort=("num_votes", "desc"), limit=True),
    _t("count_region_language", [("region", "eq"), ("language", "eq")], count=True),
    _t("episodes_of_season", [("season_number", "eq"), ("episode_number", "between")], sort=("episode_number", "asc"),
       anchor=("title_type", "tvEpisode")),
    _t("long_movies_of_year", [("title_type", "eq"), ("start_year", "eq"), ("runtime_minutes", "gt")],
       anchor=("title_type", "movie")),
    _t("rating_band_votes", [("average_rating", "between"), ("num_votes", "between")], count=True),
    _t("director_or_title", [("director_id", "eq"), ("primary_title", "eq")], logic="or"),
    _t("year_range_by_runtime", [("start_year", "between")], sort=("runtime_minutes", "desc"), limit=True),
    _t("votes_range", [("num_votes", "between")]),
    _t("genres_in_years", [("genre", "in"), ("start_year", "between")], count=True),
    _t("series_ending", [("title_type", "eq"), ("end_year", "between"), ("region", "eq")],
       anchor=("title_type", "tvSeries")),
    _t("regional_top_titles", [("region", "in"), ("average_rating", "gt")], sort=("num_votes", "desc"), limit=True),
    _t("director_in_genre", [("director_id", "eq"), ("genre", "eq")], sort=("average_rating", "desc")),
    _t("runtime_window", [("runtime_minutes", "between"), ("start_year", "gt")]),
    _t("count_director", [("director_id", "in")], count=True),
    _t("language_recent_votes", [("language", "eq"), ("start_year", "eq")], sort=("num_votes", "desc"), limit=True),
    _t("adult_recent", [("is_adult", "eq"), ("start_year", "between"), ("genre", "eq")], count=True),
    _t("episode_numbers", [("episode_number", "eq"), ("season_number", "eq")], anchor=("title_type", "tvEpisode")),
    _t("original_titles_region", [("is_original_title", "eq"), ("region", "eq"), ("start_year", "eq")]),
    _t("votes_or_rating", [("num_votes", "gt"), ("average_rating", "gte")], logic="or", count=True),
    _t("title_year", [("primary_title", "eq"), ("start_year", "eq")]),
    _t("end_year_count", [("end_year", "eq"), ("title_type", "eq")], count=True),
    _t("low_rated_popular", [("average_rating", "lt"), ("num_votes", "gt")], sort=("average_rating", "asc"), limit=True),
    _t("short_films_of_year", [("runtime_minutes", "lt"), ("start_year", "eq")], sort=("num_votes", "desc"), limit=True),
)


@dataclass(frozen=True)
class QueryWorkloadConfig:
    """Parameters of a query workload; every field is validated with a clear error."""

    n_queries: int = 20
    min_predicates: int = 1
    max_predicates: int = 3
    max_attributes: int = 3
    difficulty: float = 0.3
    templates: tuple[str, ...] | None = None
    exclude_templates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, low in (("n_queries", 1), ("min_predicates", 1), ("max_predicates", 1), ("max_attributes", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(name, value, reason=f"must be an integer >= {low}")
        if self.max_predicates < self.min_predicates:
            raise ConfigError("max_predicates", self.max_predicates,
                              reason=f"must be >= min_predicates ({self.min_predicates})")
        if not (isinstance(self.difficulty, (int, float)) and 0.0 <= self.difficulty <= 1.0):
            raise ConfigError("difficulty", self.difficulty, reason="must be a number in [0, 1]")
        if self.templates is not None:
            object.__setattr__(self, "templates", tuple(self.templates))
        object.__setattr__(self, "exclude_templates", tuple(self.exclude_templates))

    def as_dict(self) -> dict:
        return asdict(self)


def generic_templates(collection: Collection, count: int = 24) -> tuple[QueryTemplate, ...]:
    """Templates for any collection, derived deterministically from its fields and their cardinalities."""
    rng = make_rng(derive_seed(0, "generic-templates", *collection.field_names))
    names = list(collection.field_names)
    templates = []
    for i in range(count):
        n = int(rng.integers(1, min(3, len(names)) + 1))
        fields = [names[j] for j in rng.choice(len(names), size=n, replace=False)]
        predicates = []
        for f in fields:
            spec = collection.field(f)
            many = collection.distinct_count(f) > 50
            ops = ["eq", "in"] + (["between", "gt", "lt"] if spec.kind != "text" and many else [])
            predicates.append((f, str(rng.choice(ops))))
        roll = rng.random()
        sort = (names[int(rng.integers(len(names)))], str(rng.choice(["asc", "desc"]))) if roll < 0.35 else None
        logic = "or" if n > 1 and rng.random() < 0.2 else "and"
        templates.append(_t(f"generic_{i:02d}", predicates, logic=logic, sort=sort,
                            count=sort is None and roll > 0.7, limit=sort is not None and rng.random() < 0.5))
    return tuple(templates)


class QueryWorkloadGenerator:
    """Draws query workloads from templates over one collection."""

    def __init__(self, collection: Collection, config: QueryWorkloadConfig | None = None) -> None:
        self.collection = collection
        self.config = config or QueryWorkloadConfig()
        imdb_like = all(f in collection.field_names for t in IMDB_TEMPLATES for f in t.attributes)
        pool = IMDB_TEMPLATES if imdb_like else generic_templates(collection)
        known = [t.name for t in pool]
        for name in (self.config.templates or ()) + self.config.exclude_templates:
            if name not in known:
                raise ConfigError("templates", name, known)
        pool = [t for t in pool if (self.config.templates is None or t.name in self.config.templates)
                and t.name not in self.config.exclude_templates
                and self.config.min_predicates <= len(t.predicates) <= self.config.max_predicates
                and len(t.attributes) <= self.config.max_attributes]
        if not pool:
            raise ConfigError("templates", self.config.templates, known,
                              reason="no template fits the configuration")
        self.templates: tuple[QueryTemplate, ...] = tuple(pool)
        rng = make_rng(0, "quantile-sample", collection.fingerprint())
        rows = rng.integers(0, len(collection), size=min(len(collection), 20_000))
        self._anchor_rows: dict[tuple, np.ndarray] = {}
        self._sorted = {f.name: np.sort(collection.columns[f.name][rows]) for f in collection.fields
                        if f.kind != "text"}

    @property
    def available_templates(self) -> list[str]:
        return [t.name for t in self.templates]

    def _value(self, rng: np.random.Generator, field: str):
        column = self.collection.columns[field]
        return column[int(rng.integers(len(column)))]

    def _anchor(self, rng: np.random.Generator, template: QueryTemplate) -> int:
        """Row index of the document the query's values describe."""
        if template.anchor is None:
            return int(rng.integers(len(self.collection)))
        if template.anchor not in self._anchor_rows:
            field, value = template.anchor
            rows = np.flatnonzero(self.collection.columns[field] == value)
            self._anchor_rows[template.anchor] = rows if len(rows) else np.arange(len(self.collection))
        rows = self._anchor_rows[template.anchor]
        return int(rows[int(rng.integers(len(rows)))])

    def _width(self, rng: np.random.Generator) -> float:
        """Fraction of the documents a range predicate spans: log-uniform, scaled by difficulty."""
        low, high = math.log(0.0005), math.log(0.002 + 0.2 * self.config.difficulty)
        return float(math.exp(rng.uniform(low, high)))

    def _predicate(self, rng: np.random.Generator, field: str, op: str, anchor: int) -> Predicate:
        kind = self.collection.field(field).kind
        value = self.collection.columns[field][anchor]
        if op == "eq" or (kind == "text" and op not in ("in",)):
            return Predicate(field, "eq", value)
        if op == "in":
            others = [self._value(rng, field) for _ in range(int(rng.integers(1, 4)))]
            return Predicate(field, "in", tuple(sorted(dict.fromkeys([value, *others]), key=str)))
        ordered = self._sorted[field]
        width = self._width(rng)
        if op == "between":
            start = float(np.searchsorted(ordered, value, side="left")) / len(ordered)
            high = np.quantile(ordered, min(1.0, start + width), method="nearest")
            return Predicate(field, "between", (value, max(value, high)))
        if op in ("lt", "lte"):
            return Predicate(field, op, np.quantile(ordered, width, method="nearest"))
        return Predicate(field, op, np.quantile(ordered, 1.0 - width, method="nearest"))

    def _query(self, rng: np.random.Generator, template: QueryTemplate) -> Query:
        anchor = self._anchor(rng, template)
        predicates = tuple(self._predicate(rng, f, op, anchor) for f, op in template.predicates)
        sort = (SortKey(*template.sort),) if template.sort else ()
        limit = int(rng.choice(LIMITS)) if template.limit else None
        return Query(predicates, template.logic, sort, "count" if template.count else None, limit,
                     template.name).validate(self.collection)

    def generate(self, seed: int) -> list[Query]:
        """``n_queries`` queries, sorted longest first; the same seed always gives the same list."""
        rng = make_rng(seed, "queries")
        chosen = rng.integers(0, len(self.templates), size=self.config.n_queries)
        queries = [self._query(rng, self.templates[int(i)]) for i in chosen]
        return sorted(queries, key=lambda q: (-len(q.attributes()), -len(q.predicates)))
