"""Compiled lazy min-heaps of (key, model, version) entries and the kernels' random numbers.

A heap is one row ``h`` of ``key`` (float64) and ``mv`` (model, version). Entries are ordered by key, then
by model index, so the order is fully determined. An entry is *valid* while its version equals
``version[model]``; stale entries are dropped when they reach the top or when a full heap is compacted.
Each model has at most one valid entry per heap, so a heap with room for ``2 * models + 16`` entries always
has room after compaction.
"""

from __future__ import annotations

import numpy as np

from case_studies.scheduling.state import SI_HEAP_SIZE, SI_RNG, kernel


@kernel(inline=True)
def _before(key, mv, h, i, j) -> bool:
    return key[h, i] < key[h, j] or (key[h, i] == key[h, j] and mv[h, i, 0] < mv[h, j, 0])


@kernel(inline=True)
def _swap(key, mv, h, i, j) -> None:
    key[h, i], key[h, j] = key[h, j], key[h, i]
    mv[h, i, 0], mv[h, j, 0] = mv[h, j, 0], mv[h, i, 0]
    mv[h, i, 1], mv[h, j, 1] = mv[h, j, 1], mv[h, i, 1]


@kernel(inline=True)
def _sift_down(key, mv, h, i, size) -> None:
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        child = left
        if left + 1 < size and _before(key, mv, h, left + 1, left):
            child = left + 1
        if not _before(key, mv, h, child, i):
            return
        _swap(key, mv, h, i, child)
        i = child


@kernel()
def compact(key, mv, h, size, version) -> int:
    """Drop every stale entry of heap ``h`` and restore the heap order; returns the new size."""
    kept = 0
    for i in range(size):
        if mv[h, i, 1] == version[mv[h, i, 0]]:
            key[h, kept] = key[h, i]
            mv[h, kept, 0] = mv[h, i, 0]
            mv[h, kept, 1] = mv[h, i, 1]
            kept += 1
    for i in range(kept // 2 - 1, -1, -1):
        _sift_down(key, mv, h, i, kept)
    return kept


@kernel(inline=True)
def push(key, mv, scal_i, h, k, model, ver, version) -> None:
    """Add entry (k, model, ver) to heap ``h``."""
    size = scal_i[SI_HEAP_SIZE + h]
    if size == key.shape[1]:
        size = compact(key, mv, h, size, version)
    key[h, size] = k
    mv[h, size, 0] = model
    mv[h, size, 1] = ver
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _before(key, mv, h, i, parent):
            break
        _swap(key, mv, h, i, parent)
        i = parent
    scal_i[SI_HEAP_SIZE + h] = size + 1


@kernel(inline=True)
def pop(key, mv, scal_i, h) -> None:
    """Remove the top entry of heap ``h`` (which must not be empty)."""
    size = scal_i[SI_HEAP_SIZE + h] - 1
    key[h, 0] = key[h, size]
    mv[h, 0, 0] = mv[h, size, 0]
    mv[h, 0, 1] = mv[h, size, 1]
    scal_i[SI_HEAP_SIZE + h] = size
    _sift_down(key, mv, h, 0, size)


@kernel(inline=True)
def valid_top(key, mv, scal_i, h, version) -> int:
    """Drop stale entries from the top of heap ``h``; the top's model, or -1 if no valid entry is left."""
    while scal_i[SI_HEAP_SIZE + h] > 0:
        model = mv[h, 0, 0]
        if mv[h, 0, 1] == version[model]:
            return model
        pop(key, mv, scal_i, h)
    return -1


@kernel()
def min_at_least(key, mv, scal_i, h, version, bound, stack) -> int:
    """Position of the first valid entry (by key, then model) with key >= ``bound``, or -1; changes only
    ``stack`` (work space as long as the heap's capacity).

    Entries below the bound form a subtree at the top of the heap; the search walks only that subtree and
    the entries just below it.
    """
    size = scal_i[SI_HEAP_SIZE + h]
    if size == 0:
        return -1
    stack[0] = 0
    depth = 1
    best = -1
    while depth > 0:
        depth -= 1
        i = stack[depth]
        if key[h, i] >= bound and mv[h, i, 1] == version[mv[h, i, 0]]:
            if best < 0 or _before(key, mv, h, i, best):
                best = i
            continue  # everything below i sorts after i
        if best >= 0 and not _before(key, mv, h, i, best):
            continue
        for child in (2 * i + 1, 2 * i + 2):
            if child < size:
                stack[depth] = child
                depth += 1
    return best


@kernel()
def next_random(scal_i) -> int:
    """A uniform 62-bit non-negative integer (splitmix64 on the state in ``scal_i``)."""
    z = np.uint64(scal_i[SI_RNG]) + np.uint64(0x9E3779B97F4A7C15)
    scal_i[SI_RNG] = np.int64(z)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(2))
