"""Randomisation classes, trial plans, objectives and classification (docs/design.md section 4)."""

from __future__ import annotations

import pytest

from wield.errors import ConfigError
from wield.protocols import CLASSES, Objective, TrialOutcome, TrialPlan, classify

# For each class: (train workload shared, test workload shared, optimisation seed shared, test dist.)
EXPECTED = {
    "C0": (True, True, True, "in"),
    "C1": (True, True, False, "in"),
    "C2": (False, False, False, "in"),
    "C3": (True, True, False, "in"),
    "C4": (False, False, False, "in"),
    "C5": (True, True, False, "out"),
    "C6": (False, False, False, "out"),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_each_class_shares_and_varies_the_right_seeds(name):
    plan = TrialPlan.make(name, trials=4, base_seed=9)
    shared = plan.shared()
    train, test, optimisation, distribution = EXPECTED[name]
    assert shared["train_workload_seed"] is train
    assert shared["test_workload_seed"] is test
    assert shared["optimisation_seed"] is optimisation
    assert {t.test_distribution for t in plan.trials} == {distribution}
    blackbox = not CLASSES[name].generalisation
    for trial in plan.trials:
        assert (trial.train_workload_seed == trial.test_workload_seed) is blackbox
    assert plan == TrialPlan.make(name, trials=4, base_seed=9)
    assert "shared by all trials" in plan.describe()


def test_plans_differ_by_base_seed_and_extend_consistently():
    assert TrialPlan.make("C4", 3, 1).trials != TrialPlan.make("C4", 3, 2).trials
    assert TrialPlan.make("C4", 5, 1).trials[:3] == TrialPlan.make("C4", 3, 1).trials


def test_bad_class_and_trials_are_clear_errors():
    with pytest.raises(ConfigError, match="'C0', 'C1'"):
        TrialPlan.make("C9", 3)
    with pytest.raises(ConfigError, match="'trials'"):
        TrialPlan.make("C1", 0)


def test_objective_outcomes_and_unknown_metric():
    objective = Objective("mean_latency_improvement", 0.5)
    assert objective.outcome({"mean_latency_improvement": 0.7}) == "success"
    assert objective.outcome({"mean_latency_improvement": 0.2}) == "straggler"
    assert objective.outcome({"mean_latency_improvement": -0.1}) == "failure"
    with pytest.raises(ConfigError, match="'speedup'.*allowed: 'a', 'b'"):
        Objective("speedup", 1.0).validate(["a", "b"])


def test_classification_with_exact_interval():
    outcomes = [TrialOutcome(i, 2000, o, 0.0)
                for i, o in enumerate(["success", "success", "success", "success", "failure"])]
    result = classify("C2", outcomes)
    assert (result.n, result.s, result.f) == (2000, 5, 0.8)
    # Clopper-Pearson 95% interval for 4/5
    assert result.ci_low == pytest.approx(0.2836, abs=1e-3)
    assert result.ci_high == pytest.approx(0.9949, abs=1e-3)
    assert result.label().startswith("C2(n=2000, s=5, f=0.80)")
    with pytest.raises(ConfigError):
        classify("C2", [])


def test_a_compound_objective_needs_every_condition_and_reads_back():
    from wield.protocols import Condition, parse_objective

    objective = Objective("mean_latency_improvement", 0.5, also=(Condition("relative_index_size", "<=", 0.5),))
    assert objective.outcome({"mean_latency_improvement": 0.8, "relative_index_size": 0.4}) == "success"
    # latency met but too much memory: the primary metric improved, so a straggler, not a success
    assert objective.outcome({"mean_latency_improvement": 0.8, "relative_index_size": 1.1}) == "straggler"
    assert [c.metric for c in objective.failed_conditions({"mean_latency_improvement": 0.8,
                                                          "relative_index_size": 1.1})] == ["relative_index_size"]
    assert objective.describe() == "mean_latency_improvement >= 0.5 and relative_index_size <= 0.5"
    assert parse_objective(objective.describe()) == objective
    assert Objective.from_dict(objective.as_dict()) == objective
    old = {"metric": "improvement", "threshold": 0.3, "higher_is_better": True, "straggler_above": 0.0}
    assert Objective.from_dict(old).as_dict() == old  # records written before conjunctions read back unchanged
    with pytest.raises(ConfigError, match="'objective'"):
        parse_objective("latency > 0.5")
    with pytest.raises(ConfigError, match="'objective.metric'"):
        objective.validate(["mean_latency_improvement"])


def test_the_references_say_when_random_play_meets_the_objective_as_often():
    from wield.protocols.references import discrimination_note, reference_lines

    assert discrimination_note("dqn", 0.8, [("the random policy", 0.2)]) is None
    note = discrimination_note("dqn", 0.6, [("the random policy", 0.2), ("random search", 0.6)])
    assert note.startswith("the objective does not discriminate: random search")
    classification = {"f": 0.4, "ci_low": 0.05, "ci_high": 0.85, "s": 5}
    lines = reference_lines("dqn", classification, {"learned": {"learned": 4, "trials": 5},
                                                    "random_policy": {"row": "random", **classification}})
    assert "4/5 trials" in lines[0] and "f = 0.40" in lines[1] and "does not discriminate" in lines[2]


def test_the_references_classify_the_learned_greedy_row_beside_the_search_outcome():
    from wield.protocols import Objective, TrialSummary
    from wield.protocols.references import reference_lines, references_of

    objective = Objective("improvement", 0.5)
    rows = [(0.6, 0.7, 0.1), (0.6, 0.2, 0.1), (0.6, 0.8, 0.9)]  # (search outcome, greedy, random) per trial
    summaries = [TrialSummary(trial=i, method="dqn", transitions=20, evaluations=20, metrics={"improvement": s},
                              methods={"dqn": {"improvement": s}, "dqn-greedy": {"improvement": g},
                                       "random-policy": {"improvement": r}})
                 for i, (s, g, r) in enumerate(rows)]
    found = references_of("C1", summaries, objective, "random-policy", "{method}-greedy")
    assert found["greedy"]["row"] == "dqn-greedy" and found["greedy"]["s"] == 3
    assert found["greedy"]["f"] == 2 / 3 and found["greedy"]["n"] == 20  # the learner's own transitions
    assert found["random_policy"]["f"] == 1 / 3 and set(found["greedy"]) == set(found["random_policy"])
    lines = reference_lines("dqn", {"f": 1.0, "ci_low": 0.3, "ci_high": 1.0, "s": 3}, found)
    assert any(line.startswith("  learned greedy policy on the same trials (row 'dqn-greedy'): f = 0.67")
               for line in lines)
    # a method whose own row is the greedy policy has no separate greedy reference
    assert "greedy" not in references_of("C1", summaries, objective, "random-policy", "{method}")
