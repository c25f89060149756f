"""The PostgreSQL adapter of the indexing contract (psycopg 3), with a hypopg what-if mode.

- Each engine works in its own schema (``wield_<12 hex digits>``) of the server's database, so parallel runs
  and trials on one server never see each other's tables or indexes; ``close()`` drops the schema. While
  open, the engine's session holds a (shared) advisory lock named after its schema; a run killed before it
  could drop its schema leaves it unlocked, and the next engine (or ``wield db start``) drops such orphans.
- The collection becomes one table with typed columns (bigint, double precision, text), loaded with
  ``COPY``; autovacuum is off for it and ``VACUUM ANALYZE`` runs after loading with a statistics target
  large enough to sample every row, so planner statistics (and therefore plans) are the same every run.
- Queries are parameterised SQL (``sql.py`` with ``%s`` placeholders): values are bound, identifiers are
  validated against the collection and quoted.
- Sessions disable parallel workers and JIT and force custom plans (psycopg never prepares), so a
  query's plan and its counts do not change between executions.
- Work (deterministic) = shared buffer accesses (hit + read, so the cache state does not matter) of the
  executed plan + rows examined (rows every plan node produced, plus rows its filters removed), both from
  ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)``; planning buffers are not counted. It is read from the second
  of two executions, so what the session cached from earlier queries (an index's metapage) does not count.
- Latency is the median wall time of ``repetitions`` executions with all rows fetched by the client (with
  no repetitions: the server's execution time of the EXPLAIN ANALYZE run).
- Indexes used come from the plan (every ``Index Name``, e.g. both arms of a BitmapOr); sizes from
  ``pg_relation_size``.
- What-if mode (``whatif=True``): indexes are hypothetical (hypopg), nothing is built; work is the
  planner's estimated total cost from ``EXPLAIN (FORMAT JSON)`` and sizes are hypopg's estimates. Latency
  is not measured (NaN). ``leave_whatif()`` drops the hypothetical indexes and turns the engine real, so a
  run can train on estimates and be evaluated for real on the same data.
"""

from __future__ import annotations

import math
import re
import secrets
import statistics
import time
import urllib.parse
from typing import Any, Callable, Iterator

from case_studies.indexing.engines.contract import IndexingEngine, QueryResult, check_field_names
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sql import SQLTranslator, quote_identifier
from wield.errors import ConfigError, SystemFailure

_SQL_TYPES = {"int": "bigint", "float": "double precision", "text": "text"}
_SESSION_SETTINGS = ("SET max_parallel_workers_per_gather = 0", "SET jit = off",
                     "SET plan_cache_mode = force_custom_plan")
_ROWS_REMOVED = ("Rows Removed by Filter", "Rows Removed by Index Recheck", "Rows Removed by Join Filter")
PRIVATE_SCHEMA = re.compile(r"^wield_[0-9a-f]{12}$")
_SCHEMA_LOCK = "hashtextextended(%s, 0)"


def drop_orphan_schemas(conn) -> list[str]:
    """Drop every private schema (``wield_<12 hex>``) that no open engine holds (its run was killed);
    schemas this connection's role may not drop are left alone. Returns the dropped names."""
    import psycopg

    dropped = []
    names = [row[0] for row in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'wield\\_%'")]
    for name in filter(PRIVATE_SCHEMA.match, names):
        if not conn.execute(f"SELECT pg_try_advisory_lock({_SCHEMA_LOCK})", (name,)).fetchone()[0]:
            continue  # an engine holds it
        try:
            conn.execute(f"DROP SCHEMA IF EXISTS {quote_identifier(name)} CASCADE")
            dropped.append(name)
        except psycopg.errors.InsufficientPrivilege:
            pass
        finally:
            conn.execute(f"SELECT pg_advisory_unlock({_SCHEMA_LOCK})", (name,))
    return dropped


def redact_uri(uri: str) -> str:
    """The URI with its password (user part or ``password`` parameter) replaced by ``***``, for messages."""
    try:
        parts = urllib.parse.urlsplit(uri)
        password = parts.password
    except ValueError:
        return "<unparseable URI>"
    if password is not None:
        user, _, host = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}")
    if "password" in urllib.parse.parse_qs(parts.query):
        query = [(key, "***" if key == "password" else value)
                 for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
        parts = parts._replace(query=urllib.parse.urlencode(query, safe="*/"))
    return urllib.parse.urlunsplit(parts)


def plan_nodes(node: dict) -> Iterator[dict]:
    """Every node of an EXPLAIN JSON plan, depth first."""
    yield node
    for child in node.get("Plans", ()):
        yield from plan_nodes(child)


def plan_work(plan: dict) -> tuple[int, int]:
    """(shared buffer accesses, rows examined) of an executed EXPLAIN (ANALYZE, BUFFERS) plan."""
    buffers = int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))
    rows = 0
    for node in plan_nodes(plan):
        loops = int(node.get("Actual Loops", 1))
        rows += int(round(float(node.get("Actual Rows", 0)) * loops))
        rows += sum(int(round(float(node.get(key, 0)) * loops)) for key in _ROWS_REMOVED)
    return buffers, rows


def plan_indexes(plan: dict) -> tuple[str, ...]:
    """Names of the indexes a plan uses, in plan order, without repeats."""
    return tuple(dict.fromkeys(node["Index Name"] for node in plan_nodes(plan) if "Index Name" in node))


class PostgresEngine(IndexingEngine):
    """An indexing engine over one table in a private schema of a PostgreSQL database."""

    name = "postgres"
    work_unit = "PostgreSQL shared buffers + rows examined"

    def __init__(self, uri: str, table: str, schema: str | None = None, whatif: bool = False,
                 connect_timeout: int = 10) -> None:
        import psycopg

        self._psycopg = psycopg
        self.uri = uri
        self.where = redact_uri(uri)
        self.table = table
        self.schema = schema or f"wield_{secrets.token_hex(6)}"
        quote_identifier(self.table)
        quote_identifier(self.schema)
        self.whatif = False
        self._conn = None
        try:
            self._conn = psycopg.connect(uri, autocommit=True, prepare_threshold=None,
                                         connect_timeout=connect_timeout)
        except psycopg.Error as exc:
            raise SystemFailure(f"cannot connect to PostgreSQL at {self.where}: {_first_line(exc)} "
                                f"(start a server with 'wield db start postgres --dir DIR' and pass the URI it "
                                f"prints)") from exc
        except Exception as exc:  # psycopg raises ProgrammingError / ValueError for a malformed URI
            raise ConfigError("uri", self.where, reason=f"not a PostgreSQL connection URI: {exc}") from exc
        self._owns_schema = schema is None
        self._translator: SQLTranslator | None = None
        self._sql_cache: dict[str, tuple[str, list]] = {}
        self._hypothetical: dict[IndexSpec, tuple[int, str]] = {}
        self._call("opening the session", self._open_session)
        if whatif:
            self.enter_whatif()

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def for_collection(cls, collection, uri: str, whatif: bool = False) -> "PostgresEngine":
        """An engine on a private schema holding ``collection`` (loaded now)."""
        engine = cls(uri, table=collection.name)
        try:
            engine.load(collection)
            if whatif:
                engine.enter_whatif()
        except BaseException:
            engine.close()
            raise
        return engine

    def _open_session(self) -> None:
        # held until the session ends: the schema is in use (see drop_orphan_schemas)
        self._conn.execute(f"SELECT pg_advisory_lock_shared({_SCHEMA_LOCK})", (self.schema,))
        if self._owns_schema:
            drop_orphan_schemas(self._conn)
            self._conn.execute(f"CREATE SCHEMA {quote_identifier(self.schema)}")
        self._conn.execute(f"SET search_path TO {quote_identifier(self.schema)}")
        for setting in _SESSION_SETTINGS:
            self._conn.execute(setting)
        if self._table_exists():
            self._translator = SQLTranslator(self.table, self._table_fields(), placeholder="%s")

    # -- contract --------------------------------------------------------------------------------
    def load(self, collection) -> None:
        check_field_names(collection.field_names, "postgres", f"collection '{collection.name}'")

        def load() -> None:
            if self._table_exists():
                raise SystemFailure(f"table {self.table!r} already exists in schema {self.schema!r}")
            translator = SQLTranslator(self.table, collection.field_names, placeholder="%s")
            conn = self._conn
            conn.execute(translator.create_table([(f.name, _SQL_TYPES[f.kind]) for f in collection.fields]))
            conn.execute(f"ALTER TABLE {translator.table} SET (autovacuum_enabled = false)")
            columns = ", ".join(quote_identifier(f) for f in collection.field_names)
            with conn.cursor() as cursor:
                with cursor.copy(f"COPY {translator.table} ({columns}) FROM STDIN") as copy:
                    for row in collection.rows():
                        copy.write_row(row)
            # A statistics target whose sample (300 x target rows) covers the whole table: exact, repeatable
            # statistics instead of a random sample.
            target = min(10_000, max(100, math.ceil(len(collection) / 300) + 1))
            conn.execute(f"SET default_statistics_target = {int(target)}")
            conn.execute(f"VACUUM (ANALYZE) {translator.table}")
            conn.execute("RESET default_statistics_target")
            self._translator = translator

        self._call("loading the collection", load)

    def create_index(self, spec: IndexSpec) -> None:
        statement = self.translator.create_index(spec)
        if self.whatif:
            if spec in self._hypothetical:
                return
            row = self._call("creating a hypothetical index", lambda: self._conn.execute(
                "SELECT indexrelid, indexname FROM public.hypopg_create_index(%s)", (statement,)).fetchone())
            self._hypothetical[spec] = (int(row[0]), str(row[1]))
            return
        self._call("creating an index", lambda: self._conn.execute(statement))

    def drop_index(self, spec: IndexSpec) -> None:
        if self.whatif:
            entry = self._hypothetical.pop(spec, None)
            if entry is not None:
                self._call("dropping a hypothetical index", lambda: self._conn.execute(
                    "SELECT public.hypopg_drop_index(%s)", (entry[0],)))
            return
        self._call("dropping an index", lambda: self._conn.execute(
            f"DROP INDEX IF EXISTS {self._qualified(spec.name)}"))

    def list_indexes(self) -> list[IndexSpec]:
        if self.whatif:
            return sorted(self._hypothetical)
        rows = self._call("listing indexes", lambda: self._conn.execute(
            """SELECT c.relname,
                      array_agg(a.attname::text ORDER BY k.ord),
                      array_agg((i.indoption[k.ord - 1] & 1) ORDER BY k.ord)
               FROM pg_index i
               JOIN pg_class c ON c.oid = i.indexrelid
               CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
               WHERE i.indrelid = to_regclass(%s)
               GROUP BY c.relname""", (self._qualified(self.table),)).fetchall())
        return sorted(IndexSpec.of(zip(names, ["desc" if flag else "asc" for flag in flags]))
                      for _, names, flags in rows)

    def run_query(self, query, repetitions: int = 3) -> QueryResult:
        sql, params = self._sql(query)
        if self.whatif:
            plan = self._explain("EXPLAIN (FORMAT JSON) ", sql, params)["Plan"]
            names = {name: spec.name for spec, (_, name) in self._hypothetical.items()}
            used = tuple(names.get(name, name) for name in plan_indexes(plan))
            return QueryResult(latency_s=math.nan, work=float(plan["Total Cost"]), indexes_used=used,
                               rows=int(plan.get("Plan Rows", 0)), plan=(plan["Node Type"],))
        # Counted on the second of two executions: the first loads what a backend caches per index (its
        # B-tree metapage) and catalog entry, so the count does not depend on whether this session used the
        # index before (history) but only on the plan and the data.
        self._explain("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ", sql, params)
        explained = self._explain("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ", sql, params)
        plan = explained["Plan"]
        buffers, examined = plan_work(plan)
        rows = int(plan.get("Actual Rows", 0))
        timings = self.time_query(query, repetitions)
        latency = statistics.median(timings) if timings else float(explained.get("Execution Time", 0.0)) / 1000
        summary = tuple(f"{node['Node Type']}" + (f" USING {node['Index Name']}" if "Index Name" in node else "")
                        for node in plan_nodes(plan))
        return QueryResult(latency_s=latency, work=float(buffers + examined), indexes_used=plan_indexes(plan),
                           rows=rows, plan=summary)

    def time_query(self, query, repetitions: int = 1) -> list[float]:
        """Wall seconds of ``repetitions`` bare executions of ``query`` (rows fetched; no EXPLAIN, no buffer
        count): the latency rounds of evaluation. A what-if engine measures no latency (NaN)."""
        if self.whatif:
            return [math.nan] * repetitions
        sql, params = self._sql(query)
        timings: list[float] = []

        def execute() -> None:
            with self._conn.cursor() as cursor:
                for _ in range(repetitions):
                    start = time.perf_counter()
                    cursor.execute(sql, params)
                    cursor.fetchall()
                    timings.append(time.perf_counter() - start)

        self._call("executing a query", execute)
        return timings

    def index_size(self, spec: IndexSpec) -> int:
        if self.whatif:
            if spec not in self._hypothetical:
                raise ConfigError("index", spec.name, reason="no such hypothetical index")
            oid = self._hypothetical[spec][0]
            return int(self._call("measuring a hypothetical index", lambda: self._conn.execute(
                "SELECT public.hypopg_relation_size(%s)", (oid,)).fetchone()[0]))
        return self._relation_size(spec.name, "index")

    def collection_size(self) -> int:
        return self._relation_size(self.table, "table")

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if self._owns_schema and not conn.closed:
                conn.execute(f"DROP SCHEMA IF EXISTS {quote_identifier(self.schema)} CASCADE")
        except self._psycopg.Error:
            pass  # the server is gone: nothing more to clean up from here
        finally:
            conn.close()

    # -- what-if mode ----------------------------------------------------------------------------
    def enter_whatif(self) -> None:
        """Switch to hypothetical indexes (needs the hypopg extension on the server)."""
        def enable() -> None:
            try:
                self._conn.execute("CREATE EXTENSION IF NOT EXISTS hypopg SCHEMA public")
            except self._psycopg.errors.UniqueViolation:
                pass  # another session created it at the same moment
        try:
            self._call("enabling hypopg", enable)
        except SystemFailure as exc:
            raise SystemFailure(f"{exc} (the what-if mode needs the hypopg extension: apt-get install "
                                f"postgresql-15-hypopg)") from exc
        self.whatif = True

    def leave_whatif(self) -> None:
        """Drop every hypothetical index and measure for real from now on."""
        if self.whatif:
            self._call("resetting hypopg", lambda: self._conn.execute("SELECT public.hypopg_reset()"))
            self._hypothetical.clear()
            self.whatif = False

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def translator(self) -> SQLTranslator:
        if self._translator is None:
            raise SystemFailure(f"no collection loaded in schema {self.schema!r} at {self.where}")
        return self._translator

    def _call(self, what: str, function: Callable[[], Any]) -> Any:
        """Run ``function``; a database error becomes a SystemFailure saying what failed and where."""
        if self._conn is None:
            raise SystemFailure(f"the PostgreSQL engine at {self.where} is closed")
        try:
            return function()
        except self._psycopg.Error as exc:
            lost = self._conn.closed or isinstance(exc, self._psycopg.OperationalError)
            hint = " (the server stopped or the connection was lost)" if lost else ""
            raise SystemFailure(f"PostgreSQL at {self.where} failed while {what}{hint}: "
                                f"{_first_line(exc)}") from exc

    def _explain(self, prefix: str, sql: str, params: list) -> dict:
        row = self._call("explaining a query", lambda: self._conn.execute(prefix + sql, params).fetchone())
        document = row[0]
        return document[0] if isinstance(document, list) else document

    def _sql(self, query) -> tuple[str, list]:
        key = query.key()
        if key not in self._sql_cache:
            self._sql_cache[key] = self.translator.select(query)
        return self._sql_cache[key]

    def _qualified(self, name: str) -> str:
        return f"{quote_identifier(self.schema)}.{quote_identifier(name)}"

    def _relation_size(self, name: str, what: str) -> int:
        size = self._call(f"measuring the {what} size", lambda: self._conn.execute(
            "SELECT pg_relation_size(to_regclass(%s))", (self._qualified(name),)).fetchone()[0])
        if size is None:
            raise ConfigError(what, name, reason=f"no such {what} in schema {self.schema!r}")
        return int(size)

    def _table_exists(self) -> bool:
        return self._conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                  (self._qualified(self.table),)).fetchone()[0]

    def _table_fields(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum", (self._qualified(self.table),)).fetchall()
        return [r[0] for r in rows]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
