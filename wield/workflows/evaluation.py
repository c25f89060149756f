"""Policy evaluation: play a policy on an environment for some episodes, without learning.

``evaluate_policy(env, policy, episodes)`` plays greedily (``explore=False``) and returns every episode's
return and final metrics. A policy is an ``Agent`` (a learner, ``RandomAgent``), a ``TaskGraph``, or a
``LabellingRule``, which acts in system terms: ``RulePolicy`` labels the environment's current context and
the converter turns the label's system action into the agent action, so heuristics (LRU, earliest finish,
the full index) are evaluated through exactly the same environment, steps and rewards as learners.

``assess_learning(env, policy, training_returns)`` plays the trained policy greedily and a masked uniform
random policy for enough episodes to estimate its spread, on the same environment, and returns the learning
verdict (``wield.protocols.verdict``) that every run reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from wield.agents.base import Action, ActionMask, Agent, Observation
from wield.agents.random_agent import RandomAgent
from wield.demonstrations.rules import LabellingRule
from wield.errors import ConfigError
from wield.protocols.verdict import LearningVerdict, learning_verdict
from wield.tasks import TaskGraph
from wield.workflows.training import run_episode


class RulePolicy(Agent):
    """A labelling rule playing ``env``: the rule's action for the current context, in agent terms."""

    def __init__(self, rule: LabellingRule, env: gym.Env) -> None:
        self.rule = rule
        self.env = env.unwrapped

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        env: Any = self.env  # a WieldEnv: it has the current context and the converter
        context = env.context
        label = self.rule.label(context["state"], context)
        if label is None:
            raise ConfigError("rule", self.rule.name, reason="labelled no action for this context")
        return env.converter.system_to_agent_action(label.action, context)


@dataclass
class PolicyEvaluation:
    """Per evaluated episode: its index, its return and the metrics measured at its end."""

    episodes: list[int]
    returns: list[float]
    metrics: list[dict[str, Any]]

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns))


def evaluate_policy(env: gym.Env, policy: Agent | TaskGraph | LabellingRule, episodes: int | Sequence[int] = 1,
                    *, explore: bool = False) -> PolicyEvaluation:
    """Play ``policy`` on ``env`` for ``episodes`` (a count from episode 0, or the episode indices) without
    learning; greedy unless ``explore``."""
    if isinstance(policy, LabellingRule):
        policy = RulePolicy(policy, env)
    graph = policy if isinstance(policy, TaskGraph) else TaskGraph.single(policy)
    indices = list(range(episodes)) if isinstance(episodes, int) else list(episodes)
    results = [run_episode(env, graph, explore=explore, learn=False, options={"episode": index})
               for index in indices]
    return PolicyEvaluation(indices, [r.total_reward for r in results], [r.final_metrics for r in results])


RANDOM_EPISODES = 20  # random-policy episodes behind the verdict's mean and spread


def assess_learning(env: gym.Env, policy: Agent | TaskGraph, training_returns: Sequence[float] = (), *,
                    greedy_episodes: int | Sequence[int] = 1, random_episodes: int = RANDOM_EPISODES,
                    seed: int = 0) -> LearningVerdict:
    """The learning verdict of ``policy`` on ``env``: its greedy returns (``greedy_episodes``: a count from
    episode 0, or the indices) against ``random_episodes`` episodes of a uniform random policy over the
    valid actions (seeded by ``seed``, from episode 0 on, cycling through the environment's episodes), and
    the training curve ``training_returns`` (per-episode returns in order; empty when nothing trained
    online)."""
    greedy = evaluate_policy(env, policy, greedy_episodes)
    random = evaluate_policy(env, RandomAgent(env.action_space, seed=seed), random_episodes, explore=True)
    return learning_verdict(greedy.returns, random.returns, training_returns)
