"""``wield tune CASE`` (issue 46.5): a tiny Optuna study over indexing's DQN runs, its ``best.toml`` reruns the
best trial's first run exactly through ``wield run --config``, a study killed with SIGKILL resumes without
rerunning its finished trials, and a bad search-space entry is a one-line usage error naming the key."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wield.cli import main
from wield.errors import ConfigError
from wield.tuning.space import parse_space

ROOT = Path(__file__).resolve().parents[1]
# about a second per run: 3 queries of a 100-document collection, 4 episodes, the verdict on 10 instances
TINY = ["--documents", "100", "--queries", "3", "--episodes", "4", "--verdict-cap", "10", "--repetitions", "1"]
SPACE = "[tune.space]\nlearning_rate = {low = 1e-4, high = 1e-2, log = true}\nhidden_sizes = {choices = [[16], [32]]}\n"


def _space(tmp_path: Path, text: str = SPACE) -> str:
    path = tmp_path / "space.toml"
    path.write_text(text)
    return str(path)


def _figures(run: Path) -> tuple[list[str], dict, float]:
    """What a run under the work metric decides deterministically: the training returns, every method's work
    figures and the verdict's held-out greedy score."""
    with open(run / "episodes.csv", newline="", encoding="utf-8") as handle:
        rewards = [row["total_reward"] for row in csv.DictReader(handle)]
    evaluation = json.loads((run / "evaluation.json").read_text())
    work = {name: {k: v for k, v in metrics.items() if "work" in k} for name, metrics in evaluation["methods"].items()}
    return rewards, work, json.loads((run / "summary.json").read_text())["verdict"]["greedy_return"]


def _trials(out: Path) -> list:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(out / "study.journal")))
    return optuna.load_study(study_name="wield-tune", storage=storage).get_trials()


def test_a_tiny_study_runs_and_best_toml_reruns_its_best_trial(tmp_path, capsys):
    out = tmp_path / "tune"
    assert main(["tune", "indexing", *TINY, "--trials", "2", "--space", _space(tmp_path), "--out", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "best: trial" in printed and f"wield run indexing --config {out / 'best.toml'}" in printed
    trials = _trials(out)
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    best = max(trials, key=lambda t: (t.value, -t.number))
    first_run = out / "trials" / f"{best.number:04d}" / "seed-0"
    assert best.value == _figures(first_run)[2]  # the objective: the held-out greedy score (one seed)
    recorded = json.loads((out / "trials.json").read_text())["trials"]
    assert [row["state"] for row in recorded] == ["complete", "complete"]
    assert recorded[best.number]["params"]["hidden_sizes"] in ([16], [32])
    # best.toml is the best trial's run's config.toml, and wield run --config reruns that run exactly
    rerun = tmp_path / "rerun"
    assert main(["run", "indexing", "--config", str(out / "best.toml"), "--out", str(rerun), "--quiet"]) == 0
    capsys.readouterr()
    assert _figures(rerun) == _figures(first_run)
    import tomllib

    table = tomllib.loads((out / "best.toml").read_text())
    assert table == tomllib.loads((first_run / "config.toml").read_text())
    assert table["agent"]["learning_rate"] == best.params["learning_rate"]
    # a run's config.toml is a valid base (its experiment keys skipped); other settings than the study's are
    # refused before anything runs, naming what differs
    code = main(["tune", "indexing", "--config", str(out / "best.toml"), "--trials", "2", "--space",
                 _space(tmp_path), "--out", str(out)])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "other settings (base.agent." in error, error


def test_a_study_killed_with_sigkill_resumes_without_rerunning_finished_trials(tmp_path):
    out = tmp_path / "tune"
    argv = ["tune", "indexing", *TINY, "--trials", "2", "--space", _space(tmp_path), "--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "wield.cli", *argv], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (out / "trials" / "0001").exists():  # trial 0 is told complete before trial 1 starts
        assert child.poll() is None and time.monotonic() < deadline, child.stderr.read() if child.stderr else ""
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    before = _trials(out)
    assert [t.state.name for t in before] == ["COMPLETE", "RUNNING"]
    assert main(argv) == 0
    after = _trials(out)
    assert [t.state.name for t in after] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert after[0].datetime_complete == before[0].datetime_complete and after[0].value == before[0].value
    assert after[2].user_attrs["retry_of"] == 1 and after[2].params == before[1].params  # the killed one, again
    assert sorted(p.name for p in (out / "trials").iterdir()) == ["0000", "0001", "0002"]


@pytest.mark.parametrize("entry, named", [
    ("gamma = {low = 0.99, high = 0.9}", "tune.space.gamma"),
    ("learning_rat = {low = 1e-4, high = 1e-2}", "tune.space.learning_rat"),
    ("gamma = {low = 0.9, high = 1.5}", "tune.space.gamma"),  # DQN refuses gamma above 1
    ("batch_size = 32", "tune.space.batch_size"),
])
def test_a_bad_space_entry_is_one_line_exit_2_naming_the_key(tmp_path, capsys, entry, named):
    out = tmp_path / "tune"
    code = main(["tune", "indexing", *TINY, "--trials", "2", "--space", _space(tmp_path, f"[tune.space]\n{entry}\n"),
                 "--out", str(out)])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and f"'{named}'" in error, error
    assert not out.exists()  # refused before anything is written


@pytest.mark.parametrize("table, reason", [
    ({"lr": {"low": 1e-3, "high": 1e-1, "log": True, "step": 0.1}}, "cannot be combined with log"),
    ({"lr": {"low": 0, "high": 1, "log": True}}, "must be > 0 with log"),
    ({"lr": {"low": 1, "high": 2, "scale": "log"}}, "unknown key 'scale'"),
    ({"lr": {"choices": []}}, "non-empty list"),
    ({"lr": {"choices": [1, 1]}}, "twice"),
    ({"lr": {"choices": [1], "low": 0}}, "takes only 'choices'"),
    ({"lr": {"low": "a", "high": 2}}, "finite number"),
])
def test_space_entries_are_checked(table, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_space(table)


def test_ranges_and_choices_sample_their_kind():
    space = parse_space({"n": {"low": 1, "high": 8}, "x": {"low": 0.5, "high": 1.0},
                         "sizes": {"choices": [[64], [64, 64]]}})
    assert [space[name].kind for name in ("n", "x", "sizes")] == ["int", "float", "choices"]
    assert space["sizes"].value(space["sizes"].labels()[1]) == [64, 64]


def test_a_missing_optuna_is_one_line_naming_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna raises ImportError
    code = main(["tune", "indexing", *TINY, "--trials", "1", "--out", str(tmp_path / "tune")])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "pip install 'wield[tune]'" in error, error


def test_a_directory_that_is_not_a_tune_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "record"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    code = main(["tune", "indexing", *TINY, "--trials", "1", "--out", str(out)])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "not a wield tune directory" in error, error
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
