"""Baselines through the same contract as the learner: no index, full index, a random policy.

No index and full index are fixed configurations (see evaluation.full_index_configuration); the random
policy plays the same environment as the learner with uniformly random valid head values, so it is charged
and evaluated exactly like an agent.
"""

from __future__ import annotations

from case_studies.indexing.index_spec import IndexSpec
from wield.agents import RandomAgent
from wield.tasks import TaskGraph
from wield.workflows import run_episode


def policy_configuration(env, agent, episode: int = 0, explore: bool = False) -> list[IndexSpec]:
    """The index configuration an agent builds in one episode of ``env``."""
    run_episode(env, TaskGraph.single(agent, name="indexer"), explore=explore, learn=False,
                         options={"episode": episode})
    return list(env.system.state())


def random_policy_configuration(env, seed: int, episode: int = 0) -> list[IndexSpec]:
    """The configuration a uniformly random (masked) policy builds in one episode."""
    return policy_configuration(env, RandomAgent(env.action_space, seed=seed), episode, explore=True)
