"""One indexing run end to end (docs/design.md section 3): data, workload, training, evaluation, run record.

``run_indexing(config)`` generates (or loads) the collection, builds the SQLite task, trains a DQN task
graph online on a blackbox workload, rebuilds the index set with the best training reward (the study's
blackbox evaluation) and the greedy policy's index set, measures them beside the no-index, full-index and
random-policy baselines, and records everything needed to rerun it.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from case_studies.indexing.baselines import policy_configuration, random_policy_configuration
from case_studies.indexing.build import IndexingTask, build_indexing_task, check_engine_choice
from case_studies.indexing.engines.contract import METRICS
from case_studies.indexing.evaluation import evaluate_methods
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import AGGREGATES
from case_studies.indexing.agents import AGENT_LABELS, AGENTS, make_run_agent
from wield.configs import dataclass_from_dict, require_integers
from wield.errors import ConfigError
from wield.seeding import derive_seed
from wield.tasks import TaskGraph
from wield.workflows import EpisodeResult, RunRecord, train_online
from workloads import (QueryWorkloadConfig, QueryWorkloadGenerator, generate_imdb_collection,
                       load_collection, make_query_schedule)
from workloads.imdb import FIELDS as IMDB_FIELDS

SUCCESS_LATENCY_IMPROVEMENT = 0.5
# Upper bounds checked before anything is generated or written, so a typo cannot exhaust memory:
MAX_DOCUMENTS = 10_000_000  # a generated collection holds ~320 bytes per document in memory (~3 GB here)
MAX_QUERIES = 10_000  # queries per workload
MAX_EPISODES = 1_000_000  # the schedule keeps one entry per episode
# Generalisation classes generate one workload per training episode up front, ~1.7 KB per query in memory:
# at most this many queries (episodes x queries, about 0.85 GB and a minute or two to generate).
MAX_SCHEDULED_QUERIES = 500_000
MAX_REPETITIONS = 1_000
MAX_SEED = 2**63 - 1
VOLATILE_CONFIG = ("uri", "server_dir")  # where the server is, not what the run is


@dataclass
class IndexingRunConfig:
    """Everything that defines an indexing run; saved as config.json and enough to rerun it."""

    documents: int = 100_000
    queries: int = 20
    k: int = 3
    episodes: int = 100
    seed: int = 0
    metric: str = "work"
    aggregate: str = "mean"
    size_weight: float = 0.5
    runtime_weight: float = 1.0
    repetitions: int = 5
    collection: str | None = None
    engine: str = "sqlite"
    uri: str | None = None  # server of --engine postgres / mongodb; never with a password
    server_dir: str | None = None  # a 'wield db start' directory: its current URI is looked up at run time
    whatif: bool = False  # PostgreSQL only: train on hypopg estimates, evaluate for real
    out: str | None = None
    cache_dir: str | None = None
    agent: str = "dqn"
    demonstrations: str | None = None
    pretrain_steps: int = 1000

    def validate(self) -> "IndexingRunConfig":
        if self.agent not in AGENTS:
            raise ConfigError("agent", self.agent, AGENTS)
        # DQfD may skip online training (episodes = 0): the pretrain-only policy is then evaluated.
        positive = {"documents": 100, "queries": 1, "k": 1, "episodes": 0 if self.agent == "dqfd" else 1,
                    "repetitions": 1, "pretrain_steps": 0, "seed": 0}
        require_integers(self, positive)
        for name, maximum, why in (
                ("documents", MAX_DOCUMENTS, "a generated collection holds about 320 bytes per document in memory"),
                ("queries", MAX_QUERIES, "queries per workload"),
                ("episodes", MAX_EPISODES, "the training schedule keeps an entry per episode"),
                ("repetitions", MAX_REPETITIONS, "executions per query and measurement"),
                ("pretrain_steps", 100_000_000, "gradient steps"),
                ("seed", MAX_SEED, "seeds are 63-bit integers")):
            if getattr(self, name) > maximum:
                raise ConfigError(name, getattr(self, name), reason=f"must be <= {maximum:,} ({why})")
        if self.collection is None and self.k > len(IMDB_FIELDS):
            raise ConfigError("k", self.k, reason=f"must be <= {len(IMDB_FIELDS)}, the number of fields of the "
                                                  "generated collection (an index has at most one key per field)")
        if self.metric not in METRICS:
            raise ConfigError("metric", self.metric, METRICS)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("aggregate", self.aggregate, AGGREGATES)
        check_engine_choice(self.engine, self.uri, self.whatif)
        if self.server_dir is not None and self.engine != "postgres":
            raise ConfigError("server-dir", self.server_dir, reason="names a PostgreSQL server of 'wield db start': "
                                                                    "give --engine postgres")
        if self.whatif and self.metric != "work":
            raise ConfigError("metric", self.metric, ("work",), reason="the what-if mode trains on the "
                              "planner's estimated cost, a work measure")
        for name in ("size_weight", "runtime_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(name, value, reason="must be finite and >= 0")
        if self.collection is not None and not Path(self.collection).is_file():
            raise ConfigError("collection", self.collection, reason="no such file")
        if self.cache_dir is not None and Path(self.cache_dir).exists() and not Path(self.cache_dir).is_dir():
            raise ConfigError("cache-dir", self.cache_dir, reason="is a file, not a directory")
        if self.demonstrations is not None:
            if self.agent != "dqfd":
                raise ConfigError("demonstrations", self.demonstrations,
                                  reason="demonstrations are for agent 'dqfd' (give --agent dqfd)")
            if not (Path(self.demonstrations) / "manifest.json").is_file():
                raise ConfigError("demonstrations", self.demonstrations,
                                  reason="not a demonstration dataset directory (no manifest.json); make one "
                                         "with 'wield demonstrate indexing --out DIR'")
        return self

    def seeds(self) -> dict[str, Any]:
        """The seeds of a single (blackbox) run, derived from ``seed`` (recorded in seeds.json)."""
        return {"mode": "blackbox", "test_distribution": "in",
                "collection": derive_seed(self.seed, "collection"),
                "train_workload": derive_seed(self.seed, "workload"),
                "test_workload": derive_seed(self.seed, "workload"),
                "agent": derive_seed(self.seed, "agent"),
                "random_policy": derive_seed(self.seed, "random_policy")}

    def check_schedule_size(self, generalisation: bool) -> None:
        """Refuse a generalisation schedule (one workload per episode, generated up front) too big for memory."""
        if generalisation and self.episodes * self.queries > MAX_SCHEDULED_QUERIES:
            raise ConfigError("episodes", self.episodes, reason=(
                f"with {self.queries} queries per workload a generalisation run generates "
                f"{self.episodes * self.queries:,} queries up front (one workload per episode, about 1.7 KB "
                f"each in memory); at most {MAX_SCHEDULED_QUERIES:,}: give fewer --episodes or --queries"))

    def trial_seeds(self, trial: Mapping[str, Any]) -> dict[str, Any]:
        """The seeds of one trial of a plan (``wield.protocols.TrialSeeds.as_dict()``); the collection (the
        deployment) is shared by every trial and comes from ``seed``, the experiment's base seed."""
        return {"mode": trial["mode"], "test_distribution": trial["test_distribution"],
                "collection": derive_seed(self.seed, "collection"),
                "train_workload": trial["train_workload_seed"], "test_workload": trial["test_workload_seed"],
                "agent": trial["optimisation_seed"],
                "random_policy": derive_seed(trial["optimisation_seed"], "random_policy"),
                "trial": trial["trial"]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "IndexingRunConfig":
        return dataclass_from_dict(cls, data)


@dataclass
class IndexingRunResult:
    record: RunRecord
    metrics: dict[str, dict[str, Any]]
    best_configuration: list[IndexSpec]
    greedy_configuration: list[IndexSpec]
    transitions: int
    seconds: float


def default_run_directory(config: IndexingRunConfig) -> Path:
    return Path("runs") / f"indexing-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}"


class BestConfiguration:
    """Tracks the index set with the highest step reward seen during training (blackbox evaluation)."""

    def __init__(self) -> None:
        self.reward = -math.inf
        self.configuration: list[IndexSpec] = []

    def __call__(self, result: EpisodeResult) -> None:
        step = result.best_step
        if step.reward > self.reward:
            self.reward = step.reward
            self.configuration = list(step.system_state)


def run_indexing(config: IndexingRunConfig, *, progress: bool = True, echo: Callable[[str], None] = print,
                 seeds: Mapping[str, Any] | None = None) -> IndexingRunResult:
    """Train and evaluate one indexing run (or one trial, given its ``seeds``) into a RunRecord directory."""
    config.validate()
    started = time.perf_counter()
    directory = Path(config.out) if config.out else default_run_directory(config)
    seeds = dict(seeds) if seeds is not None else config.seeds()
    config.check_schedule_size(seeds["mode"] != "blackbox")
    source = f"file {config.collection}" if config.collection else f"{config.documents:,} generated IMDB-like documents"
    echo(f"collection: {source}")
    collection = _load_collection(config, seeds["collection"])  # a bad file fails before anything is written
    record = RunRecord.start(directory, case_study="indexing", config=asdict(config), seeds=seeds,
                             versions=("gymnasium",))
    with record.outcome_on_error():
        return _run(config, record, seeds, started, progress, echo, collection)


def _load_collection(config: IndexingRunConfig, seed: int):
    """The run's collection (a file's, or a generated one); ``k`` is checked against its fields."""
    if config.collection:
        collection = load_collection(config.collection)
        if config.k > len(collection.field_names):
            raise ConfigError("k", config.k, reason=f"must be <= {len(collection.field_names)}, the number of "
                                                    f"fields of {config.collection}")
        return collection
    return generate_imdb_collection(config.documents, seed)


def run_uri(config: IndexingRunConfig) -> str | None:
    """The server URI to connect to now: the current one of ``server_dir`` (a restarted server may have a
    new port), else the configured one."""
    if config.server_dir:
        from case_studies.indexing.build import server_dir_uri

        return server_dir_uri(config.server_dir)
    return config.uri


def held_out_templates(collection) -> tuple[str, ...]:
    """Templates kept out of training in generalisation mode: every fourth one, the out-of-distribution
    test set of classes C5 and C6 (unseen query structures, operators and attribute combinations)."""
    names = [template.name for template in QueryWorkloadGenerator(collection).all_templates]
    return tuple(names[3::4])


def workload_configs(collection, config: IndexingRunConfig, seeds: Mapping[str, Any]):
    """(training, test) workload configurations for the trial's mode and test distribution."""
    if seeds["mode"] == "blackbox":
        same = QueryWorkloadConfig(n_queries=config.queries)
        return same, same
    held_out = held_out_templates(collection)
    train = QueryWorkloadConfig(n_queries=config.queries, exclude_templates=held_out)
    if seeds["test_distribution"] == "out":
        return train, QueryWorkloadConfig(n_queries=config.queries, templates=held_out)
    return train, train


def shape_similarity(training: Sequence, test: Sequence) -> float:
    """Fraction of test queries whose shape (structure, predicate values stripped) occurs in training."""
    seen = {query.shape() for query in training}
    return sum(query.shape() in seen for query in test) / len(test) if test else 0.0


def build_run_task(config: IndexingRunConfig, collection) -> IndexingTask:
    """The indexing task (schema, converter, engine) that a run's configuration names."""
    return build_indexing_task(collection, k=config.k, metric=config.metric, aggregate=config.aggregate,
                               repetitions=config.repetitions, size_weight=config.size_weight,
                               runtime_weight=config.runtime_weight, engine=config.engine,
                               cache_dir=config.cache_dir, uri=run_uri(config), whatif=config.whatif)


def run_schedules(config: IndexingRunConfig, collection, seeds: Mapping[str, Any], record: RunRecord):
    """A run's training and test schedules (one and the same in blackbox mode; in generalisation mode a new
    workload per training episode and an unseen test workload), saved into its record."""
    blackbox = seeds["mode"] == "blackbox"
    train_config, test_config = workload_configs(collection, config, seeds)
    schedule = make_query_schedule(collection, train_config, seeds["train_workload"],
                                   1 if blackbox else max(1, config.episodes), per_episode=not blackbox)
    test_schedule = schedule if blackbox else make_query_schedule(
        collection, test_config, seeds["test_workload"], 1, per_episode=False)
    schedule.save(record.file("schedule.json"))
    test_schedule.save(record.file("schedule-test.json"))
    return schedule, test_schedule


def _run(config, record, seeds, started, progress, echo, collection) -> IndexingRunResult:
    blackbox = seeds["mode"] == "blackbox"
    task = build_run_task(config, collection)
    try:
        schedule, test_schedule = run_schedules(config, collection, seeds, record)
        record.write_json("schema.json", {"fingerprint": task.schema.fingerprint(),
                                          "layout": dict(task.schema.layout())})
        env = task.environment(schedule)
        test_env = env if blackbox else task.environment(test_schedule)
        agent = make_run_agent(config, task, schedule, seeds["agent"], record, progress=progress, echo=echo)
        graph = TaskGraph.single(agent, name="indexer")
        best = BestConfiguration()

        def on_episode(result: EpisodeResult) -> None:
            best(result)
            size, runtime = task.converter.normalised_costs(result.final_metrics)
            stats = result.update_stats.get("indexer", {})
            record.append_episode({
                "episode": result.episode, "total_reward": result.total_reward,
                "final_reward": result.steps[-1].reward, "size_share": size, "runtime_share": runtime,
                "indexes": result.final_metrics.get("n_indexes", 0), "epsilon": stats.get("epsilon"),
                "loss": stats.get("loss"), "seconds": result.seconds,
                "query_executions": task.system.counters.query_executions,
                "cache_hits": task.system.counters.cache_hits,
            })

        echo(f"training {AGENT_LABELS[config.agent]} ({seeds['mode']}) on {config.queries} queries for "
             f"{config.episodes} episodes ({config.metric} metric) -> {record.path}")
        train_online(env, graph, config.episodes, on_episode=on_episode, progress=progress)
        record.save_model(agent.state_dict())
        workload = test_schedule.task_for_episode(0)
        greedy = policy_configuration(test_env, agent, episode=0, explore=False)
        random_policy = random_policy_configuration(test_env, seeds["random_policy"], episode=0)
        # Blackbox: rebuild the best index set seen in training (the study's evaluation). Generalisation:
        # the greedy policy builds its index set on the unseen test workload.
        learned = best.configuration if blackbox and config.episodes > 0 else greedy
        echo(f"evaluating on the engine ({config.repetitions} repetitions per query)")
        evaluation_system = task.evaluation_system()
        metrics = evaluate_methods(evaluation_system, workload,
                                   {"random": random_policy, "dqn-greedy": greedy, "dqn": learned},
                                   repetitions=config.repetitions)
        evaluation = {
            "mode": seeds["mode"],
            "test_distribution": seeds["test_distribution"],
            "methods": {name: m.as_dict() for name, m in metrics.items()},
            "objective": {"metric": "mean_latency_improvement", "threshold": SUCCESS_LATENCY_IMPROVEMENT},
            "success": metrics["dqn"].mean_latency_improvement >= SUCCESS_LATENCY_IMPROVEMENT
                       and metrics["dqn"].index_bytes < metrics["full"].index_bytes,
            "best_training_reward": best.reward,
            "train_test_similarity": shape_similarity(schedule.all_queries(), workload),
            "transitions": agent.steps_observed,
            "engine_counters": task.system.stats,
            "work_unit": evaluation_system.engine.work_unit,
            "engine": config.engine,
            "seconds": time.perf_counter() - started,
        }
        record.write_json("evaluation.json", evaluation)
        from case_studies.indexing.report import save_run_figure

        save_run_figure(record, metrics, config)
        record.mark("complete")
        return IndexingRunResult(record, evaluation["methods"], best.configuration, greedy,
                                 agent.steps_observed, evaluation["seconds"])
    finally:
        task.close()
