"""Figures of experiments for people: classification, per-method metric bars, reward curves, series, heatmaps.

Every function takes tidy DataFrames (``wield.analysis.records``) and returns a matplotlib ``Figure`` (made
without pyplot, so nothing changes the backend: in Jupyter, ``display(figure)`` shows it) with
labelled axes (units included) and a legend where there is more than one series; a ``caption`` given is
written under the axes. Every artist is described as it is drawn (``wield.analysis.captions.describe``), so
``wield.analysis.captions.drawn_key(figure)`` gives the key of a caption from what the figure actually shows.
Axis labels and scales come from the case study's metric declarations (``wield.metrics``; inferred from the name
for undeclared metrics), so the figures work for any case study.
"""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from wield.analysis.captions import describe, draw_caption
from wield.metrics import Metric, infer_metric

def metric_label(name: str, declared: Mapping[str, Metric] | None = None) -> tuple[str, float]:
    """(axis label with unit and direction, scale factor) of a metric: its declaration in ``declared`` (a
    case study's, ``CaseStudy.declared_metrics()``), else one inferred from its name
    (``wield.metrics.infer_metric``). ``wield.metrics`` is the one place units are formatted."""
    metric = (declared or {}).get(name) or infer_metric(name)
    return metric.axis_label(), metric.scale


def _caption(figure, text: str) -> None:
    """A caption under the axes, wrapped to the figure's width (none when ``text`` is empty)."""
    draw_caption(figure, text)


def _colours(names: Sequence[str]) -> dict[str, str]:
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {name: cycle[i % len(cycle)] for i, name in enumerate(names)}


def classification_figure(classification: pd.DataFrame, caption: str = ""):
    """f per experiment (method and class) with its exact 95% confidence interval."""
    rows = classification.dropna(subset=["f"]).reset_index(drop=True)
    figure = Figure(figsize=(max(7.0, 1.3 * len(rows) + 4.0), 3.8))
    axis = figure.subplots()
    x = np.arange(len(rows))
    f = rows["f"].to_numpy(float)
    error = np.vstack([f - rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float) - f])
    met = [bool(value) for value in rows["met"]]
    colours = ["tab:green" if value else "tab:red" for value in met]
    for i, value in enumerate(met):
        describe(axis.bar(x[i], f[i], 0.6, color=colours[i], alpha=0.75),
                 "green bars: f of a class met (f >= 0.5)" if value else "red bars: f of a class not met")
    describe(axis.errorbar(x, f, yerr=error, fmt="none", ecolor="black", capsize=6, lw=1.2,
                           label="exact 95% CI of f"), "error bars: the exact (Clopper-Pearson) 95% CI of f")
    for i, row in rows.iterrows():
        describe(axis.text(i, 1.04, f"n={row['n']}, s={row['s']}", ha="center", fontsize=8),
                 "above each bar: n (transitions per trial) and s (trials)")
    axis.set_xticks(x, [f"{r['method']}\n{r['class_name']}" for _, r in rows.iterrows()])
    axis.set_xlim(-0.7, len(rows) - 0.3)
    axis.set_ylim(0, 1.12)
    axis.set_ylabel("f: share of trials meeting the objective")
    describe(axis.axhline(0.5, color="grey", ls="--", lw=0.8, label="required frequency 0.5"),
             "dashed: the required frequency 0.5")
    handles, _ = axis.get_legend_handles_labels()
    # a legend entry per colour drawn: no key for a bar that is not there
    handles += [Patch(color=colour, alpha=0.75, label=label) for colour, label, drawn in (
        ("tab:green", "f of a class met (f >= 0.5)", any(met)), ("tab:red", "f of a class not met", not all(met)))
        if drawn]
    axis.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axis.set_title("Classification C_i(n, s, f)")
    axis.grid(axis="y", alpha=0.3)
    _caption(figure, caption)
    figure.tight_layout()
    return figure


NON_NEGATIVE_UNITS = ("ms", "s", "bytes", "count")  # units of quantities that cannot be negative


def metric_bars_figure(per_method: pd.DataFrame, metrics: Sequence[str], methods: Sequence[str],
                       declared: Mapping[str, Metric] | None = None, caption: str = "", title: str = ""):
    """One panel per metric: a bar per method at the mean across trials, error bars of one standard
    deviation (cut at 0 for a count, a size or a time), and every trial as a dot (the study's Figures 6.2-6.6
    and 6.9)."""
    metrics = [m for m in metrics if m in per_method.columns]
    columns = 2 if len(metrics) == 4 else min(3, max(1, len(metrics)))
    rows = -(-len(metrics) // columns)
    width = max(3.2, 0.55 * len(methods) + 1.8)
    figure = Figure(figsize=(width * columns, 3.9 * rows))
    axes = figure.subplots(rows, columns, squeeze=False)
    colours = _colours(methods)
    units = {metric: ((declared or {}).get(metric) or infer_metric(metric)).unit for metric in metrics}
    cut_at_zero = any(unit in NON_NEGATIVE_UNITS for unit in units.values())
    for axis, metric in zip(axes.flat, metrics):
        label, scale = metric_label(metric, declared)
        non_negative = units[metric] in NON_NEGATIVE_UNITS
        for i, method in enumerate(methods):
            values = per_method.loc[per_method["method"] == method, metric].dropna().to_numpy(float) * scale
            if not len(values):
                continue
            mean = values.mean()
            spread = values.std(ddof=1) if len(values) > 1 else 0.0
            below = min(spread, max(mean, 0.0)) if non_negative else spread  # a count or size is never < 0
            bar = describe(axis.bar(i, mean, 0.7, color=colours[method], alpha=0.8, yerr=[[below], [spread]],
                                    capsize=4, error_kw={"lw": 1}), "bars: the mean over trials")
            if len(values) > 1:
                describe(bar.errorbar, "error bars: ± one standard deviation across trials"
                         + (" (cut at 0 where a count, size or time would go below it)" if cut_at_zero else ""))
            jitter = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
            describe(axis.scatter(i + jitter, values, s=12, color="black", zorder=3), "dots: single trials")
        axis.set_xticks(range(len(methods)), methods, rotation=30, ha="right")
        axis.set_xlim(-0.6, len(methods) - 0.4)
        axis.set_ylabel(textwrap.fill(label, 34))
        axis.set_xlabel("method")
        axis.axhline(0, color="black", lw=0.8)
        axis.grid(axis="y", alpha=0.3)
        _readable(axis, legend=False)
    for axis in list(axes.flat)[len(metrics):]:
        axis.set_visible(False)
    several = bool(len(per_method)) and per_method.groupby("method").size().max() > 1
    handles = [Patch(color="grey", alpha=0.8, label="mean over trials"),
               *([Line2D([], [], color="black", lw=1, label="± 1 standard deviation")] if several else []),
               Line2D([], [], color="black", marker="o", ms=4, lw=0, label="one trial")]
    axes.flat[len(metrics) - 1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if title:
        figure.suptitle(title)
    _caption(figure, caption)
    figure.tight_layout()
    return figure


#: columns that hold a training curve, in the order looked for: the episode return Wield's training loop
#: records, then a case study's evaluated curve (the SB3 scheduling learners record the greedy policy's
#: return on the training-shape workload after each training episode as ``curve_return``)
CURVE_COLUMNS = ("total_reward", "curve_return")
CURVE_LABELS = {"total_reward": "episode return (sum of step rewards, higher is better)",
                "curve_return": "greedy return after each training episode (higher is better)"}
#: panels per row of a multi-panel figure (readable at 1280 px)
MAX_COLUMNS = 3


def curve_column(rows: pd.DataFrame, value: str = "total_reward") -> str | None:
    """The column holding ``rows``' training curve: ``value`` if it has a number, else the first of
    ``CURVE_COLUMNS`` that has one; None when the rows hold no curve."""
    for column in dict.fromkeys((value, *CURVE_COLUMNS)):
        if column in rows and pd.to_numeric(rows[column], errors="coerce").notna().any():
            return column
    return None


def curve_methods(episodes: pd.DataFrame, value: str = "total_reward") -> list[str]:
    """The methods of ``episodes`` that have a training curve (a method without one gets no panel)."""
    if episodes.empty or "method" not in episodes:
        return []
    return [m for m in dict.fromkeys(episodes["method"]) if curve_column(episodes[episodes["method"] == m], value)]


def panel_grid(count: int, width: float, height: float, max_columns: int = MAX_COLUMNS, extra: float = 1.5,
               **kwargs):
    """A figure of ``count`` panels in rows of at most ``max_columns``; (figure, axes in order); the unused
    cells of the last row are hidden."""
    columns = max(1, min(max_columns, count))
    rows = max(1, -(-count // columns))
    figure = Figure(figsize=(width * columns + extra, height * rows))
    axes = figure.subplots(rows, columns, squeeze=False, **kwargs)
    for axis in list(axes.flat)[count:]:
        axis.set_visible(False)
    return figure, list(axes.flat)[:max(1, count)]


def _readable(axis, legend: bool = True) -> None:
    """Fonts that stay legible when a wide figure is scaled down to a 1280 px page."""
    axis.tick_params(labelsize=10)
    axis.xaxis.label.set_fontsize(11)
    axis.yaxis.label.set_fontsize(11)
    axis.title.set_fontsize(12)
    if legend and axis.get_legend() is not None:
        for text in axis.get_legend().get_texts():
            text.set_fontsize(9)


def reward_curves_figure(episodes: pd.DataFrame, value: str = "total_reward", caption: str = "",
                         ylabel: str | None = None, verdicts: pd.DataFrame | None = None):
    """One panel per learner that has a training curve (rows of at most ``MAX_COLUMNS``): ``value`` (or, for a
    learner without it, the first of ``CURVE_COLUMNS`` it has) over training episodes, one line per trial.
    ``verdicts``: rows with ``method``, ``trial``, ``random_mean``, ``random_sd`` (and ``greedy_return``) of the
    learning verdicts; each trial's random-policy band (mean ± 1 sd) and greedy return are drawn in its line's
    colour."""
    learners = curve_methods(episodes, value)
    figure, axes = panel_grid(len(learners), 5.2, 4.2)
    bands = {} if verdicts is None or "random_mean" not in verdicts else {
        (row["method"], row["trial"]): row for _, row in verdicts.iterrows() if pd.notna(row["random_mean"])}
    columns = {learner: curve_column(episodes[episodes["method"] == learner], value) for learner in learners}
    shared = len(set(columns.values())) == 1
    if shared and len(axes) > 1:
        for axis in axes[1:]:
            axis.sharey(axes[0])
    for index, (axis, learner) in enumerate(zip(axes, learners)):
        rows = episodes[episodes["method"] == learner]
        column = str(columns[learner])
        rows = rows[pd.to_numeric(rows[column], errors="coerce").notna()]
        labelled = False
        for trial, curve in rows.groupby("trial"):
            line, = describe(axis.plot(curve["episode"], curve[column], lw=1.3,
                                       marker="." if len(curve) < 30 else None, label=f"trial {trial}"),
                             "lines: one per trial")
            band = bands.get((learner, trial))
            if column == "total_reward" and band is not None and band.get("random_sd") is not None \
                    and pd.notna(band.get("random_sd")):
                # a verdict scored on the curve's own scale (episode returns): its random band and greedy return
                mean, sd = float(band["random_mean"]), float(band["random_sd"])
                describe(axis.axhspan(mean - sd, mean + sd, color=line.get_color(), alpha=0.12, lw=0,
                                      label=None if labelled else "random policy: mean ± 1 sd"),
                         "shaded: the random policy's return in the learning verdict (mean ± 1 sd), in its "
                         "trial's colour")
                if pd.notna(band.get("greedy_return")):
                    describe(axis.axhline(float(band["greedy_return"]), color=line.get_color(), ls="--", lw=1,
                                          label=None if labelled else "greedy policy after training"),
                             "dashed: the greedy policy's return after training (the learning verdict's), in its "
                             "trial's colour")
                labelled = True
        axis.set_title(f"{learner}: training curves")
        axis.set_xlabel("training episode")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
        if len(rows):
            axis.legend(fontsize=9, ncol=1 + len(rows["trial"].unique()) // 8, loc="best")
        if not shared or index % MAX_COLUMNS == 0:
            axis.set_ylabel(textwrap.fill(ylabel or CURVE_LABELS.get(column, column), 40))
        _readable(axis)
    _caption(figure, caption)
    figure.tight_layout()
    return figure


#: line styles of reference lines (a method measured once per trial), one per method: never two alike
REFERENCE_STYLES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))


def single_measurements(series: pd.DataFrame, x: str, group: str, panels: str | None) -> pd.Series:
    """Per row, whether its ``panels`` value (a method) has at most one ``x`` per ``group`` (trial): a value
    measured once (placement's HEFT or single-device placement) is a reference, not a curve over ``x``. All
    False when no panel has more than one (nothing to draw a reference against)."""
    if not panels or series.empty:
        return pd.Series(False, index=series.index)
    once = series.groupby([panels, group])[x].transform("nunique") <= 1
    single = once.groupby(series[panels]).transform("all")
    return single if not single.all() else pd.Series(False, index=series.index)


def series_figure(series: pd.DataFrame, x: str, y: str, group: str, xlabel: str, ylabel: str,
                  title: str, caption: str = "", panels: str | None = None, best_so_far: bool = False):
    """Lines of ``y`` over ``x``, one per ``group`` value, in one panel per ``panels`` value (if given). With
    ``best_so_far`` (``y`` a cost), every value is a faint dot and the line is the running minimum. A
    ``panels`` value measured once per ``group`` (``single_measurements``: a reference such as a heuristic's
    one placement) gets no panel of its own: it is a horizontal line in every panel, in its group's colour, a
    line style per reference."""
    single = single_measurements(series, x, group, panels)
    references, series = series[single], series[~single]
    keys = list(dict.fromkeys(series[panels])) if panels else [None]
    figure, axes = panel_grid(len(keys), 5.2, 4.2)
    for axis in axes[1:]:
        axis.sharey(axes[0])
    colours = _colours([str(g) for g in dict.fromkeys(pd.concat([series[group], references[group]]))])
    styles = {name: REFERENCE_STYLES[i % len(REFERENCE_STYLES)]
              for i, name in enumerate(dict.fromkeys(references[panels]))} if panels else {}
    groups = pd.concat([series[group], references[group]]).nunique() > 1
    for index, (axis, key) in enumerate(zip(axes, keys)):
        rows = series if key is None else series[series[panels] == key]
        for name, line in rows.groupby(group, sort=False):
            line = line.sort_values(x)
            colour = colours[str(name)]
            if best_so_far:
                describe(axis.scatter(line[x], line[y], s=6, alpha=0.35, color=colour),
                         "faint dots: every measurement")
                describe(axis.plot(line[x], line[y].cummin(), lw=1.6, color=colour,
                                   label=f"{group} {name}: best so far"),
                         f"lines: the best so far, one colour per {group}")
            else:
                describe(axis.plot(line[x], line[y], lw=1.2, color=colour, label=f"{group} {name}"),
                         f"lines: one per {group}")
        measured_once = references.groupby([panels, group], sort=False)[y].first() if len(references) else {}
        for (reference, name), value in measured_once.items():
            describe(axis.axhline(float(value), color=colours[str(name)], ls=styles[reference], lw=1.3,
                                  label=f"{reference} (measured once)" + (f", {group} {name}" if groups else "")),
                     f"{reference} ({'one measurement per ' + group if groups else 'measured once'}): "
                     f"a {_style_word(styles[reference])} line")
        axis.set_title(title if key is None else f"{key}: {title}")
        axis.set_xlabel(xlabel)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
        axis.legend(fontsize=9, loc="best")
        if index % MAX_COLUMNS == 0:
            axis.set_ylabel(textwrap.fill(ylabel, 40))
        _readable(axis)
    _caption(figure, caption)
    figure.tight_layout()
    return figure


def _style_word(style: str | tuple) -> str:
    """How a line style looks, in words (for captions)."""
    return {"--": "dashed", ":": "dotted", "-.": "dash-dotted", "-": "solid"}.get(style, "dash-dot-dotted") \
        if isinstance(style, str) else "dash-dot-dotted"


def heatmap_figure(matrices: Sequence[tuple[str, pd.DataFrame]], colour_label: str, xlabel: str, ylabel: str,
                   caption: str = "", fmt: str = "{:.3g}", title: str = ""):
    """One labelled heatmap per (panel title, matrix) with every cell's value written in it; one colour scale.
    The instances are numbered once, G0, G1, ... (they may share a name): row Gk and column Gk are the same
    instance; the rows say the names. Rows beyond the columns (controls, e.g. an untrained model) keep their
    label without a number. ``xlabel`` and ``ylabel`` say what the columns and rows are (e.g. "evaluated on",
    "trained on"); the axes add that the numbering is shared."""
    finite = np.concatenate([m.to_numpy(float).ravel() for _, m in matrices])
    finite = finite[np.isfinite(finite)]
    low, high = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    size = max(m.shape[0] for _, m in matrices)
    columns = 2  # wide panels: two per row stay readable at 1280 px
    figure, axes = panel_grid(len(matrices), 0.75 * size + 4.2, 0.6 * size + 2.6, max_columns=columns, extra=1.2,
                              gridspec_kw={"wspace": 0.75, "hspace": 0.45})
    for index, (axis, (panel, matrix)) in enumerate(zip(axes, matrices)):
        values = matrix.to_numpy(float)
        image = describe(axis.imshow(values, cmap="viridis", vmin=low, vmax=high, aspect="auto"),
                         f"cells: {colour_label}, coloured on one scale and written in the cell")
        axis.set_xticks(range(values.shape[1]), [f"G{j}" for j in range(values.shape[1])])
        names = [str(r) if len(str(r)) <= 34 else str(r)[:20] + "…" + str(r)[-13:] for r in matrix.index]
        axis.set_yticks(range(values.shape[0]), [f"G{i} {name}" if i < values.shape[1] else name  # controls
                                                 for i, name in enumerate(names)], fontsize=7.5)
        if values.shape[0] > values.shape[1]:
            describe(axis.axhline(values.shape[1] - 0.5, color="white", lw=2),
                     "rows below the white line: controls (" + ", ".join(names[values.shape[1]:]) + ")")
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):
                axis.text(j, i, fmt.format(value), ha="center", va="center", fontsize=8,
                          color="black" if value > (low + high) / 2 else "white")
        axis.set_xlabel(f"{xlabel} (column Gk: the instance of row Gk)")
        if index % columns == 0:
            axis.set_ylabel(f"{ylabel} (row Gk)")
        axis.set_title(panel, fontsize=11)
    figure.colorbar(image, ax=axes, label=colour_label)
    if title:
        figure.suptitle(title)
    _caption(figure, caption)
    return figure
