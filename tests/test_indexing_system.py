"""The cached, incremental reward equals a full re-evaluation, and the cache really saves executions."""

from __future__ import annotations

import pytest

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.index_spec import IndexSpec, full_index
from wield.agents import RandomAgent
from workloads import make_query_schedule, QueryWorkloadConfig


def play(env, seed, episodes):
    """Rewards and configurations of random episodes (same actions for the same seed)."""
    agent = RandomAgent(env.action_space, seed=seed)
    rewards, configurations = [], []
    for episode in range(episodes):
        observation, info = env.reset(options={"episode": episode})
        done = False
        while not done:
            action = agent.act(observation, mask=info["action_mask"])
            observation, reward, done, _, info = env.step(action)
            rewards.append(reward)
            configurations.append(info["system_state"])
    return rewards, configurations


@pytest.mark.parametrize("per_episode", [False, True])
def test_cached_incremental_reward_equals_full_reevaluation(small_collection, tmp_path, per_episode):
    schedule = make_query_schedule(small_collection, QueryWorkloadConfig(n_queries=8), 5, 3,
                                   per_episode=per_episode)
    cached = build_indexing_task(small_collection, metric="work", workdir=tmp_path, cost_cache=True)
    naive = build_indexing_task(small_collection, metric="work", workdir=tmp_path, cost_cache=False)
    try:
        cached_rewards, cached_configs = play(cached.environment(schedule), seed=3, episodes=3)
        naive_rewards, naive_configs = play(naive.environment(schedule), seed=3, episodes=3)
        assert cached_configs == naive_configs
        assert cached_rewards == naive_rewards  # exactly, under the work metric
        # the naive run executed every query at every step; the cached one far fewer
        assert naive.system.counters.query_executions >= 3 * 8 * 8
        assert cached.system.counters.query_executions < 0.6 * naive.system.counters.query_executions
        assert cached.system.counters.cache_hits > 0
    finally:
        cached.system.close()
        naive.system.close()


def test_identical_index_set_is_never_rebuilt(small_collection, small_workload, tmp_path):
    task = build_indexing_task(small_collection, metric="work", workdir=tmp_path)
    try:
        system = task.system
        spec = full_index(small_workload[0])
        for _ in range(3):
            system.reset()
            system.apply(spec)
            system.measure(small_workload)
        builds_after_first = system.counters.index_builds
        executions = system.counters.query_executions
        system.reset()
        system.apply(spec)
        system.measure(small_workload)
        assert system.counters.index_builds == builds_after_first
        assert system.counters.query_executions == executions
    finally:
        task.system.close()


def test_inverted_index_is_the_same_index(small_collection, tmp_path):
    task = build_indexing_task(small_collection, workdir=tmp_path)
    try:
        task.system.apply(IndexSpec.of([("genre", "desc"), ("start_year", "asc")]))
        task.system.apply(IndexSpec.of([("genre", "asc"), ("start_year", "desc")]))
        assert task.system.state() == (IndexSpec.of([("genre", "asc"), ("start_year", "desc")]),)
    finally:
        task.system.close()


def test_reward_is_normalised_per_workload(small_collection, small_workload, tmp_path):
    task = build_indexing_task(small_collection, workdir=tmp_path)
    try:
        task.system.reset()
        metrics = task.system.measure(small_workload)
        assert task.converter.normalised_costs(metrics) == (0.0, 1.0)
        for query in small_workload:
            task.system.apply(full_index(query))
        size, runtime = task.converter.normalised_costs(task.system.measure(small_workload))
        assert size == pytest.approx(1.0)
        assert runtime < 1.0
        assert task.converter.system_to_agent_reward(task.system.measure(small_workload)) == \
            pytest.approx(-(size + runtime))
    finally:
        task.system.close()
