"""The MongoDB adapter of the indexing contract (pymongo), the engine of the original study.

- Each engine works on its own collection (``<name>_<random>``) in the URI's database (default
  ``wield``), so parallel runs never share indexes; ``close()`` drops it.
- Queries are translated by ``mql.py``: finds with filter / sort / limit, counts as the aggregation that
  ``count_documents`` runs. Values are operands of explicit operators, so they are data.
- Work (deterministic) = ``totalKeysExamined + totalDocsExamined`` from ``explain`` with
  ``executionStats``; indexes used = every ``indexName`` in the winning plan (one per ``$or`` branch when
  MongoDB plans the branches separately).
- Latency is the median wall time of ``repetitions`` executions with the cursor exhausted (with no
  repetitions: the explain's ``executionTimeMillis``); rows are the explain's ``nReturned`` (1 for a count).
- Sizes from ``$collStats`` storage statistics (``indexSizes``, ``storageSize``).
- Switching configurations hides indexes instead of dropping them (``collMod`` ``hidden``, MongoDB 4.4+):
  ``drop_index`` hides, ``create_index`` of a hidden index unhides it without a rebuild. On a server that
  cannot hide indexes the adapter drops and rebuilds.
- A password is never part of the URI (command lines and run records would show it): the URI names the
  user and ``$WIELD_MONGODB_PASSWORD`` holds the password.
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
import urllib.parse
from typing import Any, Callable, Iterator

from case_studies.indexing.engines.contract import IndexingEngine, QueryResult
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.mql import MQLQuery, MQLTranslator, spec_from_keys
from case_studies.indexing.engines.postgres import redact_uri
from wield.errors import ConfigError, SystemFailure

DEFAULT_DATABASE = "wield"
PASSWORD_VARIABLE = "WIELD_MONGODB_PASSWORD"
INSERT_BATCH = 10_000


def find_all(document: Any, key: str) -> Iterator[Any]:
    """Every value stored under ``key`` anywhere in a nested explain document, depth first."""
    if isinstance(document, dict):
        for name, value in document.items():
            if name == key:
                yield value
            yield from find_all(value, key)
    elif isinstance(document, list):
        for item in document:
            yield from find_all(item, key)


def explain_work(explained: dict) -> int:
    """totalKeysExamined + totalDocsExamined of an executionStats explain (find or aggregate)."""
    for stats in find_all(explained, "executionStats"):
        if isinstance(stats, dict) and "totalKeysExamined" in stats:
            return int(stats["totalKeysExamined"]) + int(stats["totalDocsExamined"])
    raise SystemFailure("MongoDB explain returned no executionStats")


def explain_indexes(explained: dict) -> tuple[str, ...]:
    """Index names in the winning plan(s), in plan order, without repeats."""
    names = []
    for plan in find_all(explained, "winningPlan"):
        names.extend(name for name in find_all(plan, "indexName") if isinstance(name, str))
    return tuple(dict.fromkeys(names))


class MongoEngine(IndexingEngine):
    """An indexing engine over one MongoDB collection."""

    name = "mongodb"
    work_unit = "MongoDB keys + documents examined"

    def __init__(self, uri: str, collection_name: str, server_timeout_ms: int = 5000) -> None:
        import pymongo

        self._pymongo = pymongo
        self.uri = uri
        self._translator: MQLTranslator | None = None
        self._mql_cache: dict[str, MQLQuery] = {}
        self._hidden: set[str] = set()
        self._can_hide = True
        self._owns_collection = False
        self.where = redact_uri(uri)
        try:
            # a password never travels in the URI (argv, run records): it comes from the environment
            password = {"password": os.environ[PASSWORD_VARIABLE]} if os.environ.get(PASSWORD_VARIABLE) else {}
            self._client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=server_timeout_ms,
                                               connectTimeoutMS=server_timeout_ms, **password)
        except (pymongo.errors.ConfigurationError, pymongo.errors.InvalidURI, ValueError) as exc:
            raise ConfigError("uri", self.where, reason=f"not a MongoDB connection URI: {exc}") from exc
        database = urllib.parse.urlsplit(uri).path.strip("/") or DEFAULT_DATABASE
        self._db = self._client[database]
        self.collection_name = collection_name
        self._collection = self._db[collection_name]
        try:
            self._call("connecting", lambda: self._client.admin.command("ping"))
        except SystemFailure:
            self.close()
            raise

    @classmethod
    def for_collection(cls, collection, uri: str) -> "MongoEngine":
        """An engine on a private collection holding ``collection`` (loaded now)."""
        engine = cls(uri, f"{collection.name}_{secrets.token_hex(6)}")
        engine._owns_collection = True
        try:
            engine.load(collection)
        except BaseException:
            engine.close()
            raise
        return engine

    # -- contract --------------------------------------------------------------------------------
    def load(self, collection) -> None:
        names = collection.field_names

        def load() -> None:
            if self.collection_name in self._db.list_collection_names():
                raise SystemFailure(f"collection {self.collection_name!r} already exists at {self.where}")
            batch = []
            for number, row in enumerate(collection.rows()):
                batch.append({"_id": number, **dict(zip(names, row))})
                if len(batch) == INSERT_BATCH:
                    self._collection.insert_many(batch, ordered=True)
                    batch = []
            if batch:
                self._collection.insert_many(batch, ordered=True)

        self._call("loading the collection", load)
        self._translator = MQLTranslator(names)

    def create_index(self, spec: IndexSpec) -> None:
        if spec.name in self._hidden:
            self._call("unhiding an index", lambda: self._set_hidden(spec.name, False))
            self._hidden.discard(spec.name)
            return
        keys = self.translator.index_keys(spec)
        self._call("creating an index", lambda: self._collection.create_index(keys, name=spec.name))

    def drop_index(self, spec: IndexSpec) -> None:
        present = {entry["name"]: entry for entry in self._index_entries()}
        if spec.name not in present or spec.name in self._hidden:
            return
        if self._can_hide:
            try:
                self._set_hidden(spec.name, True)
                self._hidden.add(spec.name)
                return
            except self._pymongo.errors.OperationFailure:
                self._can_hide = False  # a server before 4.4: drop and rebuild instead
            except self._pymongo.errors.PyMongoError as exc:
                self._raise("hiding an index", exc)
        self._call("dropping an index", lambda: self._collection.drop_index(spec.name))

    def list_indexes(self) -> list[IndexSpec]:
        return sorted(spec_from_keys(entry["key"].items()) for entry in self._index_entries()
                      if entry["name"] != "_id_" and not entry.get("hidden", False))

    def run_query(self, query, repetitions: int = 3) -> QueryResult:
        mql = self._mql(query)
        command = mql.command(self.collection_name)
        explained = self._call("explaining a query", lambda: self._db.command(
            "explain", command, verbosity="executionStats"))
        timings = []

        def execute() -> None:
            if mql.is_count:
                list(self._collection.aggregate(mql.count_pipeline))
                return
            cursor = self._collection.find(mql.filter, sort=list(mql.sort.items()) if mql.sort else None,
                                           limit=mql.limit or 0)
            for _ in cursor:
                pass

        for _ in range(repetitions):
            start = time.perf_counter()
            self._call("executing a query", execute)
            timings.append(time.perf_counter() - start)
        stats = next((s for s in find_all(explained, "executionStats")
                      if isinstance(s, dict) and "totalKeysExamined" in s), {})
        if timings:
            latency = statistics.median(timings)
        else:  # no repetitions: the server's own execution time of the explained run
            latency = float(stats.get("executionTimeMillis", 0)) / 1000
        rows = 1 if mql.is_count else int(stats.get("nReturned", 0))  # a count returns one row, like SQL
        stages = tuple(str(stage) for plan in find_all(explained, "winningPlan")
                       for stage in find_all(plan, "stage"))
        return QueryResult(latency_s=latency, work=float(explain_work(explained)),
                           indexes_used=explain_indexes(explained), rows=rows, plan=stages)

    def index_size(self, spec: IndexSpec) -> int:
        sizes = self._storage_stats().get("indexSizes", {})
        if spec.name not in sizes:
            raise ConfigError("index", spec.name, reason="no such index in the collection")
        return int(sizes[spec.name])

    def collection_size(self) -> int:
        return int(self._storage_stats().get("storageSize", 0))

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is None:
            return
        try:
            if self._owns_collection:
                self._collection.drop()
        except self._pymongo.errors.PyMongoError:
            pass  # the server is gone: nothing more to clean up from here
        finally:
            client.close()

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def translator(self) -> MQLTranslator:
        if self._translator is None:
            raise SystemFailure(f"no collection loaded in {self.collection_name!r} at {self.where}")
        return self._translator

    def _mql(self, query) -> MQLQuery:
        key = query.key()
        if key not in self._mql_cache:
            self._mql_cache[key] = self.translator.query(query)
        return self._mql_cache[key]

    def _index_entries(self) -> list[dict]:
        return self._call("listing indexes", lambda: list(self._collection.list_indexes()))

    def _set_hidden(self, name: str, hidden: bool) -> None:
        self._db.command("collMod", self.collection_name, index={"name": name, "hidden": hidden})

    def _storage_stats(self) -> dict:
        stats = self._call("reading collection statistics", lambda: list(self._collection.aggregate(
            [{"$collStats": {"storageStats": {}}}])))
        return stats[0]["storageStats"] if stats else {}

    def _call(self, what: str, function: Callable[[], Any]) -> Any:
        if self._client is None:
            raise SystemFailure(f"the MongoDB engine at {self.where} is closed")
        try:
            return function()
        except self._pymongo.errors.PyMongoError as exc:
            self._raise(what, exc)

    def _raise(self, what: str, exc: BaseException) -> None:
        lost = isinstance(exc, (self._pymongo.errors.ConnectionFailure,
                                self._pymongo.errors.ServerSelectionTimeoutError))
        hint = " (the server is unreachable or stopped)" if lost else ""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        text = text.split(", Timeout:")[0][:300]  # drop pymongo's topology dump
        raise SystemFailure(f"MongoDB at {self.where} failed while {what}{hint}: {text}") from exc
