"""Count a SQLite program's VM steps from the table's column ranks, without running it.

Under the work metric a query's cost is the number of virtual-machine instructions SQLite executes (counted
by the progress handler in steps of ``WORK_GRANULARITY``). For a program that seeks one index and loops over
the entries of the seek range, that number follows from the program and the data alone:

- the instructions before and after the loop run once (``Init``, the bound values, the seek, ``Halt``; the
  aggregate's result; the sort's output loop, once per row sorted);
- the loop runs its body once per entry visited, and each entry's path through the body depends only on
  which of the body's tests the entry's row passes (a column compared with a bound value, ``IS NULL``, an
  ``IN`` list), evaluated in the body's order with its short-circuit jumps;
- the entries visited are those from the seek's first entry to the range end, in index order; the range-end
  test runs once more on the first entry beyond the range when there is one, and a ``LIMIT`` ends the loop
  at the row that reaches it;
- a *skip-scan* (the index's first keys unconstrained, few values each) runs the same instructions around
  its loop for every group of those keys' values; which groups find an entry, and which have one beyond
  their range, follows from the data too; a ``LIMIT`` that ends it early ends it in the group of the row
  that reaches it, and the groups after that one never run; a range open at its start has no seek in the
  group (the loop starts at the group's first entry), and an ``IN`` list on the sought key is a seek and a
  loop per value within every group;
- a sort kept to its ``LIMIT`` (``ORDER BY`` not served by the index) inserts the first LIMIT rows, then
  each row whose sort key is smaller than the largest kept: a running threshold over the rows in order;
- an ``OR`` served by one index per branch runs one such loop per branch; an entry whose row an earlier
  branch found is skipped (``RowSetTest``), the others go through one subroutine (``Gosub``);
- an ``IN`` list on the sought key runs a seek and a loop per value, in the order of the list's ephemeral
  index (the values with the record's affinity, without repeats: ordered by SQLite); a ``Once`` block
  runs once a statement.

This module interprets the program that way. Every row's test outcomes come from the column ranks
(``sqlite_columns.py``): a value's rank in SQLite's order decides each comparison once the bound is placed
among the column's distinct values, which SQLite itself does on a table of those values with the column's
declared type (so affinity and collation are SQLite's). The body's instructions are walked once, with the
set of entries at each instruction as a numpy mask: at 1,000,000 rows a program costs tens of milliseconds
(44 ms on average in a random-search trial, the distinct-value tables included), where measuring it on a
slice of the table costs the slice (``sqlite_slice.py``) and on the real table the index build.

The model interprets what it knows and declines (returns None) anything else: ``IN`` lists that seek
several keys (``SeekHit``, ``IfNoHope`` on a key's value, not a skip-scan's group), two ``IN`` lists in one
skip-scan, subroutines that branch, backward jumps inside a loop's body, opcodes it does not know. The adapter
compares its answers with executions (``IndexingSystem``: the first ``WORK_CHECKS`` and then one in
``WORK_CHECK_EVERY``), as it does the index-size model's.
"""

from __future__ import annotations

import heapq
import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from case_studies.indexing.engines.sql import quote_identifier
from case_studies.indexing.engines.sqlite_columns import TableColumns, key_order
from case_studies.indexing.index_spec import IndexSpec

JUMP_IF_NULL = 0x10  # a comparison's p5 flag: jump when either operand is NULL
SEEK_EQUAL = 0x02  # OpenRead's p5 flag (OPFLAG_SEEKEQ): the cursor's seeks look for equal keys only
NULL_EQUAL = 0x80  # a comparison's p5 flag: NULL equals NULL (IS / IS NOT): not interpreted
# Instructions that only take one step wherever they run (their effect on the count is none).
_PLAIN = frozenset({"Transaction", "OpenRead", "Noop", "DeferredSeek", "RealAffinity", "Affinity", "MakeRecord",
                    "AggStep", "AggFinal", "Copy", "SCopy", "SorterInsert", "SorterOpen", "OpenPseudo",
                    "SorterData", "Explain", "ColumnsUsed", "ReleaseReg", "NullRow", "BeginSubrtn"})
_COMPARE = {"Eq": "=", "Ne": "<>", "Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">="}
_MIRROR = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# The register each instruction the model passes over writes (p1, p2 or p3): what it held is no longer known.
_WRITES = {"Copy": 2, "SCopy": 2, "MakeRecord": 3, "Sequence": 2, "IdxRowid": 2, "Rowid": 2, "AggStep": 3,
           "AggFinal": 1, "Column": 3, "SorterData": 2, "BeginSubrtn": 2}
_AFFINITY_TYPES = {"A": "BLOB", "B": "TEXT", "C": "NUMERIC", "D": "INTEGER", "E": "REAL"}  # a record's p4 letter
_SEEKS = ("SeekGE", "SeekGT", "SeekLE", "SeekLT")
_RANGE_ENDS = ("IdxGT", "IdxGE", "IdxLT", "IdxLE")
# The model's revision, part of a measurement store's identity (SQLiteEngine.identity): raised whenever a
# count can change, so a store filled by an earlier revision (2: an IN list's loops share the statement's
# LIMIT) is never read by a later one.
MODEL_REVISION = 3  # 3: skip-scans a LIMIT ends early, over an IN list, open at the start; loops from the end
_MAX_SCALAR_STEPS = 100_000  # a scalar part longer than this is not a program this model interprets


class Declined(Exception):
    """The program is outside what the model interprets."""


@dataclass(frozen=True)
class ModelledRun:
    """A program's counted instructions and the rows it returns."""

    instructions: int
    rows: int
    indexes: tuple[str, ...]  # the indexes it opens, in program order


class WorkModel:
    """Counts programs over the indexes of one SQLite table."""

    def __init__(self, conn: sqlite3.Connection, table: str, fields: Sequence[str], declared: dict[str, str],
                 columns: TableColumns) -> None:
        """``fields``: the table's columns in order (what ``Column`` numbers); ``declared``: each field's
        declared type (the distinct-values tables take it, so comparisons apply the same affinity)."""
        self.conn, self.table = conn, quote_identifier(table)
        self.fields = tuple(fields)
        self.declared = declared
        self.columns = columns
        self._values: dict[str, tuple[str, int]] = {}  # field -> (its distinct-values table, values)
        self._places: dict[tuple, tuple[int, int]] = {}
        self._groups: dict[tuple, tuple[np.ndarray, int]] = {}  # skip-scans' groups, by the keys skipped
        self._in_lists: dict[tuple, list] = {}  # IN lists' values in their ephemeral index's order

    # -- the distinct values ---------------------------------------------------------------------------
    def prepare(self, fields: Sequence[str]) -> None:
        """Make the distinct-value tables of ``fields`` now (each is made on first use otherwise)."""
        for field in fields:
            self._distinct(field)

    def _distinct(self, field: str) -> tuple[str, int]:
        """A temporary table of ``field``'s distinct values in SQLite's order (rowid = rank, NULL first): one
        row's value per rank of the column (``TableColumns``: SQLite's ``dense_rank`` over the column's order,
        kept on disk), read by rowid, instead of sorting the whole table for ``SELECT DISTINCT`` in every
        process (about 1 s a column at 1,000,000 rows)."""
        if field not in self._values:
            name = quote_identifier(f"wield_values_{field}")
            picks = quote_identifier(f"wield_picks_{field}")
            rank = self.columns.column(field).rank
            ranks, first = np.unique(rank, return_index=True)  # ranks 1..count, each one's first row
            if len(ranks) and (int(ranks[0]) != 1 or int(ranks[-1]) != len(ranks)):
                raise Declined(f"{field}: its ranks are not 1..{len(ranks)}")
            self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
            self.conn.execute(f"DROP TABLE IF EXISTS temp.{picks}")
            self.conn.execute(f"CREATE TEMP TABLE {name} (v {self.declared.get(field, '')})")
            self.conn.execute(f"CREATE TEMP TABLE {picks} (rank INTEGER PRIMARY KEY, row INTEGER NOT NULL)")
            self.conn.executemany(f"INSERT INTO temp.{picks} VALUES (?, ?)",
                                  zip(ranks.tolist(), self.columns.rowids[first].tolist()))
            self.conn.execute(f"INSERT INTO temp.{name} (rowid, v) SELECT p.rank, t.{quote_identifier(field)} "
                              f"FROM temp.{picks} AS p JOIN {self.table} AS t ON t.rowid = p.row ORDER BY p.rank")
            self.conn.execute(f"DROP TABLE temp.{picks}")
            self.conn.execute(f"CREATE INDEX temp.{quote_identifier(f'wield_values_{field}_v')} ON {name} (v)")
            self._values[field] = (name, len(ranks))
        return self._values[field]

    def _place(self, field: str, value: Any) -> tuple[int, int]:
        """(how many non-NULL distinct values of ``field`` are < ``value``, how many are <= it), as SQLite
        compares the column with a bound value."""
        key = (field, type(value).__name__, value)
        if key not in self._places:
            name, _ = self._distinct(field)
            below, upto = self.conn.execute(
                f"SELECT (SELECT count(*) FROM temp.{name} WHERE v < ?1), "
                f"(SELECT count(*) FROM temp.{name} WHERE v <= ?1)", (value,)).fetchone()
            self._places[key] = (int(below), int(upto))
        return self._places[key]

    def _rank_compare(self, field: str, value: Any) -> np.ndarray:
        """For each rank of ``field`` (index 0 unused), -1, 0 or 1 as an index compares the value with
        ``value`` (NULL smallest; a NULL ``value`` equals only NULL)."""
        _, count = self._distinct(field)
        position = np.arange(count + 1) - (1 if self.columns.column(field).has_nulls else 0)  # 1.. non-NULL
        if value is None:
            return np.where(position >= 1, 1, 0).astype(np.int8)
        below, upto = self._place(field, value)
        compared = np.where(position <= below, -1, np.where(position <= upto, 0, 1)).astype(np.int8)
        compared[position < 1] = -1
        return compared

    def _present(self, field: str) -> np.ndarray:
        """For each rank of ``field`` (index 0 unused), whether it is a value (not NULL)."""
        _, count = self._distinct(field)
        return np.arange(count + 1) >= (2 if self.columns.column(field).has_nulls else 1)

    def _rank_test(self, field: str, op: str, value: Any) -> np.ndarray:
        """For each rank of ``field``, whether ``column op value`` is true (NULL: false)."""
        compared = self._rank_compare(field, value)
        outcome = {"<": compared < 0, "<=": compared <= 0, ">": compared > 0, ">=": compared >= 0,
                   "=": compared == 0, "<>": compared != 0}[op]
        return outcome & self._present(field)

    def _rank_in(self, field: str, values: Sequence[Any]) -> np.ndarray:
        """For each rank of ``field``, whether the value is one of ``values`` (NULL: false)."""
        present = self._present(field)
        outcome = np.zeros(len(present), dtype=bool)
        for value in values:
            outcome |= self._rank_compare(field, value) == 0
        return outcome & present

    def in_list_order(self, records: Sequence[tuple[Any, Any]]) -> list:
        """The values of an ``IN`` list as its ephemeral index holds them: each with its record's affinity
        applied, without repeats, in SQLite's order (by SQLite, on a temporary table)."""
        key = tuple((type(value).__name__, value, affinity) for value, affinity in records)
        if key not in self._in_lists:
            self._in_lists[key] = self._ordered_in_list(records)
        return self._in_lists[key]

    def _ordered_in_list(self, records: Sequence[tuple[Any, Any]]) -> list:
        if not records:
            return []
        affinities = {affinity for _, affinity in records}
        if len(affinities) != 1 or next(iter(affinities)) not in _AFFINITY_TYPES:
            raise Declined("IN list affinity")
        declared = _AFFINITY_TYPES[next(iter(affinities))]
        self.conn.execute("DROP TABLE IF EXISTS temp.wield_in_list")
        self.conn.execute(f"CREATE TEMP TABLE wield_in_list (v {declared})")
        self.conn.executemany("INSERT INTO temp.wield_in_list (v) VALUES (?)", [(value,) for value, _ in records])
        values = [row[0] for row in self.conn.execute("SELECT DISTINCT v FROM temp.wield_in_list ORDER BY v")]
        self.conn.execute("DROP TABLE temp.wield_in_list")
        return values

    def groups(self, keys: Sequence[tuple[str, str]]) -> tuple[np.ndarray, int]:
        """Each row's group of equal ``keys`` values, numbered in index order, and how many groups; kept
        (the last 16 sets of keys: 8 bytes a row each)."""
        key = tuple(keys)
        if key not in self._groups:
            if len(self._groups) >= 16:
                del self._groups[next(iter(self._groups))]
            self._groups[key] = _groups(self.columns, key)
        return self._groups[key]

    # -- the program -----------------------------------------------------------------------------------
    def count(self, used: Sequence[IndexSpec], instructions: tuple, params: Sequence[Any]) -> ModelledRun | None:
        """The instructions ``instructions`` (a program over the indexes ``used``: one forced, or an OR's one
        per branch; as ``sqlite_whatif.program`` gives it) execute with ``params`` bound, and the rows it
        returns; None where the model declines."""
        try:
            return _Run(self, used, instructions, params).result()
        except Declined:
            return None


@dataclass(frozen=True)
class _Loop:
    """A loop over the index that a seek started: its cursor, direction, top, Next and the rows sought."""

    cursor: int
    forward: bool
    top: int
    last: int
    sought: np.ndarray
    equal_only: bool


class _Run:
    """One interpretation of a program."""

    def __init__(self, model: WorkModel, used: Sequence[IndexSpec], instructions: tuple,
                 params: Sequence[Any]) -> None:
        self.model, self.program, self.params = model, instructions, list(params)
        self.used = {spec.name: spec for spec in used}
        self.spec_of: dict[int, IndexSpec] = {}  # index cursor -> the index it has open
        self.opened: list[str] = []  # the indexes opened, in program order
        self.rowsets: dict[int, list[np.ndarray]] = {}  # an OR's rowid set: the rows each branch inserted
        self.registers: dict[int, Any] = {}
        self.cursors: dict[int, str] = {}  # cursor -> "table" / "index" / "ephemeral" / "sorter"
        self.seek_equal: dict[int, bool] = {}  # cursors opened with the hint that seeks are for equality
        self.in_lists: dict[int, list] = {}  # an IN list's ephemeral cursor -> its (value, affinity) records
        self.steps = 0
        self.rows = 0
        self.sorted_rows = 0
        self.key_infos: dict[int, Any] = {}  # ephemeral cursor -> its key description ("k(1,-B)")
        self.kept: dict[int, list[int]] = {}  # ephemeral cursor -> the sort keys a sort kept to its LIMIT holds
        # (a max-heap, negated; it lasts the statement: an IN list's loops fill the same sort)
        self.pending: _Loop | None = None  # a loop whose seek ran, until execution reaches its top
        self.once_done: set[int] = set()
        self.records: dict[int, tuple[Any, Any]] = {}  # register -> (value, affinity) of a one-value record
        self.in_values: dict[int, list] = {}  # an IN list's ephemeral cursor -> its values, in its order
        self.in_position: dict[int, int] = {}

    def result(self) -> ModelledRun:
        pc, executed = 0, 0
        while True:
            if self.pending is not None and pc == self.pending.top:
                pc = self._loop()
                continue
            executed += 1
            if executed > _MAX_SCALAR_STEPS:
                raise Declined("too long")
            self.steps += 1
            if self._at(pc)[0] == "Halt":
                return ModelledRun(self.steps, self.rows, tuple(self.opened))
            pc = self._step(pc)

    def _step(self, pc: int) -> int:
        """Interpret the instruction at ``pc`` outside a loop's body (its step not counted here); the next
        address."""
        opcode, p1, p2, p3, p4, p5 = self._at(pc)
        if opcode in ("Init", "Goto"):
            pc = p2
        elif opcode == "Variable":
            self.registers[p2] = self._param(p1)
            pc += 1
        elif opcode == "Integer":
            self.registers[p2] = p1
            pc += 1
        elif opcode == "Null":
            for register in range(p2, max(p2, p3) + 1):
                self.registers[register] = None
            pc += 1
        elif opcode in ("OpenRead", "ReopenIdx"):
            self._open(p1, p2, p5)
            pc += 1
        elif opcode == "SorterOpen":
            self.cursors[p1] = "sorter"
            pc += 1
        elif opcode == "OpenEphemeral":
            self.cursors[p1] = "ephemeral"
            self.key_infos[p1] = p4
            pc += 1
        elif opcode == "MustBeInt":
            if not isinstance(self.registers.get(p1), int):
                raise Declined("MustBeInt")
            pc += 1
        elif opcode in ("IfNot", "If"):
            value = self._known(p1)
            if value is None:
                pc = p2 if p3 else pc + 1
            else:
                pc = p2 if (not value) == (opcode == "IfNot") else pc + 1
        elif opcode in ("IsNull", "NotNull"):
            pc = p2 if (self._known(p1) is None) == (opcode == "IsNull") else pc + 1
        elif opcode in ("Rewind", "Last") and self.cursors.get(p1) == "index" and self._at(pc + 1)[0] == "Goto":
            pc = self._skip_scan(pc)
        elif opcode in _SEEKS or (opcode in ("Rewind", "Last") and self.cursors.get(p1) in ("index", "table")):
            pc = self._seek(pc)
        elif opcode == "SorterSort":
            pc = p2 if not self.sorted_rows else self._sorter_loop(pc, "SorterNext", self.sorted_rows)
        elif opcode == "Sort" and self.cursors.get(p1) == "ephemeral":
            rows = len(self.kept.get(p1, ()))
            pc = p2 if not rows else self._sorter_loop(pc, "Next", rows)
        elif opcode == "ResultRow":
            self.rows += 1
            pc += 1
        elif opcode in ("Once", "MakeRecord", "IdxInsert", "Return", "Rewind", "Column", "Next") and (
                opcode in ("Once", "MakeRecord", "Return") or self.cursors.get(p1) == "ephemeral"):
            pc = self._in_list_step(pc, opcode, p1, p2, p3, p4)
        elif opcode in _PLAIN:
            self.forget(opcode, p1, p2, p3)
            pc += 1
        else:
            raise Declined(opcode)
        return pc

    def _in_list_step(self, pc: int, opcode: str, p1: Any, p2: Any, p3: Any, p4: Any) -> int:
        """An ``IN`` list that seeks the index, outside the loop: the list built once into an ephemeral
        index (``Once`` ... ``IdxInsert``), then walked (``Rewind``, ``Column``, ``Next``) in its order, each
        value a seek and a loop over the index. Returns the next address."""
        if opcode == "Once":  # the block runs the first time only (the model meets it once here)
            if pc in self.once_done:
                return p2
            self.once_done.add(pc)
            return pc + 1
        if opcode == "MakeRecord":
            if p2 != 1 or p1 not in self.registers:
                raise Declined("record")
            self.records[p3] = (self.registers[p1], p4)
            self.registers.pop(p3, None)
            return pc + 1
        if opcode == "Return":  # an in-line subroutine's end: falls through (its register is NULL)
            if p3 != 1 or self._known(p1) is not None:
                raise Declined("Return")
            return pc + 1
        if opcode == "IdxInsert":
            if p2 not in self.records:
                raise Declined("IN insert")
            self.in_lists.setdefault(p1, []).append(self.records[p2])
            return pc + 1
        if opcode == "Rewind":
            self.in_values[p1] = self.model.in_list_order(self.in_lists.get(p1, []))
            self.in_position[p1] = 0
            return p2 if not self.in_values[p1] else pc + 1
        values, position = self.in_values.get(p1), self.in_position.get(p1, 0)
        if values is None:
            raise Declined("ephemeral cursor")
        if opcode == "Column":
            if p2 != 0:
                raise Declined("Column")
            self.registers[p3] = values[position]
            return pc + 1
        self.in_position[p1] = position + 1  # Next
        return p2 if position + 1 < len(values) else pc + 1

    def _known(self, register: int) -> Any:
        """A register's value, where the model knows it (a bound value, a constant, NULL)."""
        if register not in self.registers:
            raise Declined("unknown register")
        return self.registers[register]

    def forget(self, opcode: str, p1: Any, p2: Any, p3: Any) -> None:
        """The register an instruction writes no longer holds what the model knew (``BeginSubrtn`` makes
        its register NULL)."""
        if opcode == "BeginSubrtn":
            self.registers[p2] = None
        elif opcode in _WRITES:
            self.registers.pop((p1, p2, p3)[_WRITES[opcode] - 1], None)

    def _at(self, pc: int) -> tuple:
        if not 0 <= pc < len(self.program):
            raise Declined("jump outside the program")
        opcode, p1, p2, p3, p4, p5 = self.program[pc]
        return opcode, p1, p2, p3, p4, p5

    def _param(self, number: int) -> Any:
        if not 1 <= number <= len(self.params):
            raise Declined("parameter")
        return self.params[number - 1]

    def _open(self, cursor: int, name: Any, flags: int) -> None:
        self.seek_equal[cursor] = bool(flags & SEEK_EQUAL)
        if name in self.used:
            self.cursors[cursor], self.spec_of[cursor] = "index", self.used[name]
            if name not in self.opened:
                self.opened.append(name)
        elif isinstance(name, str) and quote_identifier(name) == self.model.table:
            self.cursors[cursor] = "table"
        else:
            raise Declined(f"opens {name}")

    def _loop_end(self, cursor: int, start: int, step: str) -> int:
        """The ``Next`` (``Prev``) of the loop over ``cursor`` that starts after ``start``: the first one
        after it that jumps back to an address after it (an OR runs one loop per branch)."""
        for at in range(start + 1, len(self.program)):
            opcode, p1, p2, *_ = self.program[at]
            if opcode in ("Next", "Prev") and p1 == cursor and start < p2 <= at:
                if opcode != step:
                    break
                return at
        raise Declined("loop shape")

    # -- the loop over the index -----------------------------------------------------------------------
    def _seek(self, seek_at: int) -> int:
        """A seek that starts a loop over the index: where execution continues (the instructions between
        the seek and the loop's top run once; the loop runs when execution reaches its top)."""
        seek, cursor, no_entry, first, count, _ = self._at(seek_at)
        table = self.cursors.get(cursor) == "table"  # a scan of the table (no index): every row, by rowid
        if (self.cursors.get(cursor) != "index" and not (table and seek in ("Rewind", "Last"))) \
                or self.pending is not None:
            raise Declined("seek")
        forward = seek in ("SeekGE", "SeekGT", "Rewind")
        last = self._loop_end(cursor, seek_at, ("Next" if forward else "Prev"))
        top = self.program[last][2]
        if any(instruction[0] in _SEEKS or instruction[0] == "Rewind" for instruction in self.program[seek_at + 1:top]):
            raise Declined("loop shape")
        if seek in ("Rewind", "Last"):  # the whole index, from its first (last) entry
            seek_test = np.zeros(self.model.columns.rows, dtype=np.int8)
            sought = np.ones(self.model.columns.rows, dtype=bool)
        else:
            seek_test = self._prefix_compare(cursor, first, int(count))
            sought = _sought(seek, seek_test)
        # A seek for equal keys (the cursor's hint) that finds none jumps at once; one that finds one skips
        # the range-end test that follows it on that first entry (SQLite's OP_SeekGE, "seek_not_found").
        equal_only = self.seek_equal.get(cursor, False) and seek in ("SeekGE", "SeekLE")
        if not sought.any() or (equal_only and not (seek_test == 0).any()):
            return no_entry
        if equal_only and top != seek_at + 1:
            raise Declined("equality seek")
        self.pending = _Loop(cursor, forward, top, last, sought, equal_only)
        return seek_at + 1

    def _loop(self) -> int:
        """Run the loop a seek started, from its top; the address execution continues at."""
        loop, self.pending = self.pending, None
        assert loop is not None
        cursor, forward, top, last, sought, equal_only = (loop.cursor, loop.forward, loop.top, loop.last,
                                                         loop.sought, loop.equal_only)
        inside, beyond_to, range_test = sought, None, None
        opcode, p1, p2, p3, p4, _ = self._at(top)
        if opcode in _RANGE_ENDS and p1 == cursor:
            leaves = _leaves(opcode, self._prefix_compare(cursor, p3, int(p4)))
            inside = sought & ~leaves
            beyond_to = p2 if (sought & leaves).any() else None
            range_test = top
        positions = self._visited(inside, cursor, forward, top, last, range_test)
        if equal_only and range_test is not None and len(positions):
            self.steps -= 1  # the first entry's range-end test is skipped (above)
        walked = _Body(self, positions, top, last, range_test)
        if walked.exit_to is not None:
            return walked.exit_to
        if beyond_to is not None:  # the range end tested on the first entry beyond the range
            self.steps += 1
            return beyond_to
        return last + 1  # the last entry's Next falls through

    # -- a skip-scan -------------------------------------------------------------------------------------
    def _skip_scan(self, start_at: int) -> int:
        """A skip-scan over the index's first keys (which the query does not constrain): SQLite visits each
        combination of their values in turn (a *group*) and seeks the range of the next keys within it.

        The program: ``Rewind`` (``Last``); ``Goto`` group; the outer seek to the next group (``SeekGT`` /
        ``SeekLT`` on the group's values); group: ``Column`` per skipped key (the group's values), bound
        values, the inner seek on (group, bounds), bound values, the loop over the range (its top a
        range-end test on (group, bounds)), ``Goto`` the outer seek. Every group runs the same instructions
        around its loop; which groups find an entry and which have one beyond their range follows from the
        ranks, and the entries visited, over all groups, are the rows whose next keys are in the range, in
        index order."""
        start, cursor, end, *_ = self._at(start_at)
        forward = start == "Rewind"
        goto, _, group_at, *_ = self._at(start_at + 1)
        outer, outer_cursor, outer_end, group_register, skipped, _ = self._at(start_at + 2)
        skipped = int(skipped) if str(skipped).isdigit() else 0
        keys = self.spec_of[cursor].keys
        if (goto != "Goto" or group_at != start_at + 3 or outer != ("SeekGT" if forward else "SeekLT")
                or (outer_cursor, outer_end) != (cursor, end) or not 1 <= skipped < len(keys)
                or self.seek_equal.get(cursor, False)
                or any(self._at(group_at + j)[:4] != ("Column", cursor, j, group_register + j) for j in range(skipped))):
            raise Declined("skip-scan shape")
        last = self._loop_end(cursor, group_at, ("Next" if forward else "Prev"))
        top, group_end = self.program[last][2], last + 1
        if self._at(group_end)[0] == "IfNoHope" and forward:
            return self._skip_scan_in_list(start_at, cursor, end, group_register, skipped, group_at, last)
        if self._at(group_end)[:3] != ("Goto", 0, start_at + 2):
            raise Declined("skip-scan loop")
        seeks = [at for at in range(group_at + skipped, top) if self.program[at][0] in _SEEKS]
        if len(seeks) > 1:
            raise Declined("skip-scan seek")
        # No seek within the group: its range starts at the group's first entry, where the outer seek (or
        # the Rewind) left the cursor (a range bounded on one side only, in the index's order).
        seek_at = seeks[0] if seeks else None
        seek, seek_test = "SeekGE", None
        if seek_at is not None:
            seek, seek_cursor, seek_end, seek_first, seek_count, _ = self._at(seek_at)
            if ((seek_cursor, seek_end, seek_first) != (cursor, group_end, group_register)
                    or not skipped < int(seek_count) <= len(keys) or seek not in _SEEKS
                    or seek.startswith("SeekG") != forward):
                raise Declined("skip-scan seek")
        for at in range(group_at + skipped, top):  # the bound values, the same for every group
            if at == seek_at:  # (a register may hold the lower bound here and the upper one after)
                seek_test = self._prefix_compare(cursor, group_register + skipped, int(seek_count) - skipped, skipped)
                continue
            opcode, p1, p2, p3, *_ = self._at(at)
            if opcode == "Variable":
                self.registers[p2] = self._param(p1)
            elif opcode == "Null" and p1 == 0 and p2 >= group_register + skipped:  # a bound that skips NULLs
                for register in range(p2, max(p2, p3) + 1):
                    self.registers[register] = None
            elif opcode == "IsNull":
                if p1 < group_register + skipped or self.registers.get(p1) is None:
                    raise Declined("skip-scan bound")
            elif opcode not in ("Affinity", "Noop"):
                raise Declined(f"skip-scan: {opcode}")
        columns = self.model.columns
        sought = _sought(seek, seek_test) if seek_test is not None else np.ones(columns.rows, dtype=bool)
        inside, leaves = sought, np.zeros(columns.rows, dtype=bool)
        range_test = None
        opcode, p1, p2, p3, p4, _ = self._at(top)
        if opcode in _RANGE_ENDS and p1 == cursor:
            compared = int(p4) - skipped
            if (p2, p3) != (group_end, group_register) or not 0 <= compared <= len(keys) - skipped:
                raise Declined("skip-scan range end")
            end_test = (self._prefix_compare(cursor, group_register + skipped, compared, skipped) if compared
                        else np.zeros(columns.rows, dtype=np.int8))
            leaves = _leaves(opcode, end_test)
            inside = sought & ~leaves
            range_test = top
        # the groups, in the order visited: does the seek find an entry in each, one beyond its range, is
        # it the last (after which the seek and the range end find the next group's entries)
        group_of, groups = self.model.groups(keys[:skipped])
        found, beyond = _groups_reached(group_of, groups, sought, sought & leaves, forward)
        # group start to the seek, the seek (or to the loop's top); Goto and the outer seek
        around = ((seek_at - group_at) + 1 if seek_at is not None else top - group_at) + 2
        after_seek = top - seek_at - 1 if seek_at is not None else 0  # between the seek and the loop's top
        positions = self._visited(inside, cursor, forward, top, last, range_test)
        walked = _Body(self, positions, top, last, range_test)
        if walked.exit_to is None:
            self.steps += 1 + groups * around + int(found.sum()) * after_seek + int(beyond.sum())
            return end
        # A LIMIT left the loop at an entry of group g (in visit order; the entries are visited in index
        # order, so every group before it was visited whole): the groups after it never run, and group g
        # ran its instructions up to the seek, the seek and those before the loop's top, but neither its
        # range-end test on an entry beyond its range nor the Goto and the outer seek after its loop.
        group = int(group_of[positions[walked.exit_entry]])
        g = group if forward else groups - 1 - group
        self.steps += 1 + g * around + (around - 2) + int(found[:g + 1].sum()) * after_seek + int(beyond[:g].sum())
        return walked.exit_to

    def _skip_scan_in_list(self, start_at: int, cursor: int, end: int, group_register: int, skipped: int,
                           group_at: int, last: int) -> int:
        """A forward skip-scan whose sought key has an ``IN`` list: within every group, the list (built
        once a statement) is walked in its ephemeral index's order, each value a seek on (group, value)
        and a loop over the entries equal to it.

        The program: ``Rewind``; ``Goto`` group; the outer ``SeekGT``; group: ``Column`` per skipped key,
        the list's ``Once`` block, ``Rewind`` the list (``Last`` for a descending key, walked with ``Prev``);
        per value: ``Column`` (the value), ``IsNull``, ``SeekHit``, ``Affinity``, ``SeekGE`` on (group,
        value), the loop (its top ``IdxGT`` on (group, value)), ``IfNoHope`` on the group, ``Next`` value;
        ``Goto`` the outer seek. ``IfNoHope`` asks
        whether any entry starts with the group's keys, which the group's own first entry does, so it never
        jumps (``SeekHit`` only feeds it). Per group and value the seek finds an entry when the group has
        one at or after the value, or a later group exists; the range end runs on one entry beyond when the
        group has one after the value, or a later group exists (as in ``_skip_scan``)."""
        top = self.program[last][2]
        if_no_hope, next_value, goto_outer = last + 1, last + 2, last + 3
        hope = self._at(if_no_hope)
        step, list_cursor, value_top, *_ = self._at(next_value)
        seek_at = top - 1
        seek = self._at(seek_at)
        range_end = self._at(top)
        rewind = self._at(value_top - 1)
        value_column, is_null = self._at(value_top), self._at(value_top + 1)
        value_register = group_register + skipped
        if (hope[1:4] != (cursor, goto_outer, group_register) or str(hope[4]) != str(skipped)
                or (rewind[0], step) not in (("Rewind", "Next"), ("Last", "Prev"))
                or self._at(goto_outer)[:3] != ("Goto", 0, start_at + 2)
                or rewind[1:3] != (list_cursor, goto_outer)
                or value_column[:4] != ("Column", list_cursor, 0, value_register)
                or is_null[:3] != ("IsNull", value_register, next_value)
                or seek[:4] != ("SeekGE", cursor, if_no_hope, group_register) or str(seek[4]) != str(skipped + 1)
                or range_end[:4] != ("IdxGT", cursor, if_no_hope, group_register)
                or str(range_end[4]) != str(skipped + 1)
                or any(self._at(at)[0] not in ("SeekHit", "Affinity") for at in range(value_top + 2, seek_at))):
            raise Declined("skip-scan IN shape")
        rewind_at = value_top - 1

        def prologue() -> int:  # the group's instructions after its Columns, the list's Rewind included
            pc, count = group_at + skipped, skipped + 1
            while pc != rewind_at:
                if not group_at + skipped <= pc < rewind_at:
                    raise Declined("skip-scan IN prologue")
                count += 1
                pc = self._step(pc)
            return count

        first_prologue, later_prologue = prologue(), prologue()  # the list is built in the first group only
        if self.cursors.get(list_cursor) != "ephemeral":
            raise Declined("skip-scan IN list")
        values = self.model.in_list_order(self.in_lists.get(list_cursor, []))
        if rewind[0] == "Last":  # a descending sought key walks the list from its end
            values = values[::-1]
        group_of, groups = self.model.groups(self.spec_of[cursor].keys[:skipped])
        # Goto the first group; every group's prologue, then its Goto and the outer seek
        steps = 1 + first_prologue + (groups - 1) * later_prologue + groups * 2
        inside = np.zeros(self.model.columns.rows, dtype=bool)
        for value in values:
            if value is None:  # Column, IsNull, Next value
                steps += groups * 3
                continue
            self.registers[value_register] = value
            compared = self._prefix_compare(cursor, value_register, 1, skipped)
            equal = compared == 0
            if (inside & equal).any():
                raise Declined("skip-scan IN values")
            inside |= equal
            _, beyond = _groups_reached(group_of, groups, compared >= 0, compared > 0, True)
            # Column .. the seek, IfNoHope and Next value in every group; the range end beyond the range
            steps += groups * (seek_at - value_top + 1 + 2) + int(beyond.sum())
        self.registers.pop(value_register, None)
        if self._needs_order(top, last, top):
            raise Declined("skip-scan IN order")
        walked = _Body(self, np.flatnonzero(inside), top, last, top)
        if walked.exit_to is not None:
            raise Declined("skip-scan IN left early")
        self.steps += steps
        return end

    def _visited(self, inside: np.ndarray, cursor: int, forward: bool, top: int, last: int,
                 range_test: int | None) -> np.ndarray:
        """The rows ``inside`` a loop's range: in the order the loop visits their entries where that order
        changes the count (``_needs_order``), else in rowid order."""
        positions = np.flatnonzero(inside)
        if self.cursors.get(cursor) == "table":  # a table scan visits its rows by rowid
            return positions if forward else positions[::-1]
        if not self._needs_order(top, last, range_test):
            return positions
        order = key_order([(self.model.columns.column(field).rank[positions], direction == "desc")
                           for field, direction in self.spec_of[cursor].keys], len(positions))
        return positions[order if forward else order[::-1]]

    def _needs_order(self, top: int, last: int, range_test: int | None) -> bool:
        """Whether the entries' order changes the count: only where an entry can end the loop early (a
        LIMIT, or a test that jumps out of the loop)."""
        for at in range(top, last):
            opcode, _, p2, *_ = self.program[at]
            if at == range_test:
                continue
            if opcode in ("DecrJumpZero", "IfNotZero") or (
                    (opcode in _COMPARE or opcode in ("IsNull", "NotNull", "NotFound", "Goto"))
                    and isinstance(p2, int) and not top <= p2 <= last):
                return True
        return False

    def _prefix_compare(self, cursor: int, first: int, count: int, offset: int = 0) -> np.ndarray:
        """For every row (in rowid order), -1, 0 or 1 as ``count`` keys of its entry in ``cursor``'s index
        (from the ``offset``-th) compare with the registers from ``first``, in the index's order."""
        keys = self.spec_of[cursor].keys[offset:]
        if not 1 <= count <= len(keys):
            raise Declined("prefix")
        from case_studies.indexing.engines.rank_compare import compare_rows  # numba, imported on first use

        columns = self.model.columns
        by_rank = []
        for (field, direction), register in zip(keys[:count], range(first, first + count)):
            compared = self.model._rank_compare(field, self._known(register))
            by_rank.append(-compared if direction == "desc" else compared)
        return compare_rows(by_rank, [columns.column(field).rank for field, _ in keys[:count]], columns.rows)

    # -- the sorter's output loop --------------------------------------------------------------------
    def _sorter_loop(self, sort_at: int, next_opcode: str, rows: int) -> int:
        """A sort's output loop over its ``rows``: the body runs once per row (or until a LIMIT); it may not
        branch. ``next_opcode``: SorterNext (a sorter) or Next (the index a sort kept to its LIMIT fills)."""
        cursor = self._at(sort_at)[1]
        top = sort_at + 1
        ends = [at for at, instruction in enumerate(self.program)
                if instruction[0] == next_opcode and instruction[1] == cursor and instruction[2] == top]
        if len(ends) != 1:
            raise Declined("sorter loop shape")
        last = ends[0]
        limit_at = None
        for at in range(top, last):
            opcode, p1, p2, *_ = self._at(at)
            if opcode == "DecrJumpZero" and limit_at is None:
                limit_at = (at, p1, p2)
            elif opcode not in _PLAIN and opcode not in ("Column", "ResultRow", "RealAffinity"):
                raise Declined(f"sorter loop: {opcode}")
        per_row = last - top + 1
        if limit_at is not None:
            at, register, target = limit_at
            limit = self.registers.get(register)
            if not isinstance(limit, int) or limit < 1:
                raise Declined("limit")
            if limit <= rows:  # the LIMIT-th row leaves the loop at DecrJumpZero
                self.steps += (limit - 1) * per_row + (at - top + 1)
                self.rows += (limit - 1) * self._results(top, last) + self._results(top, at)
                return target
        self.steps += rows * per_row
        self.rows += rows * self._results(top, last)
        return last + 1  # the last SorterNext (Next) falls through

    def _results(self, start: int, end: int) -> int:
        return sum(1 for at in range(start, end) if self.program[at][0] == "ResultRow")


class _Body:
    """One loop body walked over all its entries at once: each instruction with the mask of entries there."""

    def __init__(self, run: _Run, positions: np.ndarray, body: int, last: int, range_test: int | None) -> None:
        """Walk ``positions`` (rows in rowid order, in visit order) through the body ``body``..``last`` (its
        Next); ``range_test``: the address of the range-end test, passed by every entry visited. Adds the
        steps, rows returned and rows sorted to ``run``; ``exit_to`` is where the loop left early (the
        entry that left it is the last counted), None if every entry was visited."""
        self.run = run
        n = len(positions)
        self.positions = positions
        self.column_registers: dict[int, str] = {}
        steps = np.zeros(n, dtype=np.int64)
        exits = np.full(n, -1, dtype=np.int64)  # where an entry leaves the loop, -1 if it does not
        arriving: dict[int, np.ndarray] = {body: np.ones(n, dtype=bool)}
        once_extra: list[tuple[int, int, int]] = []  # (Once's address, entry that runs its block first, steps)
        results = np.zeros(n, dtype=np.int64)
        sorter = np.zeros(n, dtype=np.int64)
        limit_exit = None
        skips: dict[int, np.ndarray] = {}  # IdxLE address -> the entries a sort kept to its LIMIT skips
        rowset_inserts: list[tuple[int, np.ndarray]] = []  # (an OR's rowid set, the entries inserted)
        # (a LIMIT's counter register, the entries that decrement it): the counter lasts the statement, so an
        # IN list's next loop starts from what this one left
        counted_down: list[tuple[int, np.ndarray]] = []
        self.rowid_registers: set[int] = set()
        self.kept_pattern: set[int] = set()
        for at in range(body, last + 1):
            here = arriving.pop(at, None)
            if here is None or not here.any():
                continue
            steps += here
            opcode, p1, p2, p3, p4, p5 = run._at(at)
            run.forget(opcode, p1, p2, p3)
            if opcode in _WRITES:  # (a Column or IdxRowid sets it again below)
                written = (p1, p2, p3)[_WRITES[opcode] - 1]
                self.column_registers.pop(written, None)
                self.rowid_registers.discard(written)
            jump = None  # the entries that jump to p2
            if at == last:  # Next / Prev: back to the top
                break
            if at == range_test:
                pass
            elif opcode == "Column":
                self.column_registers[p3] = self._field(p1, p2)
            elif opcode in _COMPARE:
                jump = self._compare(opcode, p1, p3, p5)
            elif opcode in ("IsNull", "NotNull"):
                field = self._column(p1)
                column = run.model.columns.column(field)
                null = np.zeros(int(column.rank.max(initial=0)) + 1, dtype=bool)
                if column.has_nulls:
                    null[1] = True
                jump = self._per_entry(field, null if opcode == "IsNull" else ~null)
            elif opcode == "Once":
                block = p2 - at - 1
                if block < 0 or any(run._at(inner)[0] not in ("OpenEphemeral", "Variable", "MakeRecord",
                                                             "IdxInsert", "NullRow") for inner in range(at + 1, p2)):
                    raise Declined("Once block")
                self._in_list(at + 1, p2)
                once_extra.append((at, int(np.argmax(here)), block))
                jump = here
            elif opcode == "Return":
                if run.registers.get(p1) is not None or p3 != 1:
                    raise Declined("Return")
            elif opcode == "NotFound":
                if p1 not in run.in_lists or int(p4) != 1:
                    raise Declined("NotFound")
                field = self._column(p3)
                values = [value for value, _ in run.in_lists[p1]]  # (the column's affinity applies)
                jump = ~self._per_entry(field, run.model._rank_in(field, values))
            elif opcode == "ResultRow":
                results += here
            elif opcode == "SorterInsert":
                sorter += here
            elif opcode == "DecrJumpZero":
                limit = run.registers.get(p1)
                if limit_exit is not None or not isinstance(limit, int) or limit < 1:
                    raise Declined("limit")
                arrivals = np.cumsum(here)
                jump = here & (arrivals == limit)
                limit_exit = True
                counted_down.append((p1, here))
            elif opcode == "IfNotZero":
                jump, skips[at + 2] = self._kept_to_limit(at, here)
                counted_down.append((p1, here))
            elif opcode == "IdxLE" and at in skips:
                jump = skips.pop(at)
            elif opcode in ("Last", "Delete") and at in self.kept_pattern:
                pass
            elif opcode in ("Sequence", "IdxInsert", "SeekHit"):  # (SeekHit: only a skip-scan's IfNoHope reads it)
                pass
            elif opcode == "IdxRowid":
                self.column_registers.pop(p2, None)
                self.rowid_registers.add(p2)
            elif opcode == "RowSetTest":
                jump = self._rowset(p1, p3, int(p4), here, rowset_inserts)
            elif opcode == "Gosub":
                returned, sorted_here = self._subroutine(p1, p2)
                steps += here * self._subroutine_steps
                results += here * returned
                sorter += here * sorted_here
            elif opcode == "Goto":
                jump = here
            elif opcode not in _PLAIN:
                raise Declined(opcode)
            if jump is None:
                self._arrive(arriving, at + 1, here)
                continue
            staying = here & ~jump
            if staying.any():
                self._arrive(arriving, at + 1, staying)
            if jump.any():
                if body < p2 <= last and p2 > at:
                    self._arrive(arriving, p2, here & jump)
                elif p2 > last or p2 < body:
                    exits[here & jump] = p2
                else:
                    raise Declined("backward jump")
        leaving = np.flatnonzero(exits >= 0)
        exit_entry = int(leaving[0]) if len(leaving) else None
        upto = n if exit_entry is None else exit_entry + 1
        if self.kept_pattern and upto < n:
            raise Declined("sort kept to its LIMIT, left early")
        for register, decrementing in counted_down:
            run.registers[register] = max(0, run.registers[register] - int(decrementing[:upto].sum()))
        run.steps += int(steps[:upto].sum())
        for at, entry, extra in once_extra:  # a Once block runs once a statement, not once a loop
            if entry < upto and at not in run.once_done:
                run.once_done.add(at)
                run.steps += extra
        run.rows += int(results[:upto].sum())
        run.sorted_rows += int(sorter[:upto].sum())
        for register, inserted in rowset_inserts:  # testable by the later branches only
            rows = np.zeros(run.model.columns.rows, dtype=bool)
            rows[positions[:upto][inserted[:upto]]] = True
            run.rowsets.setdefault(register, []).append(rows)
        self.exit_entry = exit_entry  # the entry (its place in ``positions``) that left the loop, None if none
        self.exit_to = None if exit_entry is None else int(exits[exit_entry])

    def _rowset(self, register: int, rowid: int, batch: int, here: np.ndarray,
                inserts: list[tuple[int, np.ndarray]]) -> np.ndarray:
        """An OR's ``RowSetTest``: the entries whose row an earlier branch found jump (batch 0, the first
        branch, tests nothing); the others are inserted (not in the last branch, batch -1)."""
        if rowid not in self.rowid_registers or not (batch == -1 or batch >= 0):
            raise Declined("RowSetTest")
        jump = np.zeros(len(here), dtype=bool)
        if batch != 0:
            for rows in self.run.rowsets.get(register, []):
                jump |= rows[self.positions]
            jump &= here
        if batch >= 0:
            inserts.append((register, here & ~jump))
        return jump

    def _subroutine(self, register: int, start: int) -> tuple[int, int]:
        """A subroutine the body calls (``Gosub``: an OR's rows, found by any branch, go through one):
        straight-line up to its ``Return``. (rows it returns, rows it sorts) per call; its steps (``Return``
        included) are left in ``_subroutine_steps``."""
        run = self.run
        for at in range(start, len(run.program)):
            opcode, p1, p2, p3, *_ = run._at(at)
            if opcode == "Return" and p1 == register:
                self._subroutine_steps = at - start + 1
                kinds = [run.program[inner][0] for inner in range(start, at)]
                return kinds.count("ResultRow"), kinds.count("SorterInsert")
            if opcode == "Column":
                self.column_registers[p3] = self._field(p1, p2)
            elif opcode not in _PLAIN and opcode not in ("ResultRow", "SorterInsert"):
                raise Declined(f"subroutine: {opcode}")
        raise Declined("subroutine")

    def _kept_to_limit(self, at: int, here: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A sort kept to its LIMIT (``IfNotZero``, ``Last``, ``IdxLE``, ``Delete``, then the insert): the
        first LIMIT rows are inserted; after that a row is inserted (the largest kept deleted first) only
        if its sort key is smaller than the largest kept, else skipped. Returns (the entries IfNotZero sends
        straight to the insert, the entries IdxLE skips); the rows kept are noted for the output loop."""
        run = self.run
        _, counter, insert_at, *_ = run._at(at)
        last_op, cursor, *_ = run._at(at + 1)
        compare_op, compare_cursor, _, key_first, key_count, _ = run._at(at + 2)
        delete_op, delete_cursor, *_ = run._at(at + 3)
        if ((last_op, compare_op, delete_op) != ("Last", "IdxLE", "Delete") or insert_at != at + 4
                or not cursor == compare_cursor == delete_cursor or run.cursors.get(cursor) != "ephemeral"):
            raise Declined("sort kept to its LIMIT")
        remaining = run.registers.get(counter)  # rows still to insert before the sort is full
        kept = run.kept.get(cursor, [])
        if not isinstance(remaining, int) or remaining < 0 or remaining + len(kept) < 1:
            raise Declined("limit")
        descending = _descending(run.key_infos.get(cursor), int(key_count))
        arrivals = np.flatnonzero(here)
        codes = np.zeros(len(arrivals), dtype=np.int64)
        span_product = 1
        for register, desc in zip(range(key_first, key_first + int(key_count)), descending):
            rank = run.model.columns.column(self._column(register)).rank[self.positions[arrivals]].astype(np.int64)
            span = int(run.model.columns.column(self._column(register)).rank.max(initial=0)) + 2
            span_product *= span
            if span_product >= 1 << 62:
                raise Declined("sort key too wide")
            codes = codes * span + (span - 1 - rank if desc else rank)
        filling, skipped, run.kept[cursor] = _kept(codes, remaining, kept)
        inserted, skip = np.zeros(len(here), dtype=bool), np.zeros(len(here), dtype=bool)
        inserted[arrivals[filling]] = True
        skip[arrivals[skipped]] = True
        self.kept_pattern.update((at + 1, at + 3))
        return inserted, skip

    @staticmethod
    def _arrive(arriving: dict[int, np.ndarray], at: int, mask: np.ndarray) -> None:
        if at in arriving:
            arriving[at] = arriving[at] | mask
        else:
            arriving[at] = mask.copy()

    def _field(self, cursor: int, column: int) -> str:
        kind = self.run.cursors.get(cursor)
        if kind == "table" and 0 <= column < len(self.run.model.fields):
            return self.run.model.fields[column]
        if kind == "index" and 0 <= column < len(self.run.spec_of[cursor].keys):
            return self.run.spec_of[cursor].keys[column][0]
        raise Declined("Column")

    def _column(self, register: int) -> str:
        if register not in self.column_registers:
            raise Declined("not a column")
        return self.column_registers[register]

    def _per_entry(self, field: str, by_rank: np.ndarray) -> np.ndarray:
        rank = self.run.model.columns.column(field).rank
        return by_rank[rank[self.positions]]

    def _compare(self, opcode: str, p1: int, p3: int, p5: int) -> np.ndarray:
        """Entries whose row makes ``r[p3] op r[p1]`` true (or either NULL, with JUMP_IF_NULL)."""
        if p5 & NULL_EQUAL:
            raise Declined("IS comparison")
        op = _COMPARE[opcode]
        if p3 in self.column_registers and p1 in self.run.registers:
            field, value = self.column_registers[p3], self.run.registers[p1]
        elif p1 in self.column_registers and p3 in self.run.registers:
            field, value, op = self.column_registers[p1], self.run.registers[p3], _MIRROR[op]
        else:
            raise Declined("comparison operands")
        column = self.run.model.columns.column(field)
        if value is None:
            outcome = np.full(int(column.rank.max(initial=0)) + 1, bool(p5 & JUMP_IF_NULL))
        else:
            outcome = self.run.model._rank_test(field, op, value)
            if column.has_nulls and p5 & JUMP_IF_NULL:
                outcome[1] = True
        return self._per_entry(field, outcome)

    def _in_list(self, start: int, end: int) -> None:
        """Build an ``IN`` list's ephemeral index as its Once block does, interpreted as outside a loop (the
        block is straight-line); the registers it writes are no longer columns."""
        for at in range(start, end):
            opcode, p1, p2, p3, *_ = self.run._at(at)
            if self.run._step(at) != at + 1:
                raise Declined("Once block")
            if opcode in ("Variable", "MakeRecord"):
                self.column_registers.pop(p2 if opcode == "Variable" else p3, None)


def _descending(key_info: Any, count: int) -> list[bool]:
    """Which of the first ``count`` fields of an ephemeral index's key description ("k(2,-B,)") sort
    descending; only the default (BINARY) collation is interpreted."""
    if not isinstance(key_info, str) or not key_info.startswith("k(") or not key_info.endswith(")"):
        raise Declined("key description")
    fields = key_info[2:-1].split(",")[1:]
    if len(fields) < count:
        raise Declined("key description")
    descending = []
    for text in fields[:count]:
        desc = text.startswith("-")
        if text[int(desc):] not in ("", "B"):
            raise Declined("collation")
        descending.append(desc)
    return descending


def _kept(codes: np.ndarray, remaining: int, kept: list[int]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """A sort kept to its LIMIT, holding the sort keys ``kept`` (a max-heap of negated keys) with room for
    ``remaining`` more, fed sort keys ``codes`` in order: (the rows inserted while it fills, the rows
    skipped after, the keys it then holds); every other row replaces the largest key kept (it is
    smaller)."""
    count = len(codes)
    fill = min(remaining, count)
    filling = np.zeros(count, dtype=bool)
    filling[:fill] = True
    skipped = np.zeros(count, dtype=bool)
    largest = kept + [-code for code in codes[:fill].tolist()]
    heapq.heapify(largest)
    if count <= fill:
        return filling, skipped, largest
    skipped[fill:] = True
    threshold = -largest[0]
    for start in range(fill, count, 65_536):  # the threshold only falls: only smaller keys can enter
        chunk = codes[start:start + 65_536]
        for offset in np.flatnonzero(chunk < threshold).tolist():
            code = int(chunk[offset])
            if code < threshold:
                heapq.heapreplace(largest, -code)
                threshold = -largest[0]
                skipped[start + offset] = False
    return filling, skipped, largest


def _groups(columns: TableColumns, keys: Sequence[tuple[str, str]]) -> tuple[np.ndarray, int]:
    """(each row's group of equal ``keys`` values, numbered in index order; how many groups)."""
    code = np.zeros(columns.rows, dtype=np.int64)
    span = 1
    for field, direction in keys:
        rank = columns.column(field).rank.astype(np.int64)
        distinct = int(rank.max(initial=0)) + 1
        span *= distinct
        if span > 4 * columns.rows + 1024:  # (SQLite skip-scans only keys of few values)
            raise Declined("too many groups")
        code = code * distinct + (distinct - rank if direction == "desc" else rank)
    present = np.bincount(code, minlength=span) > 0
    number = np.cumsum(present) - 1
    return number[code], int(present.sum())


def _groups_reached(group_of: np.ndarray, groups: int, sought: np.ndarray, beyond_range: np.ndarray,
                    forward: bool) -> tuple[np.ndarray, np.ndarray]:
    """A skip-scan's groups in the order visited: (does the seek in each find an entry, does the range end
    run on an entry beyond its range). A group's seek finds one where the group has a row ``sought``, or a
    later group exists (the seek then lands there); the range end runs beyond where the group has a row
    ``beyond_range`` or a later group exists (only the last group can run out of entries)."""
    found_in = np.bincount(group_of[sought], minlength=groups) > 0
    beyond_in = np.bincount(group_of[beyond_range], minlength=groups) > 0
    if not forward:
        found_in, beyond_in = found_in[::-1], beyond_in[::-1]
    not_last = np.arange(groups) < groups - 1
    found = found_in | not_last
    return found, (beyond_in | not_last) & found


def _sought(seek: str, compared: np.ndarray) -> np.ndarray:
    """The entries at or after where a seek lands (in its direction), from each entry's comparison with its key."""
    return {"SeekGE": compared >= 0, "SeekGT": compared > 0, "SeekLE": compared <= 0, "SeekLT": compared < 0}[seek]


def _leaves(range_end: str, compared: np.ndarray) -> np.ndarray:
    """The entries a range-end test jumps out of the loop on, from each entry's comparison with its key."""
    return {"IdxGT": compared > 0, "IdxGE": compared >= 0, "IdxLT": compared < 0, "IdxLE": compared <= 0}[range_end]
