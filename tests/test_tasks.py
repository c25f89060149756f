"""Task graphs: the three shapes of docs/design.md section 2 (multi-head, independent, hierarchical) and validation."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from gymnasium import spaces

from wield.agents import Agent, DQNAgent, DQNConfig, RandomAgent, Transition
from wield.errors import ConfigError
from wield.tasks import Task, TaskGraph

FAST = dict(learning_rate=1e-3, hidden_sizes=(64, 64), epsilon_decay_steps=150, gamma=0.5)


class Spy(Agent):
    """Wraps an agent, recording what it saw, observed, and how often it was asked to update."""

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.seen: list[Any] = []
        self.transitions: list[Transition] = []
        self.update_calls = 0

    def act(self, observation, explore=True, mask=None):
        self.seen.append(observation)
        return self.inner.act(observation, explore, mask)

    def observe(self, transition):
        self.transitions.append(transition)
        self.inner.observe(transition)

    def update(self):
        self.update_calls += 1
        return self.inner.update()

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)


class ToyEnv:
    """A context per step from ``contexts`` values; ``score(context, outputs) -> {task: reward}``.

    The shared reward is the sum of the task rewards, which ``info["rewards"]`` also carries per task.
    """

    def __init__(self, score: Callable[[Any, dict], dict[str, float]], draw: Callable[[np.random.Generator], Any],
                 seed: int, length: int = 3) -> None:
        self.score, self.draw, self.length = score, draw, length
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.t = 0
        self.context = self.draw(self.rng)
        return self.context

    def step(self, outputs):
        rewards = self.score(self.context, outputs)
        self.t += 1
        self.context = self.draw(self.rng)
        return self.context, sum(rewards.values()), self.t >= self.length, {"rewards": rewards}


def play(graph: TaskGraph, env: ToyEnv, episodes: int, learn: bool,
         on_step: Callable[[Any, dict], None] | None = None) -> dict[str, float]:
    """Mean reward per step of each task."""
    totals: dict[str, list[float]] = {}
    for _ in range(episodes):
        observation = env.reset()
        graph.reset()
        done = False
        while not done:
            outputs = graph.act(observation, explore=learn)
            if on_step is not None:
                on_step(observation, outputs)
            observation, reward, done, info = env.step(outputs)
            if learn:
                graph.observe(reward, observation, done, info=info)
            for name, value in info["rewards"].items():
                totals.setdefault(name, []).append(value)
    return {name: float(np.mean(values)) for name, values in totals.items()}


def task_reward(name: str):
    return lambda reward, info: info["rewards"][name]


# ----------------------------------------------------------------------------- (a) one multi-head task
def test_single_task_with_several_heads_learns():
    observation_space = spaces.Discrete(4)
    action_space = spaces.Dict({"first": spaces.Discrete(4), "second": spaces.Discrete(4)})

    def score(context, outputs):
        action = outputs["indexer"]
        return {"indexer": 0.5 * (action["first"] == context) + 0.5 * (action["second"] == (3 - context))}

    def make_env(seed):
        return ToyEnv(score, lambda rng: int(rng.integers(4)), seed)

    agent = DQNAgent(observation_space, action_space, DQNConfig(**FAST), seed=0)
    graph = TaskGraph.single(agent, name="indexer")
    assert graph.order == ("indexer",) and graph.sinks == ("indexer",)
    play(graph, make_env(0), 80, learn=True)
    assert agent.steps_observed == 240 and graph.update_counts["indexer"] == 240
    learned = play(graph, make_env(50), 40, learn=False)["indexer"]
    baseline = play(TaskGraph.single(RandomAgent(action_space, seed=0), name="indexer"), make_env(50), 40,
                    learn=False)["indexer"]
    assert learned > baseline + 0.4, (learned, baseline)


# ------------------------------------------------------------------------------ (b) independent tasks
def test_independent_tasks_each_learn_their_own_subproblem():
    def score(context, outputs):
        return {"a": float(outputs["a"] == (context["a"] + 1) % 3),
                "b": float(outputs["b"] == (2 * context["b"] + 1) % 3)}

    def draw(rng):
        return {"a": int(rng.integers(3)), "b": int(rng.integers(3))}

    def graph_of(make_agent):
        return TaskGraph([
            Task("a", make_agent(0), preprocess=lambda obs, parents: obs["a"], reward_fn=task_reward("a")),
            Task("b", make_agent(1), preprocess=lambda obs, parents: obs["b"], reward_fn=task_reward("b")),
        ])

    graph = graph_of(lambda s: Spy(DQNAgent(spaces.Discrete(3), spaces.Discrete(3), DQNConfig(**FAST), seed=s)))
    assert graph.order == ("a", "b") and graph.parents("b") == () and graph.sinks == ("a", "b")
    play(graph, ToyEnv(score, draw, seed=0), 60, learn=True)
    spies = {name: graph.agent(name) for name in ("a", "b")}
    assert all(len(spy.seen) == 180 and len(spy.transitions) == 180 for spy in spies.values())
    # each task was rewarded for its own sub-problem only
    for spy in spies.values():
        assert {t.reward for t in spy.transitions} == {0.0, 1.0}
    learned = play(graph, ToyEnv(score, draw, seed=77), 40, learn=False)
    baseline = play(graph_of(lambda s: RandomAgent(spaces.Discrete(3), seed=s)), ToyEnv(score, draw, seed=77),
                    40, learn=False)
    for name in ("a", "b"):
        assert learned[name] > baseline[name] + 0.4, (name, learned, baseline)


# ------------------------------------------------------------------------------ (c) hierarchical tasks
def hierarchy(parent_agent: Agent, child_agent: Agent) -> TaskGraph:
    """The parent picks a group g from the context c; the child picks an item of group g (items 2g, 2g+1).
    Parent reward: g == c % 2. Child reward: item == 2g + c // 2, so its best item depends on g."""
    parent = Task("group", parent_agent, update_every=1, reward_fn=task_reward("group"))
    child = Task("item", child_agent,
                 preprocess=lambda obs, parents: {"context": obs, "group": parents["group"]},
                 mask_fn=lambda obs, parents: np.isin(np.arange(4), [2 * parents["group"], 2 * parents["group"] + 1]),
                 update_every=4, reward_fn=task_reward("item"))
    return TaskGraph([child, parent], edges=[("group", "item")])


def hierarchy_score(context, outputs):
    group, item = outputs["group"], outputs["item"]
    return {"group": float(group == context % 2), "item": float(item == 2 * group + context // 2)}


def hierarchy_env(seed):
    return ToyEnv(hierarchy_score, lambda rng: int(rng.integers(4)), seed, length=3)


CHILD_SPACE = spaces.Dict({"context": spaces.Discrete(4), "group": spaces.Discrete(2)})


def test_hierarchy_routes_parent_output_and_trains_at_two_time_scales():
    parent = Spy(DQNAgent(spaces.Discrete(4), spaces.Discrete(2), DQNConfig(**FAST), seed=0))
    child = Spy(DQNAgent(CHILD_SPACE, spaces.Discrete(4), DQNConfig(**FAST), seed=1))
    graph = hierarchy(parent, child)
    assert graph.order == ("group", "item") and graph.parents("item") == ("group",)

    def check(observation, outputs):
        assert child.seen[-1] == {"context": observation, "group": outputs["group"]}
        assert outputs["item"] // 2 == outputs["group"]  # the mask keeps the child inside the chosen group

    episodes = 100
    play(graph, hierarchy_env(0), episodes, learn=True, on_step=check)
    steps = 3 * episodes
    assert len(parent.transitions) == len(child.transitions) == steps
    assert parent.update_calls == steps and child.update_calls == steps // 4
    assert graph.update_counts == {"group": steps, "item": steps // 4}
    # the child's transitions chain: its next observation is its next input, built from the parent's next output
    for earlier, later in zip(child.transitions, child.transitions[1:]):
        if not earlier.terminated:
            assert earlier.next_observation == later.observation
    assert child.transitions[-1].terminated and child.transitions[-1].next_observation["group"] in (0, 1)

    learned = play(graph, hierarchy_env(500), 40, learn=False)
    baseline = play(hierarchy(RandomAgent(spaces.Discrete(2), seed=0), RandomAgent(spaces.Discrete(4), seed=1)),
                    hierarchy_env(500), 40, learn=False)
    assert learned["group"] > baseline["group"] + 0.3, (learned, baseline)
    assert learned["item"] > baseline["item"] + 0.3, (learned, baseline)


def test_graph_state_dict_round_trip():
    def build(seed):
        return hierarchy(DQNAgent(spaces.Discrete(4), spaces.Discrete(2), DQNConfig(**FAST), seed=seed),
                         DQNAgent(CHILD_SPACE, spaces.Discrete(4), DQNConfig(**FAST), seed=seed + 1))

    trained = build(0)
    play(trained, hierarchy_env(3), 10, learn=True)
    restored = build(10)
    restored.load_state_dict(trained.state_dict())
    assert restored.update_counts == trained.update_counts
    for context in range(4):
        assert restored.act(context, explore=False) == trained.act(context, explore=False)
    with pytest.raises(ConfigError):
        restored.load_state_dict({"group": trained.state_dict()["group"]})


# ------------------------------------------------------------------------------------------ validation
def _task(name: str) -> Task:
    return Task(name, RandomAgent(spaces.Discrete(2)))


def test_cycles_are_rejected_naming_the_cycle():
    with pytest.raises(ConfigError) as error:
        TaskGraph([_task(n) for n in "abcd"], edges=[("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")])
    assert error.value.field == "edges" and "b -> c -> d -> b" in str(error.value)
    with pytest.raises(ConfigError, match="a -> a"):
        TaskGraph([_task("a")], edges=[("a", "a")])


def test_unknown_edges_duplicate_names_and_bad_schedules_are_rejected():
    with pytest.raises(ConfigError) as error:
        TaskGraph([_task("grouper"), _task("placer")], edges=[("grouper", "placr")])
    assert "placr" in str(error.value) and "'grouper', 'placer'" in str(error.value)
    with pytest.raises(ConfigError, match="duplicate"):
        TaskGraph([_task("a"), _task("a")])
    with pytest.raises(ConfigError) as error:
        Task("a", RandomAgent(spaces.Discrete(2)), update_every=0)
    assert error.value.field == "update_every"


def test_topological_order_is_deterministic_and_follows_edges():
    graph = TaskGraph([_task(n) for n in ("d", "c", "b", "a")], edges=[("a", "c"), ("b", "c"), ("c", "d")])
    assert graph.order == ("b", "a", "c", "d")
    assert graph.parents("c") == ("a", "b") and graph.sinks == ("d",)


def test_masks_argument_overrides_mask_fn_and_rewards_argument_overrides_reward_fn():
    spy = Spy(RandomAgent(spaces.Discrete(3), seed=0))
    graph = TaskGraph.single(spy, mask_fn=lambda obs, parents: np.array([1, 0, 0], bool),
                             reward_fn=lambda reward, info: -1.0)
    assert all(graph.act(0)["agent"] == 0 for _ in range(20))
    assert {graph.act(0, masks={"agent": np.array([0, 0, 1], bool)})["agent"] for _ in range(20)} == {2}
    graph.observe(5.0, 1, terminated=True, rewards={"agent": 2.0})
    graph.act(0)
    graph.observe(5.0, 1, terminated=True)
    assert [t.reward for t in spy.transitions] == [2.0, -1.0]
    assert spy.transitions[0].next_mask.tolist() == [True, False, False]
