"""Presenting an indexing run: the results table printed at the end and the run's figure."""

from __future__ import annotations

from typing import Mapping

from case_studies.indexing.metrics import BY_NAME
from wield.tables import methods_table
from wield.analysis.plots import training_and_methods_figure

COLUMNS = ("mean_latency_improvement", "p99_latency_improvement", "mean_work_improvement", "relative_index_size",
           "index_bytes", "indexes_created", "uses_per_index", "unused_indexes", "mean_latency_ms")

METHOD_NOTES = {
    "none": "no secondary index",
    "full": "one compound index per query (full-index baseline)",
    "random": "uniformly random valid actions, one episode",
    "dqn-greedy": "trained DQN, greedy policy, one episode",
    "dqn": "trained DQN, best index set seen in training (blackbox)",
}


def results_table(methods: Mapping[str, Mapping]) -> str:
    """Every method's study metrics, each with its declared unit."""
    return methods_table(methods, [BY_NAME[name] for name in COLUMNS])


def save_run_figure(record, methods: Mapping[str, Mapping], config) -> None:
    figure = training_and_methods_figure(
        record.episodes, methods,
        bars=[("mean_latency_improvement", "mean latency\nimprovement\n(vs no index)"),
              ("p99_latency_improvement", "p99 latency\nimprovement\n(vs no index)"),
              ("relative_index_size", "index size\n(vs full index)")],
        title=f"Compound indexing on {config.engine}: {config.queries} queries, seed {config.seed}",
        caption=(f"{config.documents:,} documents; training metric {config.metric}; "
                 f"n = {config.episodes * config.queries} transitions; latency = median of "
                 f"{config.repetitions} repetitions"),
    )
    record.save_figure(figure, "results.png")
