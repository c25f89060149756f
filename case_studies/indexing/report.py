"""Presenting an indexing run: the results table printed at the end, what each row is, and the run's figure.

Rows are labelled with what produced them: a learner's greedy policy, its result (in blackbox runs the best
index set seen in training: a search outcome, not a learned policy; under ``--train-on redraws`` the greedy
policy's set, ``train_on.py``), the random policy, the baselines.
"""

from __future__ import annotations

from typing import Any, Mapping

from case_studies.indexing.metrics import BY_NAME
from case_studies.indexing.train_on import REDRAWS, WORKLOAD
from wield.analysis.plots import training_and_methods_figure
from wield.tables import methods_table

COLUMNS = ("mean_latency_improvement", "p99_latency_improvement", "mean_work_improvement", "relative_index_size",
           "index_bytes", "indexes_created", "uses_per_index", "unused_indexes", "mean_latency_ms")

FIXED_NOTES = {
    "none": "no secondary index",
    "full": "one compound index per query (full-index baseline)",
    "random-policy": "uniformly random valid actions (masked random policy), one episode: the learners' baseline",
    "opentuner": "OpenTuner's best index set (search over whole index sets, the method's budget)",
    "random": "random search's best index set (whole index sets, the method's budget)",
    "advisor": "index advisor: candidates from the queries' predicates and sort keys, greedy by cost saved per "
               "byte within the memory cap; a non-learning heuristic",
    "estimated-advisor": "the same greedy choice on statistics-only cost and size estimates, no engine "
                         "evaluation; a non-learning heuristic",
}


def row_note(name: str, blackbox: bool = True, train_on: str = WORKLOAD) -> str:
    """What produced row ``name`` of an indexing run (``train_on``: what a blackbox learner trained on)."""
    if name in FIXED_NOTES:
        return FIXED_NOTES[name]
    if name.endswith("-greedy"):
        return f"trained {name[:-7]}, greedy policy, one episode: the learned policy"
    if blackbox and train_on == REDRAWS:
        return (f"trained {name} on redraws of the training workload, greedy policy on the training workload: "
                "the learned policy (the same set as its -greedy row; no search outcome under --train-on redraws)")
    if blackbox:
        return f"best index set seen in {name}'s training: a search outcome, not a learned policy (blackbox)"
    return f"trained {name}, greedy policy on the unseen test workload"


def row_label(name: str, blackbox: bool = True, train_on: str = WORKLOAD) -> str:
    """A short column or legend label: search outcomes say so."""
    if blackbox and train_on == REDRAWS and name not in FIXED_NOTES and not name.endswith("-greedy"):
        return f"{name} (greedy, trained on redraws)"
    if blackbox and name not in FIXED_NOTES and not name.endswith("-greedy"):
        return f"{name} (best seen: search)"
    return name


def results_table(methods: Mapping[str, Mapping], blackbox: bool = True, train_on: str = WORKLOAD) -> str:
    """Every method's study metrics, each with its declared unit; columns labelled with what they are."""
    return methods_table({row_label(name, blackbox, train_on): values for name, values in methods.items()},
                         [BY_NAME[name] for name in COLUMNS])


def save_run_figure(record, methods: Mapping[str, Mapping], config, method: str,
                    verdict: Mapping[str, Any] | None = None, blackbox: bool = True, train_on: str = WORKLOAD) -> None:
    figure = training_and_methods_figure(
        record.episodes, methods,
        bars=[("mean_latency_improvement", "mean latency\nimprovement\n(vs no index)"),
              ("p99_latency_improvement", "p99 latency\nimprovement\n(vs no index)"),
              ("relative_index_size", "index size\n(vs full index)")],
        title=f"Compound indexing on {config.engine}: {config.queries} queries, seed {config.seed}",
        caption=(f"{config.documents:,} documents; {method}, training metric {config.metric}; "
                 f"n = {config.episodes * config.queries} transitions; latency = "
                 + (f"median of {config.repetitions} repetitions" if config.repetitions > 1 else "one timed execution")),
        verdict=verdict, labels={name: row_label(name, blackbox, train_on) for name in methods},
    )
    record.save_figure(figure, "results.png")
