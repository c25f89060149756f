"""An index's records in key order, as the b-tree walk and ``ANALYZE`` see them, by one compiled pass.

``sqlite_index_size.py`` needs, for the rows in the index's key order: each record's cell cost on a leaf and
on an interior page (``sqlite_btree.py`` packs the pages from them), the overflow pages of records that
spill, and for each key prefix the number of distinct prefixes (the ``sqlite_stat1`` line). In numpy that
took a dozen whole-table temporaries and a gather per key column: about 30 ms of an index's size at
1,000,000 rows (issue 48). This kernel visits the rows once, in key order, and computes all of it:

- a record's header is its serial types' varints (the rowid's and each key's, as ``sqlite_columns.py``
  keeps them) plus the header's own length, which counts itself; its payload is the header and the values'
  bytes;
- the cell is the payload length as a varint plus the bytes kept on the page: the whole payload up to
  ``max_local``, else ``min_local`` plus the remainder modulo a page's usable bytes less 4 (``min_local``
  where that exceeds ``max_local``) and a 4-byte overflow pointer, the rest on overflow pages;
- a leaf costs ``2 + max(cell, 4)`` bytes with its cell pointer, an interior page ``2 + 4 + cell``;
- a row starts a new prefix of length ``j`` when one of its first ``j`` key ranks differs from the row
  before it (NULLs have one rank, so they are equal, as in the index).

The kernel is compiled with numba (cached beside this file) per number of key columns, and imported when
the first index is sized.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _varint_len(value):  # pragma: no cover - compiled
    length = 1
    while length < 9 and value >= (1 << (7 * length)):
        length += 1
    return length


@njit(cache=True)
def _cells(rowid_header, rowid_content, headers, contents, usable, max_local, min_local):  # pragma: no cover
    rows = rowid_header.shape[0]
    cells = np.empty(rows, np.int64)
    overflow_pages = 0
    spill = usable - 4
    for row in range(rows):
        header = rowid_header[row]
        content = rowid_content[row]
        for key in range(len(headers)):
            header += headers[key][row]
            content += contents[key][row]
        header += _varint_len(header + 1)
        payload = header + content
        local = payload
        if payload > max_local:
            kept = min_local + (payload - min_local) % spill
            if kept > max_local:
                kept = min_local
            local = kept + 4
            overflow_pages += (payload - kept + spill - 1) // spill
        cells[row] = _varint_len(payload) + local
    return cells, overflow_pages


@njit(cache=True)
def _in_order(order, cells, ranks):  # pragma: no cover - compiled
    rows = order.shape[0]
    keys = len(ranks)
    leaf_cost = np.empty(rows, np.int64)
    interior_cost = np.empty(rows, np.int64)
    distinct = np.zeros(keys, np.int64)
    previous = np.zeros(keys, np.int64)
    for position in range(rows):
        row = order[position]
        cell = cells[row]
        leaf_cost[position] = 2 + max(cell, 4)
        interior_cost[position] = 6 + cell
        changed = position == 0
        for key in range(keys):
            rank = ranks[key][row]
            if changed or rank != previous[key]:
                changed = True
                distinct[key] += 1
            previous[key] = rank
    return leaf_cost, interior_cost, distinct


def records_in_order(order: np.ndarray, rowid_header: np.ndarray, rowid_content: np.ndarray,
                     headers: tuple[np.ndarray, ...], contents: tuple[np.ndarray, ...],
                     ranks: tuple[np.ndarray, ...], usable: int, max_local: int,
                     min_local: int) -> tuple[np.ndarray, np.ndarray, int, list[int]]:
    """(leaf cost, interior cost) of each record in ``order`` (positions of rows in rowid order), the
    overflow pages of all records and the distinct key prefixes of each length (module docstring).
    ``headers``, ``contents`` and ``ranks`` are the key columns' arrays in rowid order, in key order."""
    # one dtype per kind of array (no copy where it already is), so the tuples are homogeneous for numba
    cells, overflow_pages = _cells(np.ascontiguousarray(rowid_header, dtype=np.int64),
                                   np.ascontiguousarray(rowid_content, dtype=np.int64),
                                   tuple(np.ascontiguousarray(header, dtype=np.int8) for header in headers),
                                   tuple(np.ascontiguousarray(content, dtype=np.int32) for content in contents),
                                   int(usable), int(max_local), int(min_local))
    leaf_cost, interior_cost, distinct = _in_order(np.ascontiguousarray(order, dtype=np.int64), cells,
                                                   tuple(np.ascontiguousarray(rank, dtype=np.int32) for rank in ranks))
    return leaf_cost, interior_cost, int(overflow_pages), [int(count) for count in distinct]
