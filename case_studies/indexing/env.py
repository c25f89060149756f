"""The registered gymnasium environment ``wield/Indexing-v0``.

``gymnasium.make("case_studies.indexing:wield/Indexing-v0")`` (or ``import case_studies.indexing`` then
``gymnasium.make("wield/Indexing-v0")``) builds an IMDB-like collection in an embedded SQLite database, a
blackbox workload of queries and the indexing schema and converter, all from ``seed``. Its defaults are
those of ``wield run indexing`` (``defaults.py``: 20,000 documents, 10 queries, k = 3, w_m = w_t = 1), so an
external learner trains on the same task; pass smaller sizes for quick experiments.
"""

from __future__ import annotations

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.defaults import ACTION_DESIGN, DOCUMENTS, K, QUERIES, RUNTIME_WEIGHT, SIZE_WEIGHT
from wield.envs import WieldEnv
from wield.seeding import derive_seed
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def make_indexing_env(documents: int = DOCUMENTS, queries: int = QUERIES, k: int = K, seed: int = 0,
                      metric: str = "work", episodes: int = 1, per_episode: bool = False,
                      cache_dir: str | None = None, size_weight: float = SIZE_WEIGHT,
                      runtime_weight: float = RUNTIME_WEIGHT, actions: str = ACTION_DESIGN) -> WieldEnv:
    """A ready indexing environment; ``per_episode=True`` draws a new workload for every episode. Its step
    reward is the level -(w_m * size + w_t * runtime) of the current index set; ``wield run indexing``
    rewards its learner with the level's change (``wield.tasks.ImprovementReward(converter.start_level())``
    as a task's ``reward_fn``)."""
    collection = generate_imdb_collection(documents, derive_seed(seed, "collection"))
    task = build_indexing_task(collection, k=k, metric=metric, cache_dir=cache_dir, size_weight=size_weight,
                               runtime_weight=runtime_weight, actions=actions)
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=queries),
                                   derive_seed(seed, "workload"), episodes, per_episode=per_episode)
    return task.environment(schedule)
