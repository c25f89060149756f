"""Extra report sections from per-trial files that follow a naming convention (any case study may write them).

- ``measurements.csv`` — one row per system evaluation during training: column ``evaluation`` (1, 2, ...),
  optionally ``method``, and one numeric column per measured cost (lower is better, e.g. ``step_time_ms``).
  Drawn per method (one panel each) as every measurement (faint) and the best so far (line), one colour per
  trial (placement: step time over evaluations); a method measured once per trial (placement's HEFT and
  single-device placements) is drawn as a reference line in every panel instead of a panel of one dot.
- ``cross_graph_matrix.json`` — ``{"graphs": [...], "<metric>": [[...]]}`` (square) or
  ``{"rows": [...], "columns": [...], "values": [[...]], "metric": "..."}``, optionally with
  ``"control_rows": {"label": [...]}`` (rows of a control such as an untrained model, drawn below the
  others); or ``cross_graph_matrix.csv`` (first column the row names). Rows: the instance a model was trained on; columns: the instance it was
  evaluated on; cells: a metric (placement: improvement of the model trained on graph A placing graph B).
  Drawn as one heatmap per trial (the first four), per method.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from wield.analysis import figures
from wield.analysis.captions import caption as compose
from wield.analysis.records import Results
from wield.analysis.section import Section
from wield.metrics import Metric

SERIES_FILE = "measurements.csv"
MATRIX_FILES = ("cross_graph_matrix.json", "cross_graph_matrix.csv")
MAX_MATRICES = 4


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def load_series(results: Results, name: str = SERIES_FILE) -> pd.DataFrame:
    """Every trial's ``name`` file stacked: columns ``experiment``, ``method``, ``trial`` and the file's."""
    frames = []
    for (experiment, method, trial), directory in results.trial_directories.items():
        if (directory / name).exists():
            frame = pd.read_csv(directory / name)
            frame.insert(0, "trial", trial)
            if "method" not in frame:
                frame.insert(0, "method", method)
            frame.insert(0, "experiment", experiment)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def read_matrix(path: Path) -> tuple[pd.DataFrame, str]:
    """A cross-instance matrix (rows: trained on, columns: evaluated on) and the name of its metric."""
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        if "values" in data:
            frame, metric = (pd.DataFrame(data["values"], index=data["rows"], columns=data["columns"]),
                             str(data.get("metric", "value")))
        else:
            metric = next(k for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], list))
            frame = pd.DataFrame(data[metric], index=data["graphs"], columns=data["graphs"])
        controls = data.get("control_rows") or {}
        if controls:
            frame = pd.concat([frame, pd.DataFrame(list(controls.values()), index=list(controls),
                                                   columns=frame.columns)])
        return frame, metric
    frame = pd.read_csv(path, index_col=0)
    return frame, str(frame.index.name or "value")


def load_matrices(results: Results) -> dict[str, list[tuple[int, pd.DataFrame, str]]]:
    """Per method: every trial's cross-instance matrix as (trial, matrix, metric name)."""
    found: dict[str, list[tuple[int, pd.DataFrame, str]]] = {}
    for (_, method, trial), directory in sorted(results.trial_directories.items(), key=lambda kv: kv[0][2]):
        for name in MATRIX_FILES:
            if (directory / name).exists():
                found.setdefault(method, []).append((trial, *read_matrix(directory / name)))
                break
    return found


def extra_sections(results: Results, directory: Path, caption: str, save: Callable,
                   declared: Mapping[str, Metric] | None = None) -> list:
    """Report sections for the conventional files present in the trials (none when there are none). The
    figures carry no caption of their own: each one's caption (what it shows, the key of what it draws, then
    ``caption``: s, n, seeds) is returned beside it, for the report to write once."""
    sections = []
    series = load_series(results)
    if not series.empty and "evaluation" in series:
        single = figures.single_measurements(series, "evaluation", "trial", "method")
        once = list(dict.fromkeys(series.loc[single, "method"]))
        section = Section("Measurements over evaluations", [
            "Every system evaluation made during the search, in order: each measurement (faint dots) and the "
            "best so far (line), one colour per trial, one panel per method that searched."
            + (f" Measured once per trial (no search), {_and(once)} {'is' if len(once) == 1 else 'are'} "
               "drawn as a reference line in every panel." if once else "")])
        values = [c for c in series.columns if c not in ("experiment", "method", "trial", "evaluation")
                  and pd.api.types.is_numeric_dtype(series[c])]
        for value in values:
            label, scale = figures.metric_label(value, declared)
            frame = series.assign(**{value: series[value] * scale})
            figure = figures.series_figure(frame, "evaluation", value, "trial", "system evaluations (count)", label,
                                           label.split(" (")[0] + " over evaluations", panels="method",
                                           best_so_far=True)
            section.figures.append((save(figure, directory, f"series-{value}.png"),
                                    compose(figure, f"{label} over the search's evaluations", caption)))
        sections.append(section)
    for method, matrices in load_matrices(results).items():
        metric = matrices[0][2]
        label, scale = figures.metric_label(metric, declared)
        shown = matrices[:MAX_MATRICES]
        figure = figures.heatmap_figure(
            [(f"trial {trial}", matrix * scale) for trial, matrix, _ in shown], label, "evaluated on",
            "trained on", fmt="{:.0f}%" if scale == 100.0 else "{:.3g}",
            title=f"{method}: a model trained on the row's instance, evaluated on the column's")
        more = f" (the first {len(shown)} of {len(matrices)} trials)" if len(matrices) > len(shown) else ""
        sections.append(Section(f"Cross-instance matrix ({method})", [
            f"{metric} of a model trained on the row's instance alone and evaluated on the column's, per "
            f"trial{more}. The diagonal is the instance it was trained on; off-diagonal cells measure "
            "generalisation; a control row (an untrained model) shows what the initial model reaches without "
            "training. Each trial has its own instances (in classes that randomise the workload)."], [],
            [(save(figure, directory, f"cross-{method}.png"),
              compose(figure, f"{label} per trial{more}", caption))]))
    return sections
