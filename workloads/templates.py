"""Query templates: the structure of a query (fields, operators, logic, output) without its values.

``IMDB_TEMPLATES`` are hand-written, realistic queries over the IMDB-like collection; ``generic_templates``
derives templates deterministically from the fields of any other collection. The query generator fills in
the values from the data.

Operator specs: a concrete operator ("eq", "between", "in", "lt", "lte", "gt", "gte"), ``"*"`` (any operator
the field's kind allows, drawn by the configured operator weights) or ``"cmp"`` (a range: between, lt or gt).
Outputs: ``"documents"`` (optionally sorted, by ``sort_probability``), ``"sorted"`` (always sorted when a sort
key fits), ``"count"`` or ``"any"`` (count with ``count_probability``, else documents).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wield.errors import ConfigError
from workloads.collection import Collection
from workloads.queries import LOGIC, OPERATORS

ANY_OP, RANGE_OP = "*", "cmp"
OPERATOR_SPECS = (*OPERATORS, ANY_OP, RANGE_OP)
OUTPUTS = ("any", "documents", "sorted", "count")
SORT_DIRECTIONS = ("asc", "desc", "*")


@dataclass(frozen=True)
class QueryTemplate:
    """A query structure; ``anchor`` = (field, value) draws the query's anchor document among matching rows."""

    name: str
    predicates: tuple[tuple[str, str], ...]
    logic: str | None = "and"  # None: "or" with probability or_probability, else "and"
    sort: tuple[tuple[str, str], ...] = ()  # candidate sort keys (field, "asc" | "desc" | "*")
    output: str = "any"
    anchor: tuple[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", tuple(tuple(p) for p in self.predicates))
        object.__setattr__(self, "sort", tuple(tuple(s) for s in self.sort))
        where = f"template '{self.name}'"
        if not self.predicates:
            raise ConfigError(f"{where}.predicates", [], reason="a template needs at least one predicate")
        for field, op in self.predicates:
            if op not in OPERATOR_SPECS:
                raise ConfigError(f"{where}.predicates['{field}']", op, OPERATOR_SPECS)
        for field, direction in self.sort:
            if direction not in SORT_DIRECTIONS:
                raise ConfigError(f"{where}.sort['{field}']", direction, SORT_DIRECTIONS)
        if self.logic is not None and self.logic not in LOGIC:
            raise ConfigError(f"{where}.logic", self.logic, (*LOGIC, None))
        if self.output not in OUTPUTS:
            raise ConfigError(f"{where}.output", self.output, OUTPUTS)

    def fields(self) -> list[str]:
        """Distinct predicate fields, in order."""
        return list(dict.fromkeys(field for field, _ in self.predicates))

    def referenced_fields(self) -> set[str]:
        """Every field the template needs: predicate, sort and anchor fields."""
        anchor = {self.anchor[0]} if self.anchor else set()
        return {f for f, _ in self.predicates} | {f for f, _ in self.sort} | anchor


def _t(name: str, predicates, logic: str | None = "and", sort=(), output: str = "any",
       anchor=None) -> QueryTemplate:
    return QueryTemplate(name, tuple(predicates), logic, tuple(sort), output, anchor)


_EPISODE = ("title_type", "tvEpisode")
IMDB_TEMPLATES: tuple[QueryTemplate, ...] = (
    _t("genre_years_by_rating", [("genre", "eq"), ("start_year", "between")],
       sort=[("average_rating", "desc"), ("num_votes", "desc")], output="sorted"),
    _t("type_genre_rated", [("title_type", "eq"), ("genre", "eq"), ("average_rating", "cmp")],
       sort=[("num_votes", "desc")]),
    _t("episodes_of_season", [("season_number", "eq"), ("episode_number", "between")],
       sort=[("episode_number", "asc")], output="documents", anchor=_EPISODE),
    _t("count_region_language", [("region", "eq"), ("language", "eq")], output="count"),
    _t("popular_of_type_and_year", [("title_type", "eq"), ("start_year", "eq"), ("num_votes", "gt")],
       sort=[("num_votes", "desc")], output="sorted"),
    _t("director_filmography", [("director_id", "eq")], sort=[("start_year", "*")], output="documents"),
    _t("director_titles_of_types", [("director_id", "eq"), ("title_type", "in")],
       sort=[("average_rating", "desc")]),
    _t("title_lookup", [("primary_title", "eq")], sort=[("start_year", "desc")], output="documents"),
    _t("title_in_region", [("primary_title", "eq"), ("region", "eq")], output="documents"),
    _t("runtime_window_of_genres", [("runtime_minutes", "between"), ("genre", "in")],
       sort=[("runtime_minutes", "asc")]),
    _t("adult_titles_of_years", [("is_adult", "eq"), ("start_year", "between")], output="count",
       anchor=("is_adult", 1)),
    _t("series_running_between", [("title_type", "eq"), ("start_year", "between"), ("end_year", "between")],
       sort=[("end_year", "desc")], anchor=("title_type", "tvSeries")),
    _t("original_titles_of_language", [("language", "eq"), ("is_original_title", "eq")],
       sort=[("average_rating", "desc")], output="sorted"),
    _t("genre_or_genre", [("genre", "eq"), ("genre", "eq")], logic="or", sort=[("start_year", "desc")]),
    _t("acclaimed_or_popular", [("average_rating", "gt"), ("num_votes", "gt")], logic="or",
       sort=[("num_votes", "desc")]),
    _t("region_or_language", [("region", "eq"), ("language", "eq")], logic="or", output="count"),
    _t("long_movies_by_rating", [("title_type", "eq"), ("runtime_minutes", "gt"), ("average_rating", "cmp")],
       sort=[("average_rating", "desc")], anchor=("title_type", "movie")),
    _t("recent_episodes_of_genre", [("title_type", "eq"), ("genre", "eq"), ("start_year", "gt")],
       sort=[("start_year", "desc")], anchor=_EPISODE),
    _t("votes_band", [("num_votes", "cmp")], sort=[("num_votes", "desc")]),
    _t("year_runtime_window", [("start_year", "eq"), ("runtime_minutes", "between")],
       sort=[("runtime_minutes", "*")]),
    _t("director_genre", [("director_id", "eq"), ("genre", "eq")], logic=None,
       sort=[("start_year", "desc")]),
    _t("regions_and_languages", [("region", "in"), ("language", "in")], output="count"),
    _t("types_in_years", [("title_type", "in"), ("start_year", "between")], sort=[("start_year", "asc")]),
    _t("rated_in_region", [("region", "eq"), ("average_rating", "gte")],
       sort=[("average_rating", "desc")], output="sorted"),
    _t("series_ending_in_region", [("title_type", "eq"), ("end_year", "between"), ("region", "eq")],
       anchor=("title_type", "tvSeries")),
    _t("title_or_director", [("primary_title", "eq"), ("director_id", "eq")], logic="or"),
    _t("episode_in_season", [("episode_number", "eq"), ("season_number", "eq")], logic=None,
       output="count", anchor=_EPISODE),
    _t("field_filter", [("runtime_minutes", "*"), ("start_year", "*")], logic=None,
       sort=[("average_rating", "*")]),
)


def generic_templates(collection: Collection) -> tuple[QueryTemplate, ...]:
    """Templates for any collection, derived deterministically from its field order and kinds.

    One single-predicate template per field, and two- and three-predicate templates over neighbouring
    fields (wrapping around), all with operators drawn by weight (``"*"``) and logic drawn by ``or_probability``.
    Numeric fields of a template are its sort candidates, with the collection's first numeric field.
    A field holding a single value (``year`` in the flights table) is left out: a predicate on it selects
    every row or none and a sort on it orders nothing, so it would only add noise to the workload. A
    collection whose every field is constant gets no template (the generator then says so).
    """
    varying = [f for f in collection.fields if collection.distinct_count(f.name) > 1]
    names = [f.name for f in varying]
    numeric = [f.name for f in varying if f.kind != "text"]
    groups: list[list[str]] = [[name] for name in names]
    for width in (2, 3):
        if len(names) >= width:
            groups += [[names[(i + j) % len(names)] for j in range(width)] for i in range(len(names))]
    templates, seen = [], set()
    for fields in groups:
        if frozenset(fields) in seen:
            continue
        seen.add(frozenset(fields))
        candidates = list(dict.fromkeys([f for f in fields if f in numeric] + numeric[:1]))
        name = "auto_" + "_".join(fields)
        if any(t.name == name for t in templates):
            name = f"{name}_{len(templates)}"
        templates.append(_t(name, [(f, ANY_OP) for f in fields],
                            logic=None if len(fields) > 1 else "and", sort=[(f, "*") for f in candidates]))
    return tuple(templates)
