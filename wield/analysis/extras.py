"""Extra report sections from per-trial files that follow a naming convention (any case study may write them).

- ``evaluations.csv`` — one row per system evaluation during training (column ``evaluation``, 0, 1, ...)
  and one numeric column per measured value (e.g. ``step_time_s``). Drawn as one line per trial over
  evaluations, one panel per method, one figure per value column (placement: step time over evaluations).
- ``cross_graph.csv`` — a matrix: first column the instance a model was trained on, the other columns the
  instances it was evaluated on, cells a metric (placement: improvement of the model trained on graph A
  evaluated on graph B). Drawn as a heatmap of the mean over trials, per method; ``cross_graph.json`` with
  ``{"rows": [...], "columns": [...], "values": [[...]], "metric": "..."}`` is read the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd

from wield.analysis import figures
from wield.analysis.records import Results

SERIES_FILE = "evaluations.csv"
MATRIX_FILES = ("cross_graph.csv", "cross_graph.json")


def load_series(results: Results, name: str = SERIES_FILE) -> pd.DataFrame:
    """Every trial's ``name`` file stacked: columns ``experiment``, ``method``, ``trial`` and the file's."""
    frames = []
    for (experiment, method, trial), directory in results.trial_directories.items():
        if (directory / name).exists():
            frame = pd.read_csv(directory / name)
            frame.insert(0, "trial", trial)
            frame.insert(0, "method", method)
            frame.insert(0, "experiment", experiment)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def read_matrix(path: Path) -> tuple[pd.DataFrame, str]:
    """A cross-instance matrix (rows: trained on, columns: evaluated on) and the name of its metric."""
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        return (pd.DataFrame(data["values"], index=data["rows"], columns=data["columns"]),
                str(data.get("metric", "value")))
    frame = pd.read_csv(path, index_col=0)
    return frame, str(frame.index.name or "value")


def load_matrices(results: Results) -> dict[str, tuple[pd.DataFrame, str, int]]:
    """Per method: (mean matrix over trials, metric name, number of trials) of the cross-instance files."""
    found: dict[str, list[tuple[pd.DataFrame, str]]] = {}
    for (_, method, _), directory in results.trial_directories.items():
        for name in MATRIX_FILES:
            if (directory / name).exists():
                found.setdefault(method, []).append(read_matrix(directory / name))
                break
    means = {}
    for method, matrices in found.items():
        stacked = pd.concat([m for m, _ in matrices]).groupby(level=0, sort=False).mean()
        means[method] = (stacked.reindex(matrices[0][0].index), matrices[0][1], len(matrices))
    return means


def extra_sections(results: Results, directory: Path, caption: str, save: Callable) -> list:
    """Report sections for the conventional files present in the trials (none when there are none)."""
    from wield.analysis.report import Section

    sections = []
    series = load_series(results)
    if not series.empty and "evaluation" in series:
        section = Section("Measurements over evaluations", [
            "Every system evaluation made during training, in order (one line per trial)."])
        values = [c for c in series.columns if c not in ("experiment", "method", "trial", "evaluation")
                  and pd.api.types.is_numeric_dtype(series[c])]
        for value in values:
            label, scale = figures.metric_label(value)
            frame = series.assign(**{value: series[value] * scale})
            figure = figures.series_figure(frame, "evaluation", value, "trial", "system evaluation (count)", label,
                                           label.split(" (")[0] + " over evaluations", caption, panels="method")
            section.figures.append((save(figure, directory, f"series-{value}.png"),
                                    f"{label} at every evaluation during training. " + caption))
        sections.append(section)
    for method, (matrix, metric, trials) in load_matrices(results).items():
        label, scale = figures.metric_label(metric)
        percent = scale == 100.0
        figure = figures.heatmap_figure(matrix * scale,
                                        f"{method}: trained on (rows) vs evaluated on (columns)", label,
                                        "evaluated on", "trained on", caption,
                                        fmt="{:.0f}%" if percent else "{:.3g}")
        sections.append(Section(f"Cross-instance matrix ({method})", [
            f"Mean over {trials} trial(s) of {metric}: a model trained on the row's instance, evaluated on the "
            "column's. The diagonal is in-distribution; off-diagonal cells measure generalisation."], [],
            [(save(figure, directory, f"cross-{method}.png"), f"{label}, mean over {trials} trials. " + caption)]))
    return sections
