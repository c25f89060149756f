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
and a page is packed with a binary search instead of one cell at a time (``sqlite_btree.py``, a compiled
kernel). The model counts the pages the b-tree ends with (leaves, interior pages and overflow pages) exactly
as ``dbstat`` does; the statistics are
the row count and, for each key prefix, the average number of rows per distinct prefix, rounded up (and 1
where 2 would be read from prefixes over 10/11 distinct), as ``ANALYZE`` writes them (NULLs equal to each
other, as in the index).

The per-column data this needs (SQLite's own order of the column's values, as ``dense_rank()`` over them,
and each value's serial type and length) comes from ``sqlite_columns.py`` (read once per column, kept
beside the cached base database), so a size costs one sort of integer keys (``radix_order.py``), one pass
over the records in that order (``sqlite_index_records.py``) and a walk over the pages, not a sort of
records inside SQLite and the writes of a b-tree. ``SQLiteEngine.index_geometry``
offers it; ``IndexingSystem`` compares it with a build for the first few indexes it computes, for every
computed index it builds anyway and for at least one in fifty, and stops trusting the model at the first
disagreement.
"""
from __future__ import annotations

from dataclasses import dataclass

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sqlite_columns import TableColumns, integer_serial, key_order, varint_len


@dataclass(frozen=True)
class IndexGeometry:
    """What an index's b-tree holds: its pages (each ``page_size`` bytes) and its ``sqlite_stat1`` line."""

    pages: int
    page_size: int
    statistics: str

    @property
    def bytes(self) -> int:
        return self.pages * self.page_size


class SQLiteIndexSizes:
    """Exact sizes and statistics of indexes on one table of one database, computed from its columns."""

    def __init__(self, columns: TableColumns, reserved: int = 0) -> None:
        """``reserved`` is byte 20 of the database header (bytes kept free at the end of every page, 0 unless
        an extension asked for some)."""
        self._columns = columns
        self.page_size = int(columns.conn.execute("PRAGMA page_size").fetchone()[0])
        self.usable = self.page_size - reserved
        self.max_local = (self.usable - 12) * 64 // 255 - 23
        self.min_local = (self.usable - 12) * 32 // 255 - 23
        serial, content = integer_serial(columns.rowids)
        self._rowid_header, self._rowid_content = varint_len(serial), content

    def geometry(self, spec: IndexSpec) -> IndexGeometry:
        """The pages and ``sqlite_stat1`` line ``CREATE INDEX`` and ``ANALYZE`` would give ``spec``."""
        # numba kernels, imported when the first index is sized
        from case_studies.indexing.engines.sqlite_btree import btree_pages
        from case_studies.indexing.engines.sqlite_index_records import records_in_order

        columns = [self._columns.column(field) for field in spec.fields]
        rows = self._columns.rows
        order = key_order([(column.rank, direction == "desc") for column, (_, direction) in zip(columns, spec.keys)],
                          rows)
        leaf_cost, interior_cost, overflow_pages, distinct = records_in_order(
            order, self._rowid_header, self._rowid_content, tuple(column.header for column in columns),
            tuple(column.content for column in columns), tuple(column.rank for column in columns),
            self.usable, self.max_local, self.min_local)
        pages = btree_pages(leaf_cost, interior_cost, self.usable) if rows else 1
        return IndexGeometry(pages + overflow_pages, self.page_size, self._statistics(rows, distinct))

    @staticmethod
    def _statistics(rows: int, distinct: list[int]) -> str:
        """``ANALYZE``'s line from the row count and the distinct key prefixes of each length."""
        numbers = [rows]
        for count in distinct:
            average = (rows + count - 1) // count if count else 0
            if average == 2 and rows * 10 <= count * 11:  # ANALYZE's rule: over ~90% distinct reads as 1
                average = 1
            numbers.append(average)
        return " ".join(str(number) for number in numbers)
