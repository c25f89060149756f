"""Local search from an index set: the advisor's choice improved by single-index moves (the ``advisor-search``
labelling rule, docs/design.md section 5.14).

``local_search(system, converter, workload, start)`` evaluates, from ``start``, every set one move away: drop one
index, add one of the workload's candidate indexes (``advisor.workload_candidates``), or swap one for one; it keeps
the move with the highest task reward if that is higher than the current set's, and repeats until no move improves
it. Sets over the memory cap (``advisor.memory_limit``: the objective's share of the workload's full index, as the
advisor) are not considered, so the result meets the same cap as the advisor's set. Each set is one workload
evaluation on the engine (``configure`` + ``measure``, through the cost cache); on the default 10-query workloads a
search from the advisor's set took 0.03-0.13 s on average (68-440 evaluations on the workloads counted). The result
is a search outcome for that one workload: a teacher whose choices a learner can imitate on training workloads,
never a method evaluated on held-out ones. The system's logical index set is restored afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from case_studies.indexing.advisor import MEMORY_CAP, memory_limit, set_reward, workload_candidates
from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import IndexingSystem


@dataclass
class SearchResult:
    """The set a local search ended with, its reward, the workload evaluations and wall seconds it took."""

    configuration: list[IndexSpec]
    reward: float
    evaluations: int
    seconds: float


def neighbours(current: Sequence[IndexSpec], candidates: Sequence[IndexSpec]) -> list[list[IndexSpec]]:
    """Every set one move from ``current``: one index dropped, one candidate added, or one swapped for one."""
    absent = [spec for spec in candidates if spec not in current]
    dropped = [[spec for spec in current if spec != gone] for gone in current]
    return [*dropped, *([*current, spec] for spec in absent), *([*rest, spec] for rest in dropped for spec in absent)]


def local_search(system: IndexingSystem, converter: IndexingConverter, workload: Sequence,
                 start: Sequence[IndexSpec], *, memory_cap: float = MEMORY_CAP) -> SearchResult:
    """Best-improvement local search from ``start`` under the task's reward (module docstring)."""
    started = time.perf_counter()
    workload = list(workload)
    previous = list(system.state())
    evaluations = 0
    try:
        references = system.references(workload)
        limit = memory_limit(system, workload, memory_cap)
        candidates = workload_candidates(workload, converter.schema.k)
        sizes: dict[IndexSpec, int] = {}

        def size(configuration: Sequence[IndexSpec]) -> int:
            for spec in configuration:
                if spec not in sizes:
                    sizes[spec] = system.index_size(spec)
            return sum(sizes[spec] for spec in configuration)

        def reward(configuration: list[IndexSpec]) -> float:
            nonlocal evaluations
            system.configure(configuration)
            evaluations += 1
            return set_reward(system, converter, references, size(configuration),
                              [float(cost) for cost in system.measure(workload)["costs"]])

        current = [spec.canonical() for spec in start]
        best = reward(current)
        while True:
            found: tuple[float, list[IndexSpec]] | None = None
            for configuration in neighbours(current, candidates):
                if size(configuration) > limit:
                    continue
                value = reward(configuration)
                if value > best and (found is None or value > found[0]):
                    found = (value, configuration)
            if found is None:
                break
            best, current = found
    finally:
        system.configure(previous)
    return SearchResult(current, best, evaluations, time.perf_counter() - started)
