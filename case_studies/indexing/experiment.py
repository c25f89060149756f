"""One indexing run end to end (DESIGN.md section 3): data, workload, training, evaluation, run record.

``run_indexing(config)`` generates (or loads) the collection, builds the SQLite task, trains a DQN task
graph online on a blackbox workload, rebuilds the index set with the best training reward (the study's
blackbox evaluation) and the greedy policy's index set, measures them beside the no-index, full-index and
random-policy baselines, and records everything needed to rerun it.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable

from case_studies.indexing.baselines import policy_configuration, random_policy_configuration
from case_studies.indexing.build import SYSTEMS, build_indexing_task
from case_studies.indexing.engine import METRICS
from case_studies.indexing.evaluation import evaluate_methods
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import AGGREGATES
from wield.agents import DQNAgent, DQNConfig
from wield.errors import ConfigError
from wield.seeding import derive_seed
from wield.tasks import TaskGraph
from wield.workflows import EpisodeResult, RunRecord, train_online
from workloads import (QueryWorkloadConfig, generate_imdb_collection, load_collection,
                       make_query_schedule)

SUCCESS_LATENCY_IMPROVEMENT = 0.5


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
    size_weight: float = 1.0
    runtime_weight: float = 1.0
    repetitions: int = 5
    collection: str | None = None
    system: str = "sqlite"
    out: str | None = None
    cache_dir: str | None = None

    def validate(self) -> "IndexingRunConfig":
        positive = {"documents": 100, "queries": 1, "k": 1, "episodes": 1, "repetitions": 1}
        for name, minimum in positive.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise ConfigError(name, value, reason=f"must be an integer >= {minimum}")
        if self.metric not in METRICS:
            raise ConfigError("metric", self.metric, METRICS)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("aggregate", self.aggregate, AGGREGATES)
        if self.system not in SYSTEMS:
            raise ConfigError("system", self.system, SYSTEMS)
        for name in ("size_weight", "runtime_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(name, value, reason="must be finite and >= 0")
        if self.collection is not None and not Path(self.collection).is_file():
            raise ConfigError("collection", self.collection, reason="no such file")
        return self

    def seeds(self) -> dict[str, int]:
        """Every seed of the run, derived from ``seed`` (recorded in seeds.json)."""
        return {name: derive_seed(self.seed, name)
                for name in ("collection", "workload", "agent", "random_policy")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "IndexingRunConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError("config", unknown[0], sorted(known))
        return cls(**data)


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


def run_indexing(config: IndexingRunConfig, *, progress: bool = True,
                 echo: Callable[[str], None] = print) -> IndexingRunResult:
    """Train and evaluate one indexing run; everything goes to a RunRecord directory."""
    config.validate()
    started = time.perf_counter()
    directory = Path(config.out) if config.out else default_run_directory(config)
    if (directory / "status.json").exists() and RunRecord(directory).status == "complete":
        raise ConfigError("out", str(directory), reason="holds a finished run; choose another directory")
    record = RunRecord(directory)
    seeds = config.seeds()
    record.write_json("config.json", asdict(config))
    record.write_json("seeds.json", seeds)
    record.write_versions(extra=("gymnasium",))
    record.mark("running")
    try:
        return _run(config, record, seeds, started, progress, echo)
    except KeyboardInterrupt:
        record.mark("interrupted")
        raise
    except BaseException as exc:
        record.mark("failed", error=f"{type(exc).__name__}: {exc}")
        raise


def _load_collection(config: IndexingRunConfig, seed: int):
    if config.collection:
        return load_collection(config.collection)
    return generate_imdb_collection(config.documents, seed)


def _run(config, record, seeds, started, progress, echo) -> IndexingRunResult:
    echo(f"collection: {'file ' + config.collection if config.collection else f'{config.documents:,} generated IMDB-like documents'}")
    collection = _load_collection(config, seeds["collection"])
    task = build_indexing_task(collection, k=config.k, metric=config.metric, aggregate=config.aggregate,
                               repetitions=config.repetitions, size_weight=config.size_weight,
                               runtime_weight=config.runtime_weight, system=config.system,
                               cache_dir=config.cache_dir)
    try:
        schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=config.queries),
                                       seeds["workload"], 1, per_episode=False)
        schedule.save(record.file("schedule.json"))
        record.write_json("schema.json", {"fingerprint": task.schema.fingerprint(),
                                          "layout": dict(task.schema.layout())})
        env = task.environment(schedule)
        agent = DQNAgent(task.schema.state_space, task.schema.action_space, DQNConfig(), seed=seeds["agent"])
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

        echo(f"training DQN on {config.queries} queries for {config.episodes} episodes "
             f"({config.metric} metric, seed {config.seed}) -> {record.path}")
        train_online(env, graph, config.episodes, on_episode=on_episode, progress=progress)
        record.save_model(agent.state_dict())
        workload = schedule.task_for_episode(0)
        greedy = policy_configuration(env, agent, episode=0, explore=False)
        random_policy = random_policy_configuration(env, seeds["random_policy"], episode=0)
        echo(f"evaluating on the engine ({config.repetitions} repetitions per query)")
        metrics = evaluate_methods(task.system, workload, {"random": random_policy,
                                                           "dqn-greedy": greedy,
                                                           "dqn": best.configuration},
                                   repetitions=config.repetitions)
        evaluation = {
            "methods": {name: m.as_dict() for name, m in metrics.items()},
            "objective": {"metric": "mean_latency_improvement", "threshold": SUCCESS_LATENCY_IMPROVEMENT},
            "success": metrics["dqn"].mean_latency_improvement >= SUCCESS_LATENCY_IMPROVEMENT
                       and metrics["dqn"].index_bytes < metrics["full"].index_bytes,
            "best_training_reward": best.reward,
            "transitions": agent.steps_observed,
            "engine_counters": task.system.stats,
            "work_unit": task.system.engine.work_unit,
            "seconds": time.perf_counter() - started,
        }
        record.write_json("evaluation.json", evaluation)
        from case_studies.indexing.report import save_run_figure

        save_run_figure(record, metrics, config)
        record.mark("complete")
        return IndexingRunResult(record, evaluation["methods"], best.configuration, greedy,
                                 agent.steps_observed, evaluation["seconds"])
    finally:
        task.system.close()
