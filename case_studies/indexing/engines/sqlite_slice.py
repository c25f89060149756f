"""Measure a forced SQLite program's work on a slice of the table instead of building the index on all of it.

Building an index sorts every row of the table (about 0.12 s at 100,000 rows, 1.2 s at 1,000,000), but a
program that *seeks* its index by the query's predicate on the index's leading key only ever visits the
entries in that predicate's range. A **slice** is a small database holding the same table definition and
statistics (``sqlite_stat1``, copied from the real database, as the what-if planner does) and only

- the rows matching the query's one predicate on the leading key (``R``), and
- three *boundary rows* of that key: one whose value is the smallest, one whose value is the largest, and
  one whose value is NULL (where they exist), with their original rowids.

The query is executed there with the same SQL, bound values and ``INDEXED BY``, so the same program runs.
The program walks the slice's index exactly as it walks the full index, and counts the same VM steps:

- every entry it visits inside the seek ranges satisfies ``R``, so it is in the slice, in the same order
  (the rowids are the original ones);
- a seek or a range-end comparison (``SeekGE``, ``IdxGT``, ...) only asks whether *some* entry lies beyond
  the range and compares it by the range's key prefix; the boundary rows make "some entry beyond" true in
  the slice exactly where it is true in the full index, on either side (NULLs sort first).

That argument holds under conditions checked on every measurement; where one fails the slice declines
(returns None) and the adapter builds the real index as before:

1. the query's logic is ``and`` and it has exactly one predicate on the index's leading key;
2. the executed program is the planned one (the caller compares signatures or equivalence classes);
3. the plan seeks the index by that key: ``EXPLAIN QUERY PLAN`` reads ``SEARCH ... USING INDEX name
   (key=...``, ``(key>...`` or ``(key<...`` (not ``SCAN``, not a skip-scan), one index, no automatic index,
   and nothing else but a sort of the rows found (``USE TEMP B-TREE FOR ORDER BY``);
4. the program has no ``SeekScan`` (which steps over entries between the values of an ``IN`` list rather
   than seeking, and would count entries outside ``R``).

Work only: a slice's wall time says nothing about the real table's latency. The slices of the most
recently used (query, key) pairs are kept (files in the temporary directory, named like the engine's
private copies, so a killed process's are removed by the next engine) with the indexes built on them.
Tests compare slice measurements with full-index measurements step by step on random queries and indexes.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

from case_studies.indexing.engines.contract import QueryResult
from case_studies.indexing.index_spec import IndexSpec
from wield.cache import remove_stale_partial_files

SLICE_OPS = ("eq", "in", "lt", "lte", "gt", "gte", "between")
DEFAULT_MAX_FRACTION = 0.5  # a slice holding more of the table than this is not worth making
DEFAULT_KEPT_ROWS = 4.0  # slices kept, in rows, as a multiple of the table's rows
_SEEKS_LEADING_KEY = r"SEARCH {table} USING (?:COVERING )?INDEX {index} \({field}[=<>]"
_SORTS = "USE TEMP B-TREE FOR "  # a sort of the rows found: the same rows, in the same order, on a slice


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
        self._declined: set[tuple[str, str]] = set()  # (query, key) whose slice would be too large
        self._boundaries: dict[str, tuple[int, ...]] = {}
        self.made = 0  # slices made
        self.index_builds = 0  # indexes built on slices
        self.too_large = 0  # slices not kept: more rows than max_fraction of the table

    # -- what the adapter asks -----------------------------------------------------------------------
    def leading_predicate(self, query, spec: IndexSpec):
        """The query's one predicate on ``spec``'s leading key, or None when a slice cannot serve it."""
        if query.logic != "and":
            return None
        field = spec.keys[0][0]
        on_key = [p for p in query.predicates if p.field == field]
        if len(on_key) != 1 or on_key[0].op not in SLICE_OPS:
            return None
        return on_key[0]

    def program(self, query, spec: IndexSpec, statistics: str | None) -> tuple | None:
        """The query's program forced onto ``spec`` on its slice (built if need be), or None when no slice
        can serve the pair."""
        found = self._slice(query, spec)
        if found is None:
            return None
        found.ensure_index(spec, statistics, self)
        program = found.engine.program(query, spec.name)
        if any(instruction[0] == "SeekScan" for instruction in program):
            return None
        return program

    def run(self, query, spec: IndexSpec) -> QueryResult | None:
        """Execute the query forced onto ``spec`` on its slice (after ``program``); None when the plan does
        not seek the index by its leading key (condition 3), so the work may differ from the full index's."""
        found = self._slices[(query.key(), spec.keys[0][0])]
        result = found.engine.run_query(query, repetitions=0, force=spec.name)
        pattern = re.compile(_SEEKS_LEADING_KEY.format(table=re.escape(self.engine.table),
                                                       index=re.escape(spec.name),
                                                       field=re.escape(spec.keys[0][0])))
        searches = [line for line in result.plan or () if not line.startswith(_SORTS)]
        if len(searches) != 1 or not pattern.match(searches[0]):
            return None
        return result

    def close(self) -> None:
        while self._slices:
            _, found = self._slices.popitem(last=False)
            found.close()

    # -- slices ----------------------------------------------------------------------------------------
    def _slice(self, query, spec: IndexSpec) -> "_Slice | None":
        predicate = self.leading_predicate(query, spec)
        if predicate is None:
            return None
        key = (query.key(), predicate.field)
        if key in self._declined:
            return None
        found = self._slices.get(key)
        if found is not None:
            self._slices.move_to_end(key)
            return found
        found = _Slice.make(self.engine, self.directory)
        try:
            rows = self.engine.copy_rows(found.path, predicate, self._boundary_rows(predicate.field))
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
        self.indexes: set[IndexSpec] = set()

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

    def ensure_index(self, spec: IndexSpec, statistics: str | None, owner: TableSlices) -> None:
        if spec not in self.indexes:
            self.engine.create_index_with_statistics(spec, statistics)
            self.indexes.add(spec)
            owner.index_builds += 1

    def close(self) -> None:
        try:
            self.engine.close()
        finally:
            self.path.unlink(missing_ok=True)


def slice_where(translator, predicate, boundary_rows: Sequence[int]) -> tuple[str, list]:
    """SQL (and bound values) selecting a slice's rows: the predicate's, and the boundary rows."""
    text, params = translator.predicate(predicate)
    if not boundary_rows:
        return text, params
    return f"({text}) OR rowid IN ({', '.join(['?'] * len(boundary_rows))})", [*params, *boundary_rows]
