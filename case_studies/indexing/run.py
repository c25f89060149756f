"""One indexing run end to end (DESIGN.md section 3): data, workload, training, evaluation, run record.

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
from wield.workflows.timing import AGENT_UPDATING, SYSTEM, Stopwatch
from workloads import (QueryWorkloadConfig, QueryWorkloadGenerator, generate_imdb_collection,
                       load_collection, make_query_schedule)

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
    size_weight: float = 0.5
    runtime_weight: float = 1.0
    repetitions: int = 5
    collection: str | None = None
    engine: str = "sqlite"
    uri: str | None = None  # server of --engine postgres / mongodb
    whatif: bool = False  # PostgreSQL only: train on hypopg estimates, evaluate for real
    out: str | None = None
    cache_dir: str | None = None
    agent: str = "dqn"
    demonstrations: str | None = None
    pretrain_steps: int = 1000
    cost_cache: bool = True  # False: the slow path, every configuration measured from scratch (for checks)

    def validate(self) -> "IndexingRunConfig":
        if self.agent not in AGENTS:
            raise ConfigError("agent", self.agent, AGENTS)
        # DQfD may skip online training (episodes = 0): the pretrain-only policy is then evaluated.
        positive = {"documents": 100, "queries": 1, "k": 1, "episodes": 0 if self.agent == "dqfd" else 1,
                    "repetitions": 1, "pretrain_steps": 0}
        require_integers(self, positive)
        if self.metric not in METRICS:
            raise ConfigError("metric", self.metric, METRICS)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("aggregate", self.aggregate, AGGREGATES)
        check_engine_choice(self.engine, self.uri, self.whatif)
        if not isinstance(self.cost_cache, bool):
            raise ConfigError("cost_cache", self.cost_cache, (True, False))
        if self.whatif and self.metric != "work":
            raise ConfigError("metric", self.metric, ("work",), reason="the what-if mode trains on the "
                              "planner's estimated cost, a work measure")
        for name in ("size_weight", "runtime_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(name, value, reason="must be finite and >= 0")
        if self.collection is not None and not Path(self.collection).is_file():
            raise ConfigError("collection", self.collection, reason="no such file")
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
    stopwatch = Stopwatch()  # the study's Table 6.2: time in the engine, the agent and Wield
    directory = Path(config.out) if config.out else default_run_directory(config)
    seeds = dict(seeds) if seeds is not None else config.seeds()
    record = RunRecord.start(directory, case_study="indexing", config=asdict(config), seeds=seeds,
                             versions=("gymnasium",))
    with record.outcome_on_error():
        return _run(config, record, seeds, stopwatch, progress, echo)


def _load_collection(config: IndexingRunConfig, seed: int):
    if config.collection:
        return load_collection(config.collection)
    return generate_imdb_collection(config.documents, seed)


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
                               cache_dir=config.cache_dir, uri=config.uri, whatif=config.whatif,
                               cost_cache=config.cost_cache)


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


def _run(config, record, seeds, stopwatch, progress, echo) -> IndexingRunResult:
    blackbox = seeds["mode"] == "blackbox"
    source = f"file {config.collection}" if config.collection else f"{config.documents:,} generated IMDB-like documents"
    echo(f"collection: {source}")
    collection = _load_collection(config, seeds["collection"])
    task = build_run_task(config, collection)
    try:
        schedule, test_schedule = run_schedules(config, collection, seeds, record)
        record.write_json("schema.json", {"fingerprint": task.schema.fingerprint(),
                                          "layout": dict(task.schema.layout())})
        env = task.environment(schedule)
        test_env = env if blackbox else task.environment(test_schedule)
        engine_before = task.engine_seconds()
        with stopwatch(AGENT_UPDATING):  # DQfD pretraining is the agent updating
            agent = make_run_agent(config, task, schedule, seeds["agent"], record, progress=progress, echo=echo)
        stopwatch.add(AGENT_UPDATING, engine_before - task.engine_seconds())
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
        train_online(env, graph, config.episodes, on_episode=on_episode, progress=progress, stopwatch=stopwatch)
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
            "seconds": stopwatch.elapsed(),
        }
        stopwatch.add(SYSTEM, task.engine_seconds())
        evaluation["timing"] = stopwatch.timing()
        record.write_json("evaluation.json", evaluation)
        from case_studies.indexing.report import save_run_figure

        save_run_figure(record, metrics, config)
        record.mark("complete")
        return IndexingRunResult(record, evaluation["methods"], best.configuration, greedy,
                                 agent.steps_observed, evaluation["seconds"])
    finally:
        task.close()
