"""The engine-neutral indexing contract that every database adapter implements.

SQLite, PostgreSQL and MongoDB differ in query language and planner, not in what the indexing task needs:
load a collection, create and drop compound indexes with per-key direction, list them, run a query and
report its latency, a deterministic work count and the indexes it used, and report index sizes. The schema,
converter, cost cache and experiments are written against this contract only.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

from case_studies.indexing.index_spec import IndexSpec
from wield.errors import ConfigError

METRICS = ("work", "latency")
# Column names an engine gives a meaning of its own: SQLite's aliases of the rowid (a column of that name
# hides the rowid that index sizes, slices and the work model read), PostgreSQL's system columns (a table
# cannot have them), MongoDB's primary key. A collection with a field of such a name is refused at load.
RESERVED_FIELDS = {"sqlite": ("rowid", "oid", "_rowid_"),
                   "postgres": ("ctid", "xmin", "xmax", "cmin", "cmax", "tableoid", "oid"),
                   "mongodb": ("_id",)}


def check_field_names(fields, engine: str, source: str = "the collection") -> None:
    """Refuse a collection (``source`` names it) with a field ``engine`` reserves (``RESERVED_FIELDS``,
    compared case-insensitively): a ``ConfigError`` naming the field and the reserved names."""
    reserved = RESERVED_FIELDS.get(engine, ())
    for name in fields:
        if str(name).lower() in reserved:
            raise ConfigError("collection field", name, reason=(
                f"a field of {source} named like a column {engine} reserves ({', '.join(reserved)}, in any case); "
                "rename it in the file"))


@dataclass(frozen=True)
class QueryResult:
    """One measured query: latency (seconds, median of repetitions), deterministic work, indexes used."""

    latency_s: float
    work: float
    indexes_used: tuple[str, ...] = ()
    rows: int = 0
    plan: tuple[str, ...] = field(default=(), compare=False)


class IndexingEngine(abc.ABC):
    """One database holding one collection, under the control of the indexing case study."""

    name: str = "engine"
    work_unit: str = "work units"

    @abc.abstractmethod
    def load(self, collection) -> None:
        """Create the collection (table) from a workloads.Collection and gather planner statistics."""

    @abc.abstractmethod
    def create_index(self, spec: IndexSpec) -> None:
        """Build a compound secondary index (idempotent)."""

    @abc.abstractmethod
    def drop_index(self, spec: IndexSpec) -> None:
        """Drop an index built by ``create_index`` (idempotent)."""

    @abc.abstractmethod
    def list_indexes(self) -> list[IndexSpec]:
        """The secondary indexes that exist now."""

    @abc.abstractmethod
    def run_query(self, query, repetitions: int = 3) -> QueryResult:
        """Execute a workloads.Query; latency is the median of ``repetitions`` executions."""

    def time_query(self, query, repetitions: int = 1) -> list[float]:
        """The wall seconds of ``repetitions`` executions of a workloads.Query, one after another, rows fetched:
        what evaluation's latency rounds measure (their work and plans come from one ``run_query`` before).
        This default times ``run_query``; an engine overrides it with bare executions (no plan, no count)."""
        return [self.run_query(query, repetitions=1).latency_s for _ in range(repetitions)]

    @abc.abstractmethod
    def index_size(self, spec: IndexSpec) -> int:
        """Size in bytes of an existing index."""

    @abc.abstractmethod
    def collection_size(self) -> int:
        """Size in bytes of the collection's data (without secondary indexes)."""

    def drop_all_indexes(self) -> None:
        for spec in self.list_indexes():
            self.drop_index(spec)

    def close(self) -> None:
        """Release the connection. Safe to call twice."""
