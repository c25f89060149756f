"""How every row's index entry compares with a key of bound values, by one compiled pass over the rows.

The work model (``sqlite_work_model.py``) decides a seek, a range end or a skip-scan's bounds for all rows at
once: for each key column it knows how each of the column's ranks compares with the bound value (-1, 0 or
1, the index's direction applied), and a row's entry compares as its first key that differs. In numpy that
was a gather of each key's comparisons by the rows' ranks and two masked assignments per key: about 8 ms a
key prefix at 1,000,000 rows, most of a program's count (issue 48). Here each row stops at its first
differing key.

The kernel is compiled with numba (cached beside this file) and imported on first use.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _compare_rows(by_rank, ranks, rows):  # pragma: no cover - compiled
    result = np.zeros(rows, np.int8)
    keys = len(ranks)
    for row in range(rows):
        for key in range(keys):
            compared = by_rank[key][ranks[key][row]]
            if compared != 0:
                result[row] = compared
                break
    return result


def compare_rows(by_rank: list[np.ndarray], ranks: list[np.ndarray], rows: int) -> np.ndarray:
    """For every row, -1, 0 or 1: the first nonzero of ``by_rank[k][ranks[k][row]]`` over the keys k in
    order (0 where all are 0). ``by_rank[k]``: key k's comparison per rank; ``ranks[k]``: each row's rank."""
    return _compare_rows(tuple(np.ascontiguousarray(compared, dtype=np.int8) for compared in by_rank),
                         tuple(np.ascontiguousarray(rank, dtype=np.int32) for rank in ranks), int(rows))
