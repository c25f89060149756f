"""The "train" step of an indexing run for the learners (DQN, DQfD): online training on the trial's training
schedule, then the index sets each learner's policy builds on the test workload, and the learning verdict.

Rows of a learner ``M`` (``dqn``, ``dqfd``) in the trial's evaluation:

- ``M-greedy``: the trained policy's greedy index set, one episode of the test workload;
- ``M``: the method's result. Generalisation: the greedy policy on the unseen test workload. Blackbox: the
  index set with the best step reward seen during training (the study's blackbox evaluation): a **search
  outcome** of the training run, not a learned policy, to be read next to random search at the same number
  of system evaluations (``wield compare indexing --methods M,random``). Blackbox under ``--train-on
  redraws`` (``train_on.py``): the greedy policy's set on the training workload, a learned policy (the
  episodes played redraws, so no set seen in training was a set for the test workload);
- ``random-policy``: a uniformly random policy over the valid head values (its own seed), one episode: the
  baseline every learner must beat.

The learning verdict (``verdict.py``) plays the greedy policy, the random policy, the policy that builds no
index and the index advisor on 10 evaluation workloads drawn with seeds never used in training, compares
them workload by workload on the reward of the index set each builds, and reads the training curve from
``episodes.csv``. These evaluation episodes are not charged to the method's budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from case_studies.indexing.agents import AGENT_LABELS, make_run_agent
from case_studies.indexing.baselines import random_policy_configuration
from case_studies.indexing.build import RunTask
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.train_on import REDRAWS, WORKLOAD
from case_studies.indexing.verdict import VERDICT_INSTANCES, indexing_verdict
from wield.protocols import TrialSeeds
from wield.tasks import ImprovementReward, TaskGraph
from wield.workflows import EpisodeResult, RunRecord, run_episode, train_online, trial_stopwatch
from wield.workflows.timing import AGENT_UPDATING

RANDOM_POLICY = "random-policy"  # the row of the random policy measured beside every learner


@dataclass
class Trained:
    """What a method's training produced: the index sets to evaluate (by method name), the transitions and
    system evaluations it was charged, figures for ``evaluation.json`` and the learning verdict."""

    configurations: dict[str, list[IndexSpec]]
    transitions: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    # rows whose set depends on the trial's seeds and workload, not on the method (every learner's random
    # policy): evaluation keeps their copies for the other methods' trials on the same workload
    shared: tuple[str, ...] = ()


class BestConfiguration:
    """Tracks the index set with the highest step reward seen during training (blackbox evaluation)."""

    def __init__(self) -> None:
        self.reward = -math.inf
        self.configuration: list[IndexSpec] = []

    def step(self, reward: float, state) -> None:
        if reward > self.reward:
            self.reward = float(reward)
            self.configuration = list(state)

    def __call__(self, result: EpisodeResult) -> None:
        step = result.best_step
        self.step(step.reward, step.system_state)


def train_learner(config, run: RunTask, seeds: TrialSeeds, record: RunRecord, *, progress: bool = False,
                  echo: Callable[[str], None] = print) -> Trained:
    """Train ``config.agent`` online on ``run.schedule``; the random, greedy and learned index sets and the
    learning verdict (see the module docstring)."""
    task = run.task
    redraws = run.schedule.params.get("redraws", False)  # --train-on redraws (train_on.py)
    env = task.environment(run.schedule)
    test_env = env if seeds.blackbox and not redraws else task.environment(run.test_schedule)
    method = config.agent
    best = BestConfiguration()
    what = "redraws of " if redraws else ""
    echo(f"training {AGENT_LABELS[method]} ({seeds.mode}) on {what}{config.queries} queries for "
         f"{config.episodes} episodes ({config.metric} metric) -> {record.path}")
    phase = trial_stopwatch().phase
    with phase("training"):
        agent = _train_wield(config, task, env, run, seeds, record, best, progress, echo)
    with phase("learned and random sets"):
        greedy, greedy_reward = _greedy(test_env, agent)
        random_seed = seeds.derive("random_policy")
        random_policy = random_policy_configuration(test_env, random_seed, episode=0)
    searched = seeds.blackbox and config.episodes > 0 and not redraws  # the best set seen: for the test workload
    learned = best.configuration if searched else greedy
    search = None
    if searched:
        search = {"label": "best index set seen in training (a search outcome, not a learned policy)",
                  "row": method, "reward": best.reward, "greedy_reward": greedy_reward,
                  "line": (f"search outcome (row '{method}', not a learned policy): the best index set seen in "
                           f"training has step reward {best.reward:.3f} (the greedy policy's final set: "
                           f"{greedy_reward:.3f}); random search at the same {agent.steps_observed} evaluations is "
                           f"not run here (each evaluation measures a whole new index set): 'wield compare "
                           f"indexing --methods {method},random' with this run's options runs both on one plan")}
    echo(f"learning verdict: greedy policy vs random, no index and the advisor on {VERDICT_INSTANCES} instances")
    with phase("verdict"):
        verdict = indexing_verdict(run, config.queries, config.episodes, seeds, agent, record,
                                   random_seed=random_seed, search_outcome=search, budgets=config.budgets,
                                   method=method)
    # under redraws the best step reward was for some redraw: not a figure of the test workload
    details = {"train_on": REDRAWS if redraws else WORKLOAD,
               **({} if redraws else {"best_training_reward": best.reward})}
    return Trained({RANDOM_POLICY: random_policy, f"{method}-greedy": greedy, method: learned},
                   agent.steps_observed, details, verdict, shared=(RANDOM_POLICY,))


def _greedy(env, agent) -> tuple[list[IndexSpec], float]:
    """The greedy policy's index set on episode 0 of ``env`` and the reward of its last step."""
    result = run_episode(env, TaskGraph.single(agent, name="indexer"), explore=False, learn=False,
                         options={"episode": 0})
    return list(env.system.state()), float(result.steps[-1].reward)


def _episode_row(task, episode: int, total_reward: float, final_reward: float, metrics, **more) -> dict[str, Any]:
    size, runtime = task.converter.normalised_costs(metrics)
    return {"episode": episode, "total_reward": total_reward, "final_reward": final_reward, "size_share": size,
            "runtime_share": runtime, "indexes": metrics.get("n_indexes", 0), **more,
            "query_executions": task.system.counters.query_executions, "cache_hits": task.system.counters.cache_hits}


def _train_wield(config, task, env, run, seeds, record, best, progress, echo):
    """Wield's DQN or DQfD through ``train_online``; the model is saved as ``model.pt``. The agent's time goes
    to the trial's stopwatch (the study's Table 6.2)."""
    stopwatch = trial_stopwatch()
    engine_before = task.engine_seconds()
    with stopwatch(AGENT_UPDATING):  # DQfD's pretraining is the agent updating, less what the engine did
        agent = make_run_agent(config, task, run.schedule, seeds.optimisation_seed, record, progress=progress,
                               echo=echo)
    stopwatch.add(AGENT_UPDATING, engine_before - task.engine_seconds())
    reward_fn = ImprovementReward(task.converter.start_level()) if config.reward == "improvement" else None
    graph = TaskGraph.single(agent, name="indexer", reward_fn=reward_fn)

    def on_episode(result: EpisodeResult) -> None:
        best(result)
        stats = result.update_stats.get("indexer", {})
        record.append_episode(_episode_row(task, result.episode, result.total_reward, result.steps[-1].reward,
                                           result.final_metrics, epsilon=stats.get("epsilon"),
                                           loss=stats.get("loss"), seconds=result.seconds,
                                           decisions=len(result.steps)))

    train_online(env, graph, config.episodes, on_episode=on_episode, progress=progress, stopwatch=stopwatch)
    record.save_model(agent.state_dict())
    return agent

