"""The methods ``wield compare indexing`` runs on one trial: learners, optimisers and fixed baselines.

- ``dqn`` (and ``dqfd`` once the run configuration knows that agent): ``run_indexing``, one step per query.
- ``opentuner`` and ``random``: search the index-set space (search_space.py) with OpenTuner or uniformly at
  random. Budget parity with the learner: a learner run of E episodes of Q queries makes n = E x Q
  transitions, each measuring the workload under the current index set once (one system evaluation); an
  optimiser gets the same n = E x Q evaluations, each measuring the workload under one whole index set.
  Blackbox mode tunes for the trial's one workload; generalisation mode tunes one index set across the
  training distribution (evaluation t measures workload t // Q of the training schedule, the workload the
  learner sees at step t) and evaluates it on the unseen test workload. The best index set found (highest
  reward, the learner's reward function) is rebuilt and evaluated, as the learner's is.
- ``full`` and ``none``: the fixed baselines, no search (n = 0).

Every method is evaluated by ``evaluate_methods`` on the same test workload with the study's metrics.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping

from case_studies.indexing.evaluation import evaluate_methods
from case_studies.indexing.run import (IndexingRunConfig, _load_collection, build_run_task, run_indexing,
                                              run_schedules, shape_similarity)
from case_studies.indexing.search_space import IndexSetSpace
from wield.errors import ConfigError
from wield.workflows import RunRecord
from wield.workflows.search import SearchEvaluation, run_configuration_search
from wield.workflows.timing import SYSTEM, Stopwatch

LEARNERS = ("dqn",)
OPTIMISERS = ("opentuner", "random")
FIXED = ("full", "none")

METHOD_NOTES = {
    "dqn": "DQN trained online; blackbox: best index set seen in training, generalisation: greedy policy",
    "dqfd": "DQfD: DQN pretrained on rule demonstrations, then online",
    "opentuner": "OpenTuner (bandit over its search techniques) over the index-set space",
    "random": "random search over the index-set space",
    "full": "one compound index per query (full-index baseline)",
    "none": "no secondary index",
}


def learner_methods() -> tuple[str, ...]:
    """The learners the run configuration can train: DQN, and DQfD once ``IndexingRunConfig.agent`` exists."""
    agent = IndexingRunConfig.__dataclass_fields__.get("agent")
    return ("dqn", "dqfd") if agent is not None else LEARNERS


def available_methods() -> tuple[str, ...]:
    """Every method name ``config["method"]`` accepts; the first is the default learner."""
    return learner_methods() + OPTIMISERS + FIXED


def run_method(config: IndexingRunConfig, method: str, seeds: Mapping[str, Any], *, progress: bool = False,
               echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run ``method`` into ``config.out``; returns the evaluation (``evaluation.json``) with ``metrics``
    (the method's study metrics), ``transitions`` and ``evaluations`` (system evaluations charged)."""
    if method not in available_methods():
        raise ConfigError("method", method, available_methods())
    if method in learner_methods():
        run_config = config
        if "agent" in IndexingRunConfig.__dataclass_fields__:  # the method names the agent
            # a demonstration dataset given for dqfd is not an input of the other learners
            demonstrations = config.demonstrations if method == "dqfd" else None
            run_config = IndexingRunConfig.from_dict({**asdict(config), "agent": method,
                                                      "demonstrations": demonstrations})
        result = run_indexing(run_config, progress=progress, echo=echo, seeds=seeds)
        evaluation = result.record.read_json("evaluation.json")
        learned = "dqn" if "dqn" in evaluation["methods"] else method
        # DQfD's demonstrations are labelled by rules with the constant expert reward: offline transitions
        # that cost no system evaluation; they are reported beside the budget.
        demonstrations = (result.record.read_json("demonstrations.json")["count"]
                          if result.record.exists("demonstrations.json") else 0)
        return {**evaluation, "metrics": {**evaluation["methods"][learned], "method": method},
                "transitions": result.transitions, "evaluations": result.transitions,
                "demonstrations": int(demonstrations)}
    return _run_without_learner(config, method, seeds, progress, echo)


def _run_without_learner(config, method, seeds, progress, echo) -> dict[str, Any]:
    config.validate()
    stopwatch = Stopwatch()  # the study's Table 6.2
    if config.out is None:
        raise ConfigError("out", None, reason="a run directory is needed")
    directory = Path(config.out)
    record = RunRecord.start(directory, case_study="indexing", config={**asdict(config), "method": method},
                             seeds=seeds, versions=("gymnasium", "opentuner", "SQLAlchemy"), method=method)
    with record.outcome_on_error():
        evaluation = _search_and_evaluate(config, method, seeds, record, progress, echo, stopwatch)
    evaluation["seconds"] = stopwatch.elapsed()
    evaluation["timing"] = stopwatch.timing()
    record.write_json("evaluation.json", evaluation)
    record.mark("complete")
    return evaluation


def make_optimiser(method: str, space: IndexSetSpace, seed: int):
    from wield.agents import OpenTunerAgent, RandomSearchAgent

    if method == "opentuner":
        return OpenTunerAgent(space.space, seed=seed)  # results database in memory
    if method == "random":
        return RandomSearchAgent(space.space, seed=seed)
    raise ConfigError("method", method, OPTIMISERS)


def _search_and_evaluate(config, method, seeds, record, progress, echo, stopwatch) -> dict[str, Any]:
    collection = _load_collection(config, seeds["collection"])
    task = build_run_task(config, collection)
    try:
        schedule, test_schedule = run_schedules(config, collection, seeds, record)
        workload = test_schedule.task_for_episode(0)
        configurations: dict[str, list] = {}
        search: dict[str, Any] = {}
        budget = 0
        if method in OPTIMISERS:
            space = IndexSetSpace(collection.field_names, slots=config.queries, k=config.k)
            record.write_json("search_space.json", {"slots": space.slots, "k": space.k,
                                                    "fields": list(space.fields),
                                                    "log10_size": space.space.log10_size(),
                                                    "parameters": space.space.describe()})
            budget = config.episodes * config.queries
            agent = make_optimiser(method, space, seeds["agent"])

            def evaluate(t: int, configuration: dict[str, Any]) -> float:
                items = schedule.task_for_episode((t // config.queries) % schedule.n_episodes)
                task.system.configure(space.decode(configuration))
                metrics = task.system.measure(items)
                return task.converter.system_to_agent_reward(metrics)

            rows: list[dict[str, Any]] = []

            def on_evaluation(entry: SearchEvaluation) -> None:
                indexes = space.decode(entry.configuration)
                rows.append({"evaluation": entry.evaluation, "reward": entry.reward,
                             "best_reward": entry.best_reward, "indexes": len(indexes),
                             "index_set": "; ".join(map(str, indexes)),
                             "query_executions": task.system.counters.query_executions,
                             "cache_hits": task.system.counters.cache_hits})
                # episodes.csv is rewritten whole on every append: once per Q evaluations (a learner's
                # episode), not once per evaluation, keeps 2,000 evaluations from rewriting it 2,000 times
                if len(rows) == config.queries or entry.evaluation == budget - 1:
                    record.append_episodes(rows)
                    rows.clear()

            echo(f"{method}: {budget} evaluations ({config.episodes} episodes x {config.queries} queries) over "
                 f"10^{space.space.log10_size():.0f} index sets -> {record.path}")
            try:
                result = run_configuration_search(agent, evaluate, budget, on_evaluation, progress=progress,
                                                  description=method, stopwatch=stopwatch)
            finally:
                agent.close()
            configurations[method] = space.decode(result.best_configuration)
            search = {"best_training_reward": result.best_reward, "first_reward": result.first_reward,
                      "best_configuration": result.best_configuration}
        echo(f"evaluating on the engine ({config.repetitions} repetitions per query)")
        # With --whatif the search ran on PostgreSQL's estimates; evaluation always measures for real.
        metrics = evaluate_methods(task.evaluation_system(), workload, configurations,
                                   repetitions=config.repetitions)
        methods = {name: m.as_dict() for name, m in metrics.items()}
        return {
            "mode": seeds["mode"],
            "test_distribution": seeds["test_distribution"],
            "method": method,
            "methods": methods,
            "metrics": methods[method],
            "transitions": budget,
            "evaluations": budget,
            **search,
            "train_test_similarity": shape_similarity(schedule.all_queries(), workload),
            "engine_counters": task.system.stats,
            "work_unit": task.system.engine.work_unit,
        }
    finally:
        stopwatch.add(SYSTEM, task.engine_seconds())
        task.close()


def run_method_trial(config: Mapping[str, Any], trial: Mapping[str, Any], directory: str) -> dict[str, Any]:
    """One planned trial of ``config["method"]`` (default ``dqn``) into ``directory``; returns its summary:
    ``trial``, ``seeds``, ``transitions``, ``evaluations``, the method's ``metrics`` and every evaluated
    method's metrics."""
    import torch

    torch.set_num_threads(1)
    config = dict(config)
    method = config.pop("method", config.get("agent") or available_methods()[0])  # --agent under --class
    if method not in available_methods():
        raise ConfigError("method", method, available_methods())
    run_config = IndexingRunConfig.from_dict({**config, "out": directory})
    seeds = run_config.trial_seeds(trial)
    evaluation = run_method(run_config, method, seeds, progress=False, echo=lambda _: None)
    return {
        "trial": int(trial["trial"]),
        "method": method,
        "seeds": seeds,
        "transitions": int(evaluation["transitions"]),
        "evaluations": int(evaluation["evaluations"]),
        "demonstrations": int(evaluation.get("demonstrations", 0)),
        "metrics": evaluation["metrics"],
        "methods": evaluation["methods"],
        "train_test_similarity": evaluation["train_test_similarity"],
        "seconds": evaluation["seconds"],
        "timing": evaluation.get("timing", {}),  # seconds by category (wield.workflows.timing)
    }
