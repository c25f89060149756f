"""wield.analysis and `wield report` on a real (small) indexing experiment and a single run record."""

from __future__ import annotations

import json

import pytest

from wield.analysis import load_results, write_report
from wield.cli import main
from wield.errors import ConfigError

SMALL = ["--documents", "3000", "--queries", "6", "--episodes", "3", "--repetitions", "1", "--quiet"]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis") / "c2"
    assert main(["run", "indexing", "--class", "C2", "--trials", "2", *SMALL, "--out", str(out)]) == 0
    return out


def test_trials_frame_has_one_row_per_trial_and_method(experiment):
    results = load_results(experiment)
    trials = results.trials
    assert results.kind == "experiment" and results.case_study == "indexing"
    summary = json.loads((experiment / "trials" / "trial-000" / "summary.json").read_text())
    methods = set(summary["methods"])
    assert set(trials["method"]) == methods
    assert len(trials) == 2 * len(methods)
    assert trials.groupby(["trial", "method"]).size().eq(1).all()
    learner = trials[trials["learner"]]
    assert list(learner["trial"]) == [0, 1] and set(learner["method"]) == {summary["metrics"]["method"]}
    row = learner.iloc[0]
    assert row["mean_latency_improvement"] == pytest.approx(summary["metrics"]["mean_latency_improvement"])
    seeds = json.loads((experiment / "trials" / "trial-000" / "seeds.json").read_text())
    assert row["train_workload_seed"] == seeds["train_workload_seed"]
    plan = (experiment / "plan.txt").read_text()
    assert str(learner.iloc[1]["optimisation_seed"]) in plan
    # the recorded classification is what the frame's outcomes give
    recorded = json.loads((experiment / "classification.json").read_text())
    assert list(learner["outcome"]) == [t["outcome"] for t in recorded["trials"]]
    row = results.classification.iloc[0]
    assert (row["n"], row["s"], row["f"], row["label"]) == (recorded["n"], recorded["s"], recorded["f"],
                                                           recorded["label"])
    assert row["ci_low"] <= row["f"] <= row["ci_high"]
    assert "relative_index_size" in results.metric_columns() and "trial" not in results.metric_columns()
    episodes = results.episodes
    assert len(episodes) == 2 * 3 and {"experiment", "method", "trial", "episode", "total_reward"} <= set(episodes)


def test_markdown_and_html_reports(experiment, tmp_path):
    metrics = ["mean_latency_improvement", "p99_latency_improvement", "relative_index_size"]
    report = write_report(experiment, tmp_path / "md", "md", metrics)
    text = report.read_text()
    label = json.loads((experiment / "classification.json").read_text())["label"]
    assert label in text
    for figure in ("classification.png", "metrics.png", "training.png"):
        assert (tmp_path / "md" / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({figure})" in text
    assert "p99 latency improvement over no index (%, higher is better)" in text and "uses per index" in text
    assert "Where the time went" not in text or "inside the system (the engine: queries, index builds" in text
    page = write_report(experiment, tmp_path / "html", "html").read_text()
    assert page.count("data:image/png;base64,") == 3 and label in page
    assert "<code>" in page and "`" not in page  # Markdown code spans are HTML code elements
    trials = load_results(experiment).trials
    if (trials[trials["learner"]]["outcome"] != "success").any():  # the condition a trial failed on is named
        assert "failed on" in text


def test_report_command_and_bad_input(experiment, tmp_path, capsys):
    assert main(["report", str(experiment), "--out", str(tmp_path / "r"), "--format", "html"]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    # the case study's compared metrics and labels: bars of improvement over no index and of size vs full
    assert "mean latency improvement over no index (%, higher is better)" in page
    assert "index size relative to the full index (%, lower is better)" in page
    assert main(["report", str(experiment), "--out", str(tmp_path / "r"), "--metrics", "no_such_metric"]) == 2
    assert "'metrics'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="EXPERIMENT_DIR"):
        load_results(tmp_path / "missing")
    with pytest.raises(ConfigError, match="format"):
        write_report(experiment, tmp_path / "x", "pdf")


def test_single_run_record_loads_and_reports(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "indexing", *SMALL, "--out", str(out)]) == 0
    results = load_results(out)
    assert results.kind == "run" and results.learners == ["dqn"] and len(results.episodes) == 3
    report = write_report(out, tmp_path / "report")
    assert "training.png" in report.read_text()


def test_placement_report_draws_step_time_over_evaluations_and_the_cross_graph_matrix(tmp_path):
    small = ["--batch", "8", "--unroll", "2", "--quiet"]
    assert main(["run", "placement", "--class", "C2", "--trials", "1", "--budget", "10", *small,
                 "--out", str(tmp_path / "c2")]) == 0
    assert main(["run", "placement", "--class", "C3", "--trials", "1", "--budget", "8", "--train-graphs", "1",
                 "--test-graphs", "1", "--test-samples", "2", "--matrix-budget", "4", *small,
                 "--out", str(tmp_path / "c3")]) == 0
    from wield.analysis.extras import load_matrices, load_series

    series = load_series(load_results(tmp_path / "c2"))
    assert list(series["evaluation"]) == list(range(1, 11)) and (series["step_time_ms"] > 0).all()
    text = write_report(tmp_path / "c2", tmp_path / "r2").read_text()
    assert "series-step_time_ms.png" in text
    assert "for indexing" not in text and "index builds" not in text  # no indexing text in a placement report
    assert "Where the time went" not in text or "the device simulator measuring placements' step times" in text
    assert "improvement over the mean of the first 20 measurements (%, higher is better)" in text
    matrices = load_matrices(load_results(tmp_path / "c3"))
    (trial, matrix, metric), = matrices["wield"]
    assert (trial, metric, matrix.shape) == (0, "improvement", (3, 2))  # two trained rows and the untrained control
    assert matrix.index[-1] == "untrained (control)"
    text = write_report(tmp_path / "c3", tmp_path / "r3").read_text()
    assert "cross-wield.png" in text and (tmp_path / "r3" / "cross-wield.png").stat().st_size > 1000


def test_a_directory_mixing_case_studies_or_foreign_json_is_refused(experiment, tmp_path):
    import shutil

    shutil.copytree(experiment, tmp_path / "mixed" / "a")
    shutil.copytree(experiment, tmp_path / "mixed" / "b")
    manifest = tmp_path / "mixed" / "b" / "experiment.json"
    manifest.write_text(manifest.read_text().replace('"indexing"', '"placement"'))
    with pytest.raises(ConfigError, match="several case studies"):
        load_results(tmp_path / "mixed")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "experiment.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a Wield experiment"):
        load_results(tmp_path / "foreign")
    # each copy on its own is still a readable experiment
    assert load_results(tmp_path / "mixed" / "a").kind == "experiment"


def test_training_curves_only_for_methods_with_a_curve_and_the_sb3_curve_return_column():
    import pandas as pd

    from wield.analysis import figures

    episodes = pd.DataFrame([
        *({"method": "ppo", "trial": 0, "episode": e, "total_reward": float(e)} for e in range(3)),
        *({"method": "sb3-ppo", "trial": 0, "episode": e, "curve_return": 2.0 * e} for e in range(3)),
        *({"method": "heft", "trial": 0, "episode": e} for e in range(3))])
    assert figures.curve_methods(episodes) == ["ppo", "sb3-ppo"]
    figure = figures.reward_curves_figure(episodes)
    visible = [axis for axis in figure.axes if axis.get_visible()]
    assert [axis.get_title() for axis in visible] == ["ppo: training curves", "sb3-ppo: training curves"]
    assert list(visible[1].lines[0].get_ydata()) == [0.0, 2.0, 4.0]
    assert "greedy return" in visible[1].get_ylabel()
    assert figures.curve_methods(episodes[episodes["method"] == "heft"]) == []
    # seven panels wrap into rows of at most three
    figure, axes = figures.panel_grid(7, 5.0, 4.0)
    assert len(axes) == 7 and len(figure.axes) == 9 and sum(a.get_visible() for a in figure.axes) == 7
    matrix = pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], index=["a", "b"], columns=["a", "b"])
    figure = figures.heatmap_figure([(f"trial {i}", matrix) for i in range(3)], "improvement", "on", "trained on")
    panels = [axis for axis in figure.axes if axis.get_visible() and axis.get_title().startswith("trial")]
    assert len(panels) == 3 and len({round(axis.get_position().y0, 3) for axis in panels}) == 2  # two rows


def test_failed_conditions_and_code_spans_in_html():
    import pandas as pd

    from wield.analysis.report import _inline, failed_conditions

    objective = {"metric": "gain", "threshold": 0.5, "higher_is_better": True, "straggler_above": 0.0,
                 "also": [{"metric": "size", "operator": "<=", "threshold": 0.5}]}
    rows = pd.DataFrame([{"outcome": "success", "gain": 0.7, "size": 0.2},
                         {"outcome": "failure", "gain": -0.1, "size": 0.9},
                         {"outcome": "straggler", "gain": 0.2, "size": 0.1}])
    failed = list(failed_conditions(rows, objective))
    assert failed[0] == "" and failed[1] == "gain >= 0.5 (was -0.1); size <= 0.5 (was 0.9)"
    assert failed[2] == "gain >= 0.5 (was 0.2)"
    assert list(failed_conditions(rows, {})) == ["", "", ""]
    assert _inline("run `wield report <dir>` & see") == "run <code>wield report &lt;dir&gt;</code> &amp; see"


def test_placement_reference_lines_differ():
    from case_studies.placement.run import _learning_figure

    saved = []

    class Record:
        def save_figure(self, figure, name):
            saved.append(figure)

    _learning_figure(Record(), {"wield": [3e-3, 2e-3, 1e-3], "heft": [2e-3], "single": [2e-3]})
    lines = {line.get_label(): line for line in saved[0].axes[0].lines}
    styles = {name: (lines[name].get_color(), str(lines[name].get_linestyle())) for name in ("heft", "single")}
    assert styles["heft"] != styles["single"]
    assert lines["heft"].get_color() != lines["single"].get_color()
