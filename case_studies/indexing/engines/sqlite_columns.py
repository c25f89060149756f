"""A SQLite table's columns as numpy arrays, read once and kept on disk beside the cached base database.

Two things the indexing adapter computes need, per column, only SQLite's own order of the column's values
and the bytes each value takes in a record, never the values themselves:

- the exact size and statistics of an index (``sqlite_index_size.py``), which sorts the rows by the ranks of
  the index's keys and walks the b-tree ``CREATE INDEX`` would make;
- the *boundary rows* of a slice (``sqlite_slice.py``): for every group of rows with equal values of some
  fields, a row with the group's smallest value of another field, one with its largest and one where it is
  NULL. Done in SQL, that is up to three ``GROUP BY`` scans (1.3 s at 1,000,000 rows); from the ranks it is
  two sorts of integer keys.

A column is read with one query: ``dense_rank()`` over SQLite's ``ORDER BY`` of the column (so ties, NULLs
first, numeric comparison of integers and reals, and the column's collation are SQLite's), the kind of each
value and its length. That costs about 2 s per column at 1,000,000 rows, so a table whose database is a
cached base database (``SQLiteEngine.base_database``: content fixed and recorded by its sha256) keeps the
arrays in a directory beside it, named by that sha256, and every later process loads them in milliseconds.
Files are written to a temporary name and renamed, so a reader never sees half of one; one that does not
load (or has the wrong length) is read from the table again and rewritten. Processes that start together
(trials run in parallel) take turns reading a column: the first reads and writes it, the others load it.
"""
from __future__ import annotations

import os
import sqlite3
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from wield.cache import exclusive_lock, remove_stale_partial_files, write_npz_entry
from wield.errors import ConfigError

from case_studies.indexing.engines.sql import quote_identifier

RADIX_ROWS = 20_000  # from this many rows on, ``key_order`` sorts by radix (fewer: numpy, no compiled import)
PARTIAL_PREFIX = ".loading-"  # a column file being written (with the writer's pid: removed once it is gone)


def varint_len(values: np.ndarray) -> np.ndarray:
    """Bytes of SQLite's varint for each non-negative value (1-9)."""
    length = np.ones(values.shape, dtype=np.int64)
    largest = int(values.max(initial=0))
    for bits in (7, 14, 21, 28, 35, 42, 49, 56):
        if largest < 1 << bits:
            break
        length += values >= (1 << bits)
    return np.minimum(length, 9)


def integer_serial(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass(frozen=True)
class Column:
    """One column, in rowid order: each row's value as its rank in SQLite's order (1..distinct, ties equal,
    NULL first), and the bytes the value adds to a record's header and content."""

    rank: np.ndarray  # int32
    header: np.ndarray  # int8
    content: np.ndarray  # int32
    has_nulls: bool  # rank 1 is NULL


def key_order(keys: Sequence[tuple[np.ndarray, bool]], rows: int) -> np.ndarray:
    """The positions of the rows (in rowid order) sorted by each key's rank (``(rank, descending)``), then by
    rowid: one sort of packed integers where the ranks and the position fit in 63 bits (a radix sort of the
    ranks from ``RADIX_ROWS`` rows on, ``radix_order.py``), else lexsort."""
    codes, spans = [], []
    for rank, descending in keys:
        distinct = int(rank.max(initial=0))
        codes.append(distinct + 1 - rank if descending else rank)
        spans.append(distinct + 1)
    position_bits = max(rows - 1, 0).bit_length()
    if int(np.prod(spans, dtype=object)) << position_bits >= 1 << 63:
        return np.lexsort((np.arange(rows), *reversed(codes)))
    packed = np.zeros(rows, dtype=np.int64)
    for code, span in zip(codes, spans):
        packed *= span
        packed += code
    if rows >= RADIX_ROWS:
        from case_studies.indexing.engines.radix_order import radix_order  # numba, imported on first use

        return radix_order(packed)
    packed <<= position_bits
    packed |= np.arange(rows, dtype=np.int64)
    packed.sort()
    packed &= (1 << position_bits) - 1
    return packed


class TableColumns:
    """The columns of one table of a SQLite connection, each read on first use (or loaded from ``directory``,
    where it is kept for later processes when given)."""

    def __init__(self, conn: sqlite3.Connection, table: str, columns: dict[str, str],
                 directory: str | os.PathLike | None = None) -> None:
        """``columns`` maps each field to its quoted column; ``directory`` keeps the arrays of a table whose
        content never changes (a cached base database's copy), None to keep them in memory only."""
        self.conn, self.table = conn, quote_identifier(table)
        self._columns = columns
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                remove_stale_partial_files(self.directory, PARTIAL_PREFIX)
            except OSError:  # a cache that cannot be written costs later processes time, not results
                self.directory = None
        self.rowids = self._load("rowids", ("rowid",), self._read_rowids, None)[0]
        self._loaded: dict[str, Column] = {}

    @property
    def rows(self) -> int:
        return len(self.rowids)

    def column(self, field: str) -> Column:
        if field not in self._loaded:
            if field not in self._columns:
                raise ConfigError("index", field, allowed=sorted(self._columns))
            rank, header, content, nulls = self._load(f"column-{field}", ("rank", "header", "content", "has_nulls"),
                                                      lambda: self._read_column(self._columns[field]), self.rows)
            self._loaded[field] = Column(rank, header, content, bool(nulls[0]))
        return self._loaded[field]

    def group_boundary_rowids(self, groups: Sequence[str], field: str) -> tuple[int, ...]:
        """For every group of rows with equal values of the fields ``groups`` (one group if none), the rowid
        of the first row (by rowid) with the group's smallest value of ``field``, of the first with its
        largest, then of the first where it is NULL (those that exist); groups in their values' order, the
        smallest rows first, then the largest, then the NULL ones, each rowid once."""
        target = self.column(field)
        grouping = [(self.column(name).rank, False) for name in groups]
        present = target.rank > 1 if target.has_nulls else np.ones(self.rows, dtype=bool)
        found: list[np.ndarray] = []
        for descending in (False, True):
            order = key_order([*grouping, (target.rank, descending)], self.rows)
            order = order[present[order]]  # NULL-only groups give no smallest or largest row
            found.append(order[_group_starts([rank[order] for rank, _ in grouping], len(order))])
        if target.has_nulls:
            nulls = np.flatnonzero(~present)  # in rowid order: each group's first is its smallest rowid
            order = nulls[key_order([(rank[nulls], False) for rank, _ in grouping], len(nulls))]
            found.append(order[_group_starts([rank[order] for rank, _ in grouping], len(order))])
        return tuple(dict.fromkeys(self.rowids[np.concatenate(found)].tolist()))

    # -- reading and keeping ---------------------------------------------------------------------------
    def _read_rowids(self) -> tuple[np.ndarray]:
        return (np.fromiter((row[0] for row in self.conn.execute(f"SELECT rowid FROM {self.table} ORDER BY rowid")),
                            dtype=np.int64),)

    def _read_column(self, column: str) -> tuple[np.ndarray, ...]:
        # kind: 0 NULL, 1 an integer (or a whole REAL, stored as one: MEM_IntReal), 2 any other REAL,
        # 3 TEXT, 4 BLOB; length: the bytes of a TEXT or BLOB
        rows = self.conn.execute(
            f"SELECT dense_rank() OVER (ORDER BY {column}), "
            f"CASE typeof({column}) WHEN 'null' THEN 0 WHEN 'integer' THEN 1 "
            f"WHEN 'real' THEN (CASE WHEN {column} = CAST({column} AS INTEGER) THEN 1 ELSE 2 END) "
            f"WHEN 'text' THEN 3 ELSE 4 END, "
            f"CASE WHEN typeof({column}) IN ('integer', 'real') THEN CAST({column} AS INTEGER) ELSE 0 END, "
            f"CASE WHEN typeof({column}) IN ('text', 'blob') THEN length(CAST({column} AS BLOB)) ELSE 0 END "
            f"FROM {self.table} ORDER BY rowid").fetchall()
        data = np.array(rows, dtype=np.int64).reshape(len(rows), 4)
        rank = data[:, 0].astype(np.int32)  # 9 bytes a row and column kept: 135 MB for 15 columns at 1M rows
        kind, integer, length = data[:, 1], data[:, 2], data[:, 3]
        serial, content = integer_serial(integer)
        serial[kind == 0], content[kind == 0] = 0, 0
        serial[kind == 2], content[kind == 2] = 7, 8
        text, blob = kind == 3, kind == 4
        serial[text], content[text] = 13 + 2 * length[text], length[text]
        serial[blob], content[blob] = 12 + 2 * length[blob], length[blob]
        return (rank, varint_len(serial).astype(np.int8), content.astype(np.int32),
                np.array([bool((kind == 0).any())]))

    def _load(self, name: str, parts: tuple[str, ...], read, rows: int | None) -> tuple[np.ndarray, ...]:
        """The arrays ``parts`` of ``name``: from the directory when a whole copy is there (the first three
        ``rows`` long, when given), else ``read()`` and written there, one process at a time (another that
        wants them meanwhile waits, then loads them)."""
        if self.directory is None:
            return read()
        path = self.directory / f"{name}.npz"
        arrays = self._stored(path, parts, rows)
        if arrays is not None:
            return arrays
        try:
            with exclusive_lock(self.directory / f".{name}.lock"):
                arrays = self._stored(path, parts, rows)
                if arrays is None:
                    arrays = read()
                    self._write(path, dict(zip(parts, arrays)))
        except OSError:  # the directory went away (its database was rebuilt) or cannot be written
            if arrays is None:
                arrays = read()
        return arrays

    @staticmethod
    def _stored(path: Path, parts: tuple[str, ...], rows: int | None) -> tuple[np.ndarray, ...] | None:
        if not path.is_file():
            return None
        try:
            with np.load(path) as stored:
                arrays = tuple(stored[part] for part in parts)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # damaged, or another layout
            return None
        return arrays if rows is None or all(len(array) == rows for array in arrays[:3]) else None

    def _write(self, path: Path, arrays: dict[str, np.ndarray]) -> None:
        write_npz_entry(path, arrays, PARTIAL_PREFIX)


def _group_starts(ranks: list[np.ndarray], length: int) -> np.ndarray:
    """Where each run of equal (ranks...) starts in sorted rows."""
    if length == 0:
        return np.zeros(0, dtype=np.int64)
    changed = np.zeros(length, dtype=bool)
    changed[0] = True
    for rank in ranks:
        changed[1:] |= rank[1:] != rank[:-1]
    return np.flatnonzero(changed)

