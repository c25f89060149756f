"""Every bad value is a usage error before any work (issue 45, items 5-9).

Before the fix: bad ``[agent]`` hyperparameters exited 70 ("a bug in Wield"), some after minutes of training
(``PPOConfig.validate`` raised ``TypeError`` on text, the vector training ``UnboundLocalError`` for
``n_steps = 0``, Stable-Baselines3's values were never checked before training); scheduling options had
lower bounds only (``--rate 1e9``: ``MemoryError``; ``inf`` reward factors crashed mid-training); integers of
more than 4,300 digits and deeply nested ``--config``/``--set`` values escaped ``main()``; a reproduced
record whose ``method`` is ``os.system`` was a ``KeyError``; ``wield reproduce`` of a scheduling run never
compared ``model.pt`` (a zeroed model: "0 difference(s)") and refused a record without ``checksums.json``
only after the whole rerun.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from wield.agents.ppo import PPOConfig
from wield.cli import main
from wield.cli.exits import error_exit
from wield.errors import ConfigError

SCHEDULING = ["run", "scheduling", "--episodes", "2", "--first-decisions", "200", "--max-decisions", "400",
              "--train-s", "0.3", "--test-s", "0.3", "--curve-s", "0.1", "--quiet"]
INDEXING = ["run", "indexing", "--documents", "500", "--queries", "3", "--episodes", "2", "--repetitions", "1",
            "--quiet"]


def refused(capsys, argv: list[str], *words: str) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.mark.parametrize("argv, words", [
    ([*SCHEDULING, "--method", "ppo", "--set", "agent.learning_rate=inf"], ["ppo.learning_rate", "inf", "finite"]),
    ([*SCHEDULING, "--method", "ppo", "--set", 'agent.learning_rate="x"'], ["ppo.learning_rate", "'x'"]),
    ([*SCHEDULING, "--method", "ppo", "--set", "agent.epochs=1000000000"], ["ppo.epochs", "10,000,000"]),
    ([*SCHEDULING, "--set", "agent.sb3-maskable-ppo.n_steps=0"], ["agent.n_steps", "0", "integer in [1"]),
    ([*SCHEDULING, "--set", "agent.sb3-maskable-ppo.learning_rate=inf"], ["agent.learning_rate", "inf"]),
    ([*SCHEDULING, "--set", 'agent.sb3-maskable-ppo.gamma="x"'], ["agent.gamma", "[0, 1]"]),
    ([*INDEXING, "--method", "sb3-ppo", "--set", "agent.sb3-ppo.n_steps=0"], ["agent.n_steps", "0"]),
    ([*INDEXING, "--set", "agent.hidden_sizes=[100000000]"], ["hidden_sizes", "65,536"]),
    ([*INDEXING, "--set", "agent.replay_capacity=100000000000"], ["replay_capacity", "10,000,000"]),
    ([*INDEXING, "--set", "agent.updates_per_observation=1000000000"], ["updates_per_observation", "1,000"]),
    ([*SCHEDULING, "--rate", "1e9"], ["'rate'", "1000000000", "[1, 100,000]"]),
    ([*SCHEDULING, "--gpus", "10000000"], ["'gpus'", "[1, 1024]"]),
    ([*SCHEDULING, "--test-s", "1e5"], ["'test_s'", "3600"]),
    ([*SCHEDULING, "--models", "100000000"], ["'models'", "[1, 1000]"]),
    ([*SCHEDULING, "--episodes", "1000000000"], ["'episodes'", "1,000,000"]),
    ([*SCHEDULING, "--reward-scale", "inf"], ["'reward_scale'", "inf"]),
    ([*SCHEDULING, "--gpu-weight", "inf"], ["'gpu_weight'", "inf"]),
    (["run", "placement", "--batch", "1000000000", "--quiet"], ["'batch'", "65,536"]),
    (["run", "placement", "--budget", "1000000000000", "--quiet"], ["'budget'", "1,000,000"]),
    (["run", "placement", "--test-samples", "1000000000", "--quiet"], ["'test_samples'", "10,000"]),
    (["run", "placement", "--unroll", "5000", "--quiet"], ["'unroll'", "1,000"]),
    ([*SCHEDULING, "--rate", "90000", "--test-s", "3000"], ["'rate'", "test_s", "20,000,000"]),
    ([*SCHEDULING, "--set", "episodes=" + "9" * 5000], ["--set", "4,300 digits"]),
    ([*SCHEDULING, "--set", "agent.x=" + "[" * 3000 + "]" * 3000], ["--set", "nested too deeply"]),
    # a single run judges by the objective options, checked as an experiment's are
    ([*INDEXING, "--objective", "mean_work_improvement >> 0.5"], ["'objective'", "'METRIC >= NUMBER'"]),
    ([*INDEXING, "--objective", "speedup >= 2"], ["'objective.metric'", "'speedup'", "'mean_work_improvement'"]),
    ([*INDEXING, "--objective-threshold", "nan"], ["'objective.threshold'", "finite"]),
    (["run", "placement", "--objective-metric", "speed", "--quiet"], ["'objective.metric'", "'speedup_vs_heft'"]),
    ([*SCHEDULING, "--objective", "slo_satisfaction >= 0.9", "--objective-threshold", "0.5"],
     ["'objective'", "not both"]),
    ([*INDEXING, "--evaluate-checkpoint", "elsewhere", "--objective-threshold", "0.4"],  # judges no objective
     ["'objective-threshold'", "--evaluate-checkpoint", "leave it out"]),
])
def test_a_bad_value_is_a_usage_error_naming_it_before_anything_runs(argv, words, tmp_path, capsys):
    out = tmp_path / "run"
    refused(capsys, [*argv, "--out", out], *words)
    assert not out.exists()


WORK_OBJECTIVE = "mean_work_improvement >= 0.5 and relative_index_size <= 0.5"


def _spy_on_reruns(monkeypatch, module) -> list:
    """The objectives ``module``'s ``run_trial`` is called with (a reproduce's rerun), the call going through."""
    seen, real = [], module.run_trial

    def spy(*args, **kwargs):
        seen.append(args[4] if len(args) > 4 else kwargs.get("objective"))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "run_trial", spy)
    return seen


def test_a_single_run_judges_by_the_objective_options_and_reproduce_reruns_under_them(tmp_path, capsys,
                                                                                      monkeypatch):
    import case_studies.indexing.reproduce as indexing_reproduce
    from wield.protocols import Objective

    out = tmp_path / "run"
    assert main([*INDEXING, "--objective", WORK_OBJECTIVE, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    evaluation = json.loads((out / "evaluation.json").read_text())
    judged = Objective.from_dict(evaluation["objective"])
    assert judged.describe() == WORK_OBJECTIVE  # not the case study's latency objective
    for label, row in (("learned policy", "dqn-greedy"), ("best seen, search", "dqn")):
        outcome = judged.outcome(evaluation["methods"][row])
        assert f"objective ({label}) {WORK_OBJECTIVE}: {outcome} ({row}" in printed, printed
    assert evaluation["success"] == judged.met(evaluation["methods"]["dqn"])
    assert evaluation["objective_outcome"] == judged.decide(evaluation["methods"]["dqn"]) != "inconclusive"
    assert json.loads((out / "run.json").read_text())["objective"] == evaluation["objective"]
    assert f'objective = "{WORK_OBJECTIVE}"' in (out / "config.toml").read_text()  # --config reruns it

    reruns = _spy_on_reruns(monkeypatch, indexing_reproduce)
    assert main(["reproduce", str(out)]) == 0
    assert "match exactly" in capsys.readouterr().out
    assert [o.describe() for o in reruns] == [WORK_OBJECTIVE]


def test_a_single_placement_run_judges_by_the_objective_options_too(tmp_path, capsys, monkeypatch):
    import wield.workflows.trial as trial

    out = tmp_path / "run"
    assert main(["run", "placement", "--budget", "10", "--batch", "8", "--unroll", "2", "--quiet",
                 "--objective-threshold", "2", "--out", str(out)]) == 0
    assert "objective speedup_vs_single_device >= 2: " in capsys.readouterr().out
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["objective"]["threshold"] == 2 and evaluation["objective"]["straggler_above"] == 1.0
    assert evaluation["success"] == (evaluation["methods"]["wield"]["speedup_vs_single_device"] >= 2)
    reruns = _spy_on_reruns(monkeypatch, trial)
    assert main(["reproduce", str(out)]) == 0
    assert [o.threshold for o in reruns] == [2]


@pytest.mark.parametrize("table, words", [
    ("[agent.sb3-maskable-ppo.policy_kwargs]\nnet_arch = [1000000000]\n", ["agent.policy_kwargs.net_arch", "65,536"]),
    ("[agent.sb3-maskable-ppo.policy_kwargs]\nno_such_argument = 1\n",
     ["MaskablePPO (Stable-Baselines3) refuses", "no_such_argument"]),
])
def test_stable_baselines3_checks_its_own_values_before_anything_runs(table, words, tmp_path, capsys):
    config = tmp_path / "agent.toml"
    config.write_text(table)
    out = tmp_path / "run"
    refused(capsys, [*SCHEDULING, "--config", config, "--out", out], *words)
    assert not out.exists()


def test_ppo_config_refuses_text_and_non_finite_values_by_name():
    for values, field in ((dict(learning_rate="x"), "ppo.learning_rate"), (dict(gamma="x"), "ppo.gamma"),
                          (dict(entropy_coef=float("nan")), "ppo.entropy_coef"), (dict(clip=float("inf")), "ppo.clip")):
        with pytest.raises(ConfigError, match=field):
            PPOConfig(**values).validate()


def test_python_limits_are_data_errors_at_the_edge_of_main(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    refused(capsys, [*SCHEDULING, "--config", deep, "--out", tmp_path / "run"], "--config", "nested too deeply")
    assert error_exit(ValueError("Exceeds the limit (4300 digits) for integer string conversion")) == 2
    assert error_exit(RecursionError("maximum recursion depth exceeded")) == 2
    assert "4,300 digits" in capsys.readouterr().err


def _recompute_checksums(run: Path) -> None:
    sums = json.loads((run / "checksums.json").read_text())
    (run / "checksums.json").write_text(json.dumps({name: hashlib.sha256((run / name).read_bytes()).hexdigest()
                                                    for name in sums}))


@pytest.fixture(scope="module")
def scheduling_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("bad-values") / "run"
    assert main([*SCHEDULING, "--out", str(run)]) == 0
    return run


def test_reproduce_of_a_scheduling_run_compares_its_model_and_checks_the_record_first(scheduling_run, tmp_path,
                                                                                     capsys):
    import torch

    zeroed = tmp_path / "zeroed"
    shutil.copytree(scheduling_run, zeroed, ignore=shutil.ignore_patterns(".wield.lock"))
    state = torch.load(zeroed / "model.pt", weights_only=True)
    torch.save({k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else v for k, v in state.items()},
               zeroed / "model.pt")
    _recompute_checksums(zeroed)
    capsys.readouterr()
    assert main(["reproduce", str(zeroed)]) == 1
    assert "model.pt: the recorded weights differ from the rerun's" in capsys.readouterr().out

    foreign = tmp_path / "foreign"
    shutil.copytree(scheduling_run, foreign, ignore=shutil.ignore_patterns(".wield.lock"))
    config = json.loads((foreign / "config.json").read_text())
    (foreign / "config.json").write_text(json.dumps({**config, "method": "os.system"}))
    _recompute_checksums(foreign)
    assert main(["reproduce", str(foreign)]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the reproduce: steps, one line of error
    assert "Traceback" not in err and all(word in last for word in ("method in", "config.json", "'os.system'",
                                                                     "'maskable-ppo'")), err

    unchecked = tmp_path / "unchecked"
    shutil.copytree(scheduling_run, unchecked, ignore=shutil.ignore_patterns(".wield.lock"))
    (unchecked / "checksums.json").unlink()
    assert main(["reproduce", str(unchecked)]) == 2
    err = capsys.readouterr().err
    assert "has no checksums.json" in err and "nothing was rerun" in err and "rerunning" not in err
