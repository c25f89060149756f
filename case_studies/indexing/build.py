"""Assemble the indexing task from its parts: collection -> engine -> system, schema, converter, env.

Both the trials and the registered gymnasium environment build through here, so there is one place that
decides how the parts fit together. ``build_run(config, seeds, record)`` is a trial's "build the task" step:
the collection (generated from the seed every trial shares, or loaded), the task on the configured engine,
and the training and test schedules of the trial's mode, saved into the run record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from case_studies.indexing.candidate_design import ACTIONS, CandidateConverter, CandidateSchema
from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.defaults import ACTION_DESIGN, K, RUNTIME_WEIGHT, SIZE_WEIGHT
from case_studies.indexing.engines.contract import IndexingEngine, check_field_names
from case_studies.indexing.schema import IndexingSchema
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.statistics import ColumnStatistics
from case_studies.indexing.system import IndexingSystem
from wield.envs import WieldEnv
from wield.errors import ConfigError
from wield.logs import get_logger
from wield.protocols import TrialSeeds
from wield.workflows import RunRecord
from workloads import (QueryWorkloadConfig, QueryWorkloadGenerator, WorkloadSchedule, generate_imdb_collection,
                       load_collection, make_query_schedule)

ENGINES = ("sqlite", "postgres", "mongodb")
SERVER_ENGINES = ("postgres", "mongodb")  # need a --uri
URI_SCHEMES = {"postgres": ("postgresql", "postgres"), "mongodb": ("mongodb", "mongodb+srv")}
log = get_logger(__name__)


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
    check_field_names(collection.field_names, engine, f"collection '{collection.name}'")
    if uri:
        from case_studies.indexing.engines.postgres import redact_uri

        where = f" at {redact_uri(uri)}"
    else:
        where = ""
    log.info("opening the %s engine%s on '%s' (%d documents)%s", engine, where, collection.name, len(collection),
             " in what-if mode" if whatif else "")
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
    """A clear error for an unknown engine, a server engine without a URI, a URI holding a password, or
    what-if mode off PostgreSQL. Messages never show a password."""
    from case_studies.indexing.engines.postgres import redact_uri

    if engine not in ENGINES:
        raise ConfigError("engine", engine, ENGINES)
    if engine in SERVER_ENGINES and not uri:
        start = ("start one with 'wield db start postgres --dir DIR' and give --server-dir DIR or the URI it "
                 "prints" if engine == "postgres" else "e.g. mongodb://127.0.0.1:27017/wield")
        raise ConfigError("uri", uri, reason=f"--engine {engine} needs the server's URI ({start})")
    if uri is not None and not isinstance(uri, str):
        raise ConfigError("uri", uri, reason="must be a string")
    if engine == "sqlite" and uri:
        raise ConfigError("uri", redact_uri(uri), reason="SQLite is embedded and takes no URI")
    schemes = URI_SCHEMES.get(engine, ())
    if uri and schemes and not uri.startswith(tuple(f"{scheme}://" for scheme in schemes)):
        raise ConfigError("uri", redact_uri(uri).split("@")[-1], reason=f"a {engine} URI starts with "
                          + " or ".join(f"{scheme}://" for scheme in schemes))
    if uri and uri_has_password(uri):
        where = ("a password file (the URI's ?passfile=FILE parameter, PGPASSFILE or ~/.pgpass) or PGPASSWORD, "
                 "or --server-dir DIR for a server of 'wield db start'" if engine == "postgres"
                 else "the environment variable WIELD_MONGODB_PASSWORD")
        raise ConfigError("uri", redact_uri(uri), reason=(
            "holds a password, which the process list would show and run records would keep; give the URI "
            f"without it and the password through {where}"))
    if whatif and engine != "postgres":
        raise ConfigError("whatif", whatif, reason="the what-if mode needs --engine postgres (hypopg)")


def uri_has_password(uri: str) -> bool:
    """Whether a connection URI carries a password (in its user part or a ``password`` parameter)."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(uri)
        query = urllib.parse.parse_qs(parts.query)
        return parts.password is not None or "password" in query
    except ValueError:
        return False


def server_dir_uri(server_dir: str | os.PathLike) -> str:
    """The URI (no password; it names the password file) of the running server of a ``wield db start``
    directory, or a clear error when none runs there."""
    from case_studies.indexing.engines import postgres_server

    directory = Path(server_dir)
    if not directory.is_dir():
        raise ConfigError("server-dir", str(server_dir), reason="no such directory; start a server with "
                                                                f"'wield db start postgres --dir {server_dir}'")
    info = postgres_server.server_info(directory)
    if info is None or not postgres_server.is_running(directory):
        raise ConfigError("server-dir", str(server_dir), reason="no server runs there; start it with "
                                                                f"'wield db start postgres --dir {server_dir}'")
    return info.uri


def build_indexing_task(collection, *, k: int = K, metric: str = "work", aggregate: str = "mean",
                        repetitions: int = 3, size_weight: float = SIZE_WEIGHT, runtime_weight: float = RUNTIME_WEIGHT,
                        engine: str = "sqlite", workdir: str | os.PathLike | None = None,
                        cache_dir: str | os.PathLike | None = None, cost_cache: bool = True,
                        uri: str | None = None, whatif: bool = False,
                        measurement_store: bool = True, actions: str = ACTION_DESIGN) -> IndexingTask:
    """Build schema, converter and system for ``collection``; statistics are taken now (training start).

    ``actions`` is the task design the agent sees: ``shortlist`` (the default: one head over the workload's
    candidate indexes ranked by statistics-only estimates, ``shortlist_design.py``), ``candidates`` (one head
    over the query's candidate indexes, ``candidate_design.py``) or ``positional`` (the study's k key-position
    heads, ``schema.py``).

    The weights and k default to the task's defaults (``defaults.py``), as ``wield run indexing`` uses them.
    With ``cost_cache`` (the fast path) and ``measurement_store``, deterministic measurements of the
    collection are kept across runs under ``cache_dir`` (``measurement_store.py``), where the engine can say
    what they depend on (SQLite)."""
    if actions not in ACTIONS:
        raise ConfigError("actions", actions, ACTIONS)
    statistics = ColumnStatistics.from_collection(collection)
    selectivity = {f: statistics.column_selectivity(f) for f in collection.field_names}
    weights = {"size_weight": size_weight, "runtime_weight": runtime_weight}
    schema: IndexingSchema
    converter: IndexingConverter
    if actions == "candidates":
        schema = CandidateSchema(collection.field_names, k=k, column_selectivity=selectivity)
        converter = CandidateConverter(schema, statistics, **weights)
    elif actions == "shortlist":
        from case_studies.indexing.shortlist_design import ShortlistConverter, ShortlistSchema

        schema = ShortlistSchema(collection.field_names, k=k, statistics=statistics, column_selectivity=selectivity)
        converter = ShortlistConverter(schema, statistics, aggregate=aggregate, **weights)
    else:
        schema = IndexingSchema(collection.field_names, k=k, column_selectivity=selectivity)
        converter = IndexingConverter(schema, statistics, **weights)
    opened = open_engine(collection, engine, workdir, cache_dir, uri=uri, whatif=whatif)
    try:
        store = None
        if cost_cache and measurement_store and hasattr(opened, "identity"):
            from case_studies.indexing.measurement_store import MeasurementStore
            from wield.cache import cache_root

            store = MeasurementStore.for_engine(cache_root(cache_dir, create=True), opened.name,
                                                collection.fingerprint(), opened.identity())
        indexing_system = IndexingSystem(opened, metric=metric, aggregate=aggregate,
                                         repetitions=repetitions, cost_cache=cost_cache, store=store)
    except BaseException:
        opened.close()
        raise
    return IndexingTask(collection, statistics, schema, converter, indexing_system)


# ---------------------------------------------------------------------------------------- one trial's task
@dataclass
class RunTask:
    """What one trial trains and is evaluated on: the task, the training schedule and the test workload."""

    task: IndexingTask
    schedule: WorkloadSchedule
    test_schedule: WorkloadSchedule

    @property
    def test_workload(self) -> list:
        return self.test_schedule.task_for_episode(0)

    def close(self) -> None:
        self.task.close()


def build_run(config, seeds: TrialSeeds, record: RunRecord, redraws: bool = False) -> RunTask:
    """Collection, task and schedules of one trial (``config`` is an ``IndexingRunConfig``); the schedules
    and the schema's layout are written into ``record``. With ``redraws`` (a blackbox learner under
    ``--train-on redraws``, ``train_on.py``) the training schedule plays a redraw of the training workload
    per episode and the test schedule is the training workload itself."""
    collection = load_run_collection(config, seeds)
    task = build_indexing_task(collection, k=config.k, metric=config.metric, aggregate=config.aggregate,
                               repetitions=config.repetitions, size_weight=config.size_weight,
                               runtime_weight=config.runtime_weight, engine=config.engine,
                               cache_dir=config.cache_dir, uri=run_uri(config), whatif=config.whatif,
                               cost_cache=config.cost_cache, actions=config.actions)
    try:
        train_config, test_config = workload_configs(collection, config.queries, seeds)
        if redraws and not seeds.blackbox:
            raise ConfigError("train-on", "redraws", reason="is a blackbox protocol (classes C0-C2)")
        episodes = max(1, config.episodes) if redraws or not seeds.blackbox else 1
        schedule = make_query_schedule(collection, train_config, seeds.train_workload_seed, episodes,
                                       per_episode=not seeds.blackbox, redraws=redraws)
        test_schedule = schedule if seeds.blackbox and not redraws else make_query_schedule(
            collection, test_config, seeds.test_workload_seed, 1, per_episode=False)
        schedule.save(record.file("schedule.json"))
        test_schedule.save(record.file("schedule-test.json"))
        record.write_json("schema.json", {"fingerprint": task.schema.fingerprint(),
                                          "layout": dict(task.schema.layout())})
    except BaseException:
        task.close()
        raise
    return RunTask(task, schedule, test_schedule)


def load_run_collection(config, seeds: TrialSeeds):
    """The run's collection: ``config.collection`` loaded (``config.k`` checked against its fields), else
    generated from the seed all trials share."""
    if config.collection:
        return load_collection_file(config)
    return generate_imdb_collection(config.documents, seeds.shared("collection"))


def load_collection_file(config):
    """``config.collection`` loaded (a file or a built-in collection's name, under ``config.nulls`` and
    ``config.rows``; a large file is parsed once, then read from the parsed-collection cache); a malformed
    file, ``config.k`` beyond its fields, or data that is no
    longer the data of ``config.collection_fingerprint`` (the file edited since the run or experiment was
    configured) is a clear error (checked before a run record is started)."""
    collection = load_collection(config.collection, nulls=config.nulls, rows=config.rows,
                                 cache_dir=config.cache_dir)
    check_field_names(collection.field_names, config.engine, config.collection)
    recorded = getattr(config, "collection_fingerprint", None)
    if recorded is not None and collection.fingerprint() != recorded:
        raise ConfigError("collection", config.collection, reason=(
            f"its data changed since this run was configured (fingerprint {collection.fingerprint()}, "
            f"recorded {recorded}): restore the file, or start a new run or experiment (another --out)"))
    if config.k > len(collection.field_names):
        raise ConfigError("k", config.k, reason=f"must be <= {len(collection.field_names)}, the number of "
                                                f"fields of {config.collection}")
    return collection


def run_uri(config) -> str | None:
    """The server URI to connect to now: the current one of ``config.server_dir`` (a restarted server may
    have a new port), else ``config.uri``."""
    return server_dir_uri(config.server_dir) if config.server_dir else config.uri


def held_out_templates(collection) -> tuple[str, ...]:
    """Templates kept out of training in generalisation mode: every fourth one, the out-of-distribution
    test set of classes C5 and C6 (unseen query structures, operators and attribute combinations)."""
    names = [template.name for template in QueryWorkloadGenerator(collection).all_templates]
    return tuple(names[3::4])


def workload_configs(collection, queries: int, seeds: TrialSeeds):
    """(training, test) workload configurations for the trial's mode and test distribution."""
    if seeds.blackbox:
        same = QueryWorkloadConfig(n_queries=queries)
        return same, same
    held_out = held_out_templates(collection)
    train = QueryWorkloadConfig(n_queries=queries, exclude_templates=held_out)
    if seeds.test_distribution == "out":
        return train, QueryWorkloadConfig(n_queries=queries, templates=held_out)
    return train, train
