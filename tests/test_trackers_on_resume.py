"""Trackers after kill -9 and resume, and a file-store MLFLOW_TRACKING_URI (issue 45, items 4 and 10).

Before the fix MLflow kept the killed attempt's run RUNNING forever beside the resumed trial's run of the
same name, and TensorBoard got a second event file, so the first episodes appeared twice (steps
``[0, 1, 0, 1, 2]``). Now the killed attempt's MLflow run is ended as KILLED and the trial's TensorBoard
directory starts over, so the resumed trial is counted once. ``--log mlflow`` with a file store named by
``MLFLOW_TRACKING_URI`` was an ``MlflowException`` traceback (exit 70); it is now one line, and with
``MLFLOW_ALLOW_FILE_STORE=true`` the store gets the ownership policy of every directory Wield writes into.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from wield.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("tensorboard")

COMMAND = ["run", "indexing", "--class", "C0", "--trials", "1", "--documents", "500", "--queries", "3",
           "--episodes", "300", "--repetitions", "1", "--quiet", "--log", "tensorboard,mlflow"]


def test_a_trial_killed_and_resumed_is_counted_once_by_mlflow_and_tensorboard(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    out = tmp_path / "exp"
    episodes = out / "trials" / "trial-000" / "episodes.csv"
    process = subprocess.Popen([sys.executable, "-m", "wield.cli", *COMMAND, "--out", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        if episodes.exists() and len(episodes.read_text().splitlines()) > 3:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the first attempt finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    events_dir = out / "tensorboard" / "trial-000"
    assert list(events_dir.glob("events.out.tfevents.*"))  # the killed attempt's events

    assert main([*COMMAND, "--out", str(out)]) == 0  # resumed: the trial starts over

    curve = pd.read_csv(episodes)
    assert list(curve["episode"]) == list(range(300))
    assert len(list(events_dir.glob("events.out.tfevents.*"))) == 1
    events = EventAccumulator(str(events_dir))
    events.Reload()
    assert [e.step for e in events.Scalars("episode/total_reward")] == list(range(300))

    client = MlflowClient(tracking_uri=(out / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("wield-indexing")
    found = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in found if run.data.tags.get("kind") == "experiment"]  # reopened on resume
    assert parent.info.status == "FINISHED"
    runs = [run for run in found if run.data.tags.get("kind") == "trial"]
    assert sorted(run.info.status for run in runs) == ["FINISHED", "KILLED"]
    assert {run.data.tags["mlflow.parentRunId"] for run in runs} == {parent.info.run_id}
    (finished,) = [run for run in runs if run.info.status == "FINISHED"]
    history = client.get_metric_history(finished.info.run_id, "episode/total_reward")
    assert sorted(m.step for m in history) == list(range(300))


def test_log_mlflow_with_a_file_store_uri_is_one_line_and_checked(tmp_path, monkeypatch, capsys):
    store = tmp_path / "store"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    small = ["run", "indexing", "--documents", "500", "--queries", "3", "--episodes", "2", "--repetitions", "1",
             "--quiet", "--log", "mlflow"]
    assert main([*small, "--out", str(tmp_path / "one")]) == 2
    err = capsys.readouterr().err
    assert "MLFLOW_ALLOW_FILE_STORE=true" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "one").exists()  # refused before any work
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # writable by every user, not sticky: another user could swap the store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (open_parent / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert main([*small, "--out", str(tmp_path / "two")]) == 2
    err = capsys.readouterr().err
    assert "MLFLOW_TRACKING_URI" in err and "writable by every user" in err and "Traceback" not in err
    assert not (open_parent / "mlruns").exists() and not (tmp_path / "two").exists()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    assert main([*small, "--out", str(tmp_path / "three")]) == 0
    assert (store / "meta.yaml").exists() or any(store.iterdir())
