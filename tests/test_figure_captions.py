"""Figures and reports say only what they draw (issue 46 item 6): captions composed from the drawn artists,
reference lines instead of empty panels, legends beside the bars, seeds in full, booleans as yes / no and no
direction for quantities that are not a score. Figures only, no runs: seconds."""

from __future__ import annotations

import pandas as pd

from wield.analysis import figures
from wield.analysis.captions import caption, describe, drawn_key

EPISODES = pd.DataFrame([{"method": "dqn", "trial": t, "episode": e, "total_reward": float(e - t)}
                         for t in range(2) for e in range(4)])


def test_a_training_curve_caption_names_only_what_is_drawn():
    # a ladder verdict (no random_sd): no band and no greedy line are drawn, and the caption names neither
    ladder = pd.DataFrame([{"method": "dqn", "trial": t, "random_mean": -1.0, "random_sd": None,
                            "greedy_return": -1.1} for t in range(2)])
    figure = figures.reward_curves_figure(EPISODES, verdicts=ladder)
    key = drawn_key(figure)
    assert key == "Lines: one per trial."
    assert not figure.axes[0].patches and len(figure.axes[0].lines) == 2
    # a verdict on the curve's own scale (recorded before the ladder): band and greedy line drawn and named
    old = ladder.assign(random_sd=0.5)
    key = drawn_key(figures.reward_curves_figure(EPISODES, verdicts=old))
    assert "shaded: the random policy's return" in key and "dashed: the greedy policy's return" in key
    assert key.count("Lines: one per trial") == 1  # each description once


def test_caption_skips_artists_removed_or_on_hidden_axes():
    figure, axes = figures.panel_grid(2, 3.0, 3.0)
    line, = describe(axes[0].plot([0, 1], [0, 1]), "lines: kept")
    gone, = describe(axes[0].plot([0, 1], [1, 0]), "dotted: removed")
    gone.remove()
    describe(axes[1].axhspan(0, 1), "shaded: on a hidden panel")
    axes[1].set_visible(False)
    assert caption(figure, "what it is", "s = 2 trials") == "What it is. Lines: kept. s = 2 trials."
    assert line.get_visible()


def test_classification_legend_and_caption_key_only_the_colours_drawn():
    rows = pd.DataFrame([{"method": "dqn", "class_name": "C1", "n": 24, "s": 2, "f": 1.0, "ci_low": 0.16,
                          "ci_high": 1.0, "met": True}])
    figure = figures.classification_figure(rows)
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert "f of a class not met" not in legend and "f of a class met (f >= 0.5)" in legend
    assert "red bars" not in drawn_key(figure).lower() and drawn_key(figure).startswith("Green bars")


def test_a_method_measured_once_is_a_reference_line_not_an_empty_panel():
    series = pd.DataFrame([*({"method": m, "trial": 0, "evaluation": e, "step_time_ms": 9.0 - e}
                             for m in ("wield", "random") for e in range(1, 6)),
                           {"method": "heft", "trial": 0, "evaluation": 1, "step_time_ms": 3.0},
                           {"method": "single", "trial": 0, "evaluation": 1, "step_time_ms": 3.5}])
    figure = figures.series_figure(series, "evaluation", "step_time_ms", "trial", "evaluations", "step time (ms)",
                                   "step time", panels="method", best_so_far=True)
    shown = [axis for axis in figure.axes if axis.get_visible()]
    assert [axis.get_title() for axis in shown] == ["wield: step time", "random: step time"]
    for axis in shown:  # both references in every panel, each its own style
        references = {line.get_label(): line.get_linestyle() for line in axis.lines if "measured once" in line.get_label()}
        assert set(references) == {"heft (measured once)", "single (measured once)"}
        assert len(set(references.values())) == 2
    key = drawn_key(figure)
    assert "heft (measured once): a dashed line" in key and "single (measured once): a dotted line" in key


def test_scheduling_legend_hides_no_bar_and_the_caption_is_drawn():
    from case_studies.scheduling.figures import results_figure

    saved = []

    class Record:
        def save_figure(self, figure, name):
            saved.append(figure)

    methods = {name: {"slo_satisfaction": 0.98} for name in ("maskable-ppo", "random", "clockwork", "edf", "fifo")}
    results_figure(Record(), "maskable-ppo", [0.5, 0.7], methods, 0.9)
    figure, = saved
    figure.draw_without_rendering()
    bars = figure.axes[-1]
    legend = bars.get_legend().get_window_extent()
    assert not [patch for patch in bars.patches if patch.get_window_extent().overlaps(legend)]
    texts = " ".join(text.get_text() for text in figure.texts)
    assert "dashed: the objective (90% of requests)" in texts.replace("\n", " ")


def test_seeds_in_full_booleans_as_words_and_no_direction_for_a_non_score():
    from wield.analysis.report import NOT_DRAWN, _markdown_table, cell_text, seed_text
    from wield.metrics import Metric
    from wield.plugins import declared_metrics

    assert seed_text(2507558237790195079) == "2507558237790195079" and seed_text(None) == NOT_DRAWN
    assert seed_text(float("nan")) == NOT_DRAWN and "." not in seed_text(0)
    assert cell_text(True) == "yes" and cell_text(False) == "no" and cell_text(None) == "-"
    table = _markdown_table(pd.DataFrame({"class met": [True, False]}))
    assert "True" not in table and "| yes |" in table and "| no |" in table
    assert Metric("rounds", "measurement rounds", "count", higher_is_better=None).axis_label() == \
        "measurement rounds (count)"
    assert Metric("flag", "a flag", higher_is_better=None).axis_label() == "a flag"
    assert declared_metrics("indexing")["latency_rounds"].axis_label() == "latency measurement rounds (count)"
    # a label that ends in a bracket gets the unit and direction inside it, not a second bracket
    assert declared_metrics("scheduling")["goodput_rps"].axis_label() == \
        "goodput (requests meeting their SLO per second; higher is better)"
    assert Metric("wait", "wait (queue only)", "ms", higher_is_better=False).axis_label() == \
        "wait (queue only; ms, lower is better)"


def test_the_quickstart_figure_caption_names_no_band():
    from wield.analysis.plots import training_and_methods_figure

    figure = training_and_methods_figure([{"episode": e, "total_reward": -e} for e in range(6)],
                                         {"dqn": {"gain": 0.5}, "none": {"gain": 0.0}}, [("gain", "gain")],
                                         "title", "3,000 documents", verdict={"status": "no"})
    text = figure.texts[-1].get_text().replace("\n", " ")  # the caption (texts[0] is the title)
    assert text.startswith("3,000 documents. Left, thin line: the return of each training episode")
    assert "band" not in text and "shaded" not in text and "learning verdict" in text
