"""The pages of a b-tree that SQLite bulk-loads, counted by a compiled kernel (``sqlite_index_size.py``).

``btree_pages(leaf_cost, interior_cost, usable)`` replays how ``CREATE INDEX`` grows the b-tree of an index
whose cells, in key order, cost ``leaf_cost`` bytes on a leaf page and ``interior_cost`` bytes on an interior
page (both with their 2-byte cell pointer), on pages of ``usable`` bytes: cells are appended to the rightmost
leaf until one does not fit; then SQLite's ``balance_nonroot`` with ``bBulk`` set repacks the level's last
two pages (the only one, under a parent with no cell yet) to the left, one page after another, each as full
as it can be, one cell between two pages going up to the parent as their divider, and a right-most page
left empty takes the cell before it. A parent that overflows, or holds less than a third of a page, is
balanced the same way with its own parent; a root that overflows moves its content into a new child
(``balance_deeper``). The result is the pages of every level (overflow pages aside).

Every level is a run of its cells in key order with running totals of their costs, a list of where each page
starts (the cell before each page but the first is the divider above) and a count of the cells present, so a
page is packed with a binary search over the totals. The kernel is compiled with numba (cached beside this
file): the leaves' balance runs once per leaf page, about 1,000 times for an index of 100,000 rows, and in
Python that loop was half of an index's size (issue 48).
"""

from __future__ import annotations

import numpy as np
from numba import njit

LEAF_HEADER, INTERIOR_HEADER = 8, 12
MAX_LEVELS = 32  # interior levels; a b-tree of 2**63 cells with 2 cells per page has fewer


@njit(cache=True)
def _fit(totals, limit, lo, hi):  # pragma: no cover - compiled
    """bisect.bisect_right(totals, limit, lo, hi): the first position in [lo, hi) whose total exceeds limit."""
    while lo < hi:
        middle = (lo + hi) // 2
        if limit < totals[middle]:
            hi = middle
        else:
            lo = middle + 1
    return lo


@njit(cache=True)
def _redistribute(depth, totals, cells, starts, pages, lengths, interior, capacity):  # pragma: no cover
    """balance_nonroot with bBulk on the rightmost page of interior level ``depth``: its last two pages (one
    if the parent, level ``depth + 1``, has no cell), packed to the left, an empty last page taking the cell
    before it; the dividers go to the parent."""
    parent = depth + 1
    siblings = 2 if lengths[parent] > starts[parent, pages[parent] - 1] else 1
    length = lengths[depth]
    first = pages[depth] - siblings
    start = starts[depth, first]
    count = first + 1
    while True:
        end = _fit(totals[depth], totals[depth, start] + capacity, start, length + 1) - 1
        if end >= length:
            break
        start = end + 1
        if start >= length:  # the right-most page would be empty: it takes the cell before it
            start = end
            starts[depth, count] = start
            count += 1
            break
        starts[depth, count] = start
        count += 1
    pages[depth] = count
    kept = lengths[parent] - (siblings - 1)
    for page in range(first + 1, count):
        record = cells[depth, starts[depth, page] - 1]
        cells[parent, kept] = record
        totals[parent, kept + 1] = totals[parent, kept] + interior[record]
        kept += 1
    lengths[parent] = kept


@njit(cache=True)
def _btree_pages(leaf_cost, interior, usable):  # pragma: no cover - compiled
    records = leaf_cost.shape[0]
    capacity = usable - LEAF_HEADER
    upper_capacity = usable - INTERIOR_HEADER
    totals = np.zeros(records + 1, np.int64)  # totals[i]: bytes of records [0, i)
    for i in range(records):
        totals[i + 1] = totals[i] + leaf_cost[i]
    starts = np.empty(records + 2, np.int64)  # where each leaf starts
    starts[0] = 0
    leaves = 1
    # The interior levels, the leaves' parent first: running totals, the record of each cell and page starts.
    # A level holds at most one cell per page below, so ``records + 2`` entries; rows are left uninitialised
    # (only what a level uses is ever touched, so the memory is only reserved) and set up as a level is made.
    width = records + 2
    level_totals = np.empty((MAX_LEVELS, width), np.int64)
    level_cells = np.empty((MAX_LEVELS, width), np.int64)
    level_starts = np.empty((MAX_LEVELS, width), np.int64)
    level_pages = np.ones(MAX_LEVELS, np.int64)
    level_lengths = np.zeros(MAX_LEVELS, np.int64)
    levels = 0
    length = 0  # records appended so far
    while True:
        end = _fit(totals, totals[starts[leaves - 1]] + capacity, length, records + 1) - 1
        if end >= records:
            break
        length = end + 1  # record ``end`` did not fit: the rightmost leaf overflows
        if levels == 0:  # it is the root: balance_deeper makes it the only child of a new root
            level_totals[0, 0] = 0
            level_starts[0, 0] = 0
            levels = 1
        siblings = 2 if level_lengths[0] > level_starts[0, level_pages[0] - 1] else 1
        first = leaves - siblings
        start = starts[first]
        leaves = first + 1
        while True:
            end = _fit(totals, totals[start] + capacity, start, length + 1) - 1
            if end >= length:
                break
            start = end + 1
            if start >= length:
                start = end
                starts[leaves] = start
                leaves += 1
                break
            starts[leaves] = start
            leaves += 1
        kept = level_lengths[0] - (siblings - 1)
        for page in range(first + 1, leaves):
            record = starts[page] - 1
            level_cells[0, kept] = record
            level_totals[0, kept + 1] = level_totals[0, kept] + interior[record]
            kept += 1
        level_lengths[0] = kept
        depth = 0
        while True:  # SQLite's balance(), from the leaves' parent up
            page_start = level_starts[depth, level_pages[depth] - 1]
            used = level_totals[depth, level_lengths[depth]] - level_totals[depth, page_start]
            if depth == levels - 1:  # the root
                if used <= upper_capacity:
                    break
                if levels == MAX_LEVELS:
                    raise ValueError("the b-tree would be deeper than the model allows")
                level_totals[levels, 0] = 0  # balance_deeper: the root's content is now its only child
                level_starts[levels, 0] = 0
                levels += 1
                continue
            if used <= upper_capacity and (upper_capacity - used) * 3 <= usable * 2:
                break  # neither overflowing nor under a third full
            _redistribute(depth, level_totals, level_cells, level_starts, level_pages, level_lengths, interior,
                          upper_capacity)
            depth += 1
    pages = leaves
    for depth in range(levels):
        pages += level_pages[depth]
    return pages


def btree_pages(leaf_cost: np.ndarray, interior_cost: np.ndarray, usable: int) -> int:
    """Pages of the b-tree (overflow pages aside) that appending cells of these costs (2 + cell bytes, in key
    order) makes, balanced as SQLite balances a bulk load (module docstring)."""
    return int(_btree_pages(np.ascontiguousarray(leaf_cost, dtype=np.int64),
                            np.ascontiguousarray(interior_cost, dtype=np.int64), int(usable)))
