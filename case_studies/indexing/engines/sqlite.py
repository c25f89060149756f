"""The SQLite adapter of the indexing contract: a real database file, embedded, the default engine.

- The collection becomes one table with typed columns; a loaded base database is cached on disk by the
  collection's fingerprint and every run works on its own copy, so parallel runs never share indexes.
- The cached base database is trusted only after checking: beside it ``<name>.sqlite.json`` records its
  sha256, size and row count, written after the database was built, flushed to disk (fsync) and renamed
  into place. Every copy is hashed while it is made; a base database that is missing its record, empty,
  truncated or changed in any way is rebuilt (under a lock, so concurrent runs build it once).
- Temporary files carry the pid of the process that made them (``.loading-<pid>-*`` in the cache, private
  copies ``wield-<pid>-*.sqlite`` in the work directory); files of processes that are gone (killed) are
  removed by the next engine that opens there.
- Queries are parameterised SQL (see ``sql.py``).
- Work is SQLite's virtual-machine step count, sampled by the progress handler every ``WORK_GRANULARITY``
  steps: deterministic for a given data file, index set and query.
- Latency is the median wall time of repeated executions (cursor fully consumed).
- Indexes used come from EXPLAIN QUERY PLAN; sizes from the ``dbstat`` virtual table.
- ``run_query(..., force=...)`` executes a plan chosen elsewhere: ``INDEXED BY`` one index or ``NOT
  INDEXED``; ``program`` is a query's bytecode and ``whatif_planner`` plans without building indexes
  (``sqlite_whatif.py``): together they let the cost cache measure only what a new plan needs.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Sequence

from case_studies.indexing.engines.contract import IndexingEngine, QueryResult, check_field_names
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sql import SQLTranslator, quote_identifier
from case_studies.indexing.engines.sqlite_slice import TableSlices
from case_studies.indexing.engines.sqlite_columns import TableColumns
from case_studies.indexing.engines.sqlite_index_size import IndexGeometry, SQLiteIndexSizes
from case_studies.indexing.engines.sqlite_kept_copies import (KIND as KEPT, keep_copy, kept_image, kept_key,
                                                             record_path, verified_image)
from case_studies.indexing.engines.sqlite_work_model import MODEL_REVISION, WorkModel
from case_studies.indexing.engines.sqlite_whatif import (SQLiteWhatIfPlanner, create_with_statistics, object_names,
                                                         program)
from wield.cache import (cache_root, entry_beside, exclusive_lock, remove_other_entries_beside,
                         remove_stale_partial_files)
from wield.errors import ConfigError, SystemFailure
from wield.io import atomic_write_json, fsync_directory, read_json
from wield.logs import get_logger
from wield.workflows.signals import stop_requested

WORK_GRANULARITY = 100
_SQL_TYPES = {"int": "INTEGER", "float": "REAL", "text": "TEXT"}
_USES_INDEX = re.compile(r"USING (?:COVERING )?INDEX (\w+)")
LOADING_PREFIX = ".loading-"
COPY_PREFIX = "wield-"
_COPY_BLOCK = 1 << 20
COLUMNS = "columns"  # the kind of entry beside a base database holding its columns (sqlite_columns.py)
log = get_logger(__name__)


class SQLiteEngine(IndexingEngine):
    """An indexing engine over one SQLite database file."""

    name = "sqlite"
    work_unit = "SQLite VM steps"

    def __init__(self, path: str | os.PathLike, table: str = "collection") -> None:
        self.path = Path(path)
        self.table = table
        # No statement cache: a freshly prepared statement starts its VM step counter at 0, so the
        # progress handler fires at exactly every WORK_GRANULARITY steps and work counts are deterministic.
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False,
                                     cached_statements=0, factory=_StorageCheckedConnection)
        self._conn.database_path = self.path
        self._conn.execute("PRAGMA mmap_size = 4294967296")
        self._conn.execute("PRAGMA cache_size = -1048576")
        self._conn.execute("PRAGMA temp_store = MEMORY")
        self._translator: SQLTranslator | None = None
        self._sql_cache: dict[tuple[str, str | None], tuple[str, list]] = {}
        self._names: dict[int, str] | None = None  # root page -> object name, for programs
        self._columns: TableColumns | None = None
        self._columns_directory: Path | None = None  # where a cached base database's columns are kept
        self._kept_directory: Path | None = None  # where copies of it with indexes built are kept
        self._index_sizes: SQLiteIndexSizes | None = None
        self._work_model: WorkModel | None = None
        self.work_granularity = WORK_GRANULARITY  # VM steps per progress-handler call (1: exact counts)
        if self._table_exists():
            self._translator = SQLTranslator(table, self._table_fields())

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def for_collection(cls, collection, workdir: str | os.PathLike,
                       cache_dir: str | os.PathLike | None = None, in_memory: bool = False) -> "SQLiteEngine":
        """An engine on a private copy of the collection's base database (built once, then cached; checked
        against its recorded sha256 while copying, rebuilt when it does not match): a file under ``workdir``,
        or with ``in_memory`` a copy in this process's memory (no disk I/O for index builds; the same pages,
        plans, sizes and work)."""
        if in_memory:
            return cls._in_memory(collection, cache_dir)
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        remove_stale_partial_files(workdir, COPY_PREFIX)
        fd, copy = tempfile.mkstemp(prefix=f"{COPY_PREFIX}{os.getpid()}-", suffix=".sqlite", dir=workdir)
        try:
            os.close(fd)
            base = cls.base_database(collection, cache_dir)
            if not _copy_verified(base, Path(copy)):
                base = cls.base_database(collection, cache_dir, rebuild=True)
                if not _copy_verified(base, Path(copy)):
                    raise SystemFailure(f"the cached database {base} changed while it was being copied")
            engine = cls(copy, table=collection.name)
        except BaseException:
            Path(copy).unlink(missing_ok=True)
            raise
        engine._columns_directory = _entry_beside(base, COLUMNS)
        engine._kept_directory = _entry_beside(base, KEPT)
        engine._owns_file = True
        # A private scratch copy, deleted on close: nothing needs to survive a crash, so index builds and
        # drops need not wait for the disk (they did, twice per statement, with SQLite's defaults).
        engine._conn.execute("PRAGMA journal_mode = MEMORY")
        engine._conn.execute("PRAGMA synchronous = OFF")
        engine._conn.execute("PRAGMA secure_delete = OFF")  # a dropped index's pages need not be zeroed
        return engine

    @classmethod
    def _in_memory(cls, collection, cache_dir: str | os.PathLike | None) -> "SQLiteEngine":
        base = cls.base_database(collection, cache_dir)
        image = verified_image(base)
        if image is None:
            base = cls.base_database(collection, cache_dir, rebuild=True)
            image = verified_image(base)
            if image is None:
                raise SystemFailure(f"the cached database {base} changed while it was being read")
        engine = cls._from_image(image, collection.name)
        del image
        engine._translator = SQLTranslator(engine.table, engine._table_fields())
        engine._columns_directory = _entry_beside(base, COLUMNS)
        engine._kept_directory = _entry_beside(base, KEPT)
        return engine

    @classmethod
    def base_database(cls, collection, cache_dir: str | os.PathLike | None = None, rebuild: bool = False) -> Path:
        """Path of the cached, loaded database for ``collection``: built (durably, under a lock) when it is
        missing, has no record of its content, or ``rebuild`` is asked (a copy found it damaged)."""
        cache = cache_root(cache_dir, create=True)  # the ownership policy, made and marked as Wield's
        # readable (what the table is and how many documents), unique by the content's fingerprint
        path = cache / f"sqlite-{collection.name}-{len(collection)}docs-{collection.fingerprint()[:16]}.sqlite"
        if not rebuild and _recorded(path) is not None:
            log.debug("cache hit: the loaded database %s", path)
            return path
        with exclusive_lock(cache / f".{path.name}.lock"):  # one builder; the others wait, then find it built
            remove_stale_partial_files(cache, LOADING_PREFIX)
            recorded = _recorded(path)  # another process may have built (or rebuilt) it meanwhile
            if recorded is not None and (not rebuild or _sha256(path)[0] == recorded):
                log.debug("cache hit: the loaded database %s (built by another process meanwhile)", path)
                return path
            log.info("cache %s: loading %d documents of '%s' into %s", "rebuild" if rebuild else "miss",
                     len(collection), collection.name, path)
            started = time.perf_counter()
            cls._build(collection, path)
            log.info("loaded %s in %.1f s", path.name, time.perf_counter() - started)
        return path

    @classmethod
    def _build(cls, collection, path: Path) -> None:
        """Load ``collection`` into a new file, fsync it, rename it over ``path`` and record its content."""
        record_path(path).unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{LOADING_PREFIX}{os.getpid()}-", suffix=".sqlite", dir=path.parent)
        os.close(fd)
        try:
            engine = cls(tmp, table=collection.name)
            try:
                engine.load(collection)
                rows = engine._conn.execute(f"SELECT count(*) FROM {quote_identifier(collection.name)}").fetchone()[0]
            finally:
                engine.close()
            with open(tmp, "rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp, path)
            fsync_directory(path.parent)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        digest, size = _sha256(path)
        atomic_write_json(record_path(path), {"sha256": digest, "bytes": size, "rows": int(rows),
                                               "collection": collection.name,
                                               "fingerprint": collection.fingerprint()})
        for kind in (COLUMNS, KEPT):  # columns and copies kept for an earlier content of the file
            remove_other_entries_beside(path, kind, digest)

    # -- contract --------------------------------------------------------------------------------
    def load(self, collection) -> None:
        if self._table_exists():
            raise SystemFailure(f"table {self.table!r} already exists in {self.path}")
        check_field_names(collection.field_names, "sqlite", f"collection '{collection.name}'")
        translator = SQLTranslator(self.table, collection.field_names)
        columns = [(f.name, _SQL_TYPES[f.kind]) for f in collection.fields]
        conn = self._conn
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        conn.execute(translator.create_table(columns))
        conn.executemany(translator.insert(), collection.rows())
        conn.execute("COMMIT")
        conn.execute(f"ANALYZE {quote_identifier(self.table)}")
        self._translator = translator

    def create_index(self, spec: IndexSpec) -> None:
        sql = self.translator.create_index(spec)
        self._conn.execute(sql)
        self._conn.execute(f"ANALYZE {quote_identifier(spec.name)}")
        self._names = None

    def create_index_with_statistics(self, spec: IndexSpec, statistics: str | None) -> None:
        """Create an index and give the planner ``statistics`` (a ``sqlite_stat1`` line measured elsewhere,
        None for none) instead of analysing it here: a slice's indexes are planned as the real ones."""
        self._conn.execute(self.translator.create_index(spec))
        if statistics is not None:
            self._conn.execute("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)",
                               (self.table, spec.name, statistics))
            self._conn.execute("ANALYZE sqlite_schema")  # (re)load the statistics
        self._names = None

    def drop_index(self, spec: IndexSpec) -> None:
        self._conn.execute(f"DROP INDEX IF EXISTS {quote_identifier(spec.name)}")
        self._conn.execute("DELETE FROM sqlite_stat1 WHERE idx = ?", (spec.name,))
        self._names = None

    def list_indexes(self) -> list[IndexSpec]:
        specs = []
        for row in self._conn.execute(f"PRAGMA index_list({quote_identifier(self.table)})").fetchall():
            name, origin = row[1], row[3]
            if origin != "c":  # only indexes made by CREATE INDEX
                continue
            keys = [(info[2], "desc" if info[3] else "asc")
                    for info in self._conn.execute(f"PRAGMA index_xinfo({quote_identifier(name)})")
                    if info[5]]  # key columns only
            specs.append(IndexSpec.of(keys))
        return sorted(specs)

    def run_query(self, query, repetitions: int = 3, force: str | None = None) -> QueryResult:
        """Execute ``query``; ``force`` None lets the planner choose, "" forbids every index (NOT INDEXED),
        an index name makes the planner use that index (INDEXED BY)."""
        sql, params = self._sql(query, force)
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        try:
            plan = tuple(row[3] for row in self._conn.execute("EXPLAIN QUERY PLAN " + sql, params))
            self._conn.set_progress_handler(count, self.work_granularity)
            start = time.perf_counter()
            try:
                rows = sum(1 for _ in self._conn.execute(sql, params))
            finally:
                elapsed = time.perf_counter() - start
                self._conn.set_progress_handler(None, 0)
            timings = self.time_query(query, repetitions, force)
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted":
                raise stop_requested() from exc  # a stop signal's exception, raised in count(), swallowed by sqlite3
            raise SystemFailure(f"SQLite rejected the query {sql!r}: {exc}") from exc
        used = tuple(dict.fromkeys(m for line in plan for m in _USES_INDEX.findall(line)))
        latency = statistics.median(timings) if timings else elapsed
        return QueryResult(latency_s=latency, work=float(steps * self.work_granularity),
                           indexes_used=used, rows=rows, plan=plan)

    def time_query(self, query, repetitions: int = 1, force: str | None = None) -> list[float]:
        """Wall seconds of ``repetitions`` bare executions of ``query`` (every row fetched; no plan asked for,
        no work counted): the latency rounds of evaluation."""
        sql, params = self._sql(query, force)
        timings = []
        try:
            for _ in range(repetitions):
                start = time.perf_counter()
                for _ in self._conn.execute(sql, params):
                    pass
                timings.append(time.perf_counter() - start)
        except sqlite3.Error as exc:
            raise SystemFailure(f"SQLite rejected the query {sql!r}: {exc}") from exc
        return timings

    def index_size(self, spec: IndexSpec) -> int:
        return self._object_size(spec.name)

    def count_rows(self, query) -> int:
        """How many rows match ``query``'s predicates (its sort, limit and aggregate ignored)."""
        from case_studies.indexing.engines.sqlite_equivalence import full_range_query

        sql, params = self.translator.select(full_range_query(query))
        try:
            return int(self._conn.execute(sql, params).fetchone()[0])
        except sqlite3.Error as exc:
            raise SystemFailure(f"SQLite rejected the query {sql!r}: {exc}") from exc

    def row_count(self) -> int:
        return int(self._conn.execute(f"SELECT count(*) FROM {quote_identifier(self.table)}").fetchone()[0])

    def boundary_rowids(self, field: str) -> tuple[int, ...]:
        """Rowids of a row with the smallest value of ``field``, one with the largest and one where it is
        NULL (those that exist): what a slice keeps beside its rows (``sqlite_slice.py``)."""
        return self.group_boundary_rowids((), field)

    def group_boundary_rowids(self, groups: Sequence[str], field: str) -> tuple[int, ...]:
        """For every group of rows with equal values of the fields ``groups`` (the whole table if none), the
        rowids of a row with the group's smallest value of ``field``, one with its largest and one where it
        is NULL (those that exist): what a skip-scan's slice keeps (``sqlite_slice.py``). Computed from the
        table's columns (``sqlite_columns.py``), not by scans of the table."""
        for name in (*groups, field):
            self.translator.column(name)  # an unknown field is an error naming the allowed ones
        return self.table_columns().group_boundary_rowids(groups, field)

    def empty_twin(self, path: str | os.PathLike) -> "SQLiteEngine":
        """An engine on a new file at ``path`` holding this table's definition and statistics, no rows and
        no index; rows come from ``copy_rows`` (a slice, ``sqlite_slice.py``)."""
        twin = SQLiteEngine(path, table=self.table)
        conn = twin._conn
        try:
            conn.execute(f"PRAGMA page_size = {int(self._conn.execute('PRAGMA page_size').fetchone()[0])}")
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            create_with_statistics(conn, self._table_sql(), self._table_statistics())
        except BaseException:
            twin.close()
            raise
        return self._configured_like_this(twin)

    def compact(self) -> bool:
        """Give back the pages that dropped indexes left free (``VACUUM``), so that a ``memory_copy`` holds
        only the rows and indexes that stand (after a search that built and dropped thousands of indexes the
        free pages were 3.5x the table); True when there were any. Rows, indexes and statistics stay."""
        if not int(self._conn.execute("PRAGMA freelist_count").fetchone()[0]):
            return False
        self._conn.execute("VACUUM")
        self._names = None  # root pages may have moved
        return True

    def memory_copy(self) -> "SQLiteEngine":
        """A copy of this database as it stands (rows, indexes, statistics) in this process's memory, made
        page by page with SQLite's backup API: evaluation measures configurations side by side, each on its
        own copy (``evaluation.py``)."""
        copy = SQLiteEngine(":memory:", table=self.table)
        try:
            self._conn.backup(copy._conn)
            copy._conn.execute("PRAGMA secure_delete = OFF")
        except BaseException:
            copy.close()
            raise
        return self._configured_like_this(copy)

    @classmethod
    def _from_image(cls, image: bytes, table: str) -> "SQLiteEngine":
        """An engine on an in-memory database holding ``image`` (a verified database file's content)."""
        # The image is opened as a serialized database, then copied page by page into an ordinary in-memory
        # database: a deserialized one cannot grow past 1 GiB, and the indexes kept may.
        image_db = sqlite3.connect(":memory:")
        try:
            image_db.deserialize(image)
            engine = cls(":memory:", table=table)
            try:
                image_db.backup(engine._conn)
                engine._conn.execute("PRAGMA secure_delete = OFF")  # as in a file copy: dropped pages not zeroed
            except BaseException:
                engine.close()
                raise
        finally:
            image_db.close()
        return engine

    def kept_copy(self, configuration: Sequence[IndexSpec]) -> "SQLiteEngine | None":
        """An in-memory copy of the cached base database with exactly ``configuration``'s indexes (created in
        this order) and their statistics, loaded from the copies kept on disk (``sqlite_kept_copies.py``);
        None where none is kept or the one kept holds other indexes (then build on a ``memory_copy`` and
        ``keep_copy`` it)."""
        if self._kept_directory is None:
            return None
        image = kept_image(self._kept_directory, self._kept_key(configuration))
        if image is None:
            return None
        copy = self._from_image(image, self.table)
        del image
        if copy.list_indexes() != sorted(configuration):
            copy.close()
            return None
        return self._configured_like_this(copy)

    def keep_copy(self, copy: "SQLiteEngine", configuration: Sequence[IndexSpec]) -> bool:
        """Keep ``copy`` (a ``memory_copy`` of the base database on which exactly ``configuration`` was just
        built, in this order) on disk for ``kept_copy``; False where it is not kept."""
        if self._kept_directory is None:
            return False
        return keep_copy(self._kept_directory, self._kept_key(configuration), copy._conn)

    def _kept_key(self, configuration: Sequence[IndexSpec]) -> str:
        return kept_key([self.translator.create_index(spec) for spec in configuration])

    def _configured_like_this(self, other: "SQLiteEngine") -> "SQLiteEngine":
        """``other`` (a copy of this table) with this engine's field translation and work granularity."""
        other._translator = SQLTranslator(self.table, self.translator.fields)
        other.work_granularity = self.work_granularity
        return other

    def copy_rows(self, path: str | os.PathLike, where: str, params: Sequence, skip_present: bool = False) -> int:
        """Copy the rows matching ``where`` (SQL with bound ``params``, from ``slice_where``) into the table
        of the database file ``path`` (an ``empty_twin``), rowids kept, leaving out those it holds already
        if ``skip_present``; returns how many were copied."""
        table = quote_identifier(self.table)
        columns = ", ".join(self.translator.column(name) for name in self.translator.fields)
        conn = self._conn
        conn.execute("ATTACH DATABASE ? AS wield_slice", (str(path),))
        try:
            before = conn.total_changes
            conn.execute(f"INSERT {'OR IGNORE ' if skip_present else ''}INTO wield_slice.{table} (rowid, {columns}) "
                         f"SELECT rowid, {columns} FROM main.{table} WHERE {where}", list(params))
            return conn.total_changes - before
        finally:
            conn.execute("DETACH DATABASE wield_slice")

    def index_geometry(self, spec: IndexSpec) -> IndexGeometry:
        """The size and ``sqlite_stat1`` line the index would have, computed exactly without building it
        (``sqlite_index_size.py``; the table's columns are read once, on first use)."""
        if self._index_sizes is None:
            self._index_sizes = SQLiteIndexSizes(self.table_columns(), reserved=self._reserved_bytes())
        return self._index_sizes.geometry(spec)

    def table_columns(self) -> TableColumns:
        """The table's columns as arrays (``sqlite_columns.py``): each read on first use, or loaded from beside
        the cached base database this engine copies."""
        if self._columns is None:
            columns = {name: self.translator.column(name) for name in self.translator.fields}
            self._columns = TableColumns(self._conn, self.table, columns, self._columns_directory)
        return self._columns

    def program_work(self, query, used: Sequence[IndexSpec], instructions: tuple) -> QueryResult | None:
        """The work of ``instructions`` (``query``'s program over the indexes ``used``: one forced, or an
        OR's one per branch; as ``program`` gives it), counted from the table's columns without running it
        (``sqlite_work_model.py``), as ``run_query`` would measure it; None where the model does not
        interpret the program. No latency (NaN)."""
        _, params = self._sql(query)
        counted = self.work_model().count(used, instructions, params)
        if counted is None:
            return None
        # the progress handler is called once per WORK_GRANULARITY instructions counted
        steps = counted.instructions // self.work_granularity
        return QueryResult(latency_s=float("nan"), work=float(steps * self.work_granularity),
                           indexes_used=counted.indexes, rows=counted.rows)

    def work_model(self) -> WorkModel:
        """The work model of this engine's table (made on first use)."""
        if self._work_model is None:
            declared = {row[1]: str(row[2]) for row in  # in column order
                        self._conn.execute(f"PRAGMA table_info({quote_identifier(self.table)})")}
            self._work_model = WorkModel(self._conn, self.table, list(declared), declared, self.table_columns())
        return self._work_model

    def _reserved_bytes(self) -> int:
        """Bytes kept free at the end of every page: byte 20 of the database header (0 in memory)."""
        try:
            with open(self.path, "rb") as header:
                data = header.read(100)
        except OSError:
            return 0
        return data[20] if len(data) == 100 and data.startswith(b"SQLite format 3\0") else 0

    def index_statistics(self, spec: IndexSpec) -> str:
        """The ``sqlite_stat1`` line ``ANALYZE`` wrote for an existing index (what the planner reads)."""
        row = self._conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = ?", (spec.name,)).fetchone()
        if row is None:
            raise ConfigError("index", spec.name, reason="no such index, or it was never analysed")
        return str(row[0])

    def program(self, query, force: str | None = None) -> tuple:
        """The query's bytecode as ``sqlite_whatif.program`` normalises it (``force`` as in ``run_query``)."""
        if self._names is None:
            self._names = object_names(self._conn)
        sql, params = self._sql(query, force)
        try:
            return program(self._conn, sql, params, self._names)
        except sqlite3.Error as exc:
            raise SystemFailure(f"SQLite rejected the query {sql!r}: {exc}") from exc

    def identity(self) -> dict:
        """What this database's deterministic measurements (sizes, statistics, work) depend on besides the
        collection's data: the library, page size, table definition and statistics, the work unit and the
        revision of the model that counts work (``sqlite_work_model.MODEL_REVISION``)."""
        return {"engine": self.name, "sqlite_version": sqlite3.sqlite_version,
                "page_size": self._conn.execute("PRAGMA page_size").fetchone()[0], "table": self._table_sql(),
                "table_statistics": [row[2] for row in self._table_statistics()],
                "work_granularity": self.work_granularity, "work_model": MODEL_REVISION}

    def table_slices(self, store=None) -> TableSlices:
        """Slices of this table to measure forced programs' work on without building their indexes on all
        of it (``sqlite_slice.py``); ``store``, a ``MeasurementStore``, keeps what they find of the data."""
        return TableSlices(self, store=store)

    def whatif_planner(self) -> SQLiteWhatIfPlanner:
        """A planner over an empty, statistics-only copy of this database's table (``sqlite_whatif.py``)."""
        return SQLiteWhatIfPlanner(self.table, self._table_sql(), self._table_statistics(), self.translator)

    def _table_sql(self) -> str:
        """The collection table's CREATE TABLE statement."""
        return self._conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?",
                                  (self.table,)).fetchone()[0]

    def _table_statistics(self) -> list[tuple]:
        """The table's own ``sqlite_stat1`` rows (tbl, idx, stat), without those of its indexes."""
        return self._conn.execute("SELECT tbl, idx, stat FROM sqlite_stat1 WHERE tbl = ? AND idx IS NULL",
                                  (self.table,)).fetchall()

    def collection_size(self) -> int:
        return self._object_size(self.table)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            if getattr(self, "_owns_file", False):
                self.path.unlink(missing_ok=True)

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def translator(self) -> SQLTranslator:
        if self._translator is None:
            raise SystemFailure(f"no collection loaded in {self.path}")
        return self._translator

    def _sql(self, query, force: str | None = None) -> tuple[str, list]:
        key = (query.key(), force)
        if key not in self._sql_cache:
            hint = "" if force is None else ("NOT INDEXED" if force == "" else f"INDEXED BY {quote_identifier(force)}")
            self._sql_cache[key] = self.translator.select(query, hint)
        return self._sql_cache[key]

    def _table_exists(self) -> bool:
        row = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                 (self.table,)).fetchone()
        return row is not None

    def _table_fields(self) -> list[str]:
        return [r[1] for r in self._conn.execute(f"PRAGMA table_info({quote_identifier(self.table)})")]

    def _object_size(self, name: str) -> int:
        row = self._conn.execute("SELECT pgsize FROM dbstat WHERE name = ? AND aggregate = TRUE",
                                 (name,)).fetchone()
        if row is None or row[0] is None:
            raise ConfigError("index", name, reason="no such table or index in the database")
        return int(row[0])


class _StorageCheckedConnection(sqlite3.Connection):
    """A connection whose storage failures (a full disk, a file-size limit, a read-only file) are a
    ``SystemFailure`` naming the database file, not a bare ``sqlite3.OperationalError``."""

    database_path: Path | None = None

    def execute(self, *args, **kwargs):
        return self._checked(super().execute, *args, **kwargs)

    def executemany(self, *args, **kwargs):
        return self._checked(super().executemany, *args, **kwargs)

    def _checked(self, call, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            failure = _storage_failure(self.database_path, exc)
            if failure is None:
                raise
            raise failure from exc


_STORAGE_ERRORS = ("disk i/o error", "database or disk is full", "unable to open database file", "readonly database")


def _storage_failure(path: Path | None, exc: sqlite3.OperationalError) -> SystemFailure | None:
    if not any(marker in str(exc).lower() for marker in _STORAGE_ERRORS):
        return None
    return SystemFailure(f"SQLite cannot write {path}: {exc} (the disk is full, a file-size limit (ulimit -f) "
                         "was reached or the file or its directory is read-only)")


def _entry_beside(base: Path, kind: str) -> Path | None:
    """Where the entry of ``kind`` derived from the cached base database ``base`` is kept (by its recorded
    sha256): its columns (``COLUMNS``), its copies with indexes built (``KEPT``)."""
    recorded = _recorded(base)
    return entry_beside(base, kind, recorded) if recorded is not None else None


def _recorded(path: Path) -> str | None:
    """The sha256 recorded for a cached database, or None when the database or its record is missing or
    unreadable, or the database is a symbolic link (never followed; then it is rebuilt in the link's place)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        record = read_json(record_path(path))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("bytes") != path.stat().st_size:
        return None
    digest = record.get("sha256")
    return digest if isinstance(digest, str) else None


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_COPY_BLOCK), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _copy_verified(base: Path, copy: Path) -> bool:
    """Copy ``base`` to ``copy`` while hashing it; True when the content matches the recorded sha256."""
    recorded = _recorded(base)
    if recorded is None:
        return False
    digest = hashlib.sha256()
    try:
        with open(base, "rb") as source, open(copy, "wb") as target:
            for block in iter(lambda: source.read(_COPY_BLOCK), b""):
                digest.update(block)
                target.write(block)
    except FileNotFoundError:  # removed meanwhile (wield cache clear)
        return False
    return digest.hexdigest() == recorded
