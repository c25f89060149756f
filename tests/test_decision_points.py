"""The step context and decision points of wield.envs on a time-driven system (the shape of a request
scheduler): the adapter says what each step is about, which steps need a decision and when the episode
ends; skipped steps are advanced by the system and their reward goes to the decision before them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from wield import Converter, EpisodeList, Schema, StandardView, SystemAdapter, WieldEnv
from wield.errors import DataError

ARRIVALS = [0, 0, 1, 5, 9, 9, 9]  # request arrival ticks: ticks 2-4 and 6-8 have nothing waiting


class TwoWorkers(SystemAdapter):
    """Each tick asks two workers in turn whether to serve the oldest waiting request; the episode ends when
    every request is served, whatever the number of steps."""

    def reset(self):
        self.arrivals, self.waiting, self.now, self.worker, self.served = [], [], 0, 0, 0

    def start_episode(self, workload):
        self.arrivals = list(workload)
        self.waiting = [a for a in self.arrivals if a == 0]

    def state(self):
        return len(self.waiting)

    def context(self):
        return {"item": (self.now, self.worker)}  # what this step is about: a tick and a worker

    def needs_decision(self, context):
        return bool(self.waiting)

    def episode_over(self, context):
        return self.served == len(self.arrivals)

    def skip(self, context):
        self.advance()

    def apply(self, serve):
        if serve and self.waiting:
            self.waiting.pop(0)
            self.served += 1
        self.advance()

    def advance(self):
        self.worker = 1 - self.worker
        if self.worker == 0:
            self.now += 1
            self.waiting += [a for a in self.arrivals if a == self.now]

    def measure(self, workload):
        return {"waiting": len(self.waiting)}


class ServeSchema(Schema):
    name = "serve"
    state_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def action_mask(self, context):
        return np.array([True, context["state"] > 0])  # serving needs a waiting request


class ServeConverter(Converter):
    def system_to_agent_state(self, waiting, context):
        return np.array([waiting], np.float32)

    def agent_to_system_action(self, action, context):
        return bool(action)

    def system_to_agent_reward(self, metrics, context):
        return -1.0 - metrics["waiting"]  # every step costs 1, every waiting request 1 more


def make_env(arrivals=ARRIVALS):
    return WieldEnv(TwoWorkers(), ServeSchema(), ServeConverter(ServeSchema()), EpisodeList([arrivals]))


def test_the_adapter_drives_steps_items_and_the_end_of_the_episode():
    env = make_env()
    observation, info = env.reset(seed=0)
    assert info["skipped_steps"] == 0 and env.context["item"] == (0, 0) and env.context["state"] == 2
    decisions, total, items = 0, info["skipped_reward"], []
    done = False
    while not done:
        items.append(env.context["item"])
        observation, reward, done, _, info = env.step(1)  # always serve
        decisions += 1
        total += reward
    # 7 requests served by 7 decisions; the idle ticks between were advanced by the system
    assert decisions == len(ARRIVALS) and env.context["step"] > decisions
    assert (2, 0) not in items and items[:3] == [(0, 0), (0, 1), (1, 0)]
    # semi-MDP accounting: the return is every step's reward, decisions and skipped steps alike
    assert total == pytest.approx(-sum(1.0 + waiting for waiting in _waiting_after_each_step()))


def _waiting_after_each_step():
    """The same episode replayed by hand: requests waiting after each step (serving whenever one waits)."""
    system = TwoWorkers()
    system.reset()
    system.start_episode(ARRIVALS)
    after = []
    while system.served < len(ARRIVALS):
        system.apply(True)
        after.append(len(system.waiting))
    return after


def test_skipped_reward_is_added_to_the_decision_before():
    env = make_env([0, 3])
    env.reset(seed=0)
    _, reward, done, _, info = env.step(1)  # serves request 0 at tick 0 (reward -1); then nothing waits
    # five skipped steps (worker 1 at tick 0 ... worker 1 at tick 2) cost 1 each, and the last of them leads
    # to tick 3, where request 1 waits: one more; all of it goes to the decision that served request 0
    assert not done and info["skipped_steps"] == 5 and reward == pytest.approx(-1.0 - 5.0 - 1.0)
    assert env.context["item"] == (3, 0)


def test_masks_see_the_system_state_and_the_checker_passes():
    env = make_env()
    check_env(env, skip_render_check=True)
    with pytest.warns(UserWarning, match="different from the unwrapped"):  # it is a wrapper, on purpose
        check_env(StandardView(make_env()), skip_render_check=True)
    env.reset(seed=0)
    assert env.schema.action_mask(env.context).tolist() == [True, True]


class NeverAsks(TwoWorkers):
    def needs_decision(self, context):
        return False

    def episode_over(self, context):
        return context["step"] >= 3


def test_an_episode_without_any_decision_is_a_clear_error():
    env = WieldEnv(NeverAsks(), ServeSchema(), ServeConverter(ServeSchema()), EpisodeList([[1]]))
    with pytest.raises(DataError, match="ended before any decision"):
        env.reset(seed=0)
