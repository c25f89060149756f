"""The learning verdict: yes where learning is known to happen, no where the reward ignores the action."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from wield.agents import DQNAgent, DQNConfig
from wield.errors import ConfigError
from wield.protocols import learning_verdict
from wield.workflows import assess_learning, train_online


class Bandit(gym.Env):
    """Ten steps per episode; each step pays ``payoff(action)``. With ``informative`` one arm pays 1 and
    the others 0; without, every arm pays the same, so no policy can beat another."""

    def __init__(self, informative: bool) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Discrete(4)
        self.informative = informative
        self._step = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._step = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self._step += 1
        reward = float(action == 2) if self.informative else 0.5
        return np.zeros(1, np.float32), reward, self._step >= 10, False, {}


FAST = DQNConfig(learning_rate=5e-3, hidden_sizes=(16,), batch_size=8, replay_capacity=200, epsilon_decay_steps=100,
                 target_sync_every=10, updates_per_observation=2, prioritized=False)


def trained(env: gym.Env, episodes: int = 40):
    agent = DQNAgent(env.observation_space, env.action_space, FAST, seed=0)
    results = train_online(env, agent, episodes, progress=False)
    return agent, [r.total_reward for r in results]


def test_a_task_where_learning_happens_gets_yes():
    env = Bandit(informative=True)
    agent, curve = trained(env)
    verdict = assess_learning(env, agent, curve, random_episodes=20, seed=1)
    assert verdict.learned, verdict.line()
    assert verdict.greedy_return == 10.0 and verdict.random_mean < 4.0
    assert verdict.effect_size >= 2.0 and verdict.p_value < 0.01
    assert verdict.last_mean > verdict.first_mean and verdict.trend_p_value < 0.05
    assert verdict.line().startswith("learned: yes - greedy return 10 vs random")


def test_a_reward_that_ignores_the_action_gets_no():
    env = Bandit(informative=False)
    agent, curve = trained(env)
    verdict = assess_learning(env, agent, curve, random_episodes=20, seed=1)
    assert not verdict.learned
    assert verdict.effect_size == 0.0 and verdict.p_value == 1.0
    assert "learned: no" in verdict.line() and "below the 2 required" in verdict.line()


def test_the_verdict_needs_both_a_greedy_effect_and_a_rising_curve():
    random = [-21.0, -20.0, -22.0, -21.5, -20.5]  # mean -21, sd 0.79
    rising = [-22.0] * 10 + [-18.0] * 10
    assert learning_verdict([-17.0], random, rising).learned  # d = 5.1
    assert not learning_verdict([-20.5], random, rising).learned  # d = 0.63: not outside random play
    flat = learning_verdict([-17.0], random, [-18.0] * 10 + [-22.0] * 10)
    assert not flat.learned and "did not rise" in flat.line()
    assert learning_verdict([-17.0], random).learned  # no online training (a pretrained or searched policy)
    verdict = learning_verdict([-17.0], random, rising)
    assert verdict.from_dict(verdict.as_dict()) == verdict


def test_bad_input_is_a_clear_error():
    with pytest.raises(ConfigError, match="random_returns"):
        learning_verdict([1.0], [0.0])
    with pytest.raises(ConfigError, match="greedy_returns"):
        learning_verdict([], [0.0, 1.0])
    with pytest.raises(ConfigError, match="finite"):
        learning_verdict([float("nan")], [0.0, 1.0])
