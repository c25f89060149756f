"""MeasurementStore: deterministic measurements of one collection on one engine, kept across runs.

An index's size in bytes and the statistics ``ANALYZE`` writes for it, and a query's work under one
program, depend only on the data, the engine's version and (for work) the program; so do the rows a
skip-scan's slice keeps of every group of values (``engines/sqlite_slice.py``) and, under the work metric,
the index advisor's advice on a workload (``advisor.py``: every figure it reads is one of these). Measured
once on the engine, they are the same in every later trial, method and run on the same collection, so the indexing
adapter keeps them here and measures each at most once per collection. Latency is never stored: it is wall
time, measured in the run that reports it.

The store is a small SQLite database under the cache directory, ``measurements/<engine>-<identity>.sqlite``,
shared safely by parallel trial processes (write-ahead log, busy timeout, inserts that keep the first
value, and a lock file ``.<name>.lock`` held while a process sets the file up). Its identity hashes
everything the measurements depend on: the collection's fingerprint and the engine's description of itself
(for SQLite: library version, page size, table definition and statistics), so a changed collection, loader
or engine version starts an empty store instead of reusing stale figures; so does a new revision of the
store's layout (``STORE_REVISION``). A size an engine's exact model computed is kept marked as computed: a
build that measures it later replaces it, and when the model disagrees with a build every computed size is
removed, so no run after the disagreement reads a wrong figure from the store.

A failure of the file under the store (a full disk, a file-size limit, a read-only or failing device, a
damaged file) is never an ``sqlite3`` traceback: SQLite's errors become an ``OSError`` with the matching
errno and the store's path (a full disk: ENOSPC), or a ``DataError`` for a damaged store, each printed by
the command as one line saying what to do.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import sqlite3
from array import array
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from case_studies.indexing.index_spec import IndexSpec
from wield.cache import exclusive_lock
from wield.errors import DataError

F = TypeVar("F", bound=Callable[..., Any])
# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff) that say the file under the store
# failed, as the errno and advice of the OSError they become.
_FILE_FAULTS = {
    13: (errno.ENOSPC, "database or disk is full"),  # SQLITE_FULL
    10: (errno.EIO, "disk I/O error: the disk may be full, a file-size limit (ulimit -f) reached or the device "
                    "failing; free some space or raise the limit and rerun"),  # SQLITE_IOERR
    8: (errno.EROFS, "attempt to write a readonly database"),  # SQLITE_READONLY
    14: (errno.EACCES, "unable to open the database file"),  # SQLITE_CANTOPEN
    5: (errno.EBUSY, "the database stayed locked by another process for 60 s; rerun when it is done"),  # BUSY
    6: (errno.EBUSY, "the database stayed locked for 60 s; rerun when it is done"),  # SQLITE_LOCKED
}
_DAMAGED = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB

# The store's own layout, part of its identity: 2 since index names are injective (``IndexSpec.name``; the
# store keys sizes and records used indexes by name) and a size says whether a model computed it.
STORE_REVISION = 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS identity (body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS indexes (name TEXT PRIMARY KEY, spec TEXT NOT NULL, bytes INTEGER NOT NULL, "
    "statistics TEXT, computed INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS work (query TEXT NOT NULL, program TEXT NOT NULL, work REAL NOT NULL, "
    "rows INTEGER NOT NULL, indexes_used TEXT NOT NULL, PRIMARY KEY (query, program))",
    "CREATE TABLE IF NOT EXISTS group_rows (groups TEXT NOT NULL, field TEXT NOT NULL, rowids BLOB NOT NULL, "
    "PRIMARY KEY (groups, field))",
    "CREATE TABLE IF NOT EXISTS advice (key TEXT PRIMARY KEY, result TEXT NOT NULL)",
)
MAX_ADVICE_CHARS = 1 << 20  # a stored advice longer than this is not one the advisor wrote


def store_identity(collection_fingerprint: str, engine_identity: Mapping[str, Any]) -> str:
    """A short hash of what the measurements depend on (and of the store's revision)."""
    body = json.dumps({"collection": collection_fingerprint, "engine": dict(engine_identity),
                       "store": STORE_REVISION}, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:24]


@contextlib.contextmanager
def store_faults(path: Path) -> Iterator[None]:
    """Turn an ``sqlite3.Error`` of the store at ``path`` into an ``OSError`` (the file failed) or a
    ``DataError`` (the store is damaged), one line naming the file and what to do."""
    try:
        yield
    except sqlite3.Error as exc:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if code in _DAMAGED or "malformed" in message or "not a database" in message:
            raise DataError(f"{path}: the measurement store is damaged ({message}); remove it with 'wield cache "
                            "clear measurements' and rerun (it is rebuilt)") from None
        if code not in _FILE_FAULTS and ("disk is full" in message or "disk I/O error" in message):
            code = 13 if "disk is full" in message else 10
        number, reason = _FILE_FAULTS.get(code, (errno.EIO, message))
        raise OSError(number, f"the measurement store failed: {reason}", str(path)) from None


def _store_method(method: F) -> F:
    @functools.wraps(method)
    def guarded(self: "MeasurementStore", *args: Any, **kwargs: Any) -> Any:
        with store_faults(self.path):
            return method(self, *args, **kwargs)
    return guarded  # type: ignore[return-value]


class MeasurementStore:
    """Index sizes and statistics, and work by (query, program), for one collection on one engine."""

    def __init__(self, path: str | Path, identity: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with store_faults(self.path):
            self._open(identity)

    def _open(self, identity: Mapping[str, Any] | None) -> None:
        self._conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None,
                                     check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 60000")
        # Switching a new file to WAL needs it alone, and SQLite answers "database is locked" at once rather
        # than waiting when two processes set the same new store up together: they take turns.
        with exclusive_lock(self.path.parent / f".{self.path.name}.lock"):
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._conn.execute(statement)
            if identity is not None and self._conn.execute("SELECT COUNT(*) FROM identity").fetchone()[0] == 0:
                self._conn.execute("INSERT INTO identity (body) VALUES (?)", (json.dumps(dict(identity),
                                                                                       sort_keys=True),))

    @classmethod
    def for_engine(cls, cache_dir: str | Path, engine_name: str, collection_fingerprint: str,
                   engine_identity: Mapping[str, Any]) -> "MeasurementStore":
        """The store of one collection on one engine under ``cache_dir``."""
        key = store_identity(collection_fingerprint, engine_identity)
        return cls(Path(cache_dir) / "measurements" / f"{engine_name}-{key}.sqlite",
                   {"collection": collection_fingerprint, "store": STORE_REVISION, **engine_identity})

    # -- indexes -----------------------------------------------------------------------------------
    @_store_method
    def index(self, spec: IndexSpec) -> tuple[int, str | None, bool] | None:
        """(bytes, statistics, computed) of an index kept before, else None; ``computed``: an engine's exact
        model computed it (``engines/sqlite_index_size.py``) and no build has measured it since."""
        row = self._conn.execute("SELECT bytes, statistics, computed FROM indexes WHERE name = ?",
                                 (spec.name,)).fetchone()
        return (int(row[0]), row[1], bool(row[2])) if row else None

    @_store_method
    def put_index(self, spec: IndexSpec, size: int, statistics: str | None, computed: bool = False) -> None:
        """Keep an index's size and statistics: the first value stays, except that a measured one replaces
        a computed one."""
        values = (spec.name, json.dumps(spec.to_list()), int(size), statistics)
        if computed:
            self._conn.execute("INSERT OR IGNORE INTO indexes (name, spec, bytes, statistics, computed) "
                               "VALUES (?, ?, ?, ?, 1)", values)
        else:
            self._conn.execute("INSERT INTO indexes (name, spec, bytes, statistics, computed) VALUES (?, ?, ?, ?, 0) "
                               "ON CONFLICT (name) DO UPDATE SET bytes = excluded.bytes, "
                               "statistics = excluded.statistics, computed = 0 WHERE indexes.computed = 1", values)

    @_store_method
    def forget_computed(self) -> int:
        """Remove every size a model computed (the model disagreed with a build), so no run reads one
        again; returns how many were removed."""
        return self._conn.execute("DELETE FROM indexes WHERE computed = 1").rowcount

    # -- work --------------------------------------------------------------------------------------
    @_store_method
    def work(self, query_key: str, program: str) -> tuple[float, int, tuple[str, ...]] | None:
        """(work, rows, indexes used) of a query under a program measured before, else None."""
        row = self._conn.execute("SELECT work, rows, indexes_used FROM work WHERE query = ? AND program = ?",
                                 (query_key, program)).fetchone()
        return (float(row[0]), int(row[1]), tuple(json.loads(row[2]))) if row else None

    @_store_method
    def put_work(self, query_key: str, program: str, work: float, rows: int, indexes_used: tuple[str, ...]) -> None:
        self._conn.execute("INSERT OR IGNORE INTO work (query, program, work, rows, indexes_used) "
                           "VALUES (?, ?, ?, ?, ?)", (query_key, program, float(work), int(rows),
                                                      json.dumps(list(indexes_used))))

    # -- group rows of skip-scan slices ------------------------------------------------------------
    @_store_method
    def group_rows(self, groups: Sequence[str], field: str) -> tuple[int, ...] | None:
        """The rowids ``SQLiteEngine.group_boundary_rowids(groups, field)`` found before, else None."""
        row = self._conn.execute("SELECT rowids FROM group_rows WHERE groups = ? AND field = ?",
                                 (json.dumps(list(groups)), field)).fetchone()
        return tuple(array("q", row[0])) if row else None

    @_store_method
    def put_group_rows(self, groups: Sequence[str], field: str, rowids: Sequence[int]) -> None:
        self._conn.execute("INSERT OR IGNORE INTO group_rows (groups, field, rowids) VALUES (?, ?, ?)",
                           (json.dumps(list(groups)), field, array("q", rowids).tobytes()))

    # -- the index advisor's advice on a workload -----------------------------------------------------
    @_store_method
    def advice(self, key: str) -> dict[str, Any] | None:
        """The advice stored under ``key`` (``advisor.advice_key``: the workload and every setting the advice
        depends on), a JSON object, else None. An entry that is not one is a ``DataError`` naming the store."""
        row = self._conn.execute("SELECT result FROM advice WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        text = row[0]
        try:
            if not isinstance(text, str) or len(text) > MAX_ADVICE_CHARS:
                raise ValueError("not a JSON text of at most 1 MiB")
            found = json.loads(text)
            if not isinstance(found, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            raise DataError(f"{self.path}: the measurement store holds a damaged advice ({exc}); remove it with "
                            "'wield cache clear measurements' and rerun (it is rebuilt)") from None
        return found

    @_store_method
    def put_advice(self, key: str, result: Mapping[str, Any]) -> None:
        """Keep an advice (the first one stored under ``key`` stays)."""
        self._conn.execute("INSERT OR IGNORE INTO advice (key, result) VALUES (?, ?)",
                           (key, json.dumps(dict(result), sort_keys=True)))

    @_store_method
    def counts(self) -> dict[str, int]:
        return {table: self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("indexes", "work", "group_rows", "advice")}

    def close(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self._conn.close()
            self._conn = None
