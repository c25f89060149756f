"""Experiments under randomisation classes: the CLI, classification, bad input (faults: test_faults.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from case_studies.indexing.reproduce import DETERMINISTIC
from wield.cli import main

SMALL = ["--documents", "3000", "--queries", "6", "--episodes", "3", "--repetitions", "1", "--quiet"]


def summaries(directory: Path) -> list[dict]:
    """Every finished trial's summary, with the seeds its run record holds under ``seeds``."""
    return [{**json.loads(p.read_text()), "seeds": json.loads((p.parent / "seeds.json").read_text())}
            for p in sorted(directory.glob("trials/trial-*/summary.json"))]


def test_c1_shares_the_workload_and_varies_optimisation_seeds(tmp_path, capsys):
    out = tmp_path / "c1"
    assert main(["run", "indexing", "--class", "C1", "--trials", "3", "--out", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out
    assert "C1(n=18, s=3, f=" in printed and "95% CI" in printed
    trials = summaries(out)
    assert len({t["seeds"]["train_workload_seed"] for t in trials}) == 1
    assert len({t["seeds"]["optimisation_seed"] for t in trials}) == 3
    recorded = json.loads((out / "classification.json").read_text())
    assert recorded["s"] == 3
    # the learned greedy policy's classification beside the search outcome's and the random policy's
    greedy, random_policy = recorded["references"]["greedy"], recorded["references"]["random_policy"]
    assert greedy["row"] == "dqn-greedy" and greedy["s"] == 3 and set(greedy) == set(random_policy)
    assert "learned greedy policy on the same trials (row 'dqn-greedy'): f = " in printed
    assert main(["classify", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["experiments"][0]["classification"]["s"] == 3


def test_c2_json_carries_the_greedy_policys_classification(tmp_path, capsys):
    out = tmp_path / "c2"
    assert main(["run", "indexing", "--class", "C2", "--trials", "2", "--json", "--out", str(out), *SMALL]) == 0
    printed = json.loads(capsys.readouterr().out)
    references = printed["classification"]["references"]
    assert references["greedy"]["row"] == "dqn-greedy" and references["greedy"]["s"] == 2
    assert set(references["greedy"]) == set(references["random_policy"])
    # greedy vs advisor on the verdict's unseen workloads, with each one's decision time per workload
    for trial in printed["trials"]:
        extras, decision = trial["extras"], trial["verdict"]["decision_time"]
        assert extras["greedy_decision_seconds"] == decision["greedy_seconds"] > 0
        assert extras["advisor_decision_seconds"] == decision["advisor_seconds"] > 0
        assert decision["greedy_decisions"] == 6 and decision["advisor_evaluations"] >= 1
        advisor = next(r for r in trial["verdict"]["rungs"] if r["name"] == "advisor")
        assert extras["greedy_minus_advisor"] == advisor["mean_difference"]
        estimated = next(r for r in trial["verdict"]["rungs"] if r["name"] == "estimated-advisor")
        assert extras["greedy_minus_estimated"] == estimated["mean_difference"]
        assert extras["estimated_decision_seconds"] == decision["estimated_seconds"] > 0
        assert any(line.startswith("  note: decision time per instance: greedy policy")
                   for line in trial["verdict"]["lines"])


def test_c5_tests_out_of_distribution_and_reports_similarity(tmp_path, capsys):
    out = tmp_path / "c5"
    assert main(["run", "indexing", "--class", "C5", "--trials", "2", "--out", str(out), *SMALL]) == 0
    trials = summaries(out)
    assert {t["seeds"]["test_distribution"] for t in trials} == {"out"}
    schedule = json.loads((out / "trials/trial-000/schedule.json").read_text())
    test = json.loads((out / "trials/trial-000/schedule-test.json").read_text())
    train_templates = {q["template"] for task in schedule["tasks"] for q in task}
    test_templates = {q["template"] for task in test["tasks"] for q in task}
    assert not train_templates & test_templates
    assert all(0.0 <= t["extras"]["train_test_similarity"] <= 1.0 for t in trials)
    assert "train/test similarity" in capsys.readouterr().out


def test_bad_experiment_input_leaves_nothing_behind(tmp_path, capsys):
    out = tmp_path / "bad"
    assert main(["run", "indexing", "--class", "C9", "--out", str(out), *SMALL]) == 2
    assert "'C0', 'C1'" in capsys.readouterr().err
    assert main(["run", "indexing", "--class", "C1", "--trials", "0", "--out", str(out), *SMALL]) == 2
    assert "'trials'" in capsys.readouterr().err
    assert main(["run", "indexing", "--class", "C1", "--objective-metric", "speedup", "--out", str(out), *SMALL]) == 2
    assert "invalid value for 'objective.metric': 'speedup'; allowed: 'index_bytes'" in capsys.readouterr().err
    assert not out.exists()
    assert main(["classify", str(tmp_path)]) == 2
    assert "not an experiment directory" in capsys.readouterr().err


def test_a_different_experiment_in_the_same_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "same"
    assert main(["run", "indexing", "--class", "C0", "--trials", "1", "--out", str(out), *SMALL]) == 0
    assert main(["run", "indexing", "--class", "C1", "--trials", "1", "--out", str(out), *SMALL]) == 2
    assert "holds a different experiment" in capsys.readouterr().err
    assert len(summaries(out)) == 1


def test_unreachable_ray_address_is_a_clear_error(tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "ray-bad"
    assert main(["run", "indexing", "--class", "C1", "--executor", "ray", "--address", "127.0.0.1:1",
                 "--out", str(out), *SMALL]) == 2
    assert "no Ray head node answers there" in capsys.readouterr().err
    assert not out.exists()




def test_executors_give_identical_results_for_the_same_seeds(tmp_path):
    pytest.importorskip("ray")
    results = {}
    for executor, workers in (("local", "1"), ("process", "2"), ("ray", "2")):
        out = tmp_path / executor
        assert main(["run", "indexing", "--class", "C2", "--trials", "2", "--executor", executor,
                     "--workers", workers, "--out", str(out), *SMALL]) == 0
        results[executor] = [{c: t["metrics"][c] for c in DETERMINISTIC} | {"n": t["transitions"]}
                             for t in summaries(out)]
    assert results["local"] == results["process"] == results["ray"]


def test_reproduce_reruns_a_trial_from_its_record(tmp_path, capsys):
    out = tmp_path / "repro"
    assert main(["run", "indexing", "--class", "C2", "--trials", "1", "--out", str(out), *SMALL]) == 0
    capsys.readouterr()
    assert main(["reproduce", str(out / "trials/trial-000")]) == 0
    assert "match exactly" in capsys.readouterr().out
    assert main(["reproduce", str(tmp_path)]) == 2


def test_progress_walks_the_classes(tmp_path, capsys):
    out = tmp_path / "progress"
    assert main(["progress", "indexing", "--trials", "1", "--highest", "C1", "--out", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out
    assert "C0(n=18, s=1" in printed and "highest class reached" in printed
    assert (out / "progress.json").exists()


def test_progress_diagnoses_a_failing_class_one_class_lower(tmp_path, capsys):
    out = tmp_path / "diagnose"
    # An objective no index set can meet: C2 fails, and its task rerun in C1 with 2x seeds fails too.
    assert main(["progress", "indexing", "--start", "C2", "--trials", "1", "--objective-threshold", "1.5",
                 "--out", str(out), *SMALL]) == 0
    report = json.loads((out / "progress.json").read_text())
    assert report["failed"] == "C2" and report["highest_class_reached"] is None
    assert report["diagnosis"]["rerun_class"] == "C1" and report["diagnosis"]["belongs_to"] == "the task"
    rerun = summaries(out / "C2-task-in-C1")
    failing = summaries(out / "C2")[0]["seeds"]
    assert len(rerun) == 2
    assert {t["seeds"]["train_workload_seed"] for t in rerun} == {failing["train_workload_seed"]}
    assert len({t["seeds"]["optimisation_seed"] for t in rerun}) == 2
    # every trial judged its own rows by the experiment's objective, not the case study's
    evaluations = sorted(out.glob("*/trials/trial-*/evaluation.json"))
    assert len(evaluations) == 3
    for evaluation in evaluations:
        assert json.loads(evaluation.read_text())["objective"]["threshold"] == 1.5, evaluation
