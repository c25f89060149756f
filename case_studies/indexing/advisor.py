"""A classical index advisor, the ``advisor`` method: candidate compound indexes from each query's predicates
and sort keys, chosen greedily by workload cost saved per byte under the objective's memory cap.

A non-learning heuristic in the tradition of AutoAdmin (Chaudhuri and Narasayya, 1997), DB2Advis (Valentin
et al., 2000) and Extend (Schlosser et al., 2019), on the task's own engine, metric and reward:

1. **Candidates**, per query (at most ``k`` keys, the task's index width; every candidate canonical, each
   counted once): an index on each of its fields alone; its full index (``index_spec.full_index``); for an
   ``and`` query (or a single predicate) every order of its equality fields (``eq`` first, then ``in``),
   each followed by one of its range fields (``lt``, ``lte``, ``gt``, ``gte``, ``between``: the one range
   a B-tree seek can use) or by its sort keys (with their directions, so the sort can be read off the
   index); and every leading prefix of these. An ``or`` query is served by one index per branch (SQLite's
   multi-index OR, PostgreSQL's BitmapOr), so its single-field indexes are its candidates, besides its full
   index.
2. **Greedy selection.** Starting from no index, repeatedly add the candidate that saves the most workload
   cost per byte of index among those that fit the memory cap (index bytes <= ``memory_cap`` x the bytes
   of the workload's full index, ``evaluation.full_index_configuration``) and improve the task's reward
   (``IndexingConverter.system_to_agent_reward``: -(w_m * size + w_t * runtime)); stop when none does. The
   workload cost is the aggregate (mean or p99) query cost in the learner's metric (``--metric``), taken
   from the engine through ``IndexingSystem.configure`` + ``measure`` (what-if planning and the cost cache
   make one such evaluation cheap), index bytes from ``IndexingSystem.index_size``.
3. **Evaluations.** Each ``configure`` + ``measure`` of the workload is one evaluation, the unit in which
   an optimiser's budget is counted (a learner's n = E x Q transitions are as many). As in AutoAdmin's
   atomic configurations, a candidate's evaluation is reused after an index is added when no query shares
   a field with both (a query's cost depends only on the indexes sharing a field with it, the rule the cost
   cache relies on): its per-query costs are then the ones measured before, with the added index's effect
   on its other queries; only candidates that interact with the added index are evaluated again.

SQLite's own advisor (the shell's ``.expert`` command, ``ext/expert/sqlite3expert.c``) is compiled into the
``sqlite3`` command-line shell only: Python's ``sqlite3`` module exposes no expert API and it is not a
loadable extension, so its recommendations are not reachable from Python and are not used here.

4. **A decision budget** (``budget=B``, issue 42; docs/design.md section 5.13): the advisor stopped before its
   (B + 1)-th evaluation returns the best set it knows by then, by the task's reward (the sets it committed
   to and every candidate set evaluated or derived so far; no index when B = 0: the advisor decides nothing
   without evaluating). Without a budget, or with one it does not reach, it is the advisor above, unchanged.
   ``AdvisorResult.trace`` records what every smaller budget would have returned, so one unrestricted run
   answers every budget (``reward_at_budget``).

5. **Advice given once** (``shared_advice``, issue 48). Under the work metric every figure the advisor reads
   is exact and deterministic (work by query and program, index sizes), so its advice on a workload depends
   only on the workload, the collection, the engine and the settings (``k``, the weights, the aggregate, the
   memory cap). ``shared_advice`` keeps it in the collection's measurement store under a key of all of these
   (``advice_key``), so the learning verdicts of every method and trial of a comparison, the ``advisor``
   method and DQfD's advisor rule advise on a workload once; a later call reads the stored result
   (``reused``: its ``seconds`` are those measured when it was computed).

``advise`` leaves the system's logical index set as it found it (``configure`` sets the whole set; the
evaluation of methods configures and builds each set from scratch, so nothing measured here decides what is
measured later; the cost cache only makes it cheaper).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.defaults import OBJECTIVE
from case_studies.indexing.evaluation import full_index_configuration
from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.system import IndexingSystem, aggregate_costs
from wield.errors import ConfigError, DataError

METHOD = "advisor"
# The advisor's revision, part of every stored advice's key: change it with anything that changes the advice
ADVICE_REVISION = 1
EQUALITY_OPS = ("eq", "in")
RANGE_OPS = ("lt", "lte", "gt", "gte", "between")


def objective_memory_cap(objective=OBJECTIVE) -> float:
    """The share of the full index's bytes the objective allows (its ``relative_index_size <= x``)."""
    for condition in objective.also:
        if condition.metric == "relative_index_size" and condition.operator == "<=":
            return float(condition.threshold)
    raise ConfigError("objective", objective.describe(), reason="has no 'relative_index_size <= x' condition "
                                                                "to read the advisor's memory cap from")


MEMORY_CAP = objective_memory_cap()  # 0.5 with the default objective (defaults.py)


@dataclass
class AdvisorResult:
    """What ``advise`` chose and what it cost.

    - ``configuration``: the chosen index set, canonical, in the order it was added;
    - ``evaluations``: workload cost evaluations made (``configure`` + ``measure`` calls);
    - ``seconds``: wall time of the advice; ``candidates``: distinct candidate indexes considered;
    - ``reward``: the task's reward of the chosen set on the workload (the converter's);
    - ``steps``: one entry per index added (index, bytes, reward after it, cost saved per byte);
    - ``trace``: ``trace[b]`` is the reward of the set the advisor returns with ``budget=b``, for every ``b``
      below ``evaluations`` (the best set known before its (b + 1)-th evaluation); ``stopped``: whether a
      budget ended the advice before the advisor finished.
    """

    configuration: list[IndexSpec]
    evaluations: int
    seconds: float
    candidates: int
    reward: float = math.nan
    steps: list[dict[str, Any]] = field(default_factory=list)
    trace: list[float] = field(default_factory=list)
    stopped: bool = False
    reused: bool = False  # read from the measurement store (``shared_advice``), not computed by this call

    def as_dict(self) -> dict[str, Any]:
        """A JSON object of the result (``from_dict`` reads it back), without ``reused``."""
        return {"configuration": [spec.to_list() for spec in self.configuration], "evaluations": self.evaluations,
                "seconds": self.seconds, "candidates": self.candidates, "reward": self.reward, "steps": self.steps,
                "trace": self.trace, "stopped": self.stopped}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "AdvisorResult":
        """A result from ``as_dict``; ``ValueError`` naming what is wrong otherwise."""
        try:
            configuration = [IndexSpec.of(keys) for keys in data["configuration"]]
            numbers = [float(data["seconds"]), float(data["reward"]), *(float(v) for v in data["trace"])]
            evaluations, candidates = data["evaluations"], data["candidates"]
            steps, stopped = data["steps"], data["stopped"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an advisor result ({type(exc).__name__}: {exc})") from None
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (evaluations, candidates)) \
                or not isinstance(stopped, bool) or not isinstance(steps, list) \
                or not all(math.isfinite(v) for v in numbers):
            raise ValueError("not an advisor result (evaluations, candidates, seconds, reward, trace, steps or "
                             "stopped)")
        return cls(configuration, evaluations, numbers[0], candidates, numbers[1], list(steps), numbers[2:], stopped)

    def reward_at_budget(self, budget: int) -> float:
        """The reward of the set the advisor returns within ``budget`` evaluations, read from this (unrestricted
        or larger-budget) advice: ``advise(..., budget=budget).reward``."""
        check_budget(budget)
        if budget < len(self.trace):
            return self.trace[budget]
        if self.stopped:
            raise ConfigError("budget", budget, reason=f"this advice was stopped at {self.evaluations} evaluations; "
                                                       "it cannot say what a larger budget returns")
        return self.reward


class _BudgetSpent(Exception):
    """Raised inside ``advise`` when the next evaluation would exceed its budget."""


def check_budget(budget: Any) -> int:
    """A decision budget in engine evaluations: an integer >= 0."""
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 0:
        raise ConfigError("budget", budget, reason="a decision budget is a whole number of workload evaluations, "
                                                   ">= 0")
    return int(budget)


def _prefixes(keys: Sequence[tuple[str, str]], k: int) -> list[IndexSpec]:
    return [IndexSpec(tuple(keys[:n])) for n in range(1, min(k, len(keys)) + 1)]


_CANDIDATES_BY_SHAPE: dict[tuple, tuple[IndexSpec, ...]] = {}
SHAPES_KEPT = 4096  # query shapes whose candidates are kept (the whole store is emptied past it)


def query_candidates(query, k: int) -> list[IndexSpec]:
    """The candidate indexes of one query (see the module docstring), canonical, without repeats. They depend
    on the query's shape only (fields, operators, logic, sort), not on its values, so they are kept per shape:
    the queries of new workloads drawn from the same templates are answered without recomputing them."""
    shape = (tuple((p.field, p.op) for p in query.predicates), query.logic,
             tuple((key.field, key.direction) for key in query.sort), k)
    found = _CANDIDATES_BY_SHAPE.get(shape)
    if found is None:
        if len(_CANDIDATES_BY_SHAPE) >= SHAPES_KEPT:
            _CANDIDATES_BY_SHAPE.clear()
        found = _CANDIDATES_BY_SHAPE[shape] = tuple(_query_candidates(query, k))
    return list(found)


def _query_candidates(query, k: int) -> list[IndexSpec]:
    sort = [(key.field, key.direction) for key in query.sort]
    fields = query.attributes()
    found: list[IndexSpec] = [IndexSpec(((name, "asc"),)) for name in fields]
    found += _prefixes(full_index(query).keys, k)
    if query.logic == "and" or len(query.predicates) == 1:
        ops: dict[str, set[str]] = {}
        for predicate in query.predicates:
            ops.setdefault(predicate.field, set()).add(predicate.op)
        equal = [f for f, o in ops.items() if "eq" in o] + [f for f, o in ops.items() if "eq" not in o and "in" in o]
        ranges = [f for f, o in ops.items() if f not in equal]
        for order in itertools.permutations(equal):
            keys = [(name, "asc") for name in order]
            tails = [[(name, "asc")] for name in ranges] + ([[s for s in sort if s[0] not in order]] if sort else [])
            for tail in tails or [[]]:
                found += _prefixes(keys + tail, k)
    return list(dict.fromkeys(spec.canonical() for spec in found))


def workload_candidates(workload: Sequence, k: int) -> list[IndexSpec]:
    """Every query's candidates, each once, in sorted order (so sizes are asked for in a fixed order)."""
    return sorted({spec for query in workload for spec in query_candidates(query, k)})


def set_reward(system: IndexingSystem, converter: IndexingConverter, references: Mapping[str, Any], index_bytes: int,
               costs: Sequence[float]) -> float:
    """The task's reward of an index set of ``index_bytes`` whose workload has per-query ``costs``
    (``references``: the workload's ``system.references``)."""
    return converter.system_to_agent_reward({"index_bytes": index_bytes, **references,
                                             "cost": aggregate_costs(costs, system.aggregate)})


def memory_limit(system: IndexingSystem, workload: Sequence, memory_cap: float) -> float:
    """``memory_cap`` x the bytes of ``workload``'s full index: the most index bytes the advisor may choose."""
    return memory_cap * sum(system.index_size(spec) for spec in full_index_configuration(workload))


def advise(system: IndexingSystem, converter: IndexingConverter, workload: Sequence, *,
           memory_cap: float = MEMORY_CAP, budget: int | None = None) -> AdvisorResult:
    """Choose an index set for ``workload`` greedily by cost saved per byte within ``memory_cap`` x the full
    index's bytes, while the task's reward improves (module docstring); with ``budget``, at most that many
    workload evaluations, then the best set known (module docstring, 4). The system's logical index set is
    restored afterwards."""
    if budget is not None:
        budget = check_budget(budget)
    if not isinstance(memory_cap, (int, float)) or isinstance(memory_cap, bool) or not math.isfinite(memory_cap) \
            or memory_cap < 0:
        raise ConfigError("memory_cap", memory_cap, reason="must be a finite share of the full index's bytes, >= 0")
    workload = list(workload)
    if not workload:
        raise ConfigError("workload", [], reason="the advisor needs at least one query")
    started = time.perf_counter()
    previous = list(system.state())
    evaluations = 0
    trace: list[float] = []
    known_best: tuple[float, list[IndexSpec]] = (converter.start_level(), [])  # no index: -w_t, no evaluation

    def consider(configuration: list[IndexSpec], value: float) -> None:
        nonlocal known_best
        if value > known_best[0]:
            known_best = (value, list(configuration))

    def evaluate(configuration: list[IndexSpec]) -> list[float]:
        nonlocal evaluations
        if budget is not None and evaluations >= budget:
            raise _BudgetSpent
        trace.append(known_best[0])
        system.configure(configuration)
        evaluations += 1
        return [float(cost) for cost in system.measure(workload)["costs"]]

    try:
        references = system.references(workload)
        limit = memory_limit(system, workload, memory_cap)
        candidates = workload_candidates(workload, converter.schema.k)
        sizes = {spec: system.index_size(spec) for spec in candidates}
        fields = [set(query.attributes()) for query in workload]
        touches = {spec: frozenset(i for i, names in enumerate(fields) if names.intersection(spec.fields))
                   for spec in candidates}

        def reward(index_bytes: int, costs: Sequence[float]) -> float:
            return set_reward(system, converter, references, index_bytes, costs)

        chosen: list[IndexSpec] = []
        steps: list[dict[str, Any]] = []
        current = known_best[0]
        stopped = False
        try:
            used = 0
            costs = evaluate([])
            current = reward(0, costs)
            consider([], current)
            known: dict[IndexSpec, list[float]] = {}  # per-query costs of chosen + [candidate]
            while True:
                best: tuple[float, IndexSpec, float, list[float]] | None = None
                cost = aggregate_costs(costs, system.aggregate)
                for spec in candidates:
                    if spec in chosen or used + sizes[spec] > limit:
                        continue
                    if spec not in known:
                        known[spec] = evaluate(chosen + [spec])
                    after = known[spec]
                    gained = reward(used + sizes[spec], after)
                    consider(chosen + [spec], gained)
                    if gained <= current:
                        continue
                    per_byte = (cost - aggregate_costs(after, system.aggregate)) / max(1, sizes[spec])
                    if best is None or per_byte > best[0]:
                        best = (per_byte, spec, gained, after)
                if best is None:
                    break
                per_byte, added, current, costs = best
                chosen.append(added)
                used += sizes[added]
                steps.append({"index": str(added), "bytes": sizes[added], "reward": current,
                              "cost_saved_per_byte": per_byte, "evaluations": evaluations})
                for spec in list(known):  # reuse what the added index cannot have changed
                    if spec in chosen or touches[spec] & touches[added]:
                        del known[spec]
                    else:
                        for i in touches[added]:
                            known[spec][i] = costs[i]
        except _BudgetSpent:
            stopped = True
            current, chosen = known_best
    finally:
        system.configure(previous)
    return AdvisorResult(chosen, evaluations, time.perf_counter() - started, len(candidates), current, steps,
                         trace, stopped)


def advice_key(system: IndexingSystem, converter: IndexingConverter, workload: Sequence, *,
               memory_cap: float = MEMORY_CAP) -> str | None:
    """The measurement store's key of ``advise``'s result on ``workload`` (every query with its values, in
    order, and every setting the advice depends on), or None where no advice is kept: no store (the slow
    path, an engine without one) or a metric that is not the deterministic work."""
    if getattr(system, "store", None) is None or system.metric != "work":
        return None
    body = {"revision": ADVICE_REVISION, "workload": [query.key() for query in workload], "k": converter.schema.k,
            "size_weight": converter.size_weight, "runtime_weight": converter.runtime_weight,
            "converter": type(converter).__name__, "aggregate": system.aggregate, "metric": system.metric,
            "memory_cap": float(memory_cap)}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def shared_advice(system: IndexingSystem, converter: IndexingConverter, workload: Sequence, *,
                  memory_cap: float = MEMORY_CAP) -> AdvisorResult:
    """``advise(system, converter, workload)`` given once per workload and settings (module docstring, 5): read
    from the measurement store when it holds this advice (``reused``), else computed and stored."""
    key = advice_key(system, converter, workload, memory_cap=memory_cap)
    if key is not None:
        stored = system.store.advice(key)
        if stored is not None:
            try:
                result = AdvisorResult.from_dict(stored)
            except ValueError as exc:
                raise DataError(f"{system.store.path}: the measurement store holds a damaged advice ({exc}); remove "
                                "it with 'wield cache clear measurements' and rerun (it is rebuilt)") from None
            result.reused = True
            system.counters.advice_reused += 1
            return result
    result = advise(system, converter, workload, memory_cap=memory_cap)
    if key is not None:
        system.store.put_advice(key, result.as_dict())
    return result
