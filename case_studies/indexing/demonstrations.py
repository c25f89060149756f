"""Indexing demonstrations: the labelling rules of docs/design.md section 6 and the trace / human-file readers.

Rules (each maps the indexes built so far and the current query to an index and a signed margin):

- ``full`` (+margin): the query's full index (its first k attributes, query order, sort directions).
- ``noop`` (+margin): create nothing.
- ``reverse`` (-margin): never the full index's keys in reverse order (c3, c2, c1 for a query on c1, c2,
  c3). The negative margin sits only on the heads where the reverse index differs from the full index
  (for (c1, c2, c3) the middle key is the same in both orders and carries no margin); a query with one
  addressable attribute has no reverse order and the rule abstains.
- ``prefix`` (+margin): reuse an existing index whose leading keys are the query's full index, in the same
  or the fully inverted sort order (a B-tree is read either way) -> no-op; otherwise the full index.
- ``advisor`` (+margin): the index advisor's choice for the workload (``advisor.advise``, on the task's own
  engine, metric and reward, within the objective's memory cap) as a positive demonstration: at each query,
  an index of the advisor's set that is not built yet and that this query's heads can build (its fields
  among the query's first k attributes), the one that the fewest later queries could build (ties: the
  order the advisor added them), so that one index per query builds as much of the set as it can; no-op
  when none is left.
  The advice is computed once per distinct workload; the rule needs the task's system and converter
  (``rule_factories(k, margin, system, converter)``).
- ``advisor-search`` (+margin): as ``advisor``, with the advisor's set improved by local search first
  (``local_search.py``: drop, add or swap one index while the task's reward improves, within the same memory
  cap): a teacher that is better than the advisor on the workloads it labels (on held-out redraws of the
  default workloads, +0.008 to +0.017 in reward on four seeds of five, 0 on the fifth).

Under the candidate design (``candidate_design.py``), ``rule_factories`` given the task's
converter makes every rule label only what that design can build: an index that is no candidate of the
query makes the rule abstain, one already built becomes no-op (the same configuration; the design masks a
built candidate), and ``reverse`` puts its negative margin on the one head where the reverse order is a
candidate (two equality fields, for instance) and abstains elsewhere. Without a converter the rules label
for the positional heads.

Under the shortlist design (``shortlist_design.py``) an action builds one of the indexes shortlisted at that
state, not one of the query's, so only the rules that do not name a query's own index label for it
(``SHORTLIST_RULES``): ``noop``, and ``advisor`` / ``advisor-search``, which at each step label the index of
their set that is not built yet and ranks first in the current shortlist (no-op when none of their set is
shortlisted).

A states-only trace is a query log: a JSON array of queries (one episode), a JSON array of such arrays
(several episodes), or JSON lines of queries. A human demonstration file is a JSON array (or JSON lines) of
objects ``{"query": {...}, "index": [["field", "asc"|"desc"], ...] | null}`` with an optional integer
``"episode"`` grouping rows into trajectories; a person's index becomes the agent's action through the
converter's ``system_to_agent_action``. Queries use ``Query.to_dict``'s form. Every row is checked against
the collection: an unknown attribute is an error naming the file, the row and the allowed fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.schema import IndexingSchema
from wield.demonstrations import DEFAULT_EXPERT_MARGIN, DecisionContext, Label, LabellingRule
from wield.errors import ConfigError, DataError
from wield.io import parse_json, read_text
from workloads import Query

# The study's Pretrain+Online labelling: create nothing (+margin) and never the reverse-order index (-margin).
DEFAULT_RULES = ("noop", "reverse")
SHORTLIST_RULES = ("noop", "advisor", "advisor-search")  # the rules that can label for the shortlist design
# DQfD's labelling on the shortlist design unless --rules says otherwise: the advisor's set, index by index
SHORTLIST_DEFAULT_RULES = ("advisor",)


def check_rules_fit_design(actions: str, rules: Sequence[str]) -> None:
    """Refuse labelling rules the task design ``actions`` cannot label for (the shortlist design: only
    ``SHORTLIST_RULES``), naming the field, the rules refused and the allowed ones."""
    if actions != "shortlist":
        return  # the other designs label with every rule
    unfit = [rule for rule in rules if rule not in SHORTLIST_RULES]
    if unfit:
        raise ConfigError("rules", ",".join(unfit), SHORTLIST_RULES,
                          reason="the shortlist design (the default) builds the indexes shortlisted at each step, "
                                 "so only these rules label for it (give e.g. --rules advisor, or --actions "
                                 "candidates for the study's rules)")


def default_rules(actions: str) -> tuple[str, ...]:
    """The labelling rules DQfD and ``wield demonstrate`` use on the task design ``actions`` when none are
    given: the study's ``DEFAULT_RULES``, except on the shortlist design, which they cannot label for."""
    return SHORTLIST_DEFAULT_RULES if actions == "shortlist" else DEFAULT_RULES


def addressable_full_index(query, k: int) -> IndexSpec:
    """The query's full index restricted to the first k attributes: what the k heads can build."""
    return IndexSpec(full_index(query).keys[:k])


def _head_values(index: IndexSpec | None, query, k: int) -> list[int]:
    """The positional head values (0 = no-op) that build ``index`` for ``query`` (see the schema)."""
    attributes = query.attributes()[:k]
    values = [0] * k
    for head, (field, direction) in enumerate(index.keys if index else ()):
        values[head] = IndexingSchema.encode_key(attributes.index(field), direction)
    return values


def _built(spec: IndexSpec, configuration: Sequence[IndexSpec]) -> bool:
    """Whether ``spec`` (or its inverted twin) is in ``configuration`` already."""
    wanted = spec.canonical()
    return any(index.canonical() == wanted for index in configuration)


class _IndexingRule(LabellingRule):
    """``candidates`` (the candidate design's ``CandidateSchema.candidates``) restricts a rule to the indexes
    that design can build for a query; without it a rule labels for the positional heads."""

    def __init__(self, k: int = 3, margin: float = DEFAULT_EXPERT_MARGIN,
                 candidates: Callable[[Any], list[IndexSpec]] | None = None,
                 offered: Callable[[Any], list[IndexSpec]] | None = None) -> None:
        if margin <= 0:
            raise ConfigError("margin", margin, reason="give the margin's magnitude (> 0); rules set the sign")
        self.k = int(k)
        self.margin = float(margin)
        self.candidates = candidates
        self.offered = offered  # the shortlist design: the indexes an action can build at a step's context

    def buildable(self, spec: IndexSpec, query) -> bool:
        """Whether the agent's action can build ``spec`` at ``query``."""
        if self.candidates is not None:
            return spec.canonical() in self.candidates(query)
        return set(spec.fields) <= set(query.attributes()[:self.k])

    def build(self, spec: IndexSpec, configuration: Sequence[IndexSpec], query) -> Label | None:
        """A positive label for building ``spec``: under the candidate design no-op when it is built already
        (the design masks a built candidate; the configuration is the same) and none when it is no
        candidate of the query."""
        if self.candidates is None:
            return Label(spec, self.margin)
        if _built(spec, configuration):
            return Label(None, self.margin)
        return Label(spec, self.margin) if self.buildable(spec, query) else None


class FullIndexRule(_IndexingRule):
    name = "full"

    def label(self, configuration: Sequence[IndexSpec], context: DecisionContext) -> Label | None:
        return self.build(addressable_full_index(context["item"], self.k), configuration, context["item"])


class NoOpRule(_IndexingRule):
    name = "noop"

    def label(self, configuration: Sequence[IndexSpec], context: DecisionContext) -> Label:
        return Label(None, self.margin)


class ReverseOrderRule(_IndexingRule):
    name = "reverse"

    def label(self, configuration: Sequence[IndexSpec], context: DecisionContext) -> Label | None:
        query = context["item"]
        full = addressable_full_index(query, self.k)
        if len(full.keys) < 2:
            return None
        reverse = IndexSpec(tuple(reversed(full.keys)))
        if self.candidates is not None:  # one head: the margin on it, where the design offers the index now
            offered = self.buildable(reverse, query) and not _built(reverse, configuration)
            return Label(reverse, -self.margin) if offered else None
        in_order, reversed_values = _head_values(full, query, self.k), _head_values(reverse, query, self.k)
        margins = {f"key_{head + 1}": -self.margin
                   for head, (a, b) in enumerate(zip(in_order, reversed_values)) if a != b}
        return Label(reverse, margins)


class PrefixRule(_IndexingRule):
    name = "prefix"

    def label(self, configuration: Sequence[IndexSpec], context: DecisionContext) -> Label | None:
        full = addressable_full_index(context["item"], self.k)
        if any(existing.starts_with(full) for existing in configuration):
            return Label(None, self.margin)
        return self.build(full, configuration, context["item"])


class AdvisorRule(_IndexingRule):
    """The index advisor's set for the workload as positive demonstrations (module docstring)."""

    name = "advisor"

    def __init__(self, k: int = 3, margin: float = DEFAULT_EXPERT_MARGIN, system=None, converter=None,
                 candidates: Callable[[Any], list[IndexSpec]] | None = None,
                 offered: Callable[[Any], list[IndexSpec]] | None = None) -> None:
        super().__init__(k, margin, candidates, offered)
        if system is None or converter is None:
            raise ConfigError("rules", self.name, reason="the advisor rule measures the workload: it needs the "
                              "task's system and converter")
        self.system = system
        self.converter = converter
        self._advice: dict[str, list[IndexSpec]] = {}

    def advice(self, workload: Sequence) -> list[IndexSpec]:
        """The index set this rule demonstrates for ``workload`` (``choose``), computed once per distinct
        workload."""
        key = repr([query.to_dict() for query in workload])
        if key not in self._advice:
            self._advice[key] = self.choose(workload)
        return self._advice[key]

    def choose(self, workload: Sequence) -> list[IndexSpec]:
        """The advisor's index set for ``workload`` (kept in the measurement store across runs:
        ``advisor.shared_advice``)."""
        from case_studies.indexing.advisor import shared_advice

        return list(shared_advice(self.system, self.converter, workload).configuration)

    def label(self, configuration: Sequence[IndexSpec], context: DecisionContext) -> Label:
        query, workload = context["item"], list(context["workload"])
        built = {spec.canonical() for spec in configuration}
        if self.offered is not None:  # the shortlist design: the set's index the shortlist ranks first
            chosen = {spec.canonical() for spec in self.advice(workload)} - built
            ranked = [spec for spec in self.offered(context) if spec in chosen]
            return Label(ranked[0] if ranked else None, self.margin)
        step = context.get("step")
        later = workload[int(step) + 1:] if isinstance(step, int) else []
        wanted = [spec for spec in self.advice(workload)
                  if spec.canonical() not in built and self.buildable(spec, query)]
        if not wanted:
            return Label(None, self.margin)
        # one index per query: first the one fewest later queries could still build (then the advisor's order)
        return Label(min(wanted, key=lambda spec: sum(self.buildable(spec, q) for q in later)), self.margin)


class AdvisorSearchRule(AdvisorRule):
    """The advisor's set improved by local search (``local_search.py``) as positive demonstrations."""

    name = "advisor-search"

    def choose(self, workload: Sequence) -> list[IndexSpec]:
        """The advisor's set for ``workload`` after local search."""
        from case_studies.indexing.local_search import local_search

        return list(local_search(self.system, self.converter, workload, super().choose(workload)).configuration)


RULES = {rule.name: rule for rule in (FullIndexRule, NoOpRule, ReverseOrderRule, PrefixRule, AdvisorRule,
                                      AdvisorSearchRule)}
MEASURING_RULES = ("advisor", "advisor-search")  # rules that evaluate the workload on the task's system


def rule_factories(k: int, margin: float = DEFAULT_EXPERT_MARGIN, system=None, converter=None) -> dict[str, Any]:
    """Name -> zero-argument constructor, as ``wield.demonstrations.select_rules`` takes them; the measuring
    rules (``advisor``) are built with the task's ``system`` and ``converter``. Under the candidate design
    (the converter's schema has ``candidates``) every rule labels only indexes that design can build; under
    the shortlist design (its schema has ``offered``) only ``SHORTLIST_RULES`` are offered (module docstring)."""
    schema = getattr(converter, "schema", None)
    candidates = getattr(schema, "candidates", None)
    offered = getattr(schema, "offered", None)
    names = SHORTLIST_RULES if offered is not None else tuple(RULES)
    return {name: (lambda cls=cls, name=name: cls(k, margin, system, converter, candidates=candidates,
                                                  offered=offered)
                   if name in MEASURING_RULES else cls(k, margin, candidates=candidates, offered=offered))
            for name, cls in RULES.items() if name in names}


# ------------------------------------------------------------------------------------------ files
def _read_rows(path: str | Path) -> list[Any]:
    path = Path(path)
    text = read_text(path)[1]
    if text.lstrip().startswith("["):
        rows = parse_json(text, str(path))
    else:
        rows = [parse_json(line, f"{path}: line {number} (JSON lines)")
                for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON array (or JSON lines), found a {type(rows).__name__}")
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def _query(path: Path, where: str, data: Any, collection) -> Query:
    try:
        return Query.from_dict(data).validate(collection)
    except (ConfigError, DataError) as exc:
        raise DataError(f"{path}: {where}: {exc}") from exc


def load_query_trace(path: str | Path, collection) -> list[list[Query]]:
    """Episodes of queries from a query log (see the module docstring for the accepted shapes)."""
    path = Path(path)
    rows = _read_rows(path)
    nested = all(isinstance(row, list) for row in rows)
    episodes = rows if nested else [rows]
    result = []
    for e, episode in enumerate(episodes):
        if not episode:
            raise DataError(f"{path}: episode {e} has no queries")
        result.append([_query(path, f"episode {e}, row {r}", row, collection) for r, row in enumerate(episode)])
    return result


HUMAN_KEYS = ("query", "index", "episode")


def load_human_demonstrations(path: str | Path, collection) -> list[list[tuple[Query, IndexSpec | None]]]:
    """Episodes of (query, index) pairs from a file a person wrote."""
    path = Path(path)
    episodes: dict[int, list[tuple[Query, IndexSpec | None]]] = {}
    for r, row in enumerate(_read_rows(path)):
        where = f"row {r}"
        if not isinstance(row, dict) or "query" not in row or set(row) - set(HUMAN_KEYS):
            found = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise DataError(f"{path}: {where}: expected an object with 'query', 'index' and optionally "
                            f"'episode'; found {found}")
        query = _query(path, where, row["query"], collection)
        index = row.get("index")
        try:
            spec = None if index in (None, []) else IndexSpec.of(index)
        except (ConfigError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: {where}: index {index!r}: {exc}; write an index as "
                            '[["field", "asc"], ["other", "desc"]] or null for no index') from exc
        if spec is not None:
            for field in spec.fields:
                if field not in collection.field_names:
                    raise DataError(f"{path}: {where}: index field {field!r} is not an attribute of the "
                                    f"collection; allowed: {', '.join(collection.field_names)}")
        episode = row.get("episode", 0)
        if isinstance(episode, bool) or not isinstance(episode, int):
            raise DataError(f"{path}: {where}: 'episode' must be an integer, found {episode!r}")
        episodes.setdefault(episode, []).append((query, spec))
    return [episodes[e] for e in sorted(episodes)]
