"""The "train" step of an indexing run for the learners (DQN, DQfD): online training on the trial's training
schedule, then the index sets each learner's policy builds on the test workload.

Blackbox: the index set with the best training reward (the study's blackbox evaluation) is the learner's
result, next to the greedy policy's; generalisation: the greedy policy builds its index set on the unseen
test workload. A random policy (uniformly random valid head values, its own seed) plays the same
environment as the baseline every learner must beat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from case_studies.indexing.agents import AGENT_LABELS, make_run_agent
from case_studies.indexing.baselines import policy_configuration, random_policy_configuration
from case_studies.indexing.build import RunTask
from case_studies.indexing.index_spec import IndexSpec
from wield.protocols import TrialSeeds
from wield.tasks import TaskGraph
from wield.workflows import EpisodeResult, RunRecord, train_online, trial_stopwatch
from wield.workflows.timing import AGENT_UPDATING


@dataclass
class Trained:
    """What a method's training produced: the index sets to evaluate (by method name), the transitions and
    system evaluations it was charged, and figures for ``evaluation.json``."""

    configurations: dict[str, list[IndexSpec]]
    transitions: int = 0
    details: dict[str, Any] = field(default_factory=dict)


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


def train_learner(config, run: RunTask, seeds: TrialSeeds, record: RunRecord, *, progress: bool = False,
                  echo: Callable[[str], None] = print) -> Trained:
    """Train ``config.agent`` online on ``run.schedule``; the random, greedy and learned index sets."""
    task = run.task
    env = task.environment(run.schedule)
    test_env = env if seeds.blackbox else task.environment(run.test_schedule)
    stopwatch = trial_stopwatch()  # the study's Table 6.2
    engine_before = task.engine_seconds()
    with stopwatch(AGENT_UPDATING):  # DQfD's pretraining is the agent updating, less what the engine did
        agent = make_run_agent(config, task, run.schedule, seeds.optimisation_seed, record, progress=progress,
                               echo=echo)
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

    echo(f"training {AGENT_LABELS[config.agent]} ({seeds.mode}) on {config.queries} queries for "
         f"{config.episodes} episodes ({config.metric} metric) -> {record.path}")
    train_online(env, graph, config.episodes, on_episode=on_episode, progress=progress, stopwatch=stopwatch)
    record.save_model(agent.state_dict())
    greedy = policy_configuration(test_env, agent, episode=0, explore=False)
    random_policy = random_policy_configuration(test_env, seeds.derive("random_policy"), episode=0)
    learned = best.configuration if seeds.blackbox and config.episodes > 0 else greedy
    return Trained({"random": random_policy, "dqn-greedy": greedy, "dqn": learned}, agent.steps_observed,
                   {"best_training_reward": best.reward})
