"""The learning verdict: a ladder of paired comparisons on evaluation instances (wield.protocols.verdict).

Yes where learning is known to happen, no where the reward ignores the action, "worse" against a heuristic
that beats the learner, a refusal for instances that selected the model, the same instances for every
comparator, and "too little evidence" instead of a yes from a short curve or too few instances."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from wield.agents import DQNAgent, DQNConfig
from wield.agents.base import Agent
from wield.errors import ConfigError
from wield.protocols import ComparatorScores, EvaluationInstances, ladder_verdict, paired_rung, verdict_lines
from wield.workflows import Comparator, assess_learning, train_online, trial_verdict

STEPS = 10


class Arms(gym.Env):
    """Ten steps per episode; instance (episode) ``i`` pays a base of ``i`` per step, so instances differ far
    more than policies do, plus ``payoffs[action]``. Without ``informative`` every arm pays the same. Every
    episode index played is kept, per reset, in ``played``."""

    payoffs = (0.0, 0.5, 1.0, 0.0)

    def __init__(self, informative: bool = True) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Discrete(4)
        self.informative = informative
        self.played: list[int] = []
        self._step = self._base = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._step = 0
        self._base = int((options or {}).get("episode", 0))
        self.played.append(self._base)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self._step += 1
        reward = self._base + (self.payoffs[int(action)] if self.informative else 0.5)
        return np.zeros(1, np.float32), float(reward), self._step >= STEPS, False, {}


class Always(Agent):
    """A policy that always pulls one arm."""

    def __init__(self, arm: int) -> None:
        self.arm = arm

    def act(self, observation, explore=True, mask=None):
        return self.arm


FAST = DQNConfig(learning_rate=5e-3, hidden_sizes=(16,), batch_size=8, replay_capacity=200, epsilon_decay_steps=100,
                 target_sync_every=10, updates_per_observation=2, prioritized=False)


def trained(env: gym.Env, episodes: int = 40):
    agent = DQNAgent(env.observation_space, env.action_space, FAST, seed=0)
    results = train_online(env, agent, episodes, progress=False)
    return agent, [r.total_reward for r in results]


def held_out(count: int = 10, first: int = 100) -> EvaluationInstances:
    """Instances at episodes 0..count-1 (base payoffs 0..count-1), drawn with seeds first, first + 1, ..."""
    return EvaluationInstances(tuple(range(first, first + count)), "test episodes")


def test_a_task_where_learning_happens_gets_yes_with_every_rung_better():
    env = Arms(informative=True)
    agent, curve = trained(env)
    verdict = assess_learning(env, agent, held_out(), [Comparator("pull-nothing", "trivial", Always(0))], curve,
                              seed=1)
    assert verdict.learned and verdict.status == "yes", verdict.lines()
    random = verdict.rung("random-policy")
    assert random.outcome == "better" and random.ci_low > 0 and random.effect_size >= 2
    assert random.learner_mean - random.comparator_mean == pytest.approx(random.mean_difference)
    assert verdict.rung("pull-nothing").outcome == "better"
    assert verdict.trend is not None and verdict.trend.rose and verdict.trend.p < 0.05
    assert verdict.lines()[0].startswith("verdict on 10 held-out instances")
    assert verdict.headline().startswith("learned: yes - beats the random, the trivial pull-nothing on 10 held-out")


def test_a_reward_that_ignores_the_action_gets_no():
    env = Arms(informative=False)
    agent, curve = trained(env)
    verdict = assess_learning(env, agent, held_out(), (), curve, seed=1)
    assert verdict.status == "no"
    rung = verdict.rung("random-policy")
    assert rung.outcome == "indistinguishable" and rung.mean_difference == 0.0 and rung.p == 1.0
    assert "does not beat the random (+0)" in verdict.headline()


def test_a_heuristic_that_beats_the_learner_is_reported_worse_and_does_not_hide_the_yes():
    env = Arms()
    second_best = Always(1)  # beats random play and doing nothing, loses to the best arm
    verdict = assess_learning(env, second_best, held_out(),
                              [Comparator("pull-nothing", "trivial", Always(0)),
                               Comparator("best-arm", "heuristic", Always(2), cost="no training")], seed=3)
    assert verdict.status == "yes"
    heuristic = verdict.rung("best-arm")
    assert heuristic.outcome == "worse" and heuristic.ci_high < 0 and heuristic.mean_difference == pytest.approx(-5.0)
    assert ("vs heuristic best-arm: worse (-5 [-5, -5], d = -inf, p < 0.001; 10 instances, learner better on 0/10); "
            "no training") in verdict.lines()[3]
    assert "against the best-arm heuristic: worse (reported, not required)" in verdict.headline()
    assert [r.kind for r in verdict.rungs] == ["random", "trivial", "heuristic"]
    data = verdict.as_dict()
    rung = next(r for r in data["rungs"] if r["name"] == "best-arm")
    assert set(rung) >= {"name", "kind", "mean_difference", "ci_low", "ci_high", "effect_size", "p", "outcome"}
    assert data["learned"] is True and rung["outcome"] == "worse"


def test_a_trivial_policy_that_beats_the_learner_means_no():
    env = Arms()
    verdict = assess_learning(env, Always(1), held_out(), [Comparator("best-arm", "trivial", Always(2))], seed=3)
    assert verdict.status == "no" and "loses to the trivial best-arm" in verdict.headline()


def test_every_comparator_is_played_on_the_same_instances_and_pairing_removes_their_spread():
    env = Arms()
    instances = EvaluationInstances((7, 8, 9, 10, 11), "test episodes", episodes=(3, 5, 7, 9, 11))
    verdict = assess_learning(env, Always(1), instances, [Comparator("pull-nothing", "trivial", Always(0))],
                              seed=0, random_episodes=2)
    # learner once per instance, random twice per instance, the trivial policy once per instance
    assert env.played == [3, 5, 7, 9, 11] + [3, 3, 5, 5, 7, 7, 9, 9, 11, 11] + [3, 5, 7, 9, 11]
    # instance bases 3..11 differ by 8 per step, the policies by 0.5: unpaired, this would be noise
    trivial = verdict.rung("pull-nothing")
    assert trivial.outcome == "better" and trivial.ci_low == trivial.ci_high == pytest.approx(5.0)


def test_a_verdict_on_the_seeds_that_selected_the_model_is_refused():
    env = Arms()
    instances = held_out(count=5, first=40)
    with pytest.raises(ConfigError, match="used to select the model"):
        assess_learning(env, Always(1), instances, seed=0, selection_seeds=[42])
    assert env.played == []  # refused before anything was played
    with pytest.raises(ConfigError, match="not held out"):
        assess_learning(env, Always(1), instances, seed=0, training_seeds=[44])
    blackbox = EvaluationInstances((44,), "the training workload", held_out=False)
    verdict = assess_learning(env, Always(1), blackbox, seed=0, training_seeds=[44])
    assert "blackbox: the test workload is the training workload" in verdict.lines()[0]
    with pytest.raises(ConfigError, match="used to select the model"):
        assess_learning(env, Always(1), blackbox, seed=0, selection_seeds=[44])


def test_the_trend_test_is_not_run_on_one_episode_ends_and_short_runs_get_too_little_evidence():
    env = Arms()
    verdict = assess_learning(env, Always(2), held_out(), (), [0.0, 5.0], seed=0)
    assert verdict.trend is None and verdict.status == "too little evidence"
    assert "a training curve of 2 episode(s), fewer than the 6" in verdict.headline()
    assert not any(line.strip().startswith("training curve 0") for line in verdict.lines())  # no test run
    assert "too short for a trend test" in "\n".join(verdict.lines())
    few = assess_learning(env, Always(2), held_out(count=3), (), [], seed=0)
    assert few.status == "too little evidence" and "3 sample(s) against the random, fewer than the 5" in few.headline()
    # a loss is a no whatever the evidence
    lost = assess_learning(env, Always(0), held_out(count=3), [Comparator("best", "trivial", Always(2))], (), seed=0)
    assert lost.status in ("no", "too little evidence")


def test_a_single_deterministic_instance_is_compared_exactly_and_a_stochastic_one_over_its_episodes():
    exact = paired_rung("none", "trivial", [[-8.0]], [[-10.0]], deterministic=True)
    assert exact.outcome == "better" and exact.exact and exact.ci_low == exact.ci_high == 2.0
    assert "exact: deterministic" in exact.line()
    unknown = paired_rung("none", "trivial", [[-8.0]], [[-10.0]])
    assert unknown.outcome == "indistinguishable" and unknown.ci_low is None and not unknown.enough_evidence
    spread = paired_rung("random", "random", [[-8.0]], [[-10.0, -11.0, -9.5, -10.5, -9.0, -10.0]])
    assert spread.outcome == "better" and spread.samples == 6 and spread.ci_low > 0


def test_the_verdict_dict_prints_its_lines_and_keeps_the_tables_figures():
    env = Arms()
    verdict = trial_verdict(env, Always(1), seed=0, instances=held_out(), training_returns=[1.0] * 5 + [2.0] * 5,
                            search_outcome={"line": "search outcome: best set seen"})
    lines = verdict_lines(verdict)
    assert lines[0].startswith("verdict on 10 held-out") and lines[-1] == "search outcome: best set seen"
    assert verdict["greedy_return"] == verdict["rungs"][0]["learner_mean"]
    assert verdict["effect_size"] == verdict["rungs"][0]["effect_size"] and verdict["status"] == "yes"


def test_bad_input_is_a_clear_error():
    instances = held_out(count=2)
    with pytest.raises(ConfigError, match="random rung"):
        ladder_verdict([[1.0], [1.0]], [ComparatorScores("x", "trivial", [[0.0], [0.0]])], instances)
    with pytest.raises(ConfigError, match="one entry per instance"):
        ladder_verdict([[1.0]], [ComparatorScores("r", "random", [[0.0], [0.0]])], instances)
    with pytest.raises(ConfigError, match="finite"):
        ladder_verdict([[float("nan")], [1.0]], [ComparatorScores("r", "random", [[0.0], [0.0]])], instances)
    with pytest.raises(ConfigError, match="comparator.kind"):
        ComparatorScores("x", "oracle", [[0.0]])
    with pytest.raises(ConfigError, match="exactly one of policy, scores and scorer"):
        Comparator("x", "trivial")
    with pytest.raises(ConfigError, match="instances"):
        EvaluationInstances((), "nothing")


def test_a_trials_evaluation_and_selection_seeds_are_disjoint_from_each_other_and_from_training():
    from wield.protocols import TrialPlan

    for name in ("C0", "C2", "C4", "C6"):
        for seeds in TrialPlan.make(name, 3, base_seed=7).trials:
            evaluation, selection = seeds.evaluation_seeds(10), seeds.selection_seeds(3)
            training = {s for s in seeds.train_seeds(50) if s is not None}
            assert len(set(evaluation)) == 10 and not set(evaluation) & set(selection)
            assert not (set(evaluation) | set(selection)) & training
            assert seeds.evaluation_seeds(10) == evaluation  # reproducible
            EvaluationInstances(evaluation, "test").check_unused(training, selection)
    with pytest.raises(ConfigError, match="instances"):
        TrialPlan.make("C0", 1).trials[0].evaluation_seeds(0)
