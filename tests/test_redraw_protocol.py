"""``wield run indexing --train-on redraws`` (issue 42, goal 3): training episodes play redraws of the training
workload from a seed stream the verdict never draws from; the option is recorded, reproduced and refused where
it is meaningless (generalisation classes)."""

from __future__ import annotations

import json
import tomllib

import pytest

from case_studies.indexing.reproduce import reproduce_indexing_run
from case_studies.indexing.run import IndexingRunConfig
from case_studies.indexing.verdict import VERDICT_INSTANCES, training_seeds, verdict_workloads
from wield.cli import main
from wield.errors import ConfigError
from wield.protocols import EvaluationInstances
from wield.workflows import verdict_cap
from workloads import QueryWorkloadConfig, WorkloadSchedule, make_query_schedule, regenerate_query_schedule

TINY = ["--documents", "1000", "--queries", "4", "--episodes", "4", "--repetitions", "1", "--quiet",
        "--verdict-cap", str(VERDICT_INSTANCES)]


def _values(queries) -> list:
    return [[(p.field, p.op, p.values()) for p in q.predicates] for q in queries]


def test_redraw_schedule_keeps_the_shapes_draws_new_values_and_regenerates(small_collection):
    config = QueryWorkloadConfig(n_queries=6)
    plain = make_query_schedule(small_collection, config, 5, 1, per_episode=False)
    schedule = make_query_schedule(small_collection, config, 5, 4, per_episode=False, redraws=True)
    workload = plain.task_for_episode(0)
    episodes = [schedule.task_for_episode(i) for i in range(4)]
    for queries in episodes:  # the training workload's queries, in order, with other predicate values
        assert [q.shape() for q in queries] == [q.shape() for q in workload]
        assert _values(queries) != _values(workload)
    assert len({json.dumps(_values(q), default=str) for q in episodes}) == 4  # every episode its own draw
    assert regenerate_query_schedule(schedule, small_collection).to_json() == schedule.to_json()
    assert "redraws" not in plain.params  # the default schedule's JSON is what it was
    with pytest.raises(ConfigError, match="'redraws'"):
        make_query_schedule(small_collection, config, 5, 4, per_episode=True, redraws=True)


def test_training_redraw_seeds_are_disjoint_from_the_verdicts_and_a_collision_is_refused():
    seeds = IndexingRunConfig(seed=3).single_run_seeds()
    trained = training_seeds(seeds, 500, redraws=True)
    assert len(set(trained)) == 501 and trained[0] == seeds.train_workload_seed
    held_out = seeds.evaluation_seeds(verdict_cap())  # every instance a verdict may draw, up to its cap
    assert not set(trained) & set(held_out) and not set(trained) & set(seeds.selection_seeds(verdict_cap()))
    EvaluationInstances(held_out, "held out").check_unused(trained)  # what the verdict checks: passes
    with pytest.raises(ConfigError, match="used in training"):  # and would refuse a training seed
        EvaluationInstances((held_out[0], trained[1]), "collides").check_unused(trained)


def test_train_on_redraws_runs_records_reproduces_and_is_refused_for_c4(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "indexing", "--train-on", "redraws", *TINY, "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["train_on"] == "redraws"
    assert tomllib.loads((out / "config.toml").read_text())["train_on"] == "redraws"
    schedule, test = (WorkloadSchedule.load(out / name) for name in ("schedule.json", "schedule-test.json"))
    played = [schedule.task_for_episode(i) for i in range(4)]
    assert len({json.dumps(_values(q), default=str) for q in played}) == 4  # each episode other predicate values
    assert all(_values(q) != _values(test.task_for_episode(0)) for q in played)
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["train_on"] == evaluation["verdict"]["train_on"] == "redraws"
    assert "best_training_reward" not in evaluation  # a best set for some redraw is no figure of the test workload
    assert evaluation["methods"]["dqn"]["indexes"] == evaluation["methods"]["dqn-greedy"]["indexes"]
    assert any("protocol --train-on redraws" in note for note in evaluation["verdict"]["notes"])
    # the verdict's instances are redraws of the test workload with seeds no training episode used
    seeds = IndexingRunConfig(**json.loads((out / "config.json").read_text())).single_run_seeds()
    assert not set(evaluation["verdict"]["instances"]["seeds"]) & set(training_seeds(seeds, 4, redraws=True))
    # reproduced: every deterministic figure; the latency objective (wall time) may flip under load only
    result = reproduce_indexing_run(out)
    assert result["deterministic"] and all(": objective mean_latency_improvement" in d for d in result["differences"])
    capsys.readouterr()
    assert main(["run", "indexing", "--class", "C4", "--train-on", "redraws", *TINY,
                 "--out", str(tmp_path / "c4")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "'train-on': 'redraws'" in error and "blackbox" in error
    assert not (tmp_path / "c4").exists()


def test_verdict_workloads_are_redraws_of_the_test_workload_under_both_protocols(tmp_path):
    """The held-out instances do not depend on the protocol: the same seeds, the same redraws."""
    from case_studies.indexing.build import build_run
    from wield.workflows import RunRecord

    config = IndexingRunConfig(documents=2000, queries=4, episodes=3, repetitions=1).validate()
    seeds = config.single_run_seeds()
    drawn = []
    for redraws in (False, True):
        record = RunRecord(tmp_path / str(redraws))
        run = build_run(config, seeds, record, redraws=redraws)
        try:
            workloads, instances = verdict_workloads(run, config.queries, seeds)
            drawn.append((_values(run.test_workload), [_values(w) for w in workloads], instances.seeds))
        finally:
            run.close()
    assert drawn[0] == drawn[1]


def test_a_selection_stream_verdict_draws_other_redraws_and_says_so(tmp_path):
    """Variants are chosen on the selection stream (``instance_stream("selection")``), never on the verdict's
    instances: other seeds, other predicate values, a description that says what they are for."""
    from case_studies.indexing.build import build_run
    from wield.workflows import RunRecord
    from wield.workflows.verdict_settings import instance_stream, verdict_stream

    config = IndexingRunConfig(documents=2000, queries=4, episodes=3, repetitions=1).validate()
    seeds = config.single_run_seeds()
    run = build_run(config, seeds, RunRecord(tmp_path / "run"), redraws=True)
    try:
        verdict, verdict_instances = verdict_workloads(run, config.queries, seeds)
        with instance_stream("selection"):
            assert verdict_stream() == "selection"
            chosen, chosen_instances = verdict_workloads(run, config.queries, seeds)
        assert verdict_stream() == "evaluation"  # the context ends
    finally:
        run.close()
    assert chosen_instances.seeds == seeds.selection_seeds(VERDICT_INSTANCES)
    assert not set(chosen_instances.seeds) & set(verdict_instances.seeds)
    assert [_values(w) for w in chosen] != [_values(w) for w in verdict]
    assert "selection stream" in chosen_instances.description and "selection" not in verdict_instances.description
    with pytest.raises(ConfigError, match="'instances'.*evaluation"):
        with instance_stream("test"):
            pass
