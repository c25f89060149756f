"""Benchmark: where an indexing episode's time goes, and what the cost cache saves.

On a 1,000,000-document collection (``--documents``) this prints, from one run:

1. the time to generate the collection and load it into SQLite (issue target: under 60 s together);
2. the share of episode wall time spent outside the database while a DQN agent trains from scratch
   (the study measured 4.9%; target under 2%);
3. query executions, cache hits, index builds and wall time for the same random episodes through the fast
   path (the cost cache: what-if planning, forced plans, indexes kept) and the slow path (before every
   measurement the indexes become exactly the configuration, in canonical order, and every query is
   executed), side by side, with their ratios, and a check that both gave identical rewards under the work
   metric.

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
from wield.workflows.timing import SYSTEM, Stopwatch, format_time_split
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def timed_episodes(task, schedule, agent, episodes: int, learn: bool,
                   stopwatch: Stopwatch | None = None) -> tuple[float, list[float]]:
    env = task.environment(schedule)
    graph = TaskGraph.single(agent, name="indexer")
    rewards, started = [], time.perf_counter()
    for episode in range(episodes):
        result = run_episode(env, graph, explore=True, learn=learn, options={"episode": episode},
                             stopwatch=stopwatch)
        rewards.extend(step.reward for step in result.steps)
    return time.perf_counter() - started, rewards


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=10, help="DQN training episodes for the overhead share")
    parser.add_argument("--naive-episodes", type=int, default=2,
                        help="random episodes for the fast path against the slow path")
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
            stopwatch = Stopwatch()
            wall, _ = timed_episodes(task, schedule, agent, args.episodes, learn=True, stopwatch=stopwatch)
            inside = task.system.counters.engine_seconds - before
            stopwatch.add(SYSTEM, inside)
            split = stopwatch.timing()
            print(f"\n(a) DQN training, {args.episodes} episodes x {args.queries} queries, work metric, cache on")
            print(f"  episode wall time {wall:8.1f} s   inside the database {inside:8.1f} s   "
                  f"outside {wall - inside:6.2f} s = {100 * (wall - inside) / wall:.2f}%")
            print(f"  Table 6.2: {format_time_split(split)}")
            print(f"  Wield's own share {split['wield'] / split['total']:.2%} (study: 4.9% framework)")
        finally:
            task.system.close()

        # (b) identical random episodes through the fast path (without the measurement store that (a) filled,
        # so it measures everything itself) and the slow path
        rows = []
        rewards = {}
        for cache in (True, False):
            task = build_indexing_task(collection, metric="work", workdir=scratch, cache_dir=scratch,
                                       cost_cache=cache, measurement_store=False)
            try:
                wall, rewards[cache] = timed_episodes(task, schedule, RandomAgent(task.schema.action_space, seed=1),
                                                      args.naive_episodes, learn=False)
                c = task.system.counters
                rows.append((("fast" if cache else "slow"), c.query_executions, c.cache_hits, c.index_builds,
                             c.index_drops, wall))
            finally:
                task.system.close()
        print(f"\n(b) {args.naive_episodes} random episodes, the same actions, fast path (cost cache) and slow path")
        print(f"  {'path':6s} {'query executions':>17s} {'cache hits':>11s} {'index builds':>13s} "
              f"{'index drops':>12s} {'wall s':>9s}")
        for mode, executions, hits, builds, drops, wall in rows:
            print(f"  {mode:6s} {executions:17d} {hits:11d} {builds:13d} {drops:12d} {wall:9.1f}")
        (_, e1, _, b1, _, w1), (_, e2, _, b2, _, w2) = rows
        print(f"  slow / fast: {e2 / max(1, e1):.1f}x executions, {b2 / max(1, b1):.1f}x index builds, "
              f"{w2 / w1:.1f}x wall time")
        identical = rewards[True] == rewards[False]
        print(f"  rewards identical under the work metric: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
