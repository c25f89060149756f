"""The figure a scheduling run saves beside its record (``results.png``): the learner's training curve and
every method's SLO satisfaction on the test workload, with a caption composed from what is drawn
(``wield.analysis.captions``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from wield.workflows import RunRecord


def results_figure(record: RunRecord, method: str, curve: Sequence[float], methods: Mapping[str, Mapping[str, Any]],
                   objective: float | None) -> None:
    """Left: the greedy policy's return on the validation workload after every training episode (when a
    learner trained); right: SLO satisfaction of every method on the test workload (each bar labelled with
    its method and value), the objective's SLO satisfaction (``objective``; None: it sets none) dashed; the
    legend sits beside the bars, never over them."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from wield.analysis.captions import caption, describe, draw_caption

    panels = 2 if curve else 1
    figure = Figure(figsize=(5.5 * panels, 3.8))
    axes = figure.subplots(1, panels, squeeze=False)[0]
    if curve:
        describe(axes[0].plot(range(1, len(curve) + 1), list(curve), marker="o", color="C0"),
                 "left: the greedy policy's return on the validation workload after each training episode")
        axes[0].set_xlabel("training episode")
        axes[0].set_ylabel("return on the validation workload")
        axes[0].set_title(f"{method}: training curve")
        axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    bars = axes[-1]
    names = list(methods)
    values = [100.0 * float(methods[name]["slo_satisfaction"]) for name in names]
    drawn = describe(bars.bar(names, values, color=[f"C{i % 10}" for i in range(len(names))]),
                     "right: each method's share of requests meeting their SLO on the test workload")
    bars.bar_label(drawn, [f"{value:.1f}" for value in values], fontsize=8, padding=2)
    if objective is not None:
        describe(bars.axhline(100.0 * objective, color="black", linestyle="--", lw=1,
                              label=f"objective {100 * objective:g}%"),
                 f"dashed: the objective ({100 * objective:g}% of requests)")
    bars.set_ylim(0, 112)
    bars.set_ylabel("requests meeting their SLO (%)")
    bars.set_title("test workload")
    if objective is not None:
        bars.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)  # beside the bars: none hidden
    bars.tick_params(axis="x", labelrotation=30)
    figure.tight_layout()
    draw_caption(figure, caption(figure, f"A scheduling run of {method}" + (" beside the compared schedulers"
                                                                        if len(names) > 1 else "")))
    record.save_figure(figure, "results.png")
