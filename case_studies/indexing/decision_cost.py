"""The greedy policy against the advisor over a class run's trials (issue 42, goal 2): quality and decision
time per workload, each with a 95% t interval over the trials, printed under the classification
(``CaseStudy.experiment_lines``).

Each trial's verdict holds the advisor rung (the greedy policy's and the unrestricted advisor's mean reward
on the verdict's instances: unseen query sets for C3-C6, fresh draws of the training workload for C0-C2) and
the decision time per instance (``verdict.py``: the greedy policy's ``act`` calls, the advisor's whole advice
with its engine evaluations), and the estimated advisor's rung and time (``estimated_advisor.py``: the
non-learning method that, like the greedy policy, decides without the engine; its line is printed when every
trial's verdict has it). The lines give the means over trials, the gap as a share of the advisor's
reward (issue 42: within 2%) and how many times less time the greedy policy takes (issue 42: at least 100x),
then the same times' medians per trial beside them (a trial's mean moves with one stall of the machine);
trials trained under ``--train-on redraws`` (``train_on.py``) add a line saying what their method row is.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from case_studies.indexing.train_on import REDRAWS

QUALITY_GAP_GOAL = 0.02  # issue 42: the greedy policy within 2% of the advisor's unrestricted reward
SPEED_GOAL = 100.0  # ... at >= 100x less decision time
ESTIMATED = "estimated-advisor"  # the estimated advisor's rung (estimated_advisor.METHOD)


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its 95% t interval (the mean three times for one value or no spread)."""
    from scipy import stats

    array = np.asarray(values, dtype=float)
    mean = float(array.mean())
    if array.size < 2 or float(array.std(ddof=1)) == 0.0:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, array.size - 1) * array.std(ddof=1) / math.sqrt(array.size))
    return mean, mean - half, mean + half


def _format(interval: tuple[float, float, float], spec: str, scale: float = 1.0) -> str:
    mean, low, high = (value * scale for value in interval)
    return f"{mean:{spec}} [{low:{spec}}, {high:{spec}}]"


def heuristic_rung(verdict: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The verdict's heuristic rung named ``name`` (``advisor``, ``estimated-advisor``), or None."""
    return next((r for r in verdict.get("rungs", []) if r.get("kind") == "heuristic" and r.get("name") == name),
                None)


def trial_rows(summaries: Sequence[Any]) -> list[dict[str, float]]:
    """Per trial with a verdict: greedy and advisor mean reward, decision seconds and advisor evaluations."""
    rows = []
    for summary in summaries:
        verdict = getattr(summary, "verdict", None) or {}
        rung = heuristic_rung(verdict, "advisor")
        decision = verdict.get("decision_time") or {}
        if rung is None or not decision or rung.get("learner_mean") is None:
            continue
        row = {"greedy": float(rung["learner_mean"]), "advisor": float(rung["comparator_mean"]),
               "greedy_seconds": float(decision["greedy_seconds"]),
               "advisor_seconds": float(decision["advisor_seconds"]),
               "advisor_evaluations": float(decision["advisor_evaluations"])}
        if "greedy_median_seconds" in decision and "advisor_median_seconds" in decision:
            row.update({"greedy_median_seconds": float(decision["greedy_median_seconds"]),
                        "advisor_median_seconds": float(decision["advisor_median_seconds"])})
        estimated = heuristic_rung(verdict, ESTIMATED)
        if estimated is not None and estimated.get("comparator_mean") is not None and "estimated_seconds" in decision:
            row.update({"estimated": float(estimated["comparator_mean"]),
                        "estimated_difference": float(estimated["learner_mean"]) - float(estimated["comparator_mean"]),
                        "estimated_seconds": float(decision["estimated_seconds"])})
        rows.append(row)
    return rows


def estimated_lines(rows: Sequence[dict[str, float]]) -> list[str]:
    """The estimated advisor's line (``estimated_advisor.py``), when every trial's verdict has its rung."""
    if not rows or not all("estimated" in row for row in rows):
        return []
    estimated = t_interval([r["estimated"] for r in rows])
    gap = t_interval([(r["advisor"] - r["estimated"]) / max(1e-12, abs(r["advisor"])) for r in rows])
    difference = t_interval([r["estimated_difference"] for r in rows])
    seconds = t_interval([r["estimated_seconds"] for r in rows])
    return [f"  estimated advisor (the advisor's greedy choice on statistics-only estimates, no engine evaluation, "
            f"a non-learning method): reward {_format(estimated, '.3f')}, a gap of {_format(gap, '.1f', 100)}% of "
            f"the advisor's; greedy - estimated {_format(difference, '+.3f')}; decision time "
            f"{_format(seconds, '.1f', 1e3)} ms per workload"]


def median_lines(rows: Sequence[dict[str, float]]) -> list[str]:
    """The decision times' medians per trial (when every trial's verdict has them), beside the means the goal
    is judged on: a trial's mean moves with one stall of the machine during a play of a few milliseconds (a
    267 ms play among 280 of 4-6 ms made one trial's mean 13.5 ms), its median does not."""
    if not rows or not all("greedy_median_seconds" in row for row in rows):
        return []
    greedy = t_interval([r["greedy_median_seconds"] for r in rows])
    advisor = t_interval([r["advisor_median_seconds"] for r in rows])
    speed = t_interval([r["advisor_median_seconds"] / max(1e-12, r["greedy_median_seconds"]) for r in rows])
    return [f"  median decision time per workload (a trial's median, robust to a stall of the machine; the goal is "
            f"judged on the means above): greedy {_format(greedy, '.2f', 1e3)} ms, advisor {_format(advisor, '.3f')} "
            f"s: {_format(speed, ',.0f')}x less"]


def experiment_lines(summaries: Sequence[Any]) -> list[str]:
    """The lines of the module docstring (none without a trial that has the advisor rung)."""
    rows = trial_rows(summaries)
    if not rows:
        return []
    greedy = t_interval([r["greedy"] for r in rows])
    advisor = t_interval([r["advisor"] for r in rows])
    difference = t_interval([r["greedy"] - r["advisor"] for r in rows])
    gap = t_interval([(r["advisor"] - r["greedy"]) / max(1e-12, abs(r["advisor"])) for r in rows])
    greedy_time = t_interval([r["greedy_seconds"] for r in rows])
    advisor_time = t_interval([r["advisor_seconds"] for r in rows])
    speed = t_interval([r["advisor_seconds"] / max(1e-12, r["greedy_seconds"]) for r in rows])
    evaluations = float(np.mean([r["advisor_evaluations"] for r in rows]))
    quality = "met" if gap[2] <= QUALITY_GAP_GOAL else "not met"
    fast = "met" if speed[1] >= SPEED_GOAL else "not met"
    redraws = sum((getattr(s, "verdict", None) or {}).get("train_on") == REDRAWS for s in summaries)
    protocol = ([f"protocol --train-on redraws ({redraws} trials): each learner trained on redraws of its training "
                 "workload (a seed stream disjoint from the verdict's); the method's row is its greedy policy's "
                 "set, a learned policy, not the best set seen in training"] if redraws else [])
    return [*protocol,
            f"greedy policy against the advisor over {len(rows)} trials (each on its verdict's instances; mean "
            "[95% t CI over trials]):",
            f"  reward: greedy {_format(greedy, '.3f')}, advisor (unrestricted) {_format(advisor, '.3f')}; greedy - "
            f"advisor {_format(difference, '+.3f')}, a gap of {_format(gap, '.1f', 100)}% of the advisor's reward "
            f"(goal: within {QUALITY_GAP_GOAL:.0%}: {quality})",
            f"  decision time per workload: greedy {_format(greedy_time, '.2f', 1e3)} ms (no engine evaluation), "
            f"advisor {_format(advisor_time, '.3f')} s ({evaluations:.0f} evaluations): {_format(speed, ',.0f')}x "
            f"less (goal: at least {SPEED_GOAL:.0f}x: {fast})",
            *median_lines(rows),
            *estimated_lines(rows)]
