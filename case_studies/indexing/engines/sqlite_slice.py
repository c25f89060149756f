"""Measure a SQLite program's work on a slice of the table instead of building its indexes on all of it.

Building an index sorts every row of the table (about 0.1 s at 100,000 rows, 1.2 s at 1,000,000), but a
program that *seeks* its index by a predicate of the query on the index's leading key only ever visits the
entries in that predicate's range. A **slice** is a small database holding the same table definition and
statistics (``sqlite_stat1``, copied from the real database, as the what-if planner does) and only

- the rows the program's seeks can reach: for an ``and`` query, those matching its one predicate on the
  index's *sought key* (its leading key, or the first key with a predicate after leading keys the query
  does not constrain: a skip-scan); for an ``or`` query (one index per branch, or one for all), those
  matching the query;
- the *boundary rows* of each key sought: one row whose value is the smallest, one whose value is the
  largest, and one whose value is NULL (where they exist), with their original rowids;
- for a skip-scan, the *group rows*: SQLite steps over the leading keys the query does not constrain (few
  values each, by the statistics) by seeking each group of their values in turn, and within each group
  seeks the sought key's range. So the slice holds, for every group, the rows whose sought key is the
  group's smallest, its largest and NULL: every group is there, in the same order, and within each group
  "an entry beyond the range" exists exactly where it does in the full index.

The same SQL with the same bound values runs there: one index forced with ``INDEXED BY``, an ``or``'s
indexes left to the planner with exactly those indexes on the slice, each with the real index's
statistics. So the same program runs, and it walks the slice's indexes exactly as it walks the full ones,
counting the same VM steps:

- every entry it visits inside a seek range satisfies the predicate the seek comes from, so it is in the
  slice, in the same order (the rowids are the original ones), and so is its table row;
- a seek or a range-end comparison (``SeekGE``, ``IdxGT``, ...) only asks whether *some* entry lies beyond
  the range and compares it by the range's key prefix; the boundary rows make "some entry beyond" true in
  the slice exactly where it is true in the full index, on either side (NULLs sort first).

That argument holds under conditions checked on every measurement; where one fails the slice declines
(None) and the adapter measures on the real database as before:

1. an ``and`` query has exactly one predicate on the index's sought key and none on the keys before it
   (one index); an ``or`` query has a predicate on every used index's leading key;
2. the program on the slice is the planned one (the caller compares signatures or equivalence classes);
3. the plan seeks every index by its sought key: each ``EXPLAIN QUERY PLAN`` search reads ``SEARCH ...
   USING INDEX name (key=...``, ``(key>...`` or ``(key<...`` (a skip-scan: ``(ANY(first) AND key>...``
   over exactly the keys before it; not ``SCAN``), one per index, and nothing else but an OR's branches
   and a sort of the rows found (``USE TEMP B-TREE``);
4. the program has no ``SeekScan`` (which steps over entries between the values of an ``IN`` list rather
   than seeking, and would count entries outside the slice).

Work only: a slice's wall time says nothing about the real table's latency. The slices of the most
recently used (query, key) pairs are kept (files in the temporary directory, named like the engine's
private copies, so a killed process's are removed by the next engine) with the indexes built on them.
Tests compare slice measurements with full-index measurements step by step on random queries and indexes.
"""

from __future__ import annotations

import os
import re
import tempfile
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Mapping, Sequence

from case_studies.indexing.engines.contract import QueryResult
from case_studies.indexing.index_spec import IndexSpec, canonical_switch
from wield.cache import remove_stale_partial_files

SLICE_OPS = ("eq", "in", "lt", "lte", "gt", "gte", "between")
DEFAULT_MAX_FRACTION = 0.5  # a slice holding more of the table than this is not worth making
SKIP_SCAN_MIN_ROWS = 18  # a skip-scan steps over a prefix of keys only if each value has this many rows
DEFAULT_KEPT_ROWS = 4.0  # slices kept, in rows, as a multiple of the table's rows
ROWIDS_PER_STATEMENT = 10_000  # bound values per statement copying rows by rowid (SQLite allows 32,766)
Seek = tuple[str, tuple[str, ...]]  # (an index's sought key, the keys before it a skip-scan steps over, sorted)
SliceKey = tuple[str, tuple[Seek, ...]]  # (the query's key, its seeks that decide the slice's rows)
_SEEKS_KEY = r"SEARCH {table} USING (?:COVERING )?INDEX {index} \({skipped}{field}[=<>]"
# Plan lines besides the searches: an OR's branches, and a sort of the rows found (the same rows either way).
_OTHER_PLAN_LINES = re.compile(r"^(MULTI-INDEX OR|INDEX \d+|USE TEMP B-TREE FOR .*)$")


class TableSlices:
    """The slices of one SQLite engine's table, made on demand and kept while they fit."""

    def __init__(self, engine, max_fraction: float = DEFAULT_MAX_FRACTION,
                 kept_rows: float = DEFAULT_KEPT_ROWS, directory: str | os.PathLike | None = None,
                 store=None) -> None:
        self.engine = engine
        self.store = store  # a MeasurementStore: group rows found in earlier trials and runs, kept for later ones
        self.rows = engine.row_count()
        self.max_rows = max(1, int(self.rows * max_fraction))
        self.kept_rows = max(self.max_rows, int(self.rows * kept_rows))
        self.directory = Path(directory or tempfile.gettempdir())
        remove_stale_partial_files(self.directory, "wield-")
        self._slices: OrderedDict[SliceKey, _Slice] = OrderedDict()
        self._declined: set[SliceKey] = set()  # slices that would be too large
        self._boundaries: dict[str, tuple[int, ...]] = {}
        self._group_rows: dict[Seek, tuple[int, ...]] = {}
        self._prefix_statistics: dict[tuple[str, ...], str] = {}  # statistics_of's findings
        self.made = 0  # slices made
        self.index_builds = 0  # indexes built on slices
        self.too_large = 0  # slices not kept: more rows than max_fraction of the table
        self.groups_found = 0  # group rows of skip-scans found on the engine (not in the store)

    # -- what the adapter asks -----------------------------------------------------------------------
    def serves(self, query, used: Sequence[IndexSpec]) -> bool:
        """Whether a slice can serve a program of ``query`` over the indexes ``used`` (condition 1)."""
        if not used:
            return False
        if query.logic == "and":
            return len(used) == 1 and self._sought(query, used[0]) is not None
        return all(self._skipped(query, spec) < len(spec.keys) for spec in used)

    def program(self, query, used: Sequence[IndexSpec],
                statistics: Mapping[IndexSpec, str]) -> tuple | None:
        """The query's program over ``used`` on its slice (made if need be): one index forced with
        ``INDEXED BY``, several (an ``or``, one index per branch) the planner's choice with exactly those
        indexes on the slice; ``statistics`` are the real indexes' ``sqlite_stat1`` lines (where known).
        None when no slice can serve it."""
        statistics = {spec: known for spec in used
                      if (known := statistics_of(spec, statistics, self._prefix_statistics)) is not None}
        if not all(may_skip_scan(statistics.get(spec), self._skipped(query, spec)) for spec in used):
            return None
        found = self._slice(query, used)
        if found is None:
            return None
        found.index_exactly(used, statistics, self, keep_others=len(used) == 1)
        program = found.engine.program(query, _force(used))
        if any(instruction[0] == "SeekScan" for instruction in program):
            return None
        return program

    def run(self, query, used: Sequence[IndexSpec]) -> QueryResult | None:
        """Execute the query on its slice (after ``program``); None when the plan does not seek each index
        by its leading key (condition 3), so the work may differ from the full indexes'."""
        found = self._slices[self._key(query, used)]
        result = found.engine.run_query(query, repetitions=0, force=_force(used))
        table = re.escape(self.engine.table)
        patterns = {spec: re.compile(_SEEKS_KEY.format(
            table=table, index=re.escape(spec.name), field=re.escape(spec.keys[skipped][0]),
            skipped="".join(rf"ANY\({re.escape(key)}\) AND " for key, _ in spec.keys[:skipped])))
            for spec, skipped in ((spec, self._skipped(query, spec)) for spec in used)}
        searches = [line for line in result.plan or () if not _OTHER_PLAN_LINES.match(line)]
        seeking = {spec for line in searches for spec, pattern in patterns.items() if pattern.match(line)}
        if len(searches) != len(used) or seeking != set(used):
            return None
        return result

    def close(self) -> None:
        while self._slices:
            _, found = self._slices.popitem(last=False)
            found.close()

    # -- slices ----------------------------------------------------------------------------------------
    @staticmethod
    def _skipped(query, spec: IndexSpec) -> int:
        """How many leading keys of ``spec`` the query has no predicate on (a skip-scan steps over them; an
        ``or`` query's branch seeks its index by the branch's key)."""
        fields = {predicate.field for predicate in query.predicates}
        return next((position for position, (key, _) in enumerate(spec.keys) if key in fields), len(spec.keys))

    def _sought(self, query, spec: IndexSpec):
        """An ``and`` query's one predicate on ``spec``'s sought key: its leading key, or the first key with
        a predicate after keys without one (a skip-scan); None if there is no such key, or it has several
        predicates."""
        skipped = self._skipped(query, spec)
        if skipped >= len(spec.keys):
            return None
        on_key = [p for p in query.predicates if p.field == spec.keys[skipped][0]]
        return on_key[0] if len(on_key) == 1 and on_key[0].op in SLICE_OPS else None

    def _key(self, query, used: Sequence[IndexSpec]) -> SliceKey:
        """An ``and`` query's slice per seek (sought key, keys a skip-scan steps over); an ``or`` query's
        slice of every branch's rows, with the group rows of the seeks that step over keys."""
        seeks = [self._seek(query, spec) for spec in used]
        if query.logic == "and":
            return (query.key(), tuple(seeks))
        return (query.key(), tuple(sorted({seek for seek in seeks if seek[1]})))

    def _seek(self, query, spec: IndexSpec) -> Seek:
        """(``spec``'s sought key, the keys before it that a skip-scan steps over, sorted)."""
        skipped = self._skipped(query, spec)
        return (spec.keys[skipped][0], tuple(sorted(key for key, _ in spec.keys[:skipped])))

    def _slice(self, query, used: Sequence[IndexSpec]) -> "_Slice | None":
        if not self.serves(query, used):
            return None
        key = self._key(query, used)
        if key in self._declined:
            return None
        found = self._slices.get(key)
        if found is not None:
            self._slices.move_to_end(key)
            return found
        skipping = [(spec, skipped) for spec in used if (skipped := self._skipped(query, spec))]
        if not skipping:
            return self._make(key, [self._sought(query, used[0])] if query.logic == "and" else list(query.predicates))
        # a skip-scan's slice: the slice of its sought keys without skip-scans (made if need be) and the
        # group rows
        base = self._slice(query, tuple(IndexSpec((spec.keys[skipped],)) for spec, skipped in skipping))
        if base is None:
            return None
        groups = (self._groups(self._seek(query, spec)) for spec, _ in skipping)
        return self._make(key, [], base, tuple(dict.fromkeys(rowid for rows in groups for rowid in rows)))

    def _make(self, key: SliceKey, predicates: list, base: "_Slice | None" = None,
              groups: tuple[int, ...] = ()) -> "_Slice | None":
        """A new slice: the rows matching any of ``predicates`` and their fields' boundary rows, or those
        of the slice ``base``; and the rows ``groups``."""
        boundaries = tuple(dict.fromkeys(rowid for field in dict.fromkeys(p.field for p in predicates)
                                         for rowid in self._boundary_rows(field)))
        found = _Slice.make(self.engine, self.directory)
        try:
            if base is None:
                rows = self.engine.copy_rows(found.path, *slice_where(self.engine.translator, predicates,
                                                                      boundaries))
            else:
                rows = base.engine.copy_rows(found.path, "1", ())
            for start in range(0, len(groups), ROWIDS_PER_STATEMENT):
                rows += self.engine.copy_rows(found.path, *slice_where(
                    self.engine.translator, (), groups[start:start + ROWIDS_PER_STATEMENT]), skip_present=True)
        except BaseException:
            found.close()
            raise
        if rows > self.max_rows:
            found.close()
            self._declined.add(key)
            self.too_large += 1
            return None
        found.rows = rows
        self.made += 1
        self._slices[key] = found
        self._evict()
        return found

    def _boundary_rows(self, field: str) -> tuple[int, ...]:
        if field not in self._boundaries:
            self._boundaries[field] = self.engine.boundary_rowids(field)
        return self._boundaries[field]

    def _groups(self, seek: Seek) -> tuple[int, ...]:
        """A skip-scan's group rows (a full scan per kind of row, so kept here and in the store)."""
        if seek not in self._group_rows:
            field, groups = seek
            found = self.store.group_rows(groups, field) if self.store is not None else None
            if found is None:
                found = self.engine.group_boundary_rowids(groups, field)
                self.groups_found += 1
                if self.store is not None:
                    self.store.put_group_rows(groups, field, found)
            self._group_rows[seek] = found
        return self._group_rows[seek]

    def _evict(self) -> None:
        kept = sum(found.rows for found in self._slices.values())
        while kept > self.kept_rows and len(self._slices) > 1:
            _, found = self._slices.popitem(last=False)
            kept -= found.rows
            found.close()


class _Slice:
    """One slice: an SQLite engine on its own file, with the indexes built on it so far."""

    def __init__(self, engine, path: Path) -> None:
        self.engine = engine
        self.path = path
        self.rows = 0
        self.indexes: list[IndexSpec] = []  # in creation order
        # A slice its owner never closed is removed when it is collected or this process exits, not left
        # for the next engine to find; a forked child leaves its parent's slices alone.
        self._remove_file = weakref.finalize(self, _unlink_if_owner, path, os.getpid())

    @classmethod
    def make(cls, real, directory: Path) -> "_Slice":
        fd, name = tempfile.mkstemp(prefix=f"wield-{os.getpid()}-slice-", suffix=".sqlite", dir=directory)
        os.close(fd)
        path = Path(name)
        try:
            engine = real.empty_twin(path)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return cls(engine, path)

    def index_exactly(self, used: Sequence[IndexSpec], statistics: Mapping[IndexSpec, str], owner: TableSlices,
                      keep_others: bool) -> None:
        """Build what ``used`` lacks on the slice and, unless ``keep_others`` (a forced program ignores
        them), make the slice's indexes exactly ``used``, created in canonical order as the what-if
        planner's are (``canonical_switch``)."""
        drop, build = (([], sorted(set(used) - set(self.indexes))) if keep_others
                       else canonical_switch(self.indexes, used))
        for spec in drop:
            self.engine.drop_index(spec)
            self.indexes.remove(spec)
        for spec in build:
            self.engine.create_index_with_statistics(spec, statistics.get(spec))
            self.indexes.append(spec)
            owner.index_builds += 1

    def close(self) -> None:
        try:
            self.engine.close()
        finally:
            self._remove_file()


def _unlink_if_owner(path: Path, owner_pid: int) -> None:
    """Remove a slice's file, unless this is a forked child of the process that made it."""
    if os.getpid() == owner_pid:
        path.unlink(missing_ok=True)


def slice_where(translator, predicates: Sequence, boundary_rows: Sequence[int]) -> tuple[str, list]:
    """SQL (and bound values) selecting a slice's rows: those matching any of ``predicates``, and the
    boundary rows."""
    texts, params = [], []
    for predicate in predicates:
        text, values = translator.predicate(predicate)
        texts.append(f"({text})")
        params.extend(values)
    if boundary_rows:
        texts.append(f"rowid IN ({', '.join(['?'] * len(boundary_rows))})")
        params.extend(boundary_rows)
    return " OR ".join(texts), params


def statistics_of(spec: IndexSpec, statistics: Mapping[IndexSpec, str],
                  found: dict[tuple[str, ...], str] | None = None) -> str | None:
    """``spec``'s ``sqlite_stat1`` line: its own, or else one derived from a known index whose keys start
    with the same fields (an equivalence class's representative, never built, is such a prefix). The line
    is the index's rows and the average rows per value of each prefix of its keys, which do not depend on
    the keys after the prefix or on the directions, so the first 1 + len(keys) numbers are exact. ``found``
    keeps derived lines by fields (statistics are only ever added, so a line found stays right)."""
    if spec in statistics:
        return statistics[spec]
    fields = tuple(field for field, _ in spec.keys)
    if found is not None and fields in found:
        return found[fields]
    for other, line in statistics.items():
        counts = line.split()
        if (len(other.keys) > len(fields) and tuple(field for field, _ in other.keys[:len(fields)]) == fields
                and len(counts) > len(fields) and all(count.isdigit() for count in counts[:len(fields) + 1])):
            derived = " ".join(counts[:len(fields) + 1])
            if found is not None:
                found[fields] = derived
            return derived
    return None


def may_skip_scan(statistics: str | None, skipped: int) -> bool:
    """Whether SQLite may step over an index's first ``skipped`` keys, by the index's ``sqlite_stat1`` line
    ("rows, then the average rows per value of each prefix of its keys"): it does so only where each prefix
    stepped over averages at least 18 rows per value (SQLite's tuning constant, a LogEst of 42). Checked
    before a skip-scan's slice is made, whose group rows are one to three per value of that prefix."""
    if not skipped:
        return True
    if statistics is None:
        return False
    counts = statistics.split()
    try:
        return len(counts) > skipped and all(int(count) >= SKIP_SCAN_MIN_ROWS for count in counts[1:skipped + 1])
    except ValueError:
        return False


def _force(used: Sequence[IndexSpec]) -> str | None:
    """One index is forced (``INDEXED BY``); several are left to the planner."""
    return used[0].name if len(used) == 1 else None
