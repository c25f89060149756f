"""WorkloadSchedule: the workload items of every episode, serialisable and regenerable from seed + params.

A schedule stores the distinct tasks (each a list of queries as dicts) and, per episode, the index of the task
it plays. Blackbox schedules repeat one task; generalisation schedules draw a new task per episode from seeds
derived as ``derive_seed(seed, "episode", i)``; redraw schedules (``redraws=True``, blackbox) play, in episode
``i``, the one task's queries with their predicate values drawn anew (``QueryWorkloadGenerator.redraw``) with
``derive_seed(seed, REDRAW_STREAM, i)`` (``redraw_seeds``). The JSON form is canonical (sorted keys, fixed layout), so
regenerating a schedule from its seed and parameters gives byte-identical JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wield.errors import ConfigError, DataError
from wield.io import atomic_write_text, to_jsonable, parse_json
from wield.seeding import derive_seed
from workloads.collection import Collection
from workloads.queries import Query
from workloads.query_generator import QueryWorkloadConfig, QueryWorkloadGenerator

QUERY_GENERATOR = "workloads.query_templates"
# The seed stream of a redraw schedule's episodes: a name no other stream of a trial uses (the verdict's
# evaluation and selection instances are "evaluation-instances" and "selection-instances", wield.protocols.plan)
REDRAW_STREAM = "training-redraws"


@dataclass
class WorkloadSchedule:
    """``tasks``: distinct query lists (as dicts); ``episodes[i]``: the task index episode ``i`` plays."""

    generator: str
    params: dict[str, Any]
    seed: int
    tasks: list[list[dict]]
    episodes: list[int]
    _decoded: dict[int, list[Query]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.generator, str) or not isinstance(self.params, dict):
            raise DataError("schedule: 'generator' must be a string and 'params' an object")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise DataError(f"schedule: 'seed' must be an integer, found {self.seed!r}")
        if not isinstance(self.tasks, list) or not all(isinstance(t, list) for t in self.tasks):
            raise DataError("schedule: 'tasks' must be a list of query lists")
        if not isinstance(self.episodes, list) or not self.episodes:
            raise DataError("schedule: 'episodes' must be a non-empty list of task indices")
        for i, task in enumerate(self.episodes):
            if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < len(self.tasks):
                raise DataError(f"schedule: episode {i} names task {task!r}; tasks are 0..{len(self.tasks) - 1}")
        for t, task in enumerate(self.tasks):  # decode everything now: a bad query is reported on load
            try:
                self._decoded[t] = [Query.from_dict(q) for q in task]
            except (DataError, ConfigError) as exc:
                raise DataError(f"schedule: task {t}: {exc}") from exc

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    def task_for_episode(self, index: int) -> list[Query]:
        """The queries of episode ``index`` (a fresh list; the queries themselves are immutable)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.n_episodes:
            raise ConfigError("episode", index, f"0..{self.n_episodes - 1}")
        return list(self._decoded[self.episodes[index]])

    def all_queries(self) -> list[Query]:
        """Every query of every distinct task, task by task."""
        return [q for t in range(len(self.tasks)) for q in self._decoded[t]]

    def to_json(self) -> str:
        data = {"generator": self.generator, "params": self.params, "seed": self.seed, "tasks": self.tasks,
                "episodes": self.episodes}
        return json.dumps(to_jsonable(data), sort_keys=True, indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "schedule") -> "WorkloadSchedule":
        data = parse_json(text, source)
        keys = ("generator", "params", "seed", "tasks", "episodes")
        if not isinstance(data, dict) or set(data) != set(keys):
            found = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise DataError(f"{source}: expected an object with keys {list(keys)}, found {found}")
        try:
            return cls(**{k: data[k] for k in keys})
        except DataError as exc:
            raise DataError(f"{source}: {exc}") from exc

    def save(self, path: str | os.PathLike) -> None:
        """Write the canonical JSON atomically."""
        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "WorkloadSchedule":
        return cls.from_json(Path(path).read_text(encoding="utf-8"), source=str(path))

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()


def redraw_seeds(seed: int, n_episodes: int) -> list[int]:
    """The seeds with which a redraw schedule of ``seed`` draws the predicate values of episodes
    ``0 .. n_episodes - 1``."""
    return [derive_seed(seed, REDRAW_STREAM, i) for i in range(n_episodes)]


def make_query_schedule(collection: Collection, config: QueryWorkloadConfig, seed: int, n_episodes: int,
                        per_episode: bool, redraws: bool = False) -> WorkloadSchedule:
    """A query schedule: one task for every episode (blackbox) or, with ``per_episode``, a new task each; with
    ``redraws`` (not with ``per_episode``), episode ``i`` plays the one task's queries with their predicate
    values drawn anew with ``redraw_seeds(seed, n_episodes)[i]`` (the same shapes, new values)."""
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 1:
        raise ConfigError("n_episodes", n_episodes, reason="must be an integer >= 1")
    if redraws and per_episode:
        raise ConfigError("redraws", redraws, reason="redraws one workload's predicate values: not with "
                                                     "per_episode (a new workload per episode)")
    generator = QueryWorkloadGenerator(collection, config)
    seeds = [derive_seed(seed, "episode", i) for i in range(n_episodes)] if per_episode else [int(seed)]
    drawn = generator.generate(int(seed)) if redraws else []
    tasks: list[list[dict]] = []
    index: dict[str, int] = {}
    episodes = []
    for task_seed in redraw_seeds(seed, n_episodes) if redraws else seeds:
        queries = generator.redraw(drawn, task_seed) if redraws else generator.generate(task_seed)
        task = [q.to_dict() for q in queries]
        text = json.dumps(task, sort_keys=True)
        episodes.append(index.setdefault(text, len(tasks)))
        if episodes[-1] == len(tasks):
            tasks.append(task)
    if not per_episode and not redraws:
        episodes *= n_episodes
    params = {"config": generator.config.as_dict(), "n_episodes": n_episodes, "per_episode": bool(per_episode),
              "collection": {"name": collection.name, "n_documents": len(collection),
                             "fingerprint": collection.fingerprint(), "source": collection.source}}
    if redraws:  # absent otherwise: a schedule without redraws keeps its JSON, byte for byte
        params["redraws"] = True
    return WorkloadSchedule(QUERY_GENERATOR, to_jsonable(params), int(seed), tasks, episodes)


def regenerate_query_schedule(schedule: WorkloadSchedule, collection: Collection) -> WorkloadSchedule:
    """Rebuild a query schedule from its seed and params; the collection must be the one it was made on."""
    if schedule.generator != QUERY_GENERATOR:
        raise ConfigError("schedule.generator", schedule.generator, (QUERY_GENERATOR,))
    params = schedule.params
    expected = params["collection"]["fingerprint"]
    if collection.fingerprint() != expected:
        raise ConfigError("collection", collection.fingerprint(), (expected,),
                          reason="the schedule was generated on a different collection")
    return make_query_schedule(collection, QueryWorkloadConfig.from_dict(params["config"]), schedule.seed,
                               params["n_episodes"], params["per_episode"], bool(params.get("redraws", False)))
