"""Configs that round-trip (issue 46.3): a single run writes ``config.toml`` with every option it used (defaults
included) and its learner's hyperparameters, ``--config`` reads it back (TOML, YAML or JSON) to the same run, and
a value of the wrong type in a config file is a one-line error naming the key."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest
import yaml

from wield.cli import main
from wield.cli.config_file import options_table, parse_arguments
from wield.cli.main import build_parser
from wield.command_config import to_toml
from wield.plugins import OPTIONS_GIVEN, OPTIONS_SEEN, get_case_study

TINY_INDEXING = ["--documents", "300", "--queries", "3", "--episodes", "6", "--quiet"]
CASE_STUDIES = ("caching", "indexing", "placement", "scheduling")


def _parsed(argv: list[str]):
    from wield.cli.config_file import add_to_every_command

    parser = build_parser()
    add_to_every_command(parser)
    return parser, parse_arguments(parser, argv)


def _options(argv: list[str]) -> dict:
    """The parsed options without the config file's own (--config, --set) and without the record of which
    case-study options were flags (a file's are not, by design: CaseStudy.check_given)."""
    _, args = _parsed(argv)
    return {key: value for key, value in vars(args).items()
            if key not in ("config", "set", "handler", OPTIONS_GIVEN, OPTIONS_SEEN)}


def _deterministic_figures(run: Path) -> tuple[list[str], dict]:
    with open(run / "episodes.csv", newline="", encoding="utf-8") as handle:
        rewards = [row["total_reward"] for row in csv.DictReader(handle)]
    evaluation = json.loads((run / "evaluation.json").read_text())
    work = {name: {key: value for key, value in metrics.items() if "work" in key}
            for name, metrics in evaluation["methods"].items()}
    return rewards, work


def test_an_indexing_run_reruns_identically_from_its_config_toml(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WIELD_CACHE_DIR", str(tmp_path / "cache"))
    first, second = tmp_path / "A", tmp_path / "B"
    assert main(["run", "indexing", *TINY_INDEXING, "--out", str(first)]) == 0
    written = (first / "config.toml").read_text()
    table = tomllib.loads(written)
    # every option with the value used, defaults included; the learner's every hyperparameter
    assert table["documents"] == 300 and table["metric"] == "work" and table["size_weight"] == 1.0
    assert table["cost_cache"] is True and table["seed"] == 0 and table["actions"] == "shortlist"
    assert table["agent"]["name"] == "dqn" and table["agent"]["learning_rate"] == 1e-4
    assert table["agent"]["hidden_sizes"] == [128, 128]
    assert not {"out", "quiet", "json", "config", "set"} & set(table)
    assert "wield run indexing --config config.toml" in written
    assert main(["run", "indexing", "--config", str(first / "config.toml"), "--out", str(second)]) == 0
    capsys.readouterr()
    rewards, work = _deterministic_figures(first)
    assert len(rewards) == 6 and work["dqn"]
    assert _deterministic_figures(second) == (rewards, work)
    assert tomllib.loads((second / "config.toml").read_text()) == table  # the rerun's record says the same
    # YAML and JSON forms of the same config give the same options
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(table, sort_keys=False))
    (tmp_path / "config.json").write_text(json.dumps(table))
    expected = _options(["run", "indexing", "--config", str(first / "config.toml")])
    for name in ("config.yaml", "config.json"):
        assert _options(["run", "indexing", "--config", str(tmp_path / name)]) == expected, name


@pytest.mark.parametrize("name", CASE_STUDIES)
def test_every_case_studys_options_read_back_from_their_table(name, tmp_path):
    """For every case study, the table of a run with its defaults (and with a few values changed), written as
    TOML, YAML and JSON, reads back to exactly the options of the command line that made it."""
    changed = {"caching": ["--frames", "6", "--scan-share", "0.1"],
               "indexing": ["--documents", "500", "--metric", "latency", "--no-cost-cache", "--method", "dqfd",
                            "--agent-param", "gamma=0.9"],
               "placement": ["--budget", "40", "--batch", "16", "--agent-param", "placer_learning_rate=0.02"],
               "scheduling": ["--rate", "1200.5", "--method", "ppo", "--agent-param", "clip=0.1"]}[name]
    for argv in (["run", name], ["run", name, *changed, "--seed", "7"]):
        parser, args = _parsed(argv)
        table = options_table(parser, args, get_case_study(name).hyperparameters_used)
        assert tomllib.loads(to_toml(table)) == table
        (tmp_path / "c.toml").write_text(to_toml(table))
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(table, sort_keys=False))
        (tmp_path / "c.json").write_text(json.dumps(table))
        expected = _options(argv)
        expected_rest = dict(expected)
        for file in ("c.toml", "c.yaml", "c.json"):
            found = _options(["run", name, "--config", str(tmp_path / file)])
            # the learner's hyperparameters: the same values (indexing writes DQN's and DQfD's every one, so the
            # block read back holds more keys than the one given, with the same learner as the result)
            assert _learner(name, found) == _learner(name, expected), (argv, file)
            found.pop("agent_params", None), expected_rest.pop("agent_params", None)
            assert found == expected_rest, (argv, file)


def _learner(name: str, options: dict) -> dict:
    """The hyperparameters the run of these options gives its learner: ``hyperparameters_used`` where the case
    study has it (the resolved values), else the block."""
    from argparse import Namespace

    from wield.cli.config_file import agent_parameters

    block = agent_parameters(Namespace(**options))
    used = get_case_study(name).hyperparameters_used
    return dict(used(options, block)) if used is not None else block


def test_a_null_in_yaml_or_json_leaves_the_option_unset(tmp_path):
    (tmp_path / "c.yaml").write_text("frames: 6\nout: null\nagent:\n  name: null\n")
    (tmp_path / "c.json").write_text(json.dumps({"frames": 6, "out": None}))
    for file in ("c.yaml", "c.json"):
        assert _options(["run", "caching", "--config", str(tmp_path / file)]) == _options(["run", "caching",
                                                                                          "--frames", "6"])


@pytest.mark.parametrize("text, file, message", [
    ('episodes = "ten"\n', "c.toml", "invalid value for 'episodes': 'ten'; must be an integer"),
    ("episodes = 2.5\n", "c.toml", "invalid value for 'episodes': 2.5; must be an integer"),
    ("episodes = true\n", "c.toml", "must be an integer, not true or false"),
    ("scan_share: fast\n", "c.yaml", "invalid value for 'scan_share': 'fast'; must be a number"),
    ('{"frames": [3, 4]}', "c.json", "invalid value for 'frames'"),
    ("- frames\n", "c.yaml", "holds a list, not a table of options"),
    ("frames: [1\n", "c.yaml", "not valid YAML"),
])
def test_a_wrong_value_in_a_config_file_is_one_line(tmp_path, capsys, text, file, message):
    (tmp_path / file).write_text(text)
    assert main(["run", "caching", "--config", str(tmp_path / file), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "usage:" not in err, err
    assert message in err, err
    assert not (tmp_path / "run").exists()


def test_a_choice_outside_the_allowed_ones_names_them(tmp_path, capsys):
    (tmp_path / "c.toml").write_text('metric = "speed"\n')
    assert main(["run", "indexing", "--config", str(tmp_path / "c.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'metric': 'speed'" in err and "'work'" in err and "'latency'" in err
    assert main(["run", "indexing", "--set", "k=x"]) == 2
    assert "invalid value for 'k': 'x'; must be an integer" in capsys.readouterr().err


def test_to_toml_writes_what_tomllib_reads_back():
    table = {"text": 'a "quoted" \\ line\nwith\ttabs, \x01, \x7f, é and 😀', "inf": float("inf"), "tiny": 1e-300,
             "flag": False, "items": [1, 2.5, "x"], "unset": None,
             "agent": {"policy_kwargs": {"net_arch": [64, 64]}, "dqn": {"gamma": 0.9}, "lr": 3e-4}}
    expected = {key: value for key, value in table.items() if value is not None}
    assert tomllib.loads(to_toml(table)) == expected


def test_an_experiment_writes_its_config_toml_once_and_reruns_from_it(tmp_path, capsys):
    first, second = tmp_path / "E", tmp_path / "E2"
    argv = ["run", "caching", "--class", "C1", "--trials", "1", "--episodes", "3", "--quiet"]
    assert main([*argv, "--out", str(first)]) == 0
    table = tomllib.loads((first / "config.toml").read_text())
    assert table["class_name"] == "C1" and table["trials"] == 1 and table["frames"] == 8
    assert not list((first / "trials").rglob("config.toml"))  # a trial's record is not the command's
    assert main(["run", "caching", "--config", str(first / "config.toml"), "--out", str(second)]) == 0
    capsys.readouterr()
    recorded = [json.loads((run / "classification.json").read_text()) for run in (first, second)]
    assert recorded[0]["label"] == recorded[1]["label"]
    summaries = [json.loads(next((run / "trials").rglob("summary.json")).read_text()) for run in (first, second)]
    assert summaries[0]["metrics"] == summaries[1]["metrics"]


def test_a_comparison_writes_its_config_toml_and_reruns_from_it(tmp_path, capsys):
    first, second = tmp_path / "C", tmp_path / "C2"
    assert main(["compare", "caching", "--methods", "lru,random", "--trials", "1", "--episodes", "3", "--quiet",
                 "--out", str(first)]) == 0
    written = (first / "config.toml").read_text()
    table = tomllib.loads(written)
    assert table["methods"] == "lru,random" and table["class_name"] == "C2" and table["episodes"] == 3
    assert "wield compare caching --config config.toml" in written
    assert main(["compare", "caching", "--config", str(first / "config.toml"), "--out", str(second)]) == 0
    capsys.readouterr()
    rows = [json.loads((run / "comparison.json").read_text())["methods"] for run in (first, second)]
    assert rows[0] == rows[1]


def test_a_scheduling_run_reruns_identically_from_its_config_toml(tmp_path, capsys):
    """MaskablePPO's settings are written (less n_steps and batch_size, which the training fits to the episodes)
    and read back to the same training."""
    first, second = tmp_path / "S", tmp_path / "S2"
    tiny = ["--episodes", "2", "--first-decisions", "60", "--max-decisions", "60", "--envs", "2", "--train-s", "0.05",
            "--test-s", "0.05", "--curve-s", "0.05", "--models", "4", "--rate", "200", "--gpus", "1", "--quiet"]
    assert main(["run", "scheduling", *tiny, "--out", str(first)]) == 0
    table = tomllib.loads((first / "config.toml").read_text())
    assert table["method"] == "maskable-ppo" and table["agent"]["learning_rate"] == 1e-3
    assert "n_steps" not in table["agent"] and table["agent"]["policy_kwargs"] == {"net_arch": [64, 64]}
    assert main(["run", "scheduling", "--config", str(first / "config.toml"), "--out", str(second)]) == 0
    capsys.readouterr()
    summaries = [json.loads((run / "summary.json").read_text()) for run in (first, second)]
    assert summaries[0]["methods"] == summaries[1]["methods"]
    assert summaries[0]["extras"]["training_curve"] == summaries[1]["extras"]["training_curve"]


def test_a_comparisons_agent_block_is_written_as_given(tmp_path):
    """Every method compared reads the block, so a comparison's config.toml holds it as given, not one learner's
    defaults (MaskablePPO's keys are no keys of Wield's PPO)."""
    from wield.cli.main import _run_options

    argv = ["compare", "scheduling", "--methods", "maskable-ppo,ppo", "--agent-param", "gamma=0.9"]
    parser, args = _parsed(argv)
    table = _run_options(parser, args)
    assert table is not None and table["agent"] == {"gamma": 0.9} and table["methods"] == "maskable-ppo,ppo"
    (tmp_path / "c.toml").write_text(to_toml(table))
    assert _options(["compare", "scheduling", "--config", str(tmp_path / "c.toml")]) == _options(argv)
