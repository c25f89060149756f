"""Evaluate a trained indexing agent on another engine: same schema, converter and checkpoint, new system.

The agent's state (tokenised query, indexed-attribute tokens, per-column selectivity from the collection)
does not depend on the engine, so a model trained on SQLite acts identically on PostgreSQL or MongoDB;
only the measured costs differ. ``evaluate_checkpoint`` rebuilds the run's collection and test workload
from its record, loads ``model.pt``, lets the greedy policy build its index set on the new engine and
measures it, with the recorded learned index set, beside the no-index and full-index baselines.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from case_studies.indexing.agents import learner_config
from case_studies.indexing.baselines import policy_configuration
from case_studies.indexing.build import build_indexing_task, load_run_collection
from case_studies.indexing.evaluation import evaluate_methods
from case_studies.indexing.run import IndexingRunConfig
from case_studies.indexing.index_spec import IndexSpec
from wield.agents import DQNAgent, SB3Agent, hyperparameters
from wield.errors import ConfigError
from wield.io import atomic_write_json
from wield.protocols import TrialSeeds
from wield.workflows.run_record import check_finished
from wield.cli.output import print_json
from workloads.schedule import WorkloadSchedule

def load_greedy_agent(state: dict[str, Any], config: IndexingRunConfig, task, seed: int) -> DQNAgent | SB3Agent:
    """The trained agent of a run's model.pt, ready to act greedily (DQN/DQfD or a Stable-Baselines3 agent)."""
    space = (task.schema.state_space, task.schema.action_space)
    if "algorithm" in state:  # a Stable-Baselines3 reference learner (wield.agents.sb3)
        agent = SB3Agent(state["algorithm"], *space, seed=seed, budget=config.episodes * config.queries,
                         hyperparameters=hyperparameters.for_learner(state["algorithm"], config.hyperparameters))
        agent.load_state_dict(state)
        return agent
    learner = config.agent if config.agent in ("dqn", "dqfd") else "dqn"  # the network's shape is the run's
    dqn = DQNAgent(*space, learner_config(learner, config.actions, config.hyperparameters), seed=seed)
    dqn.online.load_state_dict(state["online"])  # acting greedily needs the online network only
    return dqn


def evaluate_checkpoint(run_dir: str | Path, engine: str, uri: str | None = None,
                        repetitions: int | None = None) -> dict[str, Any]:
    """Evaluate the finished run ``run_dir``'s model on ``engine`` (see the module docstring)."""
    if not (Path(run_dir) / "run.json").is_file():
        raise ConfigError("evaluate_checkpoint", str(run_dir), reason="not a finished indexing run record: "
                                                                      "run.json is missing")
    record = check_finished(run_dir, "evaluate_checkpoint")  # finished, and no file damaged since
    for name in ("config.json", "seeds.json", "schedule-test.json", "model.pt", "evaluation.json"):
        if not record.exists(name):
            raise ConfigError("evaluate_checkpoint", str(run_dir),
                              reason=f"not a finished indexing run record: {name} is missing")
    config = IndexingRunConfig.from_dict(record.read_json("config.json"))
    seeds = TrialSeeds.from_dict(record.read_json("seeds.json"))
    recorded = record.read_json("evaluation.json")
    # the learner's rows: named after the method (records before that named them "dqn" for DQfD too)
    learned_row = config.agent if config.agent in recorded["methods"] else "dqn"
    repetitions = config.repetitions if repetitions is None else repetitions
    collection = load_run_collection(config, seeds)
    workload = WorkloadSchedule.load(record.file("schedule-test.json")).task_for_episode(0)
    task = build_indexing_task(collection, k=config.k, actions=config.actions, metric="work",
                               aggregate=config.aggregate, size_weight=config.size_weight, runtime_weight=config.runtime_weight,
                               engine=engine, uri=uri, cache_dir=config.cache_dir)
    try:
        state = record.load_model()
        agent = load_greedy_agent(state, config, task, seeds.optimisation_seed)
        schedule = WorkloadSchedule.load(record.file("schedule-test.json"))
        greedy = policy_configuration(task.environment(schedule), agent, episode=0, explore=False)
        learned = [IndexSpec.parse(text) for text in recorded["methods"][learned_row]["indexes"]]
        metrics = evaluate_methods(task.system, workload, {f"{learned_row}-greedy": greedy, learned_row: learned},
                                   repetitions=repetitions)
    finally:
        task.close()
    recorded_greedy = recorded["methods"].get(f"{learned_row}-greedy", {}).get("indexes")
    return {
        "source_run": str(run_dir),
        "source_engine": config.engine,
        "engine": engine,
        "repetitions": repetitions,
        "greedy_same_as_source": recorded_greedy == [str(s.canonical()) for s in greedy],
        "work_unit": task.system.engine.work_unit,
        "methods": {name: m.as_dict() for name, m in metrics.items()},
    }


def evaluate_checkpoint_command(args: argparse.Namespace) -> int:
    """``wield run indexing --evaluate-checkpoint RUN_DIR --engine E [--uri U]``."""
    from case_studies.indexing.build import check_engine_choice, server_dir_uri
    from case_studies.indexing.report import results_table
    from wield.workflows.ownership import check_path, check_owner, ensure_directory

    uri = server_dir_uri(args.server_dir) if getattr(args, "server_dir", None) else args.uri
    check_engine_choice(args.engine, uri)
    out = Path(args.out) if args.out else None
    if out is not None:  # checked before evaluating, creating nothing: no planted link, no other user's directory
        check_path(out, "out")
        if out.is_dir():
            check_owner(out, "out")
    result = evaluate_checkpoint(args.evaluate_checkpoint, args.engine, uri, args.repetitions)
    if out is not None:
        out = ensure_directory(out, "out", owned=True)  # and again as it is made
        atomic_write_json(out / f"evaluation-{args.engine}.json", result)
    if args.json:
        print_json("checkpoint-evaluation", result)
        return 0
    print(f"model of {result['source_run']} (trained on {result['source_engine']}) evaluated on "
          f"{result['engine']}; work = {result['work_unit']}")
    print(results_table(result["methods"]))
    print(f"greedy policy builds the same index set as on {result['source_engine']}: "
          f"{'yes' if result['greedy_same_as_source'] else 'no'}")
    return 0
