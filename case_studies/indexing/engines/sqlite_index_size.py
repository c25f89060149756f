"""The exact size and ``sqlite_stat1`` line of an index on a SQLite table, computed without building it.

``CREATE INDEX`` sorts the table's (key..., rowid) records and appends them, in order, to an empty b-tree with
the bulk-load hint (``OP_SeekEnd``, ``BTREE_BULKLOAD``). How that b-tree grows is fully determined by the
sequence of record sizes in key order and the page size:

- a record's size follows from its values' serial types (``sqlite.org/fileformat2.html``, "Record Format");
  its cell on a page is the payload length as a varint plus the payload, spilling to overflow pages past
  ``max_local`` bytes (index b-trees: ``(usable - 12) * 64 / 255 - 23``), padded to 4 bytes on a leaf and
  preceded by a 4-byte child pointer on an interior page;
- records are appended to the rightmost leaf until one does not fit. Then SQLite's ``balance_nonroot`` with
  ``bBulk`` set redistributes the level's last two pages (the only one, under a parent with no cell yet) by
  packing cells to the left, one page after another, each page as full as it can
  be, one cell between two pages going up to the parent as their divider; only a right-most page left empty
  takes the cell before it. A parent that overflows, or holds less than a third of a page, is balanced the
  same way with its own parent; a root that overflows moves its content into a new child (``balance_deeper``).

Every page of every level is then a run of the level's cells in key order, separated by single divider
cells, so one level is a sequence of cell sizes with running totals and a list of where each page starts,
and a page is packed with a binary search instead of one cell at a time. The model counts the pages the
b-tree ends with (leaves, interior pages and overflow pages) exactly as ``dbstat`` does; the statistics are
the row count and, for each key prefix, the average number of rows per distinct prefix, rounded up (and 1
where 2 would be read from prefixes over 10/11 distinct), as ``ANALYZE`` writes them (NULLs equal to each
other, as in the index).

The per-column data this needs (SQLite's own order of the column's values, as ``dense_rank()`` over them,
and each value's serial type and length) is read once per column with one query, so a size costs one sort
of integer keys (numpy) and a walk over the pages, not a sort of records inside SQLite and the writes of a
b-tree. ``SQLiteEngine.index_geometry`` offers it; ``IndexingSystem`` also builds the first few indexes it
computes and one in fifty after, and stops trusting the model at the first disagreement.
"""
from __future__ import annotations

import bisect
import sqlite3
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from wield.errors import ConfigError

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sql import quote_identifier

_LEAF_HEADER, _INTERIOR_HEADER = 8, 12


@dataclass(frozen=True)
class IndexGeometry:
    """What an index's b-tree holds: its pages (each ``page_size`` bytes) and its ``sqlite_stat1`` line."""

    pages: int
    page_size: int
    statistics: str

    @property
    def bytes(self) -> int:
        return self.pages * self.page_size


def _varint_len(values: np.ndarray) -> np.ndarray:
    """Bytes of SQLite's varint for each non-negative value (1-9)."""
    length = np.ones(values.shape, dtype=np.int64)
    for bits in (7, 14, 21, 28, 35, 42, 49, 56):
        length += values >= (1 << bits)
    return np.minimum(length, 9)


def _integer_serial(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(serial type, content bytes) of each integer under schema format 4 (0 and 1 take no content)."""
    limits = ((127, 1, 1), (32767, 2, 2), (8388607, 3, 3), (2147483647, 4, 4), (140737488355327, 5, 6))
    serial = np.full(values.shape, 6, dtype=np.int64)
    content = np.full(values.shape, 8, dtype=np.int64)
    for limit, kind, size in reversed(limits):
        inside = (values >= -limit - 1) & (values <= limit)
        serial[inside], content[inside] = kind, size
    small = (values == 0) | (values == 1)
    serial[small], content[small] = 8 + values[small], 0
    return serial, content


class _Column:
    """One column of the table, read once: the rank of each row's value in SQLite's order (ties equal) and
    the bytes its value adds to a record's header and content."""

    def __init__(self, conn: sqlite3.Connection, table: str, column: str) -> None:
        # kind: 0 NULL, 1 an integer (or a whole REAL, stored as one: MEM_IntReal), 2 any other REAL,
        # 3 TEXT, 4 BLOB; length: the bytes of a TEXT or BLOB
        rows = conn.execute(
            f"SELECT dense_rank() OVER (ORDER BY {column}), "
            f"CASE typeof({column}) WHEN 'null' THEN 0 WHEN 'integer' THEN 1 "
            f"WHEN 'real' THEN (CASE WHEN {column} = CAST({column} AS INTEGER) THEN 1 ELSE 2 END) "
            f"WHEN 'text' THEN 3 ELSE 4 END, "
            f"CASE WHEN typeof({column}) IN ('integer', 'real') THEN CAST({column} AS INTEGER) ELSE 0 END, "
            f"CASE WHEN typeof({column}) IN ('text', 'blob') THEN length(CAST({column} AS BLOB)) ELSE 0 END "
            f"FROM {table} ORDER BY rowid").fetchall()
        data = np.array(rows, dtype=np.int64).reshape(len(rows), 4)
        self.rank = data[:, 0].astype(np.int32)  # 9 bytes a row and column kept: 135 MB for 15 columns at 1M rows
        kind, integer, length = data[:, 1], data[:, 2], data[:, 3]
        serial, content = _integer_serial(integer)
        serial[kind == 0], content[kind == 0] = 0, 0
        serial[kind == 2], content[kind == 2] = 7, 8
        text, blob = kind == 3, kind == 4
        serial[text], content[text] = 13 + 2 * length[text], length[text]
        serial[blob], content[blob] = 12 + 2 * length[blob], length[blob]
        self.header = _varint_len(serial).astype(np.int8)
        self.content = content.astype(np.int32)


def _key_order(keys: list[tuple[np.ndarray, bool]], rowids: np.ndarray) -> np.ndarray:
    """The rows in index order: by each key's rank (1..distinct; a descending key's reversed), then rowid (the
    rows are in rowid order, so a stable sort keeps it among equal keys). One integer key where the ranks fit
    in 62 bits, else lexsort."""
    codes, spans = [], []
    for rank, descending in keys:
        distinct = int(rank.max(initial=0))
        codes.append(distinct + 1 - rank if descending else rank)
        spans.append(distinct + 1)
    if int(np.prod(spans, dtype=object)) >= 1 << 62:
        return np.lexsort((rowids, *reversed(codes)))
    combined = np.zeros(len(rowids), dtype=np.int64)
    for code, span in zip(codes, spans):
        combined = combined * span + code.astype(np.int64)
    return np.argsort(combined, kind="stable")


class _Level:
    """One level of the b-tree: its cells in key order (as running totals of what each costs on a page) and
    where each of its pages starts; the cell before each page but the first is the divider above."""

    __slots__ = ("capacity", "totals", "cells", "starts", "length")

    def __init__(self, capacity: int, totals: list[int], cells: list[int] | None) -> None:
        self.capacity = capacity  # a page's bytes less its header
        self.totals = totals  # totals[i]: bytes of cells [0, i)
        self.cells = cells  # the record of each cell (None on the leaf level: cell i is record i)
        self.starts = [0]
        self.length = 0  # cells present (the leaf level's grow as records are appended)


def _pages(leaf_cost: np.ndarray, interior_cost: np.ndarray, usable: int) -> int:
    """Pages of the b-tree (overflow pages aside) that appending cells of these costs (2 + cell bytes, in key
    order) makes, balanced as SQLite balances a bulk load."""
    records = len(leaf_cost)
    interior = interior_cost.tolist()
    leaves = _Level(usable - _LEAF_HEADER, [0, *accumulate(leaf_cost.tolist())], None)
    levels = [leaves]
    totals, starts = leaves.totals, leaves.starts
    while leaves.length < records:
        end = bisect.bisect_right(totals, totals[starts[-1]] + leaves.capacity, leaves.length, records + 1) - 1
        if end >= records:
            break
        leaves.length = end + 1  # record ``end`` did not fit: the rightmost leaf overflows
        depth = 0
        while True:  # SQLite's balance(), from the leaf up
            level = levels[depth]
            used = level.totals[level.length] - level.totals[level.starts[-1]]
            if depth == len(levels) - 1:  # the root
                if used <= level.capacity:
                    break
                levels.append(_Level(usable - _INTERIOR_HEADER, [0], []))
                continue  # balance_deeper: the root's content is now its only child
            if used <= level.capacity and (level.capacity - used) * 3 <= usable * 2:
                break  # neither overflowing nor under a third full
            _redistribute(level, levels[depth + 1], interior)
            depth += 1
    return sum(len(level.starts) for level in levels)


def _redistribute(level: _Level, parent: _Level, interior: list[int]) -> None:
    """SQLite's balance_nonroot with bBulk on the rightmost page of ``level``: its last two pages (one if the
    parent has no cell), packed to the left, an empty last page taking the cell before it."""
    siblings = 2 if parent.length > parent.starts[-1] else 1
    totals, length, capacity = level.totals, level.length, level.capacity
    start = level.starts[-siblings]
    starts = [start]
    while True:
        end = bisect.bisect_right(totals, totals[start] + capacity, start, length + 1) - 1
        if end >= length:
            break
        start = end + 1
        if start >= length:  # the right-most page would be empty: it takes the cell before it
            start = end
            starts.append(start)
            break
        starts.append(start)
    del level.starts[-siblings:]
    level.starts.extend(starts)
    kept = parent.length - (siblings - 1)
    del parent.cells[kept:]  # type: ignore[union-attr]
    del parent.totals[kept + 1:]
    cells, parent_totals, parent_cells = level.cells, parent.totals, parent.cells
    for start in starts[1:]:
        record = start - 1 if cells is None else cells[start - 1]
        parent_cells.append(record)  # type: ignore[union-attr]
        parent_totals.append(parent_totals[-1] + interior[record])
    parent.length = kept + len(starts) - 1


class SQLiteIndexSizes:
    """Exact sizes and statistics of indexes on one table of one database, computed from its columns."""

    def __init__(self, conn: sqlite3.Connection, table: str, columns: dict[str, str], reserved: int = 0) -> None:
        """``columns`` maps each field to its quoted column; ``reserved`` is byte 20 of the database header
        (bytes kept free at the end of every page, 0 unless an extension asked for some)."""
        self._conn, self._table = conn, quote_identifier(table)
        self._columns = columns
        self.page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        self.usable = self.page_size - reserved
        self.max_local = (self.usable - 12) * 64 // 255 - 23
        self.min_local = (self.usable - 12) * 32 // 255 - 23
        rowids = np.fromiter((row[0] for row in conn.execute(f"SELECT rowid FROM {self._table} ORDER BY rowid")),
                             dtype=np.int64)
        self._rowids = rowids
        serial, content = _integer_serial(rowids)
        self._rowid_header, self._rowid_content = _varint_len(serial), content
        self._loaded: dict[str, _Column] = {}

    def _column(self, field: str) -> _Column:
        if field not in self._loaded:
            if field not in self._columns:
                raise ConfigError("index", field, allowed=sorted(self._columns))
            self._loaded[field] = _Column(self._conn, self._table, self._columns[field])
        return self._loaded[field]

    def geometry(self, spec: IndexSpec) -> IndexGeometry:
        """The pages and ``sqlite_stat1`` line ``CREATE INDEX`` and ``ANALYZE`` would give ``spec``."""
        columns = [self._column(field) for field in spec.fields]
        rows = len(self._rowids)
        header = self._rowid_header + sum(column.header.astype(np.int64) for column in columns)
        header = header + _varint_len(header + 1)  # the header's own length counts itself
        payload = header + self._rowid_content + sum(column.content for column in columns)
        cell, overflow_pages = self._cells(payload)
        order = _key_order([(column.rank, direction == "desc") for column, (_, direction) in zip(columns, spec.keys)],
                           self._rowids)
        ordered = cell[order]
        leaf_cost = 2 + np.maximum(ordered, 4)
        interior_cost = 2 + 4 + ordered
        pages = _pages(leaf_cost, interior_cost, self.usable) if rows else 1
        return IndexGeometry(pages + int(overflow_pages.sum()), self.page_size,
                             self._statistics(rows, [column.rank[order] for column in columns]))

    def _cells(self, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each record's cell on a leaf (without the 4-byte minimum) and its overflow pages."""
        local = payload.copy()
        spills = payload > self.max_local
        if spills.any():
            kept = self.min_local + (payload[spills] - self.min_local) % (self.usable - 4)
            kept[kept > self.max_local] = self.min_local
            local[spills] = kept + 4
        overflow = np.zeros(payload.shape, dtype=np.int64)
        overflow[spills] = -(-(payload[spills] - (local[spills] - 4)) // (self.usable - 4))
        return _varint_len(payload) + local, overflow

    @staticmethod
    def _statistics(rows: int, ranks: list[np.ndarray]) -> str:
        numbers = [rows]
        changed = np.zeros(max(rows - 1, 0), dtype=bool)
        for rank in ranks:
            changed |= rank[1:] != rank[:-1]
            distinct = int(changed.sum()) + 1 if rows else 0
            average = (rows + distinct - 1) // distinct if distinct else 0
            if average == 2 and rows * 10 <= distinct * 11:  # ANALYZE's rule: over ~90% distinct reads as 1
                average = 1
            numbers.append(average)
        return " ".join(str(number) for number in numbers)
