"""Benchmark: where an indexing episode's time goes, and what the cost cache saves.

On a 1,000,000-document collection (``--documents``) this prints, from one run:

1. the time to generate the collection and load it into SQLite (issue target: under 60 s together);
2. the share of episode wall time spent outside the database while a DQN agent trains from scratch
   (the study measured 4.9%; target under 2%);
3. query executions, index builds and wall time for the same random episodes with the cost cache and
   without it (a naive environment that builds every index and re-executes every query at every step),
   side by side, with their ratios, and a check that both gave identical rewards under the work metric.

Usage: python benchmarks/indexing_overhead.py [--documents N] [--episodes E] [--naive-episodes E]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.engines.sqlite import SQLiteEngine
from wield.agents import DQNAgent, DQNConfig, RandomAgent
from wield.tasks import TaskGraph
from wield.workflows import run_episode
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def timed_episodes(task, schedule, agent, episodes: int, learn: bool) -> tuple[float, list[float]]:
    env = task.environment(schedule)
    graph = TaskGraph.single(agent, name="indexer")
    rewards, started = [], time.perf_counter()
    for episode in range(episodes):
        result = run_episode(env, graph, explore=True, learn=learn, options={"episode": episode})
        rewards.extend(step.reward for step in result.steps)
    return time.perf_counter() - started, rewards


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=10, help="DQN training episodes for the overhead share")
    parser.add_argument("--naive-episodes", type=int, default=2, help="random episodes for cache vs naive")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as the wield command does

    with tempfile.TemporaryDirectory(prefix="wield-bench-") as scratch:
        started = time.perf_counter()
        collection = generate_imdb_collection(args.documents, args.seed)
        generated = time.perf_counter() - started
        started = time.perf_counter()
        SQLiteEngine.base_database(collection, cache_dir=scratch)
        loaded = time.perf_counter() - started
        print(f"collection: {args.documents:,} documents, 15 fields")
        print(f"  generate {generated:6.1f} s   load into SQLite {loaded:6.1f} s   total {generated + loaded:6.1f} s")

        config = QueryWorkloadConfig(n_queries=args.queries)
        schedule = make_query_schedule(collection, config, args.seed, 1, per_episode=False)

        # (a) overhead share while a DQN agent trains from scratch, with the cache (the default)
        task = build_indexing_task(collection, metric="work", workdir=scratch, cache_dir=scratch)
        try:
            task.system.references(schedule.task_for_episode(0))  # normalisers: measured once, not per step
            before = task.system.counters.engine_seconds
            agent = DQNAgent(task.schema.state_space, task.schema.action_space, DQNConfig(), seed=args.seed)
            wall, _ = timed_episodes(task, schedule, agent, args.episodes, learn=True)
            inside = task.system.counters.engine_seconds - before
            print(f"\n(a) DQN training, {args.episodes} episodes x {args.queries} queries, work metric, cache on")
            print(f"  episode wall time {wall:8.1f} s   inside the database {inside:8.1f} s   "
                  f"outside {wall - inside:6.2f} s = {100 * (wall - inside) / wall:.2f}% (study: 4.9%)")
        finally:
            task.system.close()

        # (b) identical random episodes with and without the cost cache
        rows = []
        rewards = {}
        for cache in (True, False):
            task = build_indexing_task(collection, metric="work", workdir=scratch, cache_dir=scratch, cost_cache=cache)
            try:
                wall, rewards[cache] = timed_episodes(task, schedule, RandomAgent(task.schema.action_space, seed=1),
                                                      args.naive_episodes, learn=False)
                rows.append((("cache" if cache else "naive"), task.system.counters.query_executions,
                             task.system.counters.index_builds, wall))
            finally:
                task.system.close()
        print(f"\n(b) {args.naive_episodes} random episodes, the same actions, with and without the cost cache")
        print(f"  {'mode':6s} {'query executions':>17s} {'index builds':>13s} {'wall s':>9s}")
        for mode, executions, builds, wall in rows:
            print(f"  {mode:6s} {executions:17d} {builds:13d} {wall:9.1f}")
        (_, e1, b1, w1), (_, e2, b2, w2) = rows
        print(f"  naive / cache: {e2 / max(1, e1):.1f}x executions, {b2 / max(1, b1):.1f}x index builds, "
              f"{w2 / w1:.1f}x wall time")
        identical = rewards[True] == rewards[False]
        print(f"  rewards identical under the work metric: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
