"""WorkloadSchedule: the ordered workload items of every episode, serialisable and regenerable.

A schedule stores the distinct tasks (each a list of queries as dicts) and, per episode, which task it
plays. Blackbox schedules repeat one task; generalisation schedules draw a new task per episode. The JSON
form is canonical (sorted keys), so regenerating from the same seed and parameters gives identical bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wield.io import atomic_write_text
from wield.seeding import derive_seed
from workloads.collection import Collection
from workloads.queries import Query
from workloads.query_generator import QueryWorkloadConfig, QueryWorkloadGenerator


@dataclass
class WorkloadSchedule:
    generator: str
    params: dict[str, Any]
    seed: int
    tasks: list[list[dict]]
    episodes: list[int]

    def __post_init__(self) -> None:
        self._decoded: dict[int, list[Query]] = {}

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    def task_for_episode(self, index: int) -> list[Query]:
        task = self.episodes[index]
        if task not in self._decoded:
            self._decoded[task] = [Query.from_dict(q) for q in self.tasks[task]]
        return self._decoded[task]

    def all_queries(self) -> list[Query]:
        return [q for i in range(len(self.tasks)) for q in self.task_for_episode(self.episodes.index(i))]

    def to_json(self) -> str:
        data = {"generator": self.generator, "params": self.params, "seed": self.seed, "tasks": self.tasks,
                "episodes": self.episodes}
        return json.dumps(data, sort_keys=True, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "WorkloadSchedule":
        data = json.loads(text)
        return cls(data["generator"], data["params"], data["seed"], data["tasks"], data["episodes"])

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "WorkloadSchedule":
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()[:16]


def make_query_schedule(collection: Collection, config: QueryWorkloadConfig, seed: int, n_episodes: int,
                        per_episode: bool) -> WorkloadSchedule:
    """One task for every episode (``per_episode=False``) or a new task per episode."""
    generator = QueryWorkloadGenerator(collection, config)
    if per_episode:
        tasks = [[q.to_dict() for q in generator.generate(derive_seed(seed, "episode", i))]
                 for i in range(n_episodes)]
        episodes = list(range(n_episodes))
    else:
        tasks = [[q.to_dict() for q in generator.generate(seed)]]
        episodes = [0] * n_episodes
    params = {"config": config.as_dict(), "per_episode": per_episode, "collection": collection.fingerprint(),
              "collection_source": collection.source}
    return WorkloadSchedule("queries", json.loads(json.dumps(params)), int(seed), tasks, episodes)
