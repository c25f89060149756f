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
