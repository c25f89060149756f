"""Figures of a run: the training curve and per-method bars, readable on their own (labels, units).

``draw_verdict(axis, verdict)`` writes a learning verdict's headline (``TrialSummary.verdict``) on a
training-curve axis. Captions say what the figure is (the caller's text) followed by the key of what it draws,
composed from the drawn artists (``wield.analysis.captions``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from wield.analysis.captions import caption as compose
from wield.analysis.captions import describe, draw_caption


def draw_verdict(axis, verdict: Mapping[str, Any] | None) -> None:
    """The learning verdict's headline (``learned: ...``) in a corner of a training-curve axis; nothing
    without a verdict. Its rungs compare scores on evaluation instances, whose scale (a final reward, an SLO
    share) need not be the curve's, so no comparator is drawn as a line over the curve."""
    if not verdict:
        return
    text = str(verdict.get("status") or ("yes" if verdict.get("learned") else "no"))
    describe(axis.text(0.01, 0.02, f"learned: {text}", transform=axis.transAxes, fontsize=8, va="bottom",
                       bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8, "lw": 0.5}),
             "bottom left: the learning verdict (learned: yes / no / too little evidence)")


def training_and_methods_figure(episodes: Sequence[Mapping], methods: Mapping[str, Mapping[str, float]],
                                bars: Sequence[tuple[str, str]], title: str, caption: str,
                                verdict: Mapping[str, Any] | None = None, labels: Mapping[str, str] | None = None):
    """Left: episode return over training, with the learning verdict's headline. Right:
    one group of bars per metric, one bar per method (legend entries from ``labels``, else the names).
    Under them: ``caption`` and the key of what is drawn (``wield.analysis.captions.caption``).

    Built without pyplot (a plain ``Figure``), so drawing never changes the caller's matplotlib backend."""
    figure = Figure(figsize=(12, 4.5))
    left, right = figure.subplots(1, 2)
    x = [row["episode"] for row in episodes]
    returns = pd.Series([row["total_reward"] for row in episodes], dtype=float)
    describe(left.plot(x, returns, lw=1, alpha=0.5, label="episode return"),
             "left, thin line: the return of each training episode")
    if len(x) >= 5:
        window = max(2, len(x) // 20)
        describe(left.plot(x, returns.rolling(window, min_periods=1).mean(), lw=2,
                           label=f"moving mean ({window} episodes)"),
                 f"thick line: its moving mean over {window} episodes")
    draw_verdict(left, verdict)
    left.set_xlabel("training episode")
    left.set_ylabel("episode return (sum of rewards, higher is better)")
    left.set_title("training curve")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)

    names = list(methods)
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        values = [100.0 * methods[name][key] for key, _ in bars]
        positions = [j + (i - (len(names) - 1) / 2) * width for j in range(len(bars))]
        describe(right.bar(positions, values, width, label=(labels or {}).get(name, name)),
                 "right: one bar per method and metric on the test workload, in percent")
    right.set_xticks(range(len(bars)), [label for _, label in bars])
    right.set_ylabel("percent")
    right.axhline(0, color="black", lw=0.8)
    right.set_title("evaluation by method")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    right.grid(axis="y", alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    draw_caption(figure, compose(figure, caption))
    return figure
