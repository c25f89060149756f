"""Measure a SQLite program's work on a slice of the table instead of building its indexes on all of it.

Building an index sorts every row of the table (about 0.1 s at 100,000 rows, 1.2 s at 1,000,000), but a
program that *seeks* its index by a predicate of the query on the index's leading key only ever visits the
entries in that predicate's range. A **slice** is a small database holding the same table definition and
statistics (``sqlite_stat1``, copied from the real database, as the what-if planner does) and only

- the rows the program's seeks can reach: for an ``and`` query, those matching its one predicate on the
  index's leading key; for an ``or`` query (one index per branch, or one for all), those matching the query;
- the *boundary rows* of each key sought: one row whose value is the smallest, one whose value is the
  largest, and one whose value is NULL (where they exist), with their original rowids.

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

1. an ``and`` query has exactly one predicate on the index's leading key (one index); an ``or`` query has a
   predicate on every used index's leading key;
2. the program on the slice is the planned one (the caller compares signatures or equivalence classes);
3. the plan seeks every index by its leading key: each ``EXPLAIN QUERY PLAN`` search reads ``SEARCH ...
   USING INDEX name (key=...``, ``(key>...`` or ``(key<...`` (not ``SCAN``, not a skip-scan), one per
   index, and nothing else but an OR's branches and a sort of the rows found (``USE TEMP B-TREE``);
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
DEFAULT_KEPT_ROWS = 4.0  # slices kept, in rows, as a multiple of the table's rows
_SEEKS_LEADING_KEY = r"SEARCH {table} USING (?:COVERING )?INDEX {index} \({field}[=<>]"
# Plan lines besides the searches: an OR's branches, and a sort of the rows found (the same rows either way).
_OTHER_PLAN_LINES = re.compile(r"^(MULTI-INDEX OR|INDEX \d+|USE TEMP B-TREE FOR .*)$")


class TableSlices:
    """The slices of one SQLite engine's table, made on demand and kept while they fit."""

    def __init__(self, engine, max_fraction: float = DEFAULT_MAX_FRACTION,
                 kept_rows: float = DEFAULT_KEPT_ROWS, directory: str | os.PathLike | None = None) -> None:
        self.engine = engine
        self.rows = engine.row_count()
        self.max_rows = max(1, int(self.rows * max_fraction))
        self.kept_rows = max(self.max_rows, int(self.rows * kept_rows))
        self.directory = Path(directory or tempfile.gettempdir())
        remove_stale_partial_files(self.directory, "wield-")
        self._slices: OrderedDict[tuple[str, str], _Slice] = OrderedDict()
        self._declined: set[tuple[str, str]] = set()  # slices that would be too large
        self._boundaries: dict[str, tuple[int, ...]] = {}
        self.made = 0  # slices made
        self.index_builds = 0  # indexes built on slices
        self.too_large = 0  # slices not kept: more rows than max_fraction of the table

    # -- what the adapter asks -----------------------------------------------------------------------
    def serves(self, query, used: Sequence[IndexSpec]) -> bool:
        """Whether a slice can serve a program of ``query`` over the indexes ``used`` (condition 1)."""
        if not used:
            return False
        if query.logic == "and":
            return len(used) == 1 and self._leading_predicate(query, used[0]) is not None
        fields = {predicate.field for predicate in query.predicates}
        return all(spec.keys[0][0] in fields for spec in used)

    def program(self, query, used: Sequence[IndexSpec],
                statistics: Mapping[IndexSpec, str]) -> tuple | None:
        """The query's program over ``used`` on its slice (made if need be): one index forced with
        ``INDEXED BY``, several (an ``or``, one index per branch) the planner's choice with exactly those
        indexes on the slice; ``statistics`` are the real indexes' ``sqlite_stat1`` lines (where known).
        None when no slice can serve it."""
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
        patterns = {spec: re.compile(_SEEKS_LEADING_KEY.format(table=table, index=re.escape(spec.name),
                                                               field=re.escape(spec.keys[0][0])))
                    for spec in used}
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
    def _leading_predicate(self, query, spec: IndexSpec):
        """An ``and`` query's one predicate on ``spec``'s leading key (None if it has none or several)."""
        on_key = [p for p in query.predicates if p.field == spec.keys[0][0]]
        return on_key[0] if len(on_key) == 1 and on_key[0].op in SLICE_OPS else None

    @staticmethod
    def _key(query, used: Sequence[IndexSpec]) -> tuple[str, str]:
        """An ``and`` query's slice per leading key; an ``or`` query's one slice (every branch's rows)."""
        return (query.key(), used[0].keys[0][0] if query.logic == "and" else "")

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
        if query.logic == "and":
            predicates = [self._leading_predicate(query, used[0])]
        else:
            predicates = list(query.predicates)
        boundaries = tuple(dict.fromkeys(rowid for field in dict.fromkeys(p.field for p in predicates)
                                         for rowid in self._boundary_rows(field)))
        found = _Slice.make(self.engine, self.directory)
        try:
            rows = self.engine.copy_rows(found.path, *slice_where(self.engine.translator, predicates, boundaries))
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


def _force(used: Sequence[IndexSpec]) -> str | None:
    """One index is forced (``INDEXED BY``); several are left to the planner."""
    return used[0].name if len(used) == 1 else None
