"""An objective that says when it cannot tell: confidence intervals decide latency clauses, inconclusive
trials are classified apart, and indexing's evaluation measures every configuration side by side in rounds."""

from __future__ import annotations

import pytest

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.defaults import OBJECTIVE
from case_studies.indexing.evaluation import (EXECUTIONS_PER_ROUND, MIN_ROUNDS, evaluate_methods,
                                              full_index_configuration, improvement_interval,
                                              measure_configuration, measure_side_by_side)
from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.reproduce import compare_outcomes
from wield.metrics import Metric
from wield.protocols import Condition, Objective, TrialOutcome, classify
from wield.protocols.references import frequency_label
from wield.tables import methods_table

LATENCY = "mean_latency_improvement"


def row(value: float, ci: list[float] | None, size: float = 0.3) -> dict:
    metrics = {LATENCY: value, "relative_index_size": size}
    if ci is not None:
        metrics[f"{LATENCY}_ci"] = ci
    return metrics


def test_a_latency_interval_straddling_the_threshold_is_inconclusive():
    assert OBJECTIVE.decide(row(0.55, [0.45, 0.62])) == "inconclusive"
    assert OBJECTIVE.outcome(row(0.55, [0.45, 0.62])) == "inconclusive"
    assert not OBJECTIVE.met(row(0.55, [0.45, 0.62]))
    assert [c.metric for c in OBJECTIVE.undecided_conditions(row(0.55, [0.45, 0.62]))] == [LATENCY]
    assert OBJECTIVE.failed_conditions(row(0.55, [0.45, 0.62])) == []


def test_an_interval_wholly_above_is_met_and_wholly_below_is_not():
    assert OBJECTIVE.decide(row(0.6, [0.52, 0.66])) == "met"
    assert OBJECTIVE.outcome(row(0.6, [0.52, 0.66])) == "success"
    assert OBJECTIVE.decide(row(0.4, [0.31, 0.49])) == "not met"
    assert OBJECTIVE.outcome(row(0.4, [0.31, 0.49])) == "straggler"  # improved, not enough
    assert OBJECTIVE.outcome(row(-0.1, [-0.2, -0.05])) == "failure"
    # the point value alone would say met: the interval decides
    assert OBJECTIVE.decide(row(0.51, [0.3, 0.49])) == "not met"


def test_deterministic_clauses_decide_exactly_and_override_an_undecided_one():
    assert OBJECTIVE.decide(row(0.55, None)) == "met"  # no interval: the value decides (older records)
    assert OBJECTIVE.decide(row(0.45, None)) == "not met"
    # too large an index set is not met whatever the latency interval says
    assert OBJECTIVE.decide(row(0.55, [0.45, 0.62], size=0.8)) == "not met"
    assert OBJECTIVE.outcome(row(0.55, [0.45, 0.62], size=0.8)) == "straggler"
    lower = Objective("relative_index_size", 0.5, higher_is_better=False)
    assert lower.decide({"relative_index_size": 0.4, "relative_index_size_ci": [0.45, 0.35]}) == "met"  # order-free
    assert lower.decide({"relative_index_size": 0.4, "relative_index_size_ci": [0.35, 0.55]}) == "inconclusive"
    assert Condition(LATENCY, ">=", 0.5).decide(row(0.7, [0.5, 0.8])) == "met"  # on the threshold counts


def test_classification_counts_inconclusive_trials_apart():
    outcomes = [TrialOutcome(i, 2000, o, 0.0) for i, o in
                enumerate(["success", "inconclusive", "success", "failure", "straggler"])]
    c = classify("C2", outcomes)
    assert (c.s, c.inconclusive, c.decided) == (5, 1, 4)
    assert c.f == pytest.approx(0.5)  # 2 successes of 4 decided trials
    assert c.label().startswith("C2(n=2000, s=5, f=0.50, 1 inconclusive)")
    assert c.as_dict()["inconclusive"] == 1
    assert "1 inconclusive" in frequency_label(c)
    undecided = classify("C1", [TrialOutcome(i, 10, "inconclusive", 0.0) for i in range(3)])
    assert (undecided.met, undecided.inconclusive, undecided.ci_low, undecided.ci_high) == (False, 3, 0.0, 1.0)
    assert "all 3 inconclusive" in undecided.label()
    plain = classify("C2", [TrialOutcome(i, 10, "success", 0.0) for i in range(2)])
    assert "inconclusive" not in plain.label() and plain.inconclusive == 0


def test_reproduce_reports_outcomes_that_differ():
    recorded = {"dqn": row(0.6, [0.55, 0.65]), "greedy": row(0.6, [0.55, 0.65]), "none": row(0.0, [0.0, 0.0])}
    rerun = {"dqn": row(0.3, [0.25, 0.35]), "greedy": row(0.52, [0.45, 0.6]), "none": row(0.0, [0.0, 0.0])}
    outcomes, contradictions, notes = compare_outcomes(OBJECTIVE.as_dict(), recorded, rerun)
    assert outcomes == {"dqn": ["met", "not met"], "greedy": ["met", "inconclusive"], "none": ["not met", "not met"]}
    assert len(contradictions) == 1 and contradictions[0].startswith("dqn: objective")
    assert "60.0% [55.0, 65.0]" in contradictions[0] and "30.0% [25.0, 35.0]" in contradictions[0]
    assert len(notes) == 1 and notes[0].startswith("greedy:")


def test_the_table_prints_an_interval_beside_its_value():
    metric = Metric(LATENCY, "mean latency improvement", "fraction")
    table = methods_table({"dqn": row(0.603, [0.551, 0.64])}, [metric])
    assert "60.3% [55.1, 64.0]" in table


def test_the_bootstrap_interval_holds_the_value_and_narrows_with_agreeing_rounds():
    baseline = [[1.0, 2.0, 1.5]] * 6
    steady = [[0.4, 0.8, 0.6]] * 6
    assert improvement_interval(steady, baseline, "mean") == pytest.approx([0.6, 0.6])
    noisy = [[0.4, 0.8, 0.6], [0.9, 1.7, 1.4], [0.4, 0.7, 0.6], [0.5, 0.9, 0.5], [1.0, 1.9, 1.2], [0.4, 0.8, 0.6]]
    low, high = improvement_interval(noisy, baseline, "mean")
    assert low < high  # rounds that disagree give an interval, not a point
    assert improvement_interval(noisy[:1], baseline[:1], "mean") == pytest.approx([0.6, 0.6])  # one round


def test_side_by_side_rounds_measure_every_configuration_in_each_round(small_collection, small_workload, tmp_path):
    task = build_indexing_task(small_collection, metric="work", workdir=tmp_path)
    try:
        system = task.system
        full = full_index_configuration(small_workload)
        configurations = {"none": [], "full": full, "one": [full_index(small_workload[0])]}
        seen = []

        def decided(measured):
            seen.append({name: len(m.rounds) for name, m in measured.items()})
            return len(seen) == 2

        executions = system.counters.query_executions
        measured = measure_side_by_side(system, small_workload, configurations, repetitions=1, decided=decided)
        # after every round each configuration has been measured as many times: the rounds interleave
        assert seen == [{name: MIN_ROUNDS for name in configurations}, {name: MIN_ROUNDS + 1 for name in configurations}]
        assert all(len(m.rounds) == MIN_ROUNDS + 1 and all(len(r) == len(small_workload) for r in m.rounds)
                   for m in measured.values())
        # one counted execution per query and configuration (work, plans), then the rounds' timed ones
        assert system.counters.query_executions - executions == \
            len(configurations) * len(small_workload) * (1 + (MIN_ROUNDS + 1) * EXECUTIONS_PER_ROUND)
        # each copy holds exactly its configuration: the same work and index uses as measured alone
        for name, configuration in configurations.items():
            alone = measure_configuration(system, small_workload, configuration, repetitions=1)
            assert measured[name].work == alone.work and measured[name].uses == alone.uses
        capped = measure_side_by_side(system, small_workload, {"none": [], "full": full}, repetitions=1,
                                      decided=lambda measured: False, max_rounds=MIN_ROUNDS + 2)
        assert [len(m.rounds) for m in capped.values()] == [MIN_ROUNDS + 2] * 2
        metrics = evaluate_methods(system, small_workload, {"one": configurations["one"]}, repetitions=1)
        low, high = metrics["full"].mean_latency_improvement_ci
        assert low <= high
        assert metrics["none"].mean_latency_improvement_ci == [0.0, 0.0]
        assert metrics["one"].latency_rounds == MIN_ROUNDS
        assert metrics["full"].relative_index_size == 1.0
    finally:
        task.system.close()


def test_rows_given_the_same_set_share_one_copy_and_one_measurement(small_collection, small_workload, tmp_path):
    task = build_indexing_task(small_collection, metric="work", workdir=tmp_path)
    try:
        system = task.system
        one = full_index(small_workload[0])
        # a greedy row that created no index, and a row naming the same index inverted (the same B-tree)
        inverted = IndexSpec(tuple((field, "desc" if way == "asc" else "asc") for field, way in one.keys))
        configurations = {"none": [], "greedy": [], "one": [one], "inverted": [inverted]}
        executions, builds = system.counters.query_executions, system.counters.builds_for_configurations
        measured = measure_side_by_side(system, small_workload, configurations, repetitions=1)
        assert measured["greedy"] is measured["none"] and measured["inverted"] is measured["one"]
        # two copies measured, not four: one counted execution and the rounds' timed ones per query and copy
        assert system.counters.query_executions - executions == \
            2 * len(small_workload) * (1 + MIN_ROUNDS * EXECUTIONS_PER_ROUND)
        assert system.counters.builds_for_configurations - builds == 1
        metrics = evaluate_methods(system, small_workload, {"greedy": []}, repetitions=1)
        assert metrics["greedy"].mean_latency_improvement == 0.0  # measured as the no-index row, not beside it
        assert metrics["greedy"].mean_latency_improvement_ci == [0.0, 0.0]
    finally:
        task.system.close()


def test_without_copies_every_configuration_is_switched_to_in_each_round(small_collection, small_workload, tmp_path,
                                                                         monkeypatch):
    from case_studies.indexing import evaluation

    monkeypatch.setattr(evaluation, "COPY_BUDGET_BYTES", 0)  # copies would not fit: one database, switched
    task = build_indexing_task(small_collection, metric="work", workdir=tmp_path)
    try:
        system = task.system
        configurations = {"none": [], "one": [full_index(small_workload[0])]}
        builds = system.counters.builds_for_configurations
        measured = measure_side_by_side(system, small_workload, configurations, repetitions=1)
        assert [len(m.rounds) for m in measured.values()] == [MIN_ROUNDS, MIN_ROUNDS]
        # the index is dropped for 'none' and built again when its configuration's turn comes round (the order
        # rotates each round, so a configuration ending one round may start the next without a switch)
        assert system.counters.builds_for_configurations - builds >= 2 and system.counters.index_rebuilds >= 1
        alone = measure_configuration(system, small_workload, configurations["one"], repetitions=1)
        assert measured["one"].work == alone.work and measured["one"].uses == alone.uses
    finally:
        task.system.close()
