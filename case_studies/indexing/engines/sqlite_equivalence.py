"""When two SQLite programs on different indexes do the same work, so one measurement serves both.

SQLite's work measure counts virtual-machine steps. Two programs that differ only in *which* index a
cursor walks execute the same steps when

1. they are the same instruction by instruction once each index is replaced by the part of it the program
   uses: the leading keys it seeks and compares on (``Seek*``, ``Idx*``, ``Found``/``NotFound`` compare
   that many fields) and the columns it reads (``Column`` of an index and of the table read the same
   value of the same row for one step each, so both become "column X of the row");
2. the program visits every entry of the ranges it seeks, i.e. it cannot stop early: the query has no
   ``LIMIT``, or fewer rows match it than its ``LIMIT``. Then the visit order inside a range, the only
   thing the unused trailing keys change, does not change the total: each visited entry costs what its
   row's values decide, and every entry of the range is visited. (With an early stop it would: which rows
   come first decides how many are visited.)

Under those conditions the cost cache measures one *representative* per equivalence class: the index
made of the used leading keys (``representatives``), forced with ``INDEXED BY``. The program executed on
the representative must itself be equivalent to the planned one (checked on every such measurement; if it
is not, e.g. the planned index also serves an ``ORDER BY``, the exact index is measured). Tests compare
every result with the slow path, which builds and measures each configuration exactly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

from case_studies.indexing.engines.sqlite_whatif import signature
from case_studies.indexing.index_spec import IndexSpec

_OPENS = ("OpenRead", "ReopenIdx")
_COMPARES = ("SeekGE", "SeekGT", "SeekLE", "SeekLT", "IdxGT", "IdxGE", "IdxLT", "IdxLE", "Found", "NotFound")


@dataclass(frozen=True)
class EquivalentProgram:
    """A program with each index replaced by its used leading keys; ``representatives`` are those keys as
    indexes, in the order the program opens them."""

    signature: str
    representatives: tuple[IndexSpec, ...]


def full_range_query(query) -> object:
    """The query without what can stop it early (LIMIT) or depends on it (sort), counting its rows."""
    return dataclasses.replace(query, limit=None, sort=(), aggregate="count")


def visits_whole_ranges(query, matching_rows: int | None) -> bool:
    """Whether every program of ``query`` visits the whole of the ranges it seeks (see the module
    docstring); ``matching_rows`` is how many rows match the query without its LIMIT."""
    return query.limit is None or (matching_rows is not None and matching_rows < query.limit)


def equivalent_program(instructions: Sequence[tuple], indexes: Mapping[str, IndexSpec],
                       table: str, fields: Sequence[str]) -> EquivalentProgram | None:
    """The program up to the unused part of its indexes (None when it opens no index of ``indexes``)."""
    cursors: dict[int, IndexSpec] = {}
    table_cursors: set[int] = set()
    for opcode, p1, p2, *_ in instructions:
        if opcode in _OPENS and p2 in indexes:
            cursors[p1] = indexes[p2]
        elif opcode in _OPENS and p2 == table:
            table_cursors.add(p1)
    if not cursors:
        return None
    used = {cursor: 1 for cursor in cursors}
    for opcode, p1, _, _, p4, _ in instructions:
        if opcode in _COMPARES and p1 in cursors and isinstance(p4, (int, str)) and str(p4).isdigit():
            used[p1] = max(used[p1], int(p4))
    out = []
    for opcode, p1, p2, p3, p4, p5 in instructions:
        if opcode in _OPENS and p1 in cursors:
            spec = cursors[p1]
            out.append((opcode, p1, spec.keys[:used[p1]], p3, None, p5))
        elif opcode in _OPENS and p1 in table_cursors:
            out.append((opcode, p1, p2, p3, None, p5))  # p4: how many columns the row cache holds
        elif opcode == "Column" and (p1 in cursors or p1 in table_cursors):
            out.append(("Column", "row", _column(cursors.get(p1), p2, fields), p3, p4, p5))
        elif opcode in ("IdxRowid", "Rowid") and (p1 in cursors or p1 in table_cursors):
            out.append(("Rowid", "row", p2, p3, p4, p5))
        elif opcode == "DeferredSeek":
            out.append((opcode, p1, p2, p3, None, p5))  # p4 says which columns the index holds
        else:
            out.append((opcode, p1, p2, p3, p4, p5))
    representatives = tuple(dict.fromkeys(IndexSpec(cursors[c].keys[:used[c]]).canonical() for c in cursors))
    return EquivalentProgram(signature(tuple(out)), representatives)


def _column(spec: IndexSpec | None, position: int, fields: Sequence[str]) -> str:
    """The table column a ``Column`` instruction reads: from an index entry (its keys, then the rowid) or
    from the table row."""
    if spec is None:
        return fields[position] if 0 <= position < len(fields) else f"#{position}"
    return spec.keys[position][0] if position < len(spec.keys) else "rowid"
