"""A learning test on a small indexing task: the trained DQN beats the random policy (work metric)."""

from __future__ import annotations

import numpy as np

from case_studies.indexing.build import build_indexing_task
from wield.agents import DQNAgent, DQNConfig, RandomAgent
from wield.tasks import TaskGraph
from wield.workflows import run_episode, train_online
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def test_dqn_beats_the_random_policy_on_a_small_task(tmp_path):
    collection = generate_imdb_collection(5_000, seed=21)
    task = build_indexing_task(collection, metric="work", workdir=tmp_path)
    try:
        schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=8), 5, 1, per_episode=False)
        env = task.environment(schedule)
        random_returns = [run_episode(env, TaskGraph.single(RandomAgent(env.action_space, seed=s)), explore=True,
                                      learn=False).total_reward for s in range(20)]
        agent = DQNAgent(env.observation_space, env.action_space,
                         DQNConfig(epsilon_decay_steps=200, learning_rate=1e-3), seed=0)
        graph = TaskGraph.single(agent)
        # 80 episodes (640 transitions): at 40 the seed-0 greedy policy only tied the best random episode
        # under the current dependency versions (numpy 2.4, gymnasium 1.4); at 80, 3 of 4 agent seeds clear
        # mean + 2 sd of the random policy (seed 0: -6.32 against a threshold of -6.69).
        train_online(env, graph, episodes=80, progress=False)
        greedy = run_episode(env, graph, explore=False, learn=False).total_reward
        assert greedy > np.mean(random_returns) + 2 * np.std(random_returns), (greedy, random_returns)
        assert greedy > np.max(random_returns) - 0.05 * abs(np.max(random_returns))
    finally:
        task.system.close()
