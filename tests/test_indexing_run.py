"""End to end: `wield run indexing` on a small task — record contents, determinism, bad input, interrupts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dataclasses import asdict

from case_studies.indexing.plugin import CASE_STUDY
from case_studies.indexing.run import IndexingRunConfig
from wield.cli import main
from wield.errors import ConfigError
from wield.workflows import RunRecord, run_trial

SMALL = dict(documents=4000, queries=8, episodes=6, repetitions=1)


def run(directory, **options) -> RunRecord:
    """One ``wield run indexing`` blackbox run into ``directory`` through the core's trial path."""
    config = IndexingRunConfig(**{**SMALL, **options})
    run_trial("indexing", asdict(config), config.single_run_seeds(), str(directory))
    return RunRecord(directory)


def test_run_writes_a_complete_record(tmp_path):
    record = run(tmp_path / "run")
    for name in ("config.json", "versions.json", "seeds.json", "schema.json", "schedule.json",
                 "episodes.csv", "evaluation.json", "model.pt", "results.png", "status.json", "summary.json",
                 "run.json"):
        assert record.exists(name), name
    assert record.status == "complete"
    episodes = pd.read_csv(record.file("episodes.csv"))
    assert list(episodes["episode"]) == list(range(6))
    evaluation = record.read_json("evaluation.json")
    assert set(evaluation["methods"]) == {"none", "full", "random-policy", "dqn-greedy", "dqn"}
    verdict = evaluation["verdict"]  # the ladder on redrawn workloads: random, no index, the two advisors
    assert [(r["name"], r["kind"]) for r in verdict["rungs"]] == [
        ("random-policy", "random"), ("no-index", "trivial"), ("advisor", "heuristic"),
        ("estimated-advisor", "heuristic")]
    assert verdict["instances"]["count"] >= 10 and verdict["instances"]["held_out"]
    no_index = verdict["rungs"][1]
    assert no_index["comparator_mean"] == pytest.approx(-1.0)  # no index: runtime share 1, size 0 (w_t = 1)
    assert verdict["status"] in ("yes", "no") and verdict["trend"]["window"] == 3  # 6 episodes: 3 at each end
    assert verdict["line"].startswith("learned: ") and verdict["search_outcome"]["row"] == "dqn"
    assert evaluation["objective"]["also"] == [{"metric": "relative_index_size", "operator": "<=", "threshold": 0.5}]
    assert evaluation["success"] == CASE_STUDY.objective.met(evaluation["methods"]["dqn"])
    assert evaluation["transitions"] == 6 * 8
    assert evaluation["methods"]["full"]["relative_index_size"] == pytest.approx(1.0)
    summary = record.read_json("summary.json")
    timing = summary["timing"]  # the study's Table 6.2, recorded by the core with the trial's summary
    assert {"system", "agent_acting", "agent_updating", "wield", "total"} <= set(timing)
    assert all(value >= 0 for value in timing.values())
    assert timing["system"] > 0 and timing["agent_updating"] > 0
    assert sum(v for k, v in timing.items() if k != "total") == pytest.approx(timing["total"])
    assert timing["system"] == pytest.approx(evaluation["engine_counters"]["engine_seconds"])


def test_same_seed_same_schedule_indexes_and_evaluation_under_work(tmp_path):
    first, second = run(tmp_path / "a", seed=3), run(tmp_path / "b", seed=3)
    assert first.file("schedule.json").read_bytes() == second.file("schedule.json").read_bytes()
    assert first.read_json("seeds.json") == second.read_json("seeds.json")
    work_columns = ("mean_work_improvement", "p99_work_improvement", "relative_index_size", "indexes_created",
                    "unused_indexes", "index_bytes", "indexes")  # indexes: the best and the greedy index sets too
    methods = first.read_json("evaluation.json")["methods"]
    again = second.read_json("evaluation.json")["methods"]
    for method in methods:
        for column in work_columns:
            assert methods[method][column] == again[method][column], (method, column)
    a = pd.read_csv(first.file("episodes.csv"))
    b = pd.read_csv(second.file("episodes.csv"))
    assert a["total_reward"].tolist() == b["total_reward"].tolist()


def test_interrupted_run_keeps_what_it_recorded(tmp_path, monkeypatch):
    from wield.workflows import run_record

    calls = {"n": 0}
    original = run_record.RunRecord.append_episode

    def interrupt_after_three(self, row):
        original(self, row)
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(run_record.RunRecord, "append_episode", interrupt_after_three)
    out = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        run(out)
    assert json.loads((out / "status.json").read_text())["status"] == "interrupted"
    assert json.loads((out / "config.json").read_text())["episodes"] == 6
    assert len(pd.read_csv(out / "episodes.csv")) == 3
    assert not list(out.glob(".*.tmp"))
    # A second run into the same directory is refused, and the three recorded episodes stay as they were.
    monkeypatch.setattr(run_record.RunRecord, "append_episode", original)
    with pytest.raises(ConfigError, match="'out'.*status: interrupted"):
        run(out)
    assert len(pd.read_csv(out / "episodes.csv")) == 3
    assert json.loads((out / "status.json").read_text())["status"] == "interrupted"
    # Record files get the permissions an ordinary open() would give (mkstemp alone makes them owner-only).
    import os
    umask = os.umask(0)
    os.umask(umask)
    assert (out / "config.json").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("field, value, message", [
    ("k", 0, "'k'"), ("episodes", 0, "'episodes'"), ("metric", "speed", "'work', 'latency'"),
    ("documents", 5, "'documents'"), ("collection", "/no/such/file.csv", "'collection'"),
])
def test_bad_config_names_the_field(field, value, message):
    with pytest.raises(ConfigError, match=message):
        IndexingRunConfig(**{field: value}).validate()


def test_cli_rejects_unknown_option_values(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "indexing", "--metric", "speed"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'speed'" in capsys.readouterr().err


def test_cli_reports_config_errors_cleanly(capsys, tmp_path):
    assert main(["run", "indexing", "--k", "0", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert "invalid value for 'k': 0" in capsys.readouterr().err


def test_cli_malformed_collection_file(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    assert main(["run", "indexing", "--collection", str(bad), "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert "bad.csv" in capsys.readouterr().err


def test_cli_help_lists_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["run", "indexing", "--help"])
    text = capsys.readouterr().out
    for option in ("--documents", "--collection", "--queries", "--k", "--metric", "--episodes", "--seed",
                   "--out", "--repetitions"):
        assert option in text


def test_objective_metrics_listed_by_the_plugin_exist_in_evaluations():
    from dataclasses import fields

    from case_studies.indexing.evaluation import StudyMetrics
    from case_studies.indexing.plugin import CASE_STUDY

    assert set(CASE_STUDY.metric_names) <= {f.name for f in fields(StudyMetrics)}
    assert CASE_STUDY.objective.metric in CASE_STUDY.metric_names
