"""The verdict, round 2 (issue 44): rungs decided on as many paired instances as they need under a
group-sequential bound, a training-curve condition that needs its own test to be significant, and the old
keywords of ``trial_verdict`` accepted with a warning.

Synthetic and seeded: scores are drawn, nothing is trained."""

import numpy as np
import pytest

from wield.errors import ConfigError
from wield.protocols import (ComparatorScores, EvaluationInstances, InstanceScores, SequentialDesign, ladder_verdict)

RANDOM = ComparatorScores  # short alias for the rung every ladder needs


def stream(differences, spread: float = 20.0, seed: int = 0):
    """Instance i of a held-out stream: a base score shared by both sides (instances differ far more than
    the policies), the learner scoring ``differences(i)`` more than the heuristic; the random policy far
    below both, so its rung is decided at the first look."""
    rng = np.random.default_rng(seed)

    def draw(first: int, count: int):
        base = rng.normal(0.0, spread, count)
        learner = [[float(b + differences(first + i))] for i, b in enumerate(base)]
        heuristic = [[float(b)] for b in base]
        random = [[float(b - 10.0 + rng.normal())] for b in base]
        return learner, heuristic, random
    return draw


def verdict_of(draw, first: int = 10, cap: int | None = 50, curve=()):
    """The ladder over ``draw``'s first ``first`` instances, more from the same stream while undecided."""
    learner, heuristic, random = draw(0, first)
    instances = EvaluationInstances(tuple(range(1000, 1000 + first)), "synthetic instances")

    def more(start: int, count: int, wanted: frozenset[str]) -> InstanceScores:
        ours, theirs, rand = draw(start, count)
        batch = EvaluationInstances(tuple(range(1000 + start, 1000 + start + count)), "synthetic instances")
        return InstanceScores(batch, ours, [RANDOM("random-policy", "random", rand),
                                            RANDOM("sed", "heuristic", theirs)])

    return ladder_verdict(learner, [RANDOM("random-policy", "random", random), RANDOM("sed", "heuristic", heuristic)],
                          instances, curve, more=more if cap else None, cap=cap or 50)


def heavy_tail(i: int) -> float:
    """The learner is worse by about 1 on every instance but the fourth, where the heuristic collapses."""
    return 5.0 if i == 3 else -1.0 + 0.1 * np.sin(i)


def test_a_heavy_tailed_loss_is_called_worse_on_more_instances_where_ten_fixed_ones_cannot_tell():
    fixed = verdict_of(stream(heavy_tail), cap=None)
    assert fixed.rung("sed").outcome == "indistinguishable" and fixed.rung("sed").instances == 10
    sequential = verdict_of(stream(heavy_tail))
    rung = sequential.rung("sed")
    assert rung.outcome == "worse" and 10 < rung.instances <= 50 and rung.wins == 1
    line = next(line for line in sequential.lines() if "vs heuristic sed" in line)
    assert line.startswith("  vs heuristic sed: worse (-")
    assert f"; {rung.instances} instances, learner better on 1/{rung.instances})" in line
    assert sequential.rung("random-policy").instances == 10  # decided at the first look: nothing added
    assert any("Pocock's group-sequential bound" in line for line in sequential.lines())
    assert sequential.as_dict()["sequential"]["looks"] == [10, 20, 30, 40, 50]


def test_no_difference_stays_indistinguishable_at_the_cap_in_at_least_90_percent_of_200_repetitions():
    undecided = 0
    for repetition in range(200):
        noise = np.random.default_rng(20_000 + repetition).normal(0.0, 1.0, 50)
        rung = verdict_of(stream(lambda i, noise=noise: noise[i], seed=repetition), cap=50).rung("sed")
        undecided += rung.outcome == "indistinguishable"
        if rung.outcome == "indistinguishable":
            assert rung.instances == 50 and rung.at_cap
    assert undecided >= 180, undecided


def test_a_real_difference_of_half_a_standard_deviation_is_called_in_at_least_80_percent_of_200():
    called = 0
    for repetition in range(200):
        noise = np.random.default_rng(10_000 + repetition).normal(0.0, 1.0, 50)
        rung = verdict_of(stream(lambda i, noise=noise: 0.5 + noise[i], seed=repetition), cap=50).rung("sed")
        called += rung.outcome == "better"
    assert called >= 160, called


def test_an_undecided_rung_at_the_cap_says_so_in_its_line_and_in_the_reason():
    noise = np.random.default_rng(3).normal(0.0, 1.0, 50)
    draw = stream(lambda i: noise[i], seed=3)
    learner, heuristic, random = draw(0, 10)
    instances = EvaluationInstances(tuple(range(10)), "synthetic")

    def more(start, count, wanted):
        ours, theirs, _ = draw(start, count)
        return InstanceScores(EvaluationInstances(tuple(range(start, start + count)), "synthetic"), ours,
                              [RANDOM("copy", "trivial", theirs)])

    verdict = ladder_verdict(learner, [RANDOM("random-policy", "random", random), RANDOM("copy", "trivial", heuristic)],
                             instances, more=more, cap=30)
    rung = verdict.rung("copy")
    assert rung.outcome == "indistinguishable" and rung.instances == 30 and rung.at_cap
    assert "vs trivial copy: indistinguishable at the cap of 30 instances (" in "\n".join(verdict.lines())
    assert verdict.status == "no" and "indistinguishable at the cap of 30 instances" in verdict.headline()
    assert verdict.instances.count == 30


def test_pocock_bounds_match_the_published_constants():
    # Jennison and Turnbull, Table 2.1 (alpha = 0.05, two-sided): C_P(2) = 2.178, C_P(3) = 2.289, C_P(5) = 2.413
    from scipy import stats

    for looks, constant in (((10, 20), 2.178), ((10, 20, 30), 2.289), ((10, 20, 30, 40, 50), 2.413)):
        design = SequentialDesign(10, 10, looks[-1])
        assert design.looks == looks
        assert stats.norm.isf(design.nominal_alpha / 2) == pytest.approx(constant, abs=1e-3)
    assert SequentialDesign.fixed(10).nominal_alpha == 0.05 and not SequentialDesign.fixed(10).sequential
    assert SequentialDesign(10, 10, 45).looks == (10, 20, 30, 40, 45)
    with pytest.raises(ConfigError, match="verdict.cap"):
        SequentialDesign(10, 10, 0)


def test_a_rising_curve_whose_rise_is_not_significant_gives_no_with_that_reason():
    curve = [0.0, 1.0] * 5 + [0.2, 1.2] * 5  # last 10 higher by 0.2, the episodes spread by 0.5
    draw = stream(lambda i: 3.0, spread=1.0)
    verdict = verdict_of(draw, curve=curve)
    assert verdict.trend is not None and verdict.trend.higher and verdict.trend.p > 0.05
    assert not verdict.trend.rose and verdict.status == "no"
    assert "the training curve's rise is not significant" in verdict.headline()
    assert "needs < 0.05" in verdict.headline()
    assert verdict.as_dict()["trend"]["rose"] is False
    significant = verdict_of(draw, curve=[0.0, 0.1, -0.1] * 3 + [0.0] + [2.0, 2.1, 1.9] * 3 + [2.0])
    assert significant.status == "yes", significant.lines()


def test_the_old_keywords_of_trial_verdict_still_work_with_a_deprecation_warning_naming_the_replacement():
    from test_verdict import Always, Arms

    from wield.workflows import trial_verdict

    env = Arms()
    with pytest.warns(DeprecationWarning, match=r"greedy_episodes=.*use instances=EvaluationInstances"):
        with pytest.warns(DeprecationWarning, match=r"trivial=.*use comparators=\[Comparator"):
            verdict = trial_verdict(env, Always(2), seed=0, greedy_episodes=6, trivial=("pull-nothing", Always(0)),
                                    training_returns=[0.0] * 5 + [1.0] * 5)
    assert verdict["instances"]["count"] == 6 and verdict["instances"]["held_out"] is False
    assert [r["name"] for r in verdict["rungs"]] == ["random-policy", "pull-nothing"]
    assert verdict["status"] == "yes"
    with pytest.raises(TypeError, match="unexpected keyword argument 'greedy'"):
        trial_verdict(env, Always(2), seed=0, greedy=3)
    with pytest.raises(TypeError, match="'instances'"):
        trial_verdict(env, Always(2), seed=0)


def _verdict_dict(difference: float, curve=(0.0, 0.1, -0.1) * 3 + (0.0,) + (2.0, 2.1, 1.9) * 3 + (2.0,)):
    noise = np.random.default_rng(5).normal(0.0, 1.0, 50)
    return verdict_of(stream(lambda i: difference + noise[i], seed=5), curve=list(curve)).as_dict()


def test_the_ladder_counts_per_rung_reach_the_classification_lines_and_the_report():
    import pandas as pd

    from wield.analysis.records import verdict_columns
    from wield.analysis.report import ladder_section
    from wield.protocols.references import reference_lines, rung_counts

    verdicts = [_verdict_dict(3.0), _verdict_dict(-3.0), _verdict_dict(3.0, curve=[0.0, 1.0] * 5 + [0.2, 1.2] * 5)]
    counts = rung_counts(verdicts)
    assert [c["rung"] for c in counts] == ["random", "heuristic sed"]
    assert (counts[1]["better"], counts[1]["worse"], counts[1]["indistinguishable"]) == (2, 1, 0)
    lines = reference_lines("dqn", {"f": 1.0}, {"learned": {"learned": 2, "trials": 3}, "rungs": counts})
    assert "rungs over trials (better/worse/indistinguishable): random 3/0/0; heuristic sed 2/1/0" in lines[1]
    rows = pd.DataFrame([{"method": "dqn", "trial": i, **verdict_columns(v)} for i, v in enumerate(verdicts)])
    section = ladder_section(rows)
    assert section is not None and len(section.tables[0]) == 6
    assert set(section.tables[0]["outcome"]) == {"better", "worse"}
    assert "learner better on" in section.tables[0].columns
    assert "dqn, trial 2: no - the training curve's rise is not significant" in "\n".join(section.text)


def test_the_reports_definition_of_learned_is_written_from_the_deciding_constants():
    from wield.protocols import verdict
    from wield.protocols.verdict import learned_definition

    text = learned_definition()
    assert f"one-sided Welch p < {verdict.TREND_ALPHA:g}" in text and "Pocock" in text and "p < 0.0158" in text
    assert f"at least {verdict.MIN_INSTANCES} paired instances" in text and "2 standard deviations" not in text


def test_a_comparator_given_a_scorer_is_scored_only_while_its_rung_is_undecided():
    from test_verdict import Always, Arms

    from wield.workflows import Comparator, InstanceBatch, trial_verdict

    scored_from = []

    def worse_arm(first: int, count: int) -> Comparator:
        def scorer():
            scored_from.append(first)
            return [[10.0 * (episode + 1.0) - 5.0] for episode in range(count)]  # 5 below the learner each time
        return Comparator("worse-arm", "heuristic", scorer=scorer)

    def batch(first: int, count: int) -> InstanceBatch:
        instances = EvaluationInstances(tuple(range(100 + first, 100 + first + count)), "test episodes")
        return InstanceBatch(Arms(), instances, [Comparator("same-arm", "trivial", Always(2)), worse_arm(first, count)])

    first = batch(0, 10)
    verdict = trial_verdict(first.env, Always(2), seed=0, instances=first.instances, comparators=first.comparators,
                            training_returns=[], more=batch, cap=30)
    rungs = {rung["name"]: rung for rung in verdict["rungs"]}
    assert rungs["same-arm"]["outcome"] == "indistinguishable" and rungs["same-arm"]["instances"] == 30
    assert rungs["worse-arm"]["outcome"] == "better" and rungs["worse-arm"]["instances"] == 10
    assert scored_from == [0]  # the batches from instance 10 and 20 never ran the decided heuristic
    with pytest.raises(ConfigError, match="exactly one of policy, scores and scorer"):
        Comparator("both", "heuristic", scores=[[1.0]], scorer=lambda: [[1.0]])
