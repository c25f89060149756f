"""The figure a scheduling run saves beside its record (``results.png``): the learner's training curve and
every method's SLO satisfaction on the test workload."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from wield.workflows import RunRecord


def results_figure(record: RunRecord, method: str, curve: Sequence[float], methods: Mapping[str, Mapping[str, Any]],
                   objective: float) -> None:
    """Left: the greedy policy's return on the validation workload after every training episode (when a
    learner trained); right: SLO satisfaction of every method on the test workload, the objective dashed."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    panels = 2 if curve else 1
    figure = Figure(figsize=(5.5 * panels, 3.8))
    axes = figure.subplots(1, panels, squeeze=False)[0]
    if curve:
        axes[0].plot(range(1, len(curve) + 1), list(curve), marker="o", color="C0")
        axes[0].set_xlabel("training episode")
        axes[0].set_ylabel("return on the validation workload")
        axes[0].set_title(f"{method}: training curve")
        axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    bars = axes[-1]
    names = list(methods)
    values = [100.0 * float(methods[name]["slo_satisfaction"]) for name in names]
    bars.bar(names, values, color=[f"C{i % 10}" for i in range(len(names))])
    bars.axhline(100.0 * objective, color="black", linestyle="--", lw=1, label=f"objective {100 * objective:g}%")
    bars.set_ylim(0, 105)
    bars.set_ylabel("requests meeting their SLO (%)")
    bars.set_title("test workload")
    bars.legend(loc="lower right")
    bars.tick_params(axis="x", labelrotation=30)
    figure.tight_layout()
    record.save_figure(figure, "results.png")
