"""Experiment tracking (``--log tensorboard,mlflow``, the Tracker registry, SB3's logger) and configuration
files (``--config FILE.toml``, ``--set``, the ``[agent]`` block) on small indexing runs, read back from the
event files, the MLflow store and the run record; ``wield reproduce`` repeats a configured run exactly."""

from __future__ import annotations

import json
from dataclasses import asdict

import pandas as pd
import pytest

from case_studies.indexing.run import IndexingRunConfig
from wield.agents import hyperparameters
from wield.cli import main
from wield.errors import ConfigError
from wield.tracking import TrackedRun, TrackingSpec, register_tracker
from wield.workflows import run_trial

SMALL = ["--documents", "500", "--queries", "3", "--episodes", "6", "--repetitions", "1", "--metric", "work"]


def test_log_tensorboard_and_mlflow_mirror_the_curve_verdict_and_metrics(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads a file store only when allowed
    out = tmp_path / "run"
    assert main(["run", "indexing", *SMALL, "--out", str(out), "--quiet", "--log", "tensorboard,mlflow"]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    curve = [(int(e), pytest.approx(float(r), rel=1e-6)) for e, r in zip(episodes["episode"], episodes["total_reward"])]
    rungs = json.loads((out / "evaluation.json").read_text())["verdict"]["rungs"]
    summary = json.loads((out / "summary.json").read_text())

    events = EventAccumulator(str(out / "tensorboard" / "indexing"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("episode/total_reward")] == curve
    assert {"episode/loss", "episode/epsilon"} <= set(events.Tags()["scalars"])
    for rung in rungs:
        for number in ("mean_difference", "ci_low", "ci_high"):
            assert events.Scalars(f"verdict/{rung['name']}/{number}")[0].value == pytest.approx(rung[number])
    assert events.Scalars("final/relative_index_size")[0].value == pytest.approx(
        summary["metrics"]["relative_index_size"])

    client = MlflowClient(tracking_uri=(out / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("wield-indexing")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["method"] == "dqn"
    history = client.get_metric_history(run.info.run_id, "episode/total_reward")
    assert sorted((m.step, m.value) for m in history) == curve
    for rung in rungs:
        assert run.data.metrics[f"verdict/{rung['name']}/mean_difference"] == pytest.approx(rung["mean_difference"])
        assert run.data.tags[f"verdict.{rung['name']}.outcome"] == rung["outcome"]
        assert run.data.tags[f"verdict.{rung['name']}.kind"] == rung["kind"]
    assert run.data.metrics["final/mean_work_improvement"] == pytest.approx(summary["metrics"]["mean_work_improvement"])
    assert run.data.params["config.episodes"] == "6"
    assert run.data.params["agent.learning_rate"]  # the learner's hyperparameters as used, defaults included
    # issue 46.4: the run's files in MLflow (a single run's record holds its config.toml)
    assert {"config.toml", "model.pt", "results.png"} <= {a.path for a in client.list_artifacts(run.info.run_id)}
    assert json.loads((out / "status.json").read_text())["status"] == "complete"


class MemoryTracker:
    """A tracker of the documented hook that keeps what it is given (registered as 'memory')."""

    runs: list["MemoryTracker"] = []

    def __init__(self, run: TrackedRun) -> None:
        self.run, self.scalars, self.tags, self.params, self.status = run, {}, {}, {}, None
        MemoryTracker.runs.append(self)

    def log_params(self, params):
        self.params.update(params)

    def log_scalars(self, values, step):
        for name, value in values.items():
            self.scalars.setdefault(name, []).append((step, value))

    def log_tags(self, tags):
        self.tags.update(tags)

    def close(self, status):
        self.status = status


def test_a_registered_tracker_gets_stable_baselines3s_own_log(tmp_path):
    pytest.importorskip("stable_baselines3")
    register_tracker("memory", MemoryTracker)
    config = IndexingRunConfig(documents=500, queries=3, episodes=6, repetitions=1, agent="sb3-ppo",
                               hyperparameters={"sb3-ppo": {"n_epochs": 2}, "dqn": {"hidden_sizes": [8]}})
    run_trial("indexing", asdict(config), config.single_run_seeds(), str(tmp_path / "run"),
              tracking=TrackingSpec(("memory",)))
    tracker = MemoryTracker.runs[-1]
    assert tracker.status == "complete" and tracker.run.name == "indexing"
    assert [step for step, _ in tracker.scalars["episode/total_reward"]] == list(range(6))
    assert "sb3/train/loss" in tracker.scalars and "sb3/rollout/ep_rew_mean" in tracker.scalars
    assert tracker.params["agent.n_epochs"] == "2"  # the learner's own table only: not dqn's hidden_sizes
    assert not [name for name in tracker.params if "hidden_sizes" in name or "hyperparameters" in name]
    # one x-axis convention: the episode rows also at the environment steps, where SB3's own records are
    episode_steps = [step for step, _ in tracker.scalars["env_step/total_reward"]]
    assert episode_steps == [3 * (episode + 1) for episode in range(6)]  # 3 queries: 3 steps an episode
    assert max(step for step, _ in tracker.scalars["sb3/train/loss"]) <= episode_steps[-1]
    assert not list(tmp_path.glob("run/SB3-*"))


def test_config_file_set_and_flags_then_reproduce_exactly(tmp_path, capsys):
    config_file = tmp_path / "exp.toml"
    config_file.write_text('documents = 500\nqueries = 3\nepisodes = 9\nrepetitions = 1\nmetric = "work"\n'
                           'quiet = true\n\n[agent]\nlearning_rate = 3e-4\nhidden_sizes = [32, 32]\n')
    out = tmp_path / "run"
    assert main(["run", "indexing", "--config", str(config_file), "--set", "agent.learning_rate=1e-3",
                 "--episodes", "6", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["episodes"] == 6 and config["documents"] == 500  # the flag beats the file
    assert config["hyperparameters"] == {"learning_rate": 1e-3, "hidden_sizes": [32, 32]}
    capsys.readouterr()
    assert main(["reproduce", str(out)]) == 0
    assert "match exactly" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--set", "docs=5"], "invalid value for 'config key': 'docs'; not an option of 'wield run indexing'"),
    (["--set", "agent.learnin_rate=1e-3"], "invalid value for 'agent.learnin_rate': 0.001; not a hyperparameter "
                                           "of dqn; allowed: 'learning_rate'"),
    (["--set", "agent.learning_rate=-1"], "invalid value for 'learning_rate': -1"),
    (["--agent", "sb3-ppo", "--set", "agent.epsilon_end=0.1"], "not a hyperparameter of sb3-ppo"),
    (["--config", "missing.toml"], "invalid value for 'config': 'missing.toml'; no such file"),
    (["--log", "wandb"], "invalid value for 'log': 'wandb'; unknown tracker; allowed: "),
])
def test_config_errors_are_one_line(tmp_path, capsys, arguments, message):
    assert main(["run", "indexing", *SMALL, "--out", str(tmp_path / "x"), *arguments]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1
    assert not (tmp_path / "x" / "status.json").exists()


def test_agent_blocks_per_learner():
    block = {"learning_rate": 1e-3, "dqn": {"hidden_sizes": [64]}, "ppo": {"epochs": 2}}
    assert hyperparameters.make_config("dqn", block).hidden_sizes == (64,)
    assert hyperparameters.make_config("dqfd", block).learning_rate == 1e-3
    assert hyperparameters.make_config("ppo", block).epochs == 2
    with pytest.raises(ConfigError, match="a sub-table of \\[agent\\] names a learner"):
        hyperparameters.for_learner("dqn", {"dqm": {"gamma": 0.5}})


def test_placement_takes_an_agent_block_and_reproduces_it(tmp_path, capsys):
    from case_studies.placement.graphs import prepare_graph

    graph = prepare_graph("nmt", {"layers": 1, "hidden": 64, "vocab": 200, "batch": 16, "unroll": 4},
                          tmp_path / "cache")[0]
    graph_file = graph.save(tmp_path / "graph.json")
    config_file = tmp_path / "placement.toml"
    config_file.write_text(f'graph = "{graph_file}"\nbudget = 12\nbaselines = "heft"\nquiet = true\n\n'
                           '[agent]\nplacer_learning_rate = 0.05\n[agent.wield]\nepochs = 2\n')
    out = tmp_path / "run"
    assert main(["run", "placement", "--config", str(config_file), "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["hyperparameters"] == {"placer_learning_rate": 0.05, "wield": {"epochs": 2}}
    assert hyperparameters.make_config("wield", config["hyperparameters"]).epochs == 2
    capsys.readouterr()
    assert main(["reproduce", str(out)]) == 0
    assert "match" in capsys.readouterr().out
    assert main(["run", "placement", "--config", str(config_file), "--set", "agent.learning_rate=1",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "not a hyperparameter of wield; allowed: 'n_groups', 'grouper_learning_rate'" in capsys.readouterr().err


def test_scheduling_takes_an_agent_block_through_the_core_and_reproduces_it(tmp_path, capsys):
    tiny = ["--method", "ppo", "--episodes", "2", "--first-decisions", "100", "--max-decisions", "100", "--rate", "600",
            "--models", "12", "--test-s", "0.1", "--curve-s", "0.05", "--train-s", "0.2", "--quiet"]
    out = tmp_path / "run"
    assert main(["run", "scheduling", *tiny, "--set", "agent.learning_rate=1e-3", "--set", "agent.ppo.epochs=2",
                 "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["hyperparameters"] == {"learning_rate": 1e-3, "ppo": {"epochs": 2}}
    capsys.readouterr()
    assert main(["reproduce", str(out)]) == 0
    assert "match" in capsys.readouterr().out
    assert main(["run", "scheduling", *tiny, "--set", "agent.epsilon_end=0.1", "--out", str(tmp_path / "bad")]) == 2
    assert "invalid value for 'agent.epsilon_end': 0.1; not a hyperparameter of ppo" in capsys.readouterr().err
    assert main(["run", "caching", "--set", "agent.learning_rate=1e-3", "--out", str(tmp_path / "c")]) == 2
    assert "'wield run caching' takes no learner hyperparameters" in capsys.readouterr().err


def test_compare_logs_every_trial_of_every_method_under_its_out(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "compare"
    assert main(["compare", "indexing", *SMALL, "--class", "C1", "--trials", "1", "--methods", "dqn,random",
                 "--out", str(out), "--quiet", "--log", "tensorboard"]) == 0
    for method, step, value in (("dqn", "episode", "total_reward"), ("random", "evaluation", "reward")):
        episodes = pd.read_csv(out / method / "trials" / "trial-000" / "episodes.csv")
        events = EventAccumulator(str(out / "tensorboard" / method / "trial-000"))
        events.Reload()
        logged = [(e.step, e.value) for e in events.Scalars(f"episode/{value}")]
        assert logged == [(int(e), pytest.approx(float(r), rel=1e-6)) for e, r in zip(episodes[step], episodes[value])]
        assert events.Scalars("final/transitions")


def test_a_scheduling_run_logs_what_maskable_ppo_records(tmp_path):
    """The vector training hooks SB3's logger (issue 46.2): a tracked scheduling run gets sb3/* scalars."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "sched"
    assert main(["run", "scheduling", "--episodes", "2", "--first-decisions", "300", "--max-decisions", "300",
                 "--envs", "2", "--train-s", "0.2", "--test-s", "0.1", "--curve-s", "0.1", "--verdict-cap", "10",
                 "--out", str(out), "--quiet", "--log", "tensorboard"]) == 0
    runs = [p for p in (out / "tensorboard").rglob("events.out.tfevents.*")]
    assert runs
    events = EventAccumulator(str(runs[0].parent))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert any(tag.startswith("sb3/") for tag in tags), tags  # none before: the loop never hooked SB3
    # one x-axis convention (issue 46.4): the curve also at the environment steps, SB3's records' axis
    decisions = pd.read_csv(out / "episodes.csv")["decisions"].cumsum().tolist()
    assert [e.step for e in events.Scalars("env_step/curve_return")] == decisions
    assert events.Scalars("sb3/time/total_timesteps")[-1].value == events.Scalars("sb3/time/total_timesteps")[-1].step
