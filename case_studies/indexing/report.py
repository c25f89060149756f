"""Presenting an indexing run: the results table printed at the end and the run's figure."""

from __future__ import annotations

from typing import Mapping

from wield.analysis import format_table
from wield.analysis.plots import training_and_methods_figure

COLUMNS = [
    ("method", "method", None),
    ("mean_latency_improvement", "mean lat. impr.", ".1%"),
    ("p99_latency_improvement", "p99 lat. impr.", ".1%"),
    ("mean_work_improvement", "mean work impr.", ".1%"),
    ("relative_index_size", "size vs full", ".1%"),
    ("index_mb", "index MB", ".2f"),
    ("indexes_created", "created", "d"),
    ("uses_per_index", "uses/index", ".2f"),
    ("unused_indexes", "unused", "d"),
    ("mean_latency_ms", "mean ms", ".2f"),
]

METHOD_NOTES = {
    "none": "no secondary index",
    "full": "one compound index per query (full-index baseline)",
    "random": "uniformly random valid actions, one episode",
    "dqn-greedy": "trained DQN, greedy policy, one episode",
    "dqn": "trained DQN, best index set seen in training (blackbox)",
}


def results_table(methods: Mapping[str, Mapping]) -> str:
    rows = [{**m, "index_mb": m["index_bytes"] / 1e6} for m in methods.values()]
    return format_table(rows, COLUMNS)


def save_run_figure(record, metrics, config) -> None:
    methods = {name: m.as_dict() for name, m in metrics.items()}
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
