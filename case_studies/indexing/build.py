"""Assemble the indexing task from its parts: collection -> engine -> system, schema, converter, env.

Both the experiment runner and the registered gymnasium environment build through here, so there is one
place that decides how the parts fit together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.engines.contract import IndexingEngine
from case_studies.indexing.schema import IndexingSchema
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.statistics import ColumnStatistics
from case_studies.indexing.system import IndexingSystem
from wield.envs import WieldEnv
from wield.errors import ConfigError

ENGINES = ("sqlite", "postgres", "mongodb")
SERVER_ENGINES = ("postgres", "mongodb")  # need a --uri
URI_SCHEMES = {"postgres": ("postgresql", "postgres"), "mongodb": ("mongodb", "mongodb+srv")}


@dataclass
class IndexingTask:
    """The assembled parts of one indexing task."""

    collection: object
    statistics: ColumnStatistics
    schema: IndexingSchema
    converter: IndexingConverter
    system: IndexingSystem
    real_system: IndexingSystem | None = None  # set when a what-if run is evaluated for real

    def environment(self, schedule) -> WieldEnv:
        return WieldEnv(self.system, self.schema, self.converter, schedule)

    def evaluation_system(self) -> IndexingSystem:
        """The system that measures for real: the training system, unless it trained on what-if estimates
        (PostgreSQL + hypopg); then the same engine and data leave what-if mode behind a fresh cache."""
        if self.real_system is None and getattr(self.system.engine, "whatif", False):
            self.system.engine.leave_whatif()
            self.real_system = IndexingSystem(self.system.engine, metric="work",
                                              aggregate=self.system.aggregate,
                                              repetitions=self.system.repetitions, cost_cache=self.system.cost_cache)
        return self.real_system or self.system

    def engine_seconds(self) -> float:
        """Seconds spent inside the engine so far, training and evaluation systems together."""
        systems = {id(s): s for s in (self.system, self.real_system) if s is not None}
        return sum(s.counters.engine_seconds for s in systems.values())

    def close(self) -> None:
        self.system.close()


def open_engine(collection, engine: str = "sqlite", workdir: str | os.PathLike | None = None,
                cache_dir: str | os.PathLike | None = None, uri: str | None = None,
                whatif: bool = False) -> IndexingEngine:
    """An engine holding ``collection``, private to the caller (its own file, schema or collection).

    ``uri`` names the server of PostgreSQL and MongoDB; ``whatif`` (PostgreSQL only) makes indexes
    hypothetical (hypopg) and work the planner's estimate.
    """
    check_engine_choice(engine, uri, whatif)
    if engine == "sqlite":
        import tempfile

        # In memory: index builds, drops and queries never wait for a (shared) disk.
        return SQLiteEngine.for_collection(collection, workdir or Path(tempfile.gettempdir()), cache_dir,
                                           in_memory=True)
    if engine == "postgres":
        from case_studies.indexing.engines.postgres import PostgresEngine

        return PostgresEngine.for_collection(collection, uri, whatif=whatif)
    from case_studies.indexing.engines.mongodb import MongoEngine

    return MongoEngine.for_collection(collection, uri)


def check_engine_choice(engine: str, uri: str | None, whatif: bool = False) -> None:
    """A clear error for an unknown engine, a server engine without a URI, or what-if mode off PostgreSQL."""
    if engine not in ENGINES:
        raise ConfigError("engine", engine, ENGINES)
    if engine in SERVER_ENGINES and not uri:
        start = ("start one with 'wield db start postgres --dir DIR' and pass the URI it prints"
                 if engine == "postgres" else "e.g. mongodb://127.0.0.1:27017/wield")
        raise ConfigError("uri", uri, reason=f"--engine {engine} needs the server's URI ({start})")
    schemes = URI_SCHEMES.get(engine, ())
    if uri and schemes and not uri.startswith(tuple(f"{scheme}://" for scheme in schemes)):
        raise ConfigError("uri", uri.split("@")[-1], reason=f"a {engine} URI starts with "
                          + " or ".join(f"{scheme}://" for scheme in schemes))
    if engine == "sqlite" and uri:
        raise ConfigError("uri", uri, reason="SQLite is embedded and takes no URI")
    if whatif and engine != "postgres":
        raise ConfigError("whatif", whatif, reason="the what-if mode needs --engine postgres (hypopg)")


def build_indexing_task(collection, *, k: int = 3, metric: str = "work", aggregate: str = "mean",
                        repetitions: int = 3, size_weight: float = 1.0, runtime_weight: float = 1.0,
                        engine: str = "sqlite", workdir: str | os.PathLike | None = None,
                        cache_dir: str | os.PathLike | None = None, cost_cache: bool = True,
                        uri: str | None = None, whatif: bool = False,
                        measurement_store: bool = True) -> IndexingTask:
    """Build schema, converter and system for ``collection``; statistics are taken now (training start).

    With ``cost_cache`` (the fast path) and ``measurement_store``, deterministic measurements of the
    collection are kept across runs under ``cache_dir`` (``measurement_store.py``), where the engine can say
    what they depend on (SQLite)."""
    statistics = ColumnStatistics.from_collection(collection)
    schema = IndexingSchema(collection.field_names, k=k,
                            column_selectivity={f: statistics.column_selectivity(f)
                                                for f in collection.field_names})
    converter = IndexingConverter(schema, statistics, size_weight=size_weight, runtime_weight=runtime_weight)
    opened = open_engine(collection, engine, workdir, cache_dir, uri=uri, whatif=whatif)
    try:
        store = None
        if cost_cache and measurement_store and hasattr(opened, "identity"):
            from case_studies.indexing.engines.sqlite import default_cache_dir
            from case_studies.indexing.measurement_store import MeasurementStore

            store = MeasurementStore.for_engine(cache_dir or default_cache_dir(), opened.name,
                                                collection.fingerprint(), opened.identity())
        indexing_system = IndexingSystem(opened, metric=metric, aggregate=aggregate,
                                         repetitions=repetitions, cost_cache=cost_cache, store=store)
    except BaseException:
        opened.close()
        raise
    return IndexingTask(collection, statistics, schema, converter, indexing_system)
