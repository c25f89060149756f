"""IndexingSystem: the system adapter of the indexing task, with the study's incremental, cached reward.

The adapter keeps the *logical* index configuration that the agent has built in this episode and measures
a workload under it. What it runs on the engine is kept to the minimum (docs/design.md section 9):

- a query's cost depends only on the indexes that share a field with it, so costs are cached by
  (query, metric, the relevant indexes); after an index is created only the queries touching its fields
  can miss the cache, all others are answered from it;
- indexes are materialised lazily: only when a query misses the cache are the query's relevant indexes
  made to match the logical configuration; an index set already measured is never rebuilt;
- index sizes are measured once per index (canonical form) and cached.

With ``cost_cache=False`` it behaves like a naive environment instead: every step builds the index for real and
re-executes every query (used by the benchmark to show what the cache saves).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from case_studies.indexing.engines.contract import METRICS, IndexingEngine, QueryResult
from case_studies.indexing.index_spec import IndexSpec, full_index
from wield.errors import ConfigError
from wield.systems import SystemAdapter

AGGREGATES = ("mean", "p99")


def aggregate_costs(costs: Sequence[float], how: str) -> float:
    if how == "mean":
        return float(np.mean(costs))
    if how == "p99":
        return float(np.percentile(costs, 99))
    raise ConfigError("aggregate", how, AGGREGATES)


@dataclass
class EngineCounters:
    """What the adapter asked of the engine, and how long the engine took."""

    query_executions: int = 0
    cache_hits: int = 0
    index_builds: int = 0
    index_drops: int = 0
    size_measurements: int = 0
    engine_seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


class IndexingSystem(SystemAdapter):
    """Logical index configuration + cost cache over one ``IndexingEngine``."""

    name = "indexing"

    def __init__(self, engine: IndexingEngine, metric: str = "work", aggregate: str = "mean",
                 repetitions: int = 3, cost_cache: bool = True) -> None:
        if metric not in METRICS:
            raise ConfigError("metric", metric, METRICS)
        if aggregate not in AGGREGATES:
            raise ConfigError("aggregate", aggregate, AGGREGATES)
        if repetitions < 0:
            raise ConfigError("repetitions", repetitions, reason="must be >= 0")
        self.engine = engine
        self.metric = metric
        self.aggregate = aggregate
        # Under the work metric one execution gives the exact count; latency needs repetitions.
        self.repetitions = repetitions if metric == "latency" else 0
        self.cost_cache = cost_cache
        self.counters = EngineCounters()
        self._logical: list[IndexSpec] = []
        self._physical: set[IndexSpec] = set(s.canonical() for s in engine.list_indexes())
        self._costs: dict[tuple, QueryResult] = {}
        self._sizes: dict[IndexSpec, int] = {}
        self._references: dict[tuple, dict[str, float]] = {}
        self._created_in_episode = 0

    # -- SystemAdapter ---------------------------------------------------------------------------
    def reset(self) -> None:
        self._logical = []
        self._created_in_episode = 0
        if not self.cost_cache:
            for spec in list(self._physical):
                self._drop(spec)

    def state(self) -> tuple[IndexSpec, ...]:
        return tuple(self._logical)

    def apply(self, action: IndexSpec | None) -> None:
        if action is None:
            return
        spec = action.canonical()
        if spec in self._logical:
            return
        self._logical.append(spec)
        self._created_in_episode += 1
        if not self.cost_cache:
            self._build(spec)

    def measure(self, workload: Sequence[Any]) -> dict[str, Any]:
        results = [self.query_result(query) for query in workload]
        costs = [self._cost(result) for result in results]
        return {
            "cost": aggregate_costs(costs, self.aggregate),
            "costs": costs,
            "index_bytes": sum(self.index_size(spec) for spec in self._logical),
            "n_indexes": len(self._logical),
            **self.references(workload),
            "metric": self.metric,
        }

    def close(self) -> None:
        self.engine.close()

    @property
    def stats(self) -> dict[str, float]:
        return self.counters.as_dict()

    # -- measurements ----------------------------------------------------------------------------
    def relevant(self, query, configuration: Sequence[IndexSpec]) -> frozenset[IndexSpec]:
        """The indexes of ``configuration`` that can change how ``query`` runs: those sharing a field."""
        fields = set(query.attributes())
        return frozenset(spec for spec in configuration if fields.intersection(spec.fields))

    def query_result(self, query, configuration: Sequence[IndexSpec] | None = None) -> QueryResult:
        """The query's measured result under ``configuration`` (default: the current logical one)."""
        configuration = self._logical if configuration is None else [s.canonical() for s in configuration]
        relevant = self.relevant(query, configuration)
        key = (query.key(), self.metric, relevant)
        if self.cost_cache and key in self._costs:
            self.counters.cache_hits += 1
            return self._costs[key]
        self._materialise(query, relevant)
        started = time.perf_counter()
        result = self.engine.run_query(query, repetitions=self.repetitions)
        self.counters.engine_seconds += time.perf_counter() - started
        self.counters.query_executions += 1
        if self.cost_cache:
            self._costs[key] = result
        return result

    def references(self, workload: Sequence[Any]) -> dict[str, float]:
        """The reward's normalisers for a workload, computed once per workload (in every mode)."""
        key = tuple(query.key() for query in workload)
        if key not in self._references:
            self._references[key] = {"no_index_cost": self.no_index_cost(workload),
                                     "full_index_bytes": self.full_index_bytes(workload)}
        return self._references[key]

    def no_index_cost(self, workload: Sequence[Any]) -> float:
        return aggregate_costs([self._cost(self.query_result(q, ())) for q in workload], self.aggregate)

    def full_index_bytes(self, workload: Sequence[Any]) -> int:
        specs = {full_index(query).canonical() for query in workload}
        return sum(self.index_size(spec) for spec in specs)

    def index_size(self, spec: IndexSpec) -> int:
        spec = spec.canonical()
        if spec not in self._sizes:
            self._build(spec)
            started = time.perf_counter()
            self._sizes[spec] = self.engine.index_size(spec)
            self.counters.engine_seconds += time.perf_counter() - started
            self.counters.size_measurements += 1
        return self._sizes[spec]

    def configure(self, configuration: Sequence[IndexSpec]) -> None:
        """Set the logical configuration directly (baselines, evaluation of a saved index set)."""
        self._logical = list(dict.fromkeys(spec.canonical() for spec in configuration))
        if not self.cost_cache:
            self._sync(set(self._logical), set(self._physical))

    def materialise_all(self) -> None:
        """Make the engine's indexes exactly the logical configuration (for evaluation on the engine)."""
        self._sync(set(self._logical), set(self._physical))

    # -- engine side -----------------------------------------------------------------------------
    def _cost(self, result: QueryResult) -> float:
        return result.work if self.metric == "work" else result.latency_s

    def _materialise(self, query, relevant: frozenset[IndexSpec]) -> None:
        fields = set(query.attributes())
        physical_relevant = {s for s in self._physical if fields.intersection(s.fields)}
        self._sync(set(relevant), physical_relevant)

    def _sync(self, wanted: set[IndexSpec], present: set[IndexSpec]) -> None:
        for spec in sorted(present - wanted):
            self._drop(spec)
        for spec in sorted(wanted - present):
            self._build(spec)

    def _build(self, spec: IndexSpec) -> None:
        if spec in self._physical:
            return
        started = time.perf_counter()
        self.engine.create_index(spec)
        self.counters.engine_seconds += time.perf_counter() - started
        self.counters.index_builds += 1
        self._physical.add(spec)

    def _drop(self, spec: IndexSpec) -> None:
        if spec not in self._physical:
            return
        started = time.perf_counter()
        self.engine.drop_index(spec)
        self.counters.engine_seconds += time.perf_counter() - started
        self.counters.index_drops += 1
        self._physical.discard(spec)
