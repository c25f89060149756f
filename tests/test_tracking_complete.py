"""Tracking complete (issue 46, item 4), read back from the real TensorBoard event files and MLflow file store:
an experiment is a parent run with its trials nested (tags class and method on each), every run has its
hyperparameters with its final metrics (MLflow params, TensorBoard's HParams summary in the run's own
directory), a DQN trial's params hold DQN's hyperparameters (defaults included) and none of another learner's
sub-table, the trackers that keep files get config.toml, results.png, model.pt and the classification, and the
curves are on both x-axes (episodes, environment steps).

Before: no hparams, 0 MLflow artifacts, no parent run or class tag, curves against episodes only, and a DQN
run's params carried ``config.hyperparameters.sb3-ppo.*``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wield.cli import main
from wield.tracking import TrackingSession

pytest.importorskip("mlflow")
pytest.importorskip("tensorboard")

EXPERIMENT = ["run", "indexing", "--class", "C0", "--trials", "2", "--documents", "500", "--queries", "3",
              "--episodes", "2", "--repetitions", "1", "--metric", "work", "--verdict-cap", "10", "--quiet",
              "--set", "agent.sb3-ppo.n_epochs=2", "--set", "agent.dqn.learning_rate=0.002",
              "--log", "tensorboard,mlflow"]


def _hparams(directory: Path) -> tuple[dict, list[str]]:
    """The HParams summary of a TensorBoard run directory: its hyperparameters and its metrics' tags."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    events = EventAccumulator(str(directory))
    events.Reload()
    content = events.PluginTagToContent("hparams")
    start = HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
    experiment = HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    values = {name: value.WhichOneof("kind") and getattr(value, value.WhichOneof("kind"))
              for name, value in start.hparams.items()}
    return values, [metric.name.tag for metric in experiment.metric_infos]


def test_an_experiment_is_a_parent_run_with_its_trials_nested_their_hparams_and_files(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    out = tmp_path / "exp"
    assert main([*EXPERIMENT, "--out", str(out)]) == 0
    assert main([*EXPERIMENT, "--out", str(out)]) == 0  # run again, every trial kept: the same parent run

    client = MlflowClient(tracking_uri=(out / "mlruns").resolve().as_uri())
    runs = client.search_runs([client.get_experiment_by_name("wield-indexing").experiment_id])
    (parent,) = [run for run in runs if run.data.tags.get("kind") == "experiment"]
    trials = sorted((run for run in runs if run.data.tags.get("kind") == "trial"), key=lambda r: r.info.run_name)
    assert [run.info.run_name for run in trials] == ["trial-000", "trial-001"] and len(runs) == 3
    assert parent.info.status == "FINISHED" and parent.data.tags["class"] == "C0"
    assert parent.data.tags["method"] == "dqn"
    for run in trials:
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert (run.data.tags["class"], run.data.tags["method"], run.data.tags["parent"]) == ("C0", "dqn", "experiment")
        params = run.data.params
        assert params["agent.learning_rate"] == "0.002"  # given in [agent.dqn]
        assert params["agent.gamma"] and params["agent.hidden_sizes"]  # DQN's defaults, as used
        assert not [name for name in params if "n_epochs" in name or "sb3" in name or "hyperparameters" in name]
        assert {"model.pt", "results.png"} <= {a.path for a in client.list_artifacts(run.info.run_id)}
    recorded = json.loads((out / "classification.json").read_text())
    assert parent.data.metrics["classification/f"] == pytest.approx(recorded["f"])
    assert parent.data.metrics["classification/s"] == 2
    assert parent.data.tags["classification"] == recorded["label"]
    assert parent.data.params["experiment.trials"] == "2" and parent.data.params["agent.learning_rate"] == "0.002"
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {"config.toml", "classification.json"}
    # the report, written afterwards, joins the parent run's artifacts with its figures
    assert main(["report", str(out), "--out", str(tmp_path / "report"), "--log", "mlflow"]) == 0
    added = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert {"report/report.md", "report/training.png"} <= added

    hparams, metrics = _hparams(out / "tensorboard" / "trial-000")  # in the run's own directory
    assert hparams["agent.learning_rate"] == pytest.approx(0.002) and hparams["config.episodes"] == 2
    assert "final/transitions" in metrics and any(tag.startswith("verdict/") for tag in metrics)
    hparams, metrics = _hparams(out / "tensorboard" / "experiment")
    assert hparams["experiment.trials"] == 2 and "classification/f" in metrics
    events = EventAccumulator(str(out / "tensorboard" / "trial-001"))
    events.Reload()
    assert [e.step for e in events.Scalars("episode/total_reward")] == [0, 1]
    assert [e.step for e in events.Scalars("env_step/total_reward")] == [3, 6]  # 3 queries: 3 steps an episode
    assert [e.value for e in events.Scalars("env_step/total_reward")] == \
        [e.value for e in events.Scalars("episode/total_reward")]


class Keeper:
    """A tracker that keeps files (``log_artifact``): what it is given, read at once."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.tags: dict[str, str] = {}

    def log_params(self, params):
        pass

    def log_scalars(self, values, step):
        pass

    def log_tags(self, tags):
        self.tags.update(tags)

    def log_artifact(self, path, name):
        self.files[name] = Path(path).read_bytes()

    def close(self, status):
        pass


def test_artifacts_are_regular_files_under_the_cap_with_passwords_redacted(tmp_path, monkeypatch):
    import wield.tracking as tracking

    record = tmp_path / "run"
    record.mkdir()
    (record / "config.toml").write_text('uri = "postgresql://wield:s3cret@localhost/db"\nepisodes = 2\n')
    (record / "model.pt").write_bytes(b"\0" * 1000)
    (tmp_path / "elsewhere.png").write_bytes(b"png")
    (record / "results.png").symlink_to(tmp_path / "elsewhere.png")
    monkeypatch.setattr(tracking, "MAX_ARTIFACT_BYTES", 100)
    keeper = Keeper()
    given = TrackingSession([keeper]).log_artifacts(record)
    assert given == ["config.toml"] and list(keeper.files) == ["config.toml"]
    assert b"s3cret" not in keeper.files["config.toml"] and b"postgresql://wield:***@localhost" in keeper.files[
        "config.toml"]
    assert "s3cret" in (record / "config.toml").read_text()  # the record's own file is left as it was
    skipped = keeper.tags["skipped_artifacts"]
    assert "results.png (not a regular file)" in skipped and "model.pt (1,000 bytes, over 100)" in skipped
