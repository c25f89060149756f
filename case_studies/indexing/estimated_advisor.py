"""The estimated advisor: the advisor's greedy choice on statistics-only cost estimates, no engine evaluation.

``advisor.py`` ranks candidate indexes by the workload cost they save per byte, measured on the engine (36-118
workload evaluations per 10-query workload). ``estimated_advice`` runs the same greedy selection on the same
candidates (``advisor.workload_candidates``) under the same memory cap and reward weights, with every cost
and size taken from ``cost_estimate.StatisticsCostModel`` instead: what a query would cost under an index set
and how many bytes an index would take, from the column statistics alone. It decides in milliseconds with
no engine evaluation, so it is the non-learning method a learned policy, which also decides from statistics
features alone, must be compared with at a decision budget of 0 (docs/design.md section 5.13).

Greedy selection: starting from no index, add the candidate that saves the most estimated workload cost per
estimated byte among those that keep the estimated bytes within ``memory_cap`` x the estimated bytes of the
workload's full index and improve the estimated reward -(w_m * size share + w_t * runtime share); stop when
none does. ``EstimatedWorkload`` reads what the model's planner makes of each query with each candidate once
per workload, so that weighing every candidate against a set is a few array operations (the same figures,
bit for bit, as asking the model for every query under every set: checked on 200 generated and 80 flights
workloads under ``mean`` and ``p99``); an index changes only the queries that share a field with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from case_studies.indexing.advisor import MEMORY_CAP, query_candidates
from case_studies.indexing.budgeted import workload_evaluator
from case_studies.indexing.cost_estimate import PLANNER_SCAN_SHARE, StatisticsCostModel, cheaper_branch
from case_studies.indexing.decision_cost import ESTIMATED
from case_studies.indexing.evaluation import full_index_configuration
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import aggregate_costs
from wield.errors import ConfigError
from wield.workflows import trial_stopwatch

METHOD = ESTIMATED  # its rung in the verdict's ladder


@dataclass
class EstimatedAdvice:
    """The set ``estimated_advice`` chose (canonical, in the order added), its estimated reward, the distinct
    candidates it considered and its wall seconds (no engine evaluation)."""

    configuration: list[IndexSpec]
    estimated_reward: float
    candidates: int
    seconds: float
    evaluations: int = 0


def _fields(query: Any) -> set[str]:
    return set(query.attributes()) | {key.field for key in query.sort}


@dataclass(frozen=True)
class EstimatedOption:
    """One candidate index added to a set, on estimates: its bytes, the workload's per-query costs, their
    aggregate as a share of the no-index cost, the reward level with it, and the aggregate cost it saves per
    byte."""

    spec: IndexSpec
    size: float
    costs: list[float]
    level: float
    per_byte: float
    runtime_share: float


class EstimatedWorkload:
    """A workload's candidates and reference figures on ``model``'s estimates: the estimated bytes of its
    full index and its estimated cost with no index, so that any index set's estimated reward level and every
    candidate's effect on it can be read (module docstring).

    What the model's planner (``StatisticsCostModel.cost``) makes of each ``and`` query with each candidate
    (the rows it expects, the index's length, the work) is read once, into query x candidate arrays, so that
    ``options`` weighs every candidate against a set in a few array operations: a candidate changes such a
    query's plan exactly when the planner ranks it strictly before the set's planned index (the set's indexes
    come first, and the first of equals is kept). For ``or`` queries (a plan over several indexes) what each
    candidate sharing a field offers each branch is read once too (``StatisticsCostModel.branch_options``): a
    set's cheapest option per branch with one more index is the smaller of the set's and the index's own."""

    def __init__(self, model: StatisticsCostModel, converter: Any, workload: Sequence[Any], k: int, *,
                 memory_cap: float = MEMORY_CAP, aggregate: str = "mean") -> None:
        if not 0 <= memory_cap:
            raise ConfigError("memory_cap", memory_cap, reason="must be a share of the full index's bytes, >= 0")
        self.model, self.converter, self.aggregate = model, converter, aggregate
        self.workload = list(workload)
        # each query's candidates (``advisor.query_candidates``), and the workload's, each once, sorted
        # (``advisor.workload_candidates``, read off the queries' lists)
        self.query_candidates = [query_candidates(query, k) for query in self.workload]
        self.candidates = sorted({spec for found in self.query_candidates for spec in found}, key=_keys)
        self.full_bytes = max(1e-9, sum(model.index_bytes(spec) for spec in full_index_configuration(self.workload)))
        self.limit = memory_cap * self.full_bytes
        self.scans = [model.scan_cost(query) for query in self.workload]
        self.base = max(1e-9, aggregate_costs(self.scans, aggregate))
        self._fields = [_fields(query) for query in self.workload]
        self._sizes = np.array([model.index_bytes(spec) for spec in self.candidates], dtype=float)
        self._column = {spec: column for column, spec in enumerate(self.candidates)}
        self._seeking = [i for i, query in enumerate(self.workload) if not _planned_by_parts(query)]
        self._rows, self._length, self._work = self._read_plans()
        # ``or`` queries (a plan over several indexes): per query, what each candidate sharing a field with it
        # offers each branch and whether it is led by the sort key, read once (``options``)
        self._branching = {i: {column: (model.branch_options(query, spec), model.leads_with_sort(query, spec))
                               for column, spec in enumerate(self.candidates)
                               if not self._fields[i].isdisjoint(spec.fields)}
                           for i, query in enumerate(self.workload) if _planned_by_parts(query)}
        # what each ``and`` query costs with each candidate as its planned index: the plan's work, or the scan's
        # where the planner expects the seek to visit most of the table and nothing needs ordering
        scan_rows = PLANNER_SCAN_SHARE * model.rows  # a seek expected to visit more loses to the scan
        unsorted = np.array([not model.ordered(self.workload[i]) for i in self._seeking], dtype=bool)
        seek_scans = np.array([self.scans[i] for i in self._seeking], dtype=float)
        self._planned_work = np.where((self._rows >= scan_rows) & unsorted[:, None], seek_scans[:, None], self._work)
        self._seeking_rows = np.array(self._seeking, dtype=np.intp)

    def _read_plans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per ``and`` query (row) and candidate (column): the planner's rows (inf: it cannot use the index),
        minus the index's length, and the work of the plan."""
        shape = (len(self._seeking), len(self.candidates))
        rows, length, work = np.full(shape, np.inf), np.zeros(shape), np.zeros(shape)
        sharing: dict[str, set[int]] = {}  # per field, the candidates that hold it
        for column, spec in enumerate(self.candidates):
            for field in spec.fields:
                sharing.setdefault(field, set()).add(column)
        for row, i in enumerate(self._seeking):
            # a candidate with no field in common with the query: the planner cannot use it
            columns = sorted(set().union(*(sharing.get(field, ()) for field in self._fields[i])))
            options = self.model.seek_options(self.workload[i], [self.candidates[column] for column in columns])
            for column, option in zip(columns, options):
                if option is not None:
                    rows[row, column], length[row, column] = option[0], -len(self.candidates[column].keys)
                    work[row, column] = option[1]
        return rows, length, work

    def _plan(self, query: Any, spec: IndexSpec) -> tuple[float, float, float] | None:
        """(the planner's rows, minus the index's length, the work) of ``query`` on ``spec``; None if unusable."""
        option = self.model.seek_option(query, spec)
        return None if option is None else (option[0], -len(spec.keys), option[1])

    def costs(self, configuration: Sequence[IndexSpec]) -> list[float]:
        """Each query's estimated cost under ``configuration``."""
        return [self.model.cost(query, configuration) for query in self.workload]

    def size(self, configuration: Sequence[IndexSpec]) -> float:
        return sum(self.model.index_bytes(spec) for spec in configuration)

    def runtime_share(self, costs: Sequence[float]) -> float:
        """The aggregate of ``costs`` as a share of the workload's estimated cost with no index."""
        return aggregate_costs(costs, self.aggregate) / self.base

    def level(self, index_bytes: float, costs: Sequence[float]) -> float:
        """The estimated reward level -(w_m * size share + w_t * runtime share)."""
        return -(self.converter.size_weight * index_bytes / self.full_bytes
                 + self.converter.runtime_weight * self.runtime_share(costs))

    def _planned(self, chosen: Sequence[IndexSpec]) -> tuple[np.ndarray, np.ndarray]:
        """Per ``and`` query, the planner's (rows, minus length) of its planned index in ``chosen`` (inf, 0: none):
        the first of ``chosen`` that no later one ranks strictly before."""
        rows, length = np.full(len(self._seeking), np.inf), np.zeros(len(self._seeking))
        for spec in chosen:
            if spec in self._column:  # read once per workload (``_read_plans``)
                column = self._column[spec]
                new_rows, new_length = self._rows[:, column], self._length[:, column]
            else:
                found = [self._plan(self.workload[i], spec) for i in self._seeking]
                new_rows = np.array([np.inf if plan is None else plan[0] for plan in found])
                new_length = np.array([0.0 if plan is None else plan[1] for plan in found])
            ahead = (new_rows < rows) | ((new_rows == rows) & (new_length < length))
            rows, length = np.where(ahead, new_rows, rows), np.where(ahead, new_length, length)
        return rows, length

    def options(self, chosen: Sequence[IndexSpec], costs: Sequence[float], used: float,
                best: int | None = None) -> list[EstimatedOption]:
        """Every candidate of the workload not in ``chosen`` that keeps the bytes within the memory cap, added to
        ``chosen`` (whose per-query costs are ``costs`` and bytes ``used``), in the candidates' order; with
        ``best``, only the ``best`` of them that save the most cost per byte, in that order (ties in the
        candidates' order, as a stable sort of all of them orders them)."""
        allowed = used + self._sizes <= self.limit
        for spec in chosen:
            if spec in self._column:
                allowed[self._column[spec]] = False
        columns = np.flatnonzero(allowed)
        if not len(columns):
            return []
        # query x candidate: each query's cost with the candidate added
        trial = np.repeat(np.asarray(costs, dtype=float)[:, None], len(columns), axis=1)
        if self._seeking:
            rows, length = self._planned(chosen)
            new_rows, new_length = self._rows[:, columns], self._length[:, columns]
            ahead = (new_rows < rows[:, None]) | ((new_rows == rows[:, None]) & (new_length < length[:, None]))
            seeking = self._seeking_rows
            trial[seeking] = np.where(ahead, self._planned_work[:, columns], trial[seeking])
        if self._branching:
            position = {int(column): row for row, column in enumerate(columns)}
            for i, offered in self._branching.items():  # the model's cost of the query under chosen + each candidate
                query = self.workload[i]
                bests = self.model.branch_bests(query, chosen)
                walk = any(self.model.leads_with_sort(query, spec) for spec in chosen)
                for column, (options, leads) in offered.items():
                    row = position.get(column)
                    if row is not None:
                        trial[i, row] = self.model.or_cost_of(
                            query, [cheaper_branch(best, option) for best, option in zip(bests, options)],
                            walk or leads)
        trial = np.ascontiguousarray(trial.T)  # candidate x query: each row summed as the row alone is
        totals = _aggregate_rows(trial, self.aggregate)
        saved = aggregate_costs(costs, self.aggregate) - totals
        sizes = self._sizes[columns]
        shares = totals / self.base
        levels = -(self.converter.size_weight * (used + sizes) / self.full_bytes
                   + self.converter.runtime_weight * shares)
        per_byte = saved / sizes
        order = np.arange(len(columns)) if best is None else np.argsort(-per_byte, kind="stable")[:max(0, best)]
        return [EstimatedOption(self.candidates[column], size, row_costs, level, gain, share)
                for column, size, row_costs, level, gain, share in zip(
                    columns[order].tolist(), sizes[order].tolist(), trial[order].tolist(), levels[order].tolist(),
                    per_byte[order].tolist(), shares[order].tolist())]


def _keys(spec: IndexSpec) -> tuple:
    """An index's sort key: its keys, the order ``IndexSpec`` compares by (without its dataclass comparison)."""
    return spec.keys


def _planned_by_parts(query: Any) -> bool:
    """An ``or`` of several predicates: its plan may use several indexes at once (``StatisticsCostModel``)."""
    return query.logic == "or" and len(query.predicates) > 1


def _aggregate_rows(costs: np.ndarray, how: str) -> np.ndarray:
    """``aggregate_costs`` of each row of ``costs`` (the same arithmetic as on the row alone)."""
    return np.array([aggregate_costs(row, how) for row in costs]) if how != "mean" else np.mean(costs, axis=1)


def estimated_advice(model: StatisticsCostModel, converter: Any, workload: Sequence[Any], k: int, *,
                     memory_cap: float = MEMORY_CAP, aggregate: str = "mean") -> EstimatedAdvice:
    """Greedy index selection on ``model``'s estimates (module docstring); ``converter`` gives the reward's
    weights (``size_weight``, ``runtime_weight``)."""
    started = time.perf_counter()
    estimated = EstimatedWorkload(model, converter, workload, k, memory_cap=memory_cap, aggregate=aggregate)
    chosen: list[IndexSpec] = []
    costs = estimated.costs(chosen)
    used = 0.0
    current = estimated.level(used, costs)
    while True:
        improving = [option for option in estimated.options(chosen, costs, used) if option.level > current]
        if not improving:
            break
        best = max(improving, key=lambda option: option.per_byte)
        chosen.append(best.spec)
        costs, current, used = best.costs, best.level, used + best.size
    return EstimatedAdvice(chosen, current, len(estimated.candidates), time.perf_counter() - started)


class EstimatedScores:
    """The estimated advisor on the verdict's instances (``verdict.py``): each workload advised on estimates
    once, its set scored on the engine (one workload evaluation to score it, not to decide it); ``advice``
    holds what it chose and how long that took, in the order the workloads came."""

    def __init__(self, task: Any) -> None:
        statistics = getattr(task.converter, "statistics", None)
        if statistics is None:
            raise ConfigError("statistics", None, reason="the estimated advisor needs the task's column statistics")
        self.task = task
        self.model = StatisticsCostModel(statistics)
        # (workload, its advice, its reward): the workload held, so identities stay unique
        self._scored: list[tuple[Sequence[Any], EstimatedAdvice, float]] = []

    @property
    def advice(self) -> list[EstimatedAdvice]:
        """What it chose on each workload scored so far, in the order they came."""
        return [advice for _, advice, _ in self._scored]

    def _entry(self, workload: Sequence[Any]) -> tuple[Sequence[Any], EstimatedAdvice, float]:
        """``workload``'s advice and reward, advised and scored the first time."""
        for entry in self._scored:
            if entry[0] is workload:
                return entry
        system, converter = self.task.system, self.task.converter
        advice = estimated_advice(self.model, converter, workload, self.task.schema.k, aggregate=system.aggregate)
        previous = list(system.state())
        try:
            reward = workload_evaluator(system, converter, workload)(advice.configuration)
        finally:
            system.configure(previous)
        self._scored.append((workload, advice, reward))
        return self._scored[-1]

    def reward(self, workload: Sequence[Any]) -> float:
        """The task's reward of the estimated advisor's set on ``workload``, measured on the engine."""
        return self._entry(workload)[2]

    def advised(self, workload: Sequence[Any]) -> EstimatedAdvice:
        """The estimated advisor's choice on ``workload`` (advised and scored once)."""
        return self._entry(workload)[1]

    def scores(self, workloads: Sequence[Sequence[Any]]) -> list[list[float]]:
        """Per workload, its one score (a ``Comparator`` scorer's shape)."""
        with trial_stopwatch().phase("verdict: estimated advisor"):
            return [[self.reward(workload)] for workload in workloads]
