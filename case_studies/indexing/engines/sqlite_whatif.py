"""SQLite what-if planning: plan a query under any index configuration without building an index.

SQLite's query planner reads the schema and the ``sqlite_stat1`` statistics, never the data. An in-memory
database holding the collection's table *empty*, the configuration's indexes (empty too, so creating one
costs nothing) and the real database's ``sqlite_stat1`` rows for the table and for each index plans every
query as the real database does with that configuration built: the idea of SQLite's ``.expert``
extension. The statistics of an index are what ``ANALYZE`` wrote on the real database when the index was
first built there (its size has to be measured anyway), so they are exact, not estimated.

A plan is compared as the query's *program*: SQLite's bytecode (``EXPLAIN``) with each root page replaced by
the name of the table or index it opens and the schema's version numbers left out. The same program run on the same
data executes the same virtual-machine steps, so the cost cache keys work by (query, program): a
configuration change that leaves a query's program as it was needs no new measurement. The adapter checks
the claim on every measurement (the program executed on the real database must be the planned one) and
tests check it across random configurations.

Ties: when two indexes serve a query equally well, the order in which they were created decides which one
SQLite takes. Configurations are therefore always created in canonical (sorted) order, here and on the real
database (``canonical_switch``), so a query's plan depends only on the configuration, never on the
configurations measured before it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from case_studies.indexing.index_spec import IndexSpec, canonical_switch

_OPENS = ("OpenRead", "OpenWrite", "ReopenIdx")  # p2 is a root page


@dataclass(frozen=True)
class PlannedQuery:
    """A query's program under one configuration: its signature, the indexes it opens, its instructions."""

    signature: str
    indexes: tuple[str, ...]
    instructions: tuple = field(default=(), compare=False, repr=False)


def object_names(conn: sqlite3.Connection) -> dict[int, str]:
    """Root page -> name of every table and index of ``conn``'s main database."""
    return {int(root): str(name) for name, root in
            conn.execute("SELECT name, rootpage FROM sqlite_schema WHERE rootpage > 0")}


def program(conn: sqlite3.Connection, sql: str, params: Sequence, names: Mapping[int, str]) -> tuple:
    """The statement's bytecode, independent of where objects are stored: (opcode, p1..p5) per
    instruction, root pages replaced by object names, the schema cookie and generation of ``Transaction``
    left out."""
    instructions = []
    for _, opcode, p1, p2, p3, p4, p5, _comment in conn.execute("EXPLAIN " + sql, params):
        if opcode in _OPENS:
            p2 = names.get(p2, p2)
        elif opcode == "Transaction":  # the schema cookie and generation say nothing about the program
            p3 = p4 = None
        instructions.append((opcode, p1, p2, p3, p4, p5))
    return tuple(instructions)


def create_with_statistics(conn: sqlite3.Connection, table_sql: str, table_statistics: Sequence[tuple]) -> None:
    """Create a table (empty) in ``conn`` and give the planner the real table's ``sqlite_stat1`` rows
    (tbl, idx, stat): what-if planning and slices (``sqlite_slice.py``) plan as the real database does."""
    conn.execute(table_sql)
    conn.execute("ANALYZE")  # creates sqlite_stat1
    conn.execute("DELETE FROM sqlite_stat1")
    conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", table_statistics)
    conn.execute("ANALYZE sqlite_schema")  # (re)load the statistics


def signature(instructions: tuple) -> str:
    """A short stable hash of a program."""
    return hashlib.sha256(repr(instructions).encode("utf-8")).hexdigest()[:32]


def opened_indexes(instructions: tuple, indexes: Iterable[str]) -> tuple[str, ...]:
    """Names of the indexes (among ``indexes``) a program opens, in program order, without repeats."""
    known = set(indexes)
    return tuple(dict.fromkeys(p2 for opcode, _, p2, *_ in instructions if opcode in _OPENS and p2 in known))


class SQLiteWhatIfPlanner:
    """Plans queries of one SQLite engine's collection under hypothetical index configurations."""

    def __init__(self, table: str, table_sql: str, table_statistics: Sequence[tuple], translator) -> None:
        self.table = table
        self.translator = translator
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False,
                                     cached_statements=0)
        create_with_statistics(self._conn, table_sql, table_statistics)
        self._created: list[IndexSpec] = []
        self._names: dict[int, str] = object_names(self._conn)
        self._sql: dict[str, tuple[str, list]] = {}
        self.configurations = 0

    @property
    def configuration(self) -> tuple[IndexSpec, ...]:
        return tuple(self._created)

    def configure(self, configuration: Iterable[IndexSpec], statistics: Mapping[IndexSpec, str]) -> None:
        """Make the hypothetical indexes exactly ``configuration`` (canonical order); ``statistics`` maps
        each index to its ``sqlite_stat1`` line measured on the real database."""
        drop, build = canonical_switch(self._created, configuration)
        if not drop and not build:
            return
        conn = self._conn
        for spec in drop:
            conn.execute(f'DROP INDEX "{spec.name}"')
            conn.execute("DELETE FROM sqlite_stat1 WHERE idx = ?", (spec.name,))
        for spec in build:
            conn.execute(self.translator.create_index(spec))
            conn.execute("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)",
                         (self.table, spec.name, statistics[spec]))
        conn.execute("ANALYZE sqlite_schema")
        self._created = self._created[:len(self._created) - len(drop)] + build
        self._names = object_names(conn)
        self.configurations += 1

    def plan(self, query) -> PlannedQuery:
        """The query's program under the current hypothetical configuration."""
        key = query.key()
        if key not in self._sql:
            self._sql[key] = self.translator.select(query)
        sql, params = self._sql[key]
        instructions = program(self._conn, sql, params, self._names)
        return PlannedQuery(signature(instructions),
                            opened_indexes(instructions, (spec.name for spec in self._created)), instructions)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
