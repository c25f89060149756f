"""Feedback while commands work: a line per finished trial of an experiment, step lines for
``wield reproduce``, a line per class of ``wield progress`` and its verdict printed once."""

from __future__ import annotations

import json

from wield.cli import main

TINY = ["--episodes", "3"]


def test_an_experiment_prints_a_line_per_finished_trial_and_reproduce_its_steps(tmp_path, capsys):
    out = tmp_path / "experiment"
    assert main(["run", "caching", "--class", "C1", "--trials", "2", "--out", str(out), *TINY]) == 0
    err = capsys.readouterr().err
    assert "C1: 2 of 2 trials to run" in err
    for trial in (0, 1):
        assert f"C1 trial {trial}: " in err
    assert "2/2 trials done after" in err
    assert main(["reproduce", str(out / "trials" / "trial-000"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["match"] is True  # the steps never reach the JSON
    steps = [line for line in captured.err.splitlines() if line.startswith("reproduce: ")]
    assert len(steps) == 3 and "rerunning the caching run" in steps[1] and "0 difference(s)" in steps[2]


def test_progress_prints_a_line_per_class_and_its_verdict_once(tmp_path, capsys):
    out = tmp_path / "progress"
    assert main(["progress", "caching", "--start", "C0", "--highest", "C1", "--trials", "1", "--out", str(out),
                 *TINY]) == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.strip()]
    assert lines[0].startswith("C0: 1 trials into")
    assert len(lines) == len(set(lines)), lines  # no line twice (the diagnosis verdict was)
    assert "C0 trial 0: " in printed.err
