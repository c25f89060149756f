"""The estimated advisor's set improved by engine-checked moves, stopped at a decision budget: the non-learning
method a learned policy-guided search (``budgeted.policy_search``) is compared with at every budget above 0.

``estimated_advisor.estimated_advice`` decides with no engine evaluation. Given a budget of B workload
evaluations, a non-learning method can do more: check its set on the engine, then check the sets one move away
(``local_search.neighbours``: drop one index, add one of the workload's candidates, or swap one for one) in the
order the estimates rank them (their estimated reward level, ``EstimatedWorkload``), move to the first that
scores higher on the engine and rank again from there; sets whose estimated bytes exceed the memory cap are
not considered. It stops after B evaluations (or when no unchecked neighbour is left) and keeps the best set
checked. This is how the learned search spends its budget too (its first check is its greedy set, then the
sets its policy prefers), with the estimates in the policy's place: if the learned search is ahead of the
advisor stopped at B only because it starts from a good set, this method is ahead too.

``trace[b]`` is the reward of the best set checked within b evaluations (``trace[0]``: the estimated set's own
reward, which deciding at budget 0 does not need to know).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from case_studies.indexing.advisor import check_budget
from case_studies.indexing.budgeted import workload_evaluator
from case_studies.indexing.estimated_advisor import EstimatedScores, EstimatedWorkload
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.local_search import neighbours


@dataclass
class EstimatedSearch:
    """Where the search ended: the best set checked, its reward, the best reward within each number of
    evaluations (``trace``), the evaluations made and the wall seconds (estimates and engine checks)."""

    configuration: list[IndexSpec]
    reward: float
    trace: list[float]
    evaluations: int
    seconds: float

    def reward_at_budget(self, budget: int) -> float:
        """The reward of the best set checked within ``budget`` evaluations (the estimated set's at 0)."""
        return self.trace[min(check_budget(budget), len(self.trace) - 1)]


def _ranked(estimated: EstimatedWorkload, current: Sequence[IndexSpec], checked: set[frozenset[IndexSpec]]
            ) -> list[list[IndexSpec]]:
    """The unchecked sets one move from ``current`` within the memory cap, highest estimated level first."""
    scored = []
    for order, configuration in enumerate(neighbours(current, estimated.candidates)):
        if frozenset(configuration) in checked:
            continue
        size = estimated.size(configuration)
        if size > estimated.limit:
            continue
        scored.append((-estimated.level(size, estimated.costs(configuration)), order, configuration))
    return [configuration for *_, configuration in sorted(scored, key=lambda item: item[:2])]


def estimated_search(estimated: EstimatedWorkload, start: Sequence[IndexSpec], budget: int,
                     evaluate: Callable[[Sequence[IndexSpec]], float]) -> EstimatedSearch:
    """Check ``start`` and then estimate-ranked moves from the best set checked, at most ``budget`` evaluations
    in all (module docstring); ``evaluate`` is one workload evaluation on the engine."""
    budget = check_budget(budget)
    started = time.perf_counter()
    best = [spec.canonical() for spec in start]
    reward = evaluate(best)
    trace = [reward, reward]
    checked = {frozenset(best)}
    while len(trace) - 1 < budget:
        moved = False
        for configuration in _ranked(estimated, best, checked):
            if len(trace) - 1 >= budget:
                break
            checked.add(frozenset(configuration))
            value = evaluate(configuration)
            if value > reward:
                best, reward, moved = configuration, value, True
            trace.append(reward)
            if moved:
                break
        if not moved:
            break
    return EstimatedSearch(best, reward, trace, len(trace) - 1, time.perf_counter() - started)


def searched_rewards(scores: EstimatedScores, workload: Sequence[Any], budgets: Sequence[int]) -> list[float]:
    """The estimated advisor's set (``scores``' choice on ``workload``) improved by engine-checked moves: its
    reward within each of ``budgets`` evaluations on the task's system (whose index set is restored)."""
    task = scores.task
    system, converter = task.system, task.converter
    estimated = EstimatedWorkload(scores.model, converter, workload, task.schema.k, aggregate=system.aggregate)
    previous = list(system.state())
    try:
        search = estimated_search(estimated, scores.advised(workload).configuration, max(budgets),
                                  workload_evaluator(system, converter, workload))
    finally:
        system.configure(previous)
    return [search.reward_at_budget(budget) for budget in budgets]
