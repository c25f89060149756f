"""The registered gymnasium environment ``wield/Indexing-v0``.

``gymnasium.make("case_studies.indexing:wield/Indexing-v0")`` (or ``import case_studies.indexing`` then
``gymnasium.make("wield/Indexing-v0")``) builds a small IMDB-like collection in an embedded SQLite
database, a blackbox workload of queries and the indexing schema and converter, all from ``seed``.
"""

from __future__ import annotations

from case_studies.indexing.build import build_indexing_task
from wield.envs import WieldEnv
from wield.seeding import derive_seed
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def make_indexing_env(documents: int = 5_000, queries: int = 20, k: int = 3, seed: int = 0,
                      metric: str = "work", episodes: int = 1, per_episode: bool = False,
                      cache_dir: str | None = None) -> WieldEnv:
    """A ready indexing environment; ``per_episode=True`` draws a new workload for every episode."""
    collection = generate_imdb_collection(documents, derive_seed(seed, "collection"))
    task = build_indexing_task(collection, k=k, metric=metric, cache_dir=cache_dir)
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=queries),
                                   derive_seed(seed, "workload"), episodes, per_episode=per_episode)
    return task.environment(schedule)
