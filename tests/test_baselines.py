"""Optimiser baselines through Wield's abstractions: search spaces, OpenTuner, random search, wield compare."""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from case_studies.indexing.run import IndexingRunConfig
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.plugin import CASE_STUDY
from case_studies.indexing.reproduce import DETERMINISTIC
from wield.workflows import run_trial
from case_studies.indexing.search_space import IndexSetSpace
from wield.agents import OpenTunerAgent, RandomSearchAgent
from wield.cli import main
from wield.errors import ConfigError
from wield.schemas import CategoricalParameter, IntegerParameter, SearchSpace
from wield.workflows.search import run_configuration_search

TINY = ["--documents", "2000", "--queries", "5", "--episodes", "2", "--repetitions", "1", "--metric", "work"]


def quadratic_space() -> SearchSpace:
    return SearchSpace([IntegerParameter(f"x{i}", 0, 15) for i in range(6)]
                       + [CategoricalParameter("mode", ("a", "b", "c"))])


def quadratic(t: int, configuration: dict) -> float:
    """A reward with one optimum (x_i = i, mode = b); 0 is best."""
    return -float(sum((configuration[f"x{i}"] - i) ** 2 for i in range(6)) + 5 * (configuration["mode"] != "b"))


def test_search_space_validates_samples_and_describes():
    space = quadratic_space()
    configuration = space.sample(np.random.default_rng(0))
    assert space.validate(configuration) == configuration
    with pytest.raises(ConfigError, match="x3.*expected integer 0..15"):
        space.validate({**configuration, "x3": 16})
    with pytest.raises(ConfigError, match="'bogus'.*allowed"):
        space.validate({**configuration, "bogus": 1})
    with pytest.raises(ConfigError, match="mode"):
        space.validate({k: v for k, v in configuration.items() if k != "mode"})
    assert space.log10_size() == pytest.approx(6 * np.log10(16) + np.log10(3))
    assert [p["name"] for p in space.describe()][-1] == "mode"


def test_index_set_space_decodes_what_it_encodes():
    space = IndexSetSpace(("a", "b", "c", "d"), slots=3, k=3)
    indexes = [IndexSpec.of([("b", "asc"), ("a", "desc")]), IndexSpec.of([("d", "asc")])]
    assert space.decode(space.encode(indexes)) == indexes
    configuration = space.encode(indexes)
    configuration["index02_key0_field"] = 2  # a third slot repeating the first index's first field ...
    configuration["index02_key1_field"] = 2  # ... twice: the repeat is skipped
    assert space.decode(configuration) == [*indexes, IndexSpec.of([("b", "asc")])]
    assert space.decode({name: 0 for name in space.space.names}) == []  # every slot empty: no index


def test_opentuner_is_seeded_and_leaves_the_global_generators_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def history(seed: int) -> list[float]:
        agent = OpenTunerAgent(quadratic_space(), seed=seed)
        try:
            random.seed(123)
            np.random.seed(123)
            before = random.random(), np.random.rand()
            random.seed(123)
            np.random.seed(123)
            result = run_configuration_search(agent, quadratic, 60)
            after = random.random(), np.random.rand()  # OpenTuner drew from its own copies, not these
            assert before == after
            return [entry.reward for entry in result.history]
        finally:
            agent.close()

    first, again, other = history(5), history(5), history(6)
    assert first == again
    assert first != other
    assert max(first) > first[0]
    assert list(tmp_path.iterdir()) == []  # no opentuner.db/, no opentuner.log in the current directory


def test_random_search_is_seeded_and_greedy_act_returns_the_best():
    def search(seed):
        agent = RandomSearchAgent(quadratic_space(), seed=seed)
        return agent, run_configuration_search(agent, quadratic, 30)

    (agent, first), (_, again) = search(1), search(1)
    assert [e.configuration for e in first.history] == [e.configuration for e in again.history]
    assert agent.act(explore=False) == first.best_configuration
    assert first.best_reward == max(e.reward for e in first.history)
    assert agent.steps_observed == 30


def test_opentuner_finds_a_better_index_set_than_its_first_and_writes_only_the_run_record(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    run_dir = tmp_path / "record"
    config = IndexingRunConfig(documents=3000, queries=6, episodes=6, repetitions=1, seed=3)
    summary = run_trial("indexing", {**asdict(config), "method": "opentuner"}, config.single_run_seeds(), str(run_dir))
    evaluation = json.loads((run_dir / "evaluation.json").read_text())
    assert summary.evaluations == summary.transitions == evaluation["transitions"] == 6 * 6  # the learner's budget n
    assert evaluation["best_training_reward"] > evaluation["first_reward"]
    rows = (run_dir / "episodes.csv").read_text().splitlines()
    assert len(rows) == 1 + 36
    assert list(cwd.iterdir()) == []
    assert not list(run_dir.rglob("opentuner*"))  # the results database stayed in memory
    metrics = summary.metrics
    assert metrics["method"] == "opentuner" and metrics["indexes_created"] >= 1
    assert 0 < metrics["relative_index_size"]
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"


def _compare(out: Path, capsys, *extra: str) -> str:
    assert main(["compare", "indexing", "--class", "C2", "--trials", "2", "--out", str(out), *TINY, *extra]) == 0
    return capsys.readouterr().out


@pytest.mark.timeout(1800)  # two comparisons of every method: 70 s at load 3, over 600 s at load 10
def test_compare_runs_every_method_on_one_plan_and_the_same_seeds_give_the_same_table(tmp_path, capsys):
    # every method the case study offers (dqfd with the DQfD agent); the Stable-Baselines3 reference learners
    # go through compare in test_sb3_agents.py
    methods = ",".join(m for m in CASE_STUDY.methods if not m.startswith("sb3-"))
    printed = _compare(tmp_path / "a", capsys, "--methods", methods, "--quiet")
    for label in ("mean latency improvement over no index", "index size relative to the full index",
                  "unused indexes", "budget n (transitions)",
                  "C2(n=10, s=2, f=", "C2(n=0, s=2, f="):
        assert label in printed
    for method in methods.split(","):
        assert f"  {method}" in printed
    plans = {method: [json.loads(p.read_text()) for p in sorted((tmp_path / "a" / method).glob("trials/*/seeds.json"))]
             for method in methods.split(",")}
    assert all(plan == plans["dqn"] for plan in plans.values())  # the same trial plan for every method
    # The costliest methods' trials ran first (so parallel workers end together), equal costs interleaved.
    started = sorted((p.stat().st_mtime_ns, p.parent.parent.parent.name, p.parent.name)
                     for p in (tmp_path / "a").glob("*/trials/*/seeds.json"))
    expected = sorted(((m, f"trial-{t:03d}") for m in methods.split(",") for t in range(2)),
                      key=lambda e: (-CASE_STUDY.method_costs.get(e[0], 1.0), e[1]))
    assert [(method, trial) for _, method, trial in started] == expected

    first = json.loads((tmp_path / "a" / "comparison.json").read_text())["methods"]
    second = json.loads(_compare(tmp_path / "b", capsys, "--methods", methods, "--json"))["methods"]
    deterministic = [m for m in DETERMINISTIC if m in first[0]["per_trial"]] + ["mean_work_improvement"]
    for a, b in zip(first, second):
        assert a["method"] == b["method"]
        assert (a["transitions"], a["evaluations"]) == (b["transitions"], b["evaluations"])
        for metric in deterministic:  # latency is wall time; everything the work metric decides is equal
            assert a["per_trial"][metric] == b["per_trial"][metric], (a["method"], metric)
    budgets = {row["method"]: row["evaluations"]["median"] for row in first}
    assert 0 < budgets.pop("advisor")  # the evaluations the index advisor made (test_advisor.py)
    no_evaluation = ("full", "none", "estimated-advisor")  # they decide without evaluating anything
    assert budgets == {m: 0 if m in no_evaluation else 5 * 2 for m in methods.split(",") if m != "advisor"}  # n = Q x E

    # An optimiser's trial reruns from its record alone, exactly under the work metric.
    assert main(["reproduce", str(tmp_path / "a" / "opentuner" / "trials" / "trial-001")]) == 0
    assert "match exactly" in capsys.readouterr().out

    # Resuming: every trial is finished, so nothing is rerun and the table is the same.
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "a").glob("*/trials/*/summary.json")}
    _compare(tmp_path / "a", capsys, "--methods", methods, "--quiet")
    assert stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "a").glob("*/trials/*/summary.json")}


def test_compare_rejects_an_unknown_method(tmp_path, capsys):
    assert main(["compare", "indexing", "--out", str(tmp_path / "x"), *TINY, "--methods", "dqn,bogus"]) == 2
    error = capsys.readouterr().err
    assert "'bogus'" in error and "unknown method" in error and "'opentuner'" in error
    assert not (tmp_path / "x").exists()
