"""What a query costs under an index set, estimated from the column statistics alone (no engine call).

``StatisticsCostModel`` answers, for a query and an index set, the work an SQLite-like engine does, in units
of its virtual-machine steps (the work metric's unit on SQLite, section 5.7 of docs/design.md), from
``ColumnStatistics`` only: the row count, each field's distinct count and the 20,000-row value sample that
gives a predicate's selectivity. It is the "what-if" of a statistics-only advisor (``estimated_advisor.py``)
and never touches the engine, so its answers cost microseconds and are the same on every machine.

The model, with constants read off SQLite's step counts for single queries on the generated collection:

- **Scan of the table**: per row one step and, per predicate evaluated, two (``between`` 2.5, ``in`` 2 +
  0.5 per value; an ``and`` stops at the first false predicate, an ``or`` at the first true one, in the
  query's order); per row returned ``OUTPUT_STEPS`` (a ``count`` one step per row counted); an ``ORDER BY``
  no index serves ``SORTER_STEPS`` per matching row, and only ``limit`` rows are returned; a ``limit``
  without a sort ends the scan after that many matches, where the statistics' sample (drawn in the table's
  order) puts the ``limit``-th match (a table stored in date order keeps December's flights at its end: a
  ``month = 12 LIMIT 10`` reads 92% of it, not the 0.1% an even spread says). An ``ORDER BY`` term on a field an
  equality of an ``and`` fixes orders nothing; SQLite drops it, and so does the model.
- **Seek on an index** (``and`` queries, or a single predicate): a seek (``SEEK_STEPS``), then the rows its
  keys match (equality keys, then one range: ``seek_fraction``), each one step, two more to read the table's
  row unless the index covers a ``count`` query, and the remaining predicates; rows returned as above. An
  index whose keys after the equality fields are the sort keys gives the order (no sorter) and ends after
  ``limit`` matches. **Skip-scan**: leading keys without a predicate, each with at least ``SKIP_SCAN_ROWS``
  rows per value (SQLite's own threshold), are skipped with one seek per combination of their values.
- **The planner's choice.** Without ``sqlite_stat4`` (Python's SQLite is built without it) SQLite ranks the
  usable indexes by ``sqlite_stat1``'s average rows per key value, not by the query's own values, and a
  range bound by a fixed factor of 4; the model picks the index the planner would (fewest average rows,
  then the longer index) and charges what that index really costs with the query's own selectivities. A
  seek the planner expects to cover most of the table loses to the scan.
- **An ``or`` of several predicates** is served by one index per branch (a multi-index OR) when every
  branch has one: an index led by the branch's field, or a skip-scan over the keys before the branch's field
  (as for a seek: each with at least ``SKIP_SCAN_ROWS`` rows per value). SQLite's planner takes that plan for
  a query that returns its rows unsorted only when it expects the branches to visit at most
  ``OR_PLANNER_SHARE`` of the table (stat1 averages: an equality keeps rows / distinct values, a range a
  quarter, a ``between`` a sixteenth, a skip-scan one row more per seek); else it scans. A sorted or counting
  query takes it whenever it serves every branch. This rule agreed with the engine on 80 of 80 ORs of two
  predicates with a two-key index (generated collection and flights table); without it the model took the
  index for 12 that SQLite scanned, and the estimated advisor chose a worse set on 4 of 80 development
  workloads of the generated collection (+0.0041 [-0.0001, +0.0083] of reward per workload with it; flights:
  the same 60 sets). With a sort and a limit, a walk of an index led by the sort key that stops after
  ``limit`` matches is the other way; the cheapest of these and the scan is taken.
- **Index bytes** (``index_bytes``): SQLite's record format, per row a header, each key value at the width
  the record stores it (integers 0-8 bytes by magnitude, text its UTF-8 length), the row id, the cell's
  size and pointer, on pages filled to ``PAGE_FILL``.

What it does not model (the engine's measured work does): the planner's other heuristics (automatic
indexes, OR-by-UNION costing, its cost of a sort against an ordered walk), correlated predicates
(selectivities multiply), and any engine other than SQLite (on PostgreSQL or MongoDB it is an estimate all
the same, with SQLite's planner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from case_studies.indexing.advisor import EQUALITY_OPS
from case_studies.indexing.index_spec import IndexSpec

OUTPUT_STEPS = 16.0  # steps per row returned (its columns and the result row)
COUNT_STEPS = 1.0  # steps per row a count counts
SORTER_STEPS = 5.4  # steps per row put in a sorter (an ORDER BY no index serves)
TABLE_READ_STEPS = 2.0  # steps to read a row of the table from an index entry
PREDICATE_STEPS = 2.0  # steps per predicate evaluated on a row (read the column, compare): eq, lt, lte, gt, gte
BETWEEN_STEPS = 2.5  # a between's second comparison, for the rows past its first
IN_VALUE_STEPS = 0.5  # an in list's comparisons, per value
OR_BRANCH_STEPS = 5.0  # steps per row of one branch of a multi-index OR (seek, row set, table read)
RANGE_FACTOR = 0.25  # the planner's guess of the rows a range bound keeps, without stat4
SKIP_SCAN_ROWS = 18  # SQLite skips over a leading key with at least this many rows per value
SEEK_STEPS = 20.0  # steps of one seek into an index
PLANNER_SCAN_SHARE = 0.9  # a seek expected to visit this share of the table loses to the scan
OR_PLANNER_SHARE = 0.5  # an unsorted, uncounted OR's branches expected to visit more than this share: a scan
PAGE_FILL = 0.9
ROW_ID_BYTES = 4.0  # the row id (a varint) and its type byte
CELL_BYTES = 3.0  # a cell's payload size and its pointer on the page
SELECTIVITIES = 100_000  # predicates whose estimated selectivity the model remembers


def stored_width(values: np.ndarray) -> float:
    """Mean bytes a record stores a sampled value in, its type byte included: text by its UTF-8 length,
    integers (and whole floats) 0-8 bytes by magnitude as SQLite stores them, other numbers 8."""
    array = np.asarray(values)
    if not array.size:
        return 1.0
    if array.dtype.kind in "OUS":
        total = len("".join(str(v) for v in array.tolist() if v is not None).encode())  # UTF-8 bytes
        return 1.0 + total / array.size
    if array.dtype.kind == "b":
        return 1.0
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if not finite.all() or not np.all(np.mod(array, 1) == 0) or np.any(np.abs(array) >= 2 ** 47):
            return 9.0
        array = array.astype(np.int64)
    magnitude = np.abs(array.astype(np.int64))
    widths = np.select([magnitude <= 1, magnitude < 2 ** 7, magnitude < 2 ** 15, magnitude < 2 ** 23,
                        magnitude < 2 ** 31, magnitude < 2 ** 47], [0, 1, 2, 3, 4, 6], 8)
    return 1.0 + float(np.mean(widths))


@dataclass(frozen=True)
class _FieldFacts:
    """A query's predicates on one field, as a seek reads them: the smallest selectivity, whether every one is an
    equality (or ``in``), and the planner's range factors (``_range_keeps``) in the query's order."""

    selectivity: float
    equality: bool
    range_keeps: tuple[float, ...]


@dataclass(frozen=True)
class _QueryFacts:
    """What the seek estimates read of a query, worked out once per query (``StatisticsCostModel._facts``):
    its predicates' selectivities in order, its predicate fields, per field ``_FieldFacts``, its equality
    (``eq``) fields, its sort fields, its share of rows returned and the fields it touches."""

    selectivities: tuple[float, ...]
    fields: frozenset[str]
    by_field: dict[str, _FieldFacts]
    equal: frozenset[str]
    sort: tuple[str, ...]
    either: bool
    share: float
    attributes: frozenset[str]
    structure: int  # the query's shape as a seek reads it, values aside (``StatisticsCostModel._structure_of``)


@dataclass(frozen=True)
class _SeekPlan:
    """What a seek on one index does for every query of one structure (``_QueryFacts.structure``), whatever its
    values: the fields whose selectivities the seek's fraction multiplies (in key order), the leading keys it
    skips and the seeks that takes, whether the index gives the query's order or covers its count, the
    predicates left to evaluate per entry with their steps, and the rows SQLite's planner expects. The
    estimate's arithmetic on a query's values (``StatisticsCostModel._costed_seek``) is the same, operation for
    operation, as working these out for every (query, index) pair."""

    fraction_fields: tuple[str, ...]
    skip: int
    seeks: float
    serves_sort: bool
    covered: bool
    rest: tuple[int, ...]
    rest_steps: tuple[float, ...]
    planner_rows: float


def cheaper_branch(first: tuple[float, float] | None, second: tuple[float, float] | None
                   ) -> tuple[float, float] | None:
    """The cheaper of two options for one branch of a multi-index OR, (work, planner rows) compared as pairs;
    None is no option."""
    if first is None or second is None:
        return second if first is None else first
    return min(first, second)


class StatisticsCostModel:
    """Estimated work and bytes from column statistics (module docstring)."""

    def __init__(self, statistics: Any) -> None:
        self.statistics = statistics
        self.rows = max(1, int(statistics.n_rows))
        self._selectivities: dict[Any, float] = {}
        self._widths: dict[str, float] = {}
        self._seeks_costed: dict[tuple[Any, IndexSpec], tuple[float, float] | None] = {}
        self._scans: dict[Any, float] = {}
        self._query_selectivities: dict[Any, float] = {}
        self._query_facts: dict[Any, _QueryFacts] = {}
        self._bytes: dict[IndexSpec, float] = {}
        self._structures: dict[tuple, int] = {}  # a query structure -> its number (``_structure_of``)
        self._seek_plans: dict[tuple[int, IndexSpec], _SeekPlan | None] = {}
        self._or_parts: dict[Any, tuple[float, float, float | None]] = {}  # per ``or`` query (``or_cost_of``)

    def forget_queries(self) -> None:
        """Drop what is remembered per predicate and per query (selectivities, facts, scan, seek and ``or``
        costs), keeping what holds for the collection whatever the workload (column widths, index bytes, query
        structures and their seek plans): the next query is estimated as a new workload's would be, to the
        same figures, bit for bit (``budgeted.policy_search`` times a decision that way)."""
        for store in (self._selectivities, self._seeks_costed, self._scans, self._query_selectivities,
                      self._query_facts, self._or_parts):
            store.clear()

    @staticmethod
    def _remembered(store: dict, key: Any, compute: Any) -> Any:
        """``store[key]``, computed by ``compute()`` the first time (``store`` emptied at SELECTIVITIES entries)."""
        try:
            return store[key]
        except KeyError:
            pass
        if len(store) >= SELECTIVITIES:
            store.clear()
        found = store[key] = compute()
        return found

    # -- selectivity ---------------------------------------------------------------------------------------------
    def selectivity(self, predicate: Any) -> float:
        """``statistics.predicate_selectivity``, remembered per predicate (at most SELECTIVITIES of them)."""
        try:
            hash(predicate)
        except TypeError:  # a predicate whose value cannot be hashed
            return self.statistics.predicate_selectivity(predicate)
        return self._remembered(self._selectivities, predicate,
                                lambda: self.statistics.predicate_selectivity(predicate))

    def query_selectivity(self, query: Any) -> float:
        """The share of rows ``query`` returns, its predicates taken as independent (remembered per query)."""
        return self._remembered(self._query_selectivities, query, lambda: self._query_selectivity(query))

    def _query_selectivity(self, query: Any) -> float:
        shares = [self.selectivity(p) for p in query.predicates]
        if not shares:
            return 1.0
        if query.logic == "or" and len(shares) > 1:
            return 1.0 - math.prod(1.0 - s for s in shares)
        return math.prod(shares)

    def _facts(self, query: Any) -> _QueryFacts:
        """The query's ``_QueryFacts`` (remembered per query, at most ``SELECTIVITIES`` of them)."""
        return self._remembered(self._query_facts, query, lambda: self._read_facts(query))

    def _read_facts(self, query: Any) -> _QueryFacts:
        selectivities = tuple(self.selectivity(p) for p in query.predicates)
        by_field: dict[str, _FieldFacts] = {}  # per field, its predicates' facts in the query's order
        for predicate, share in zip(query.predicates, selectivities):
            equality, keeps = predicate.op in EQUALITY_OPS, self._range_keeps(predicate)
            found = by_field.get(predicate.field)
            by_field[predicate.field] = (_FieldFacts(share, equality, (keeps,)) if found is None else
                                         _FieldFacts(min(found.selectivity, share), found.equality and equality,
                                                     (*found.range_keeps, keeps)))
        either = query.logic == "or" and len(query.predicates) > 1
        equal = frozenset(p.field for p in query.predicates if p.op == "eq")
        # an ORDER BY term on a field an equality of an AND fixes orders nothing: SQLite drops it
        order = tuple(key.field for key in query.sort if either or key.field not in equal)
        return _QueryFacts(selectivities, frozenset(by_field), by_field, equal, order, either,
                           self.query_selectivity(query), frozenset(query.attributes()), self._structure_of(query))

    def _structure_of(self, query: Any) -> int:
        """The number of ``query``'s structure: what a seek plan (``_SeekPlan``) reads of it, its predicates'
        fields, operators and ``in`` lengths, its logic, sort fields and whether it counts."""
        structure = (query.logic, bool(query.aggregate), tuple(key.field for key in query.sort),
                     tuple((p.field, p.op, len(p.value) if p.op == "in" else 0) for p in query.predicates))
        return self._remembered(self._structures, structure, lambda: len(self._structures))

    def ordered(self, query: Any) -> bool:
        """Whether the engine must order the query's rows: a sort key that no equality of an AND fixes (module
        docstring)."""
        return bool(self._facts(query).sort)

    def seek_fraction(self, query: Any, spec: IndexSpec, start: int = 0) -> float:
        """The share of rows a seek on ``spec`` visits for ``query``: the product of the query's predicate
        selectivities over the keys a B-tree seek can use (equality keys, then one range), from key ``start``
        on (the keys before it skipped, ``skipped``); 1.0 when that key has no predicate. In an ``or`` of
        several predicates only that key can seek."""
        return self._seek_fraction(self._facts(query), [field for field, _ in spec.keys], start)

    @staticmethod
    def _seek_fraction(facts: _QueryFacts, keys: Sequence[str], start: int) -> float:
        fraction = 1.0
        for field in StatisticsCostModel._fraction_fields(facts, keys, start):
            fraction *= facts.by_field[field].selectivity
        return fraction

    @staticmethod
    def _fraction_fields(facts: _QueryFacts, keys: Sequence[str], start: int) -> list[str]:
        """The keys from ``start`` on whose selectivities a seek's fraction multiplies, in key order
        (``seek_fraction``)."""
        found_fields = []
        for field in keys[start:]:
            found = facts.by_field.get(field)
            if found is None or facts.either and field != keys[start]:
                break
            found_fields.append(field)
            if not found.equality:
                break  # a range key ends what a seek can use
        return found_fields

    def skipped(self, query: Any, keys: Sequence[str]) -> int | None:
        """How many leading keys a seek on ``keys`` skips for ``query`` (a skip-scan: keys without a predicate,
        each with at least ``SKIP_SCAN_ROWS`` rows per value, before one with a predicate); 0 when the first key
        has a predicate, None when no seek can use the index."""
        return self._skipped(self._facts(query).fields, keys)

    def _skipped(self, fields: frozenset[str], keys: Sequence[str]) -> int | None:
        skip = 0
        while skip < len(keys) and keys[skip] not in fields:
            if not self._skippable(keys[skip]):
                return None
            skip += 1
        return skip if skip < len(keys) else None

    def _values(self, field: str) -> int:
        return max(1, int(self.statistics.distinct.get(field, 1)))

    def _skippable(self, field: str) -> bool:
        """Whether a skip-scan may skip over ``field``: at least ``SKIP_SCAN_ROWS`` rows per value."""
        return self.rows / self._values(field) >= SKIP_SCAN_ROWS

    def _seeks(self, keys: Sequence[str], skip: int) -> float:
        """The seeks of a skip-scan over the first ``skip`` keys: one per combination of their values."""
        return float(math.prod(self._values(key) for key in keys[:skip]))

    # -- work ----------------------------------------------------------------------------------------------------
    @staticmethod
    def _steps(predicate: Any) -> float:
        if predicate.op == "between":
            return BETWEEN_STEPS
        if predicate.op == "in":
            return PREDICATE_STEPS + IN_VALUE_STEPS * len(predicate.value)
        return PREDICATE_STEPS

    def _evaluated(self, query: Any, predicates: Sequence[Any]) -> float:
        """Expected steps per row evaluating ``predicates``: ``and`` stops at the first false, ``or`` at the
        first true."""
        return self._evaluated_shares(query, predicates, [self.selectivity(p) for p in predicates])

    def _evaluated_shares(self, query: Any, predicates: Sequence[Any], shares: Sequence[float]) -> float:
        """``_evaluated`` with the predicates' selectivities given."""
        return self._expected_steps([self._steps(p) for p in predicates], shares, query.logic == "or")

    @staticmethod
    def _expected_steps(steps: Sequence[float], shares: Sequence[float], either: bool) -> float:
        """Expected steps per row evaluating predicates of ``steps`` and selectivities ``shares`` in order: an
        ``and`` stops at the first false, an ``or`` (``either``) at the first true."""
        expected, reach = 0.0, 1.0
        for step, share in zip(steps, shares):
            expected += reach * step
            reach *= (1.0 - share) if either else share
        return expected

    def _returned(self, query: Any, matches: float, sorted_by_index: bool = False, ordered: bool | None = None
                  ) -> float:
        """Steps for the ``matches`` rows found: counted, or returned (at most ``limit`` of them) after a sorter
        that keeps them in order unless the index gives the order (``ordered``: ``self.ordered(query)``, given
        or read)."""
        if query.aggregate:
            return matches * COUNT_STEPS
        returned = min(matches, float(query.limit)) if query.limit else matches
        if ordered is None:
            ordered = self.ordered(query)
        sorter = matches * SORTER_STEPS if ordered and not sorted_by_index else 0.0
        return returned * OUTPUT_STEPS + sorter

    def scan_cost(self, query: Any) -> float:
        """The estimated work of ``query`` on the table without an index (remembered per query)."""
        return self._remembered(self._scans, query, lambda: self._scan_cost(query))

    def _scan_cost(self, query: Any) -> float:
        matches = self.rows * self.query_selectivity(query)
        scanned = self.rows * (1.0 + self._evaluated(query, query.predicates))
        if query.limit and not self.ordered(query) and not query.aggregate and matches > query.limit:
            scanned *= self._read_until_limit(query, matches)  # it stops at the limit's last match
        return scanned + self._returned(query, matches)

    def _read_until_limit(self, query: Any, matches: float) -> float:
        """The share of the table a scan in the table's order reads before the query's ``limit``-th match: where
        the sample, kept in the table's order, puts that match (module docstring); ``limit / matches``, the
        share if the matches were spread evenly, where the sample holds none of them."""
        found = self.statistics.matching_rows(query)
        if found is None or not len(found):
            return query.limit / matches
        sampled = len(self.statistics.sample[query.predicates[0].field])  # found is not empty: neither is this
        at = (found + 0.5) / sampled  # the table's share before each sampled match
        gap = (at[-1] - at[0]) / (len(at) - 1) if len(at) > 1 else at[0]
        wanted = query.limit * sampled / self.rows  # the sampled matches the part read holds
        points = np.concatenate(([max(0.0, at[0] - gap)], at))
        return float(min(1.0, np.interp(wanted, np.arange(len(points), dtype=float), points)))

    @staticmethod
    def _serves_sort(facts: _QueryFacts, keys: Sequence[str]) -> bool:
        """Whether ``keys`` read in order give the query's sort: its equality fields, then the sort keys."""
        if not facts.sort:
            return False
        lead = 0
        while lead < len(keys) and keys[lead] in facts.equal:
            lead += 1
        wanted = facts.sort
        return lead < len(keys) and tuple(keys[lead:lead + len(wanted)]) == wanted[:len(keys) - lead]

    def seek_cost(self, query: Any, spec: IndexSpec) -> float | None:
        """The estimated work of an ``and`` query (or one predicate) using ``spec``; None if it cannot."""
        option = self.seek_option(query, spec)
        return None if option is None else option[1]

    def planner_rows(self, query: Any, spec: IndexSpec) -> float:
        """The rows SQLite's planner expects a seek on ``spec`` to visit (module docstring: stat1 averages)."""
        keys = [field for field, _ in spec.keys]
        facts = self._facts(query)
        return self._planner_rows(facts, keys, self._skipped(facts.fields, keys) or 0)

    def seek_option(self, query: Any, spec: IndexSpec) -> tuple[float, float] | None:
        """(the planner's rows, the estimated work) of a seek on ``spec`` for ``query``; None if it cannot use
        it; remembered per query and index (at most ``SELECTIVITIES`` of them)."""
        return self._remembered(self._seeks_costed, (query, spec), lambda: self._costed_seek(query, spec))

    def _costed_seek(self, query: Any, spec: IndexSpec) -> tuple[float, float] | None:
        facts = self._facts(query)
        return self._seek_estimate(query, facts, self._plan_of(query, facts, spec))

    def seek_options(self, query: Any, specs: Sequence[IndexSpec]) -> list[tuple[float, float] | None]:
        """``seek_option`` of ``query`` on each of ``specs``, the same figures, not remembered (a caller that
        reads a workload's plans once, ``EstimatedWorkload``)."""
        facts = self._facts(query)
        return [self._seek_estimate(query, facts, self._plan_of(query, facts, spec)) for spec in specs]

    def _plan_of(self, query: Any, facts: _QueryFacts, spec: IndexSpec) -> _SeekPlan | None:
        return self._remembered(self._seek_plans, (facts.structure, spec), lambda: self._seek_plan(query, spec))

    def _seek_estimate(self, query: Any, facts: _QueryFacts, plan: _SeekPlan | None) -> tuple[float, float] | None:
        """(the planner's rows, the estimated work) of a seek that does ``plan`` for ``query``."""
        if plan is None:
            return None
        fraction = 1.0  # ``_seek_fraction``'s product, in the same order
        for field in plan.fraction_fields:
            fraction *= facts.by_field[field].selectivity
        entries = self.rows * fraction
        matches = self.rows * facts.share
        expected = self._expected_steps(plan.rest_steps, [facts.selectivities[i] for i in plan.rest],
                                        query.logic == "or")  # the predicates left, per entry
        per_entry = 1.0 + (0.0 if plan.covered else TABLE_READ_STEPS) + expected
        if query.limit and not query.aggregate and (plan.serves_sort or not facts.sort) and matches > query.limit:
            entries *= query.limit / matches
            matches = float(query.limit)
        returned = self._returned(query, matches, plan.serves_sort, bool(facts.sort))
        work = entries * per_entry + returned + plan.seeks * SEEK_STEPS
        return plan.planner_rows, work

    def _seek_plan(self, query: Any, spec: IndexSpec) -> _SeekPlan | None:
        """What a seek on ``spec`` does for queries of ``query``'s structure (``_SeekPlan``); None if none can use
        it."""
        keys = [field for field, _ in spec.keys]
        facts = self._facts(query)
        skip = self._skipped(facts.fields, keys)
        serves_sort = self._serves_sort(facts, keys)
        if not serves_sort and skip is None:
            return None
        if skip:  # a skip-scan reads its groups one after the other: no order for the sort
            serves_sort = False
        start = skip or 0
        fraction_fields = self._fraction_fields(facts, keys, start)
        rest = tuple(i for i, p in enumerate(query.predicates) if p.field not in keys)
        return _SeekPlan(tuple(fraction_fields), start, self._seeks(keys, start), serves_sort,
                         bool(query.aggregate) and facts.attributes <= set(keys), rest,
                         tuple(self._steps(query.predicates[i]) for i in rest),
                         self._planner_rows(facts, keys, start))

    def _planner_rows(self, facts: _QueryFacts, keys: Sequence[str], skip: int) -> float:
        rows = float(self.rows)
        for field in keys[skip:]:
            found = facts.by_field.get(field)
            if found is None:
                break
            if found.equality:
                rows /= self._values(field)
                continue
            for keeps in found.range_keeps:
                rows *= keeps
            break
        return rows + self._seeks(keys, skip)

    def _branch_cost(self, predicate: Any, spec: IndexSpec) -> tuple[float, float] | None:
        """One branch of a multi-index OR served by ``spec``: led by its field, or a skip-scan over the keys
        before it (``skipped``: each with at least ``SKIP_SCAN_ROWS`` rows per value; one seek per combination
        of their values): (the estimated work, the rows SQLite's planner expects it to visit); None if ``spec``
        cannot serve it."""
        matched = self.rows * self.selectivity(predicate)
        skip = self._skipped(frozenset((predicate.field,)), spec.fields)
        if skip is None:
            return None
        if not skip:
            return matched * OR_BRANCH_STEPS + SEEK_STEPS, self._planner_rows_of(predicate)
        seeks = self._seeks(spec.fields, skip)
        return seeks * SEEK_STEPS + matched * OR_BRANCH_STEPS, seeks + self._planner_rows_of(predicate)

    def _planner_rows_of(self, predicate: Any) -> float:
        """The rows SQLite's planner expects one OR branch's predicate to keep, from stat1 averages: rows per
        value for each value of an equality or ``in``, a range's share (``_range_keeps``). (``_planner_rows``,
        for the keys of an AND seek, counts an ``in`` as one value.)"""
        if predicate.op in EQUALITY_OPS:
            values = len(predicate.value) if predicate.op == "in" else 1
            return values * self.rows / self._values(predicate.field)
        return self.rows * self._range_keeps(predicate)

    @staticmethod
    def _range_keeps(predicate: Any) -> float:
        """The share of rows SQLite's planner expects a range predicate to keep without stat4: a quarter per
        bound (a ``between`` has two)."""
        return RANGE_FACTOR * (RANGE_FACTOR if predicate.op == "between" else 1.0)

    def branch_options(self, query: Any, spec: IndexSpec) -> list[tuple[float, float] | None]:
        """Per predicate of an ``or`` query, what ``spec`` offers its branch (``_branch_cost``; None: nothing)."""
        return [self._branch_cost(predicate, spec) for predicate in query.predicates]

    def branch_bests(self, query: Any, configuration: Sequence[IndexSpec]) -> list[tuple[float, float] | None]:
        """Per predicate of an ``or`` query, the cheapest (work, planner rows) of the indexes ``configuration``
        offer its branch (None: none serves it). A set's best with one more index is the smaller of the set's
        and the index's own (``branch_options``), compared as pairs."""
        bests: list[tuple[float, float] | None] = [None] * len(query.predicates)
        for spec in configuration:
            bests = [cheaper_branch(best, option) for best, option in zip(bests, self.branch_options(query, spec))]
        return bests

    @staticmethod
    def leads_with_sort(query: Any, spec: IndexSpec) -> bool:
        """Whether ``spec`` is led by the query's first sort key (an ordered walk of it may serve the query)."""
        return bool(query.sort) and spec.keys[0][0] == query.sort[0].field

    def _or_cost(self, query: Any, configuration: Sequence[IndexSpec]) -> float:
        return self.or_cost_of(query, self.branch_bests(query, configuration),
                               any(self.leads_with_sort(query, spec) for spec in configuration))

    def or_cost_of(self, query: Any, bests: Sequence[tuple[float, float] | None], walk: bool) -> float:
        """The estimated work of an ``or`` query whose branches' cheapest options are ``bests``
        (``branch_bests``), ``walk`` saying whether an index led by its sort key is there."""
        scan, returned, walked = self._remembered(self._or_parts, query, lambda: self._or_parts_of(query))
        branches, planned = 0.0, 0.0
        for best in bests:
            if best is None:
                branches = math.inf
                break
            work, rows = best
            branches += work
            planned += rows
        if not query.sort and not query.aggregate and planned > OR_PLANNER_SHARE * self.rows:
            branches = math.inf  # the planner expects the branches to visit more than the scan is worth
        best = min(scan, branches + returned)
        if walk and walked is not None:
            best = min(best, walked)
        return best

    def _or_parts_of(self, query: Any) -> tuple[float, float, float | None]:
        """What an ``or`` query's cost takes whatever its branches' options: the scan's work, the steps of
        returning its matches, and the work of a walk of an index led by its sort key that stops at its limit
        (None: no such walk serves it)."""
        matches = self.rows * self.query_selectivity(query)
        walked = None
        if query.sort and query.limit and not query.aggregate and matches > 0:
            read = min(self.rows, query.limit * self.rows / matches)
            per_row = 1.0 + TABLE_READ_STEPS + self._evaluated(query, query.predicates)
            walked = read * per_row + self._returned(query, float(query.limit), True)
        return self.scan_cost(query), self._returned(query, matches), walked

    def cost(self, query: Any, configuration: Sequence[IndexSpec]) -> float:
        """The estimated work of ``query`` with the indexes ``configuration`` (module docstring)."""
        if query.logic == "or" and len(query.predicates) > 1:
            return self._or_cost(query, configuration)
        usable = []
        for spec in configuration:
            option = self.seek_option(query, spec)
            if option is not None:
                usable.append((option[0], -len(spec.keys), option[1]))
        if not usable:
            return self.scan_cost(query)
        planned = min(usable, key=lambda option: option[:2])
        if planned[0] >= PLANNER_SCAN_SHARE * self.rows and not self.ordered(query):
            return self.scan_cost(query)
        return planned[2]

    # -- bytes ---------------------------------------------------------------------------------------------------
    def index_bytes(self, spec: IndexSpec) -> float:
        """The estimated bytes of ``spec`` on the table (module docstring), remembered per index."""
        return self._remembered(self._bytes, spec, lambda: self._index_bytes(spec))

    def _index_bytes(self, spec: IndexSpec) -> float:
        for field in spec.fields:
            if field not in self._widths:
                self._widths[field] = stored_width(np.asarray(self.statistics.sample[field]))
        record = 1.0 + len(spec.keys) + sum(self._widths[field] - 1.0 for field in spec.fields) + ROW_ID_BYTES
        return self.rows * (record + CELL_BYTES) / PAGE_FILL

