"""A stable order of rows by one non-negative integer key, by a compiled least-significant-digit radix sort.

The exact index size (``sqlite_index_size.py``) and the work model (``sqlite_work_model.py``) sort a table's
rows by their keys' ranks, packed into one integer, ties in rowid order. numpy sorts such packed integers
with a comparison sort: about 52 ms for 1,000,000 rows, the largest part of an index's size at that scale,
and the study's comparison sizes some 11,000 indexes per collection (issue 48). The packed key rarely uses
more than 30 bits, so a radix sort over only those bits, 8 at a time, orders the same rows in 3-25 ms: a
pass per digit counts the digit's values and moves every row to its place, keeping rows with equal digits
in their order, so the result is sorted by the key and then by position, exactly what sorting the key with
the position appended gives. A digit that is the same for every row is not moved.

The kernel is compiled with numba (cached beside this file) and imported on first use.
"""

from __future__ import annotations

import numpy as np
from numba import njit

DIGIT_BITS = 8  # 256 buckets: the counts stay in the first cache level


@njit(cache=True)
def _radix_order(keys, bits):  # pragma: no cover - compiled
    rows = keys.shape[0]
    order = np.arange(rows)
    if bits == 0 or rows < 2:
        return order
    passes = (bits + DIGIT_BITS - 1) // DIGIT_BITS
    width = (bits + passes - 1) // passes
    mask = (1 << width) - 1
    keys = keys.copy()
    other_keys = np.empty(rows, np.int64)
    other_order = np.empty(rows, np.int64)
    counts = np.empty(1 << width, np.int64)
    shift = 0
    for _ in range(passes):
        counts[:] = 0
        for i in range(rows):
            counts[(keys[i] >> shift) & mask] += 1
        total = 0
        constant = False
        for digit in range(1 << width):
            count = counts[digit]
            constant = constant or count == rows
            counts[digit] = total
            total += count
        if not constant:
            for i in range(rows):
                key = keys[i]
                digit = (key >> shift) & mask
                at = counts[digit]
                counts[digit] = at + 1
                other_keys[at] = key
                other_order[at] = order[i]
            keys, other_keys = other_keys, keys
            order, other_order = other_order, order
        shift += width
    return order


def radix_order(keys: np.ndarray) -> np.ndarray:
    """The positions of ``keys`` (non-negative integers) in ascending order of key, equal keys in the order
    of their positions: ``np.argsort(keys, kind="stable")``, faster for keys of few bits."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    if len(keys) and int(keys.min()) < 0:
        raise ValueError("radix_order sorts non-negative keys only")
    return _radix_order(keys, int(keys.max(initial=0)).bit_length())
