"""Agents: sum tree, replay buffers, DQN configuration, masking, determinism, persistence and learning."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from wield.agents import (DQNAgent, DQNConfig, PrioritizedReplay, RandomAgent, ReplayBuffer, SumTree,
                          Transition)
from wield.agents.encoders import ObservationEncoder, batch_observations
from wield.errors import ConfigError


class ContextHeadsEnv(gym.Env):
    """Short episodes; each step shows a context token, and head ``h{i}`` is right when it picks
    ``(context + i) % 4``. The reward is the fraction of heads that are right (random policy: 0.25)."""

    K = 4

    def __init__(self, seed: int = 0, heads: int = 3, length: int = 3) -> None:
        self.observation_space = spaces.Dict({
            "tokens": spaces.MultiDiscrete([self.K, self.K]),
            "noise": spaces.Box(-1.0, 1.0, (2,), np.float32),
        })
        self.action_space = spaces.Dict({f"h{i}": spaces.Discrete(4) for i in range(heads)})
        self.heads, self.length = heads, length
        self._rng = np.random.default_rng(seed)

    def _observe(self):
        self.context = int(self._rng.integers(self.K))
        return {"tokens": np.array([self.context, self._rng.integers(self.K)], dtype=np.int64),
                "noise": self._rng.uniform(-1, 1, 2).astype(np.float32)}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action):
        reward = float(np.mean([action[f"h{i}"] == (self.context + i) % 4 for i in range(self.heads)]))
        self.t += 1
        return self._observe(), reward, self.t >= self.length, False, {}


def play(agent, env, episodes: int, learn: bool, update_every: int = 1) -> float:
    """Mean reward per step; with ``learn`` the agent explores, observes and updates."""
    rewards = []
    for _ in range(episodes):
        observation, _ = env.reset()
        done = False
        while not done:
            action = agent.act(observation, explore=learn)
            next_observation, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            if learn:
                agent.observe(Transition(observation, action, reward, next_observation, terminated, truncated))
                if agent.steps_observed % update_every == 0:
                    agent.update()
            observation = next_observation
            rewards.append(reward)
    return float(np.mean(rewards))


FAST = dict(learning_rate=1e-3, hidden_sizes=(64, 64), epsilon_decay_steps=150, gamma=0.5)


def small_agent(seed: int = 0, **overrides) -> DQNAgent:
    env = ContextHeadsEnv()
    return DQNAgent(env.observation_space, env.action_space, DQNConfig(**{**FAST, **overrides}), seed=seed)


def observations(n: int, seed: int = 99) -> list:
    env = ContextHeadsEnv(seed)
    return [env.reset()[0] for _ in range(n)]


# ------------------------------------------------------------------------------------------- sum tree
def test_sum_tree_sums_and_prefix_search():
    tree = SumTree(5)  # not a power of two
    for index, value in enumerate([1.0, 2.0, 3.0, 0.0, 4.0]):
        tree.update(index, value)
    assert tree.total() == pytest.approx(10.0)
    expected = {0.0: 0, 0.99: 0, 1.0: 1, 2.99: 1, 3.0: 2, 5.99: 2, 6.0: 4, 9.99: 4}
    assert {p: tree.find(p) for p in expected} == expected  # the zero leaf 3 is never found
    tree.update(2, 0.5)
    assert tree.total() == pytest.approx(7.5)
    assert (tree.find(3.4), tree.find(3.5)) == (2, 4)
    with pytest.raises(IndexError):
        tree.update(5, 1.0)
    with pytest.raises(ValueError):
        SumTree(2).find(0.0)


# --------------------------------------------------------------------------------------------- replay
def test_prioritized_sampling_is_proportional_to_priority_power_alpha():
    replay = PrioritizedReplay(8, alpha=0.5, beta_start=0.4, beta_steps=100, eps=1e-9, seed=3)
    priorities = np.array([1.0, 4.0, 9.0, 16.0])
    for i, p in enumerate(priorities):
        replay.add(f"t{i}", priority=p)
    counts = np.zeros(4)
    for _ in range(4000):
        indices, items, _ = replay.sample(8)
        assert items == [f"t{i}" for i in indices]
        np.add.at(counts, indices, 1)
    expected = np.sqrt(priorities) / np.sqrt(priorities).sum()  # 0.1, 0.2, 0.3, 0.4
    np.testing.assert_allclose(counts / counts.sum(), expected, atol=0.01)
    assert replay.probability(3) == pytest.approx(0.4)


def test_importance_weights_follow_beta_and_are_normalised_by_max():
    replay = PrioritizedReplay(4, alpha=1.0, beta_start=0.5, beta_steps=10, eps=1e-9, seed=0)
    for p in (1.0, 3.0):
        replay.add(None, priority=p)
    probabilities = np.array([0.25, 0.75])
    indices, _, weights = replay.sample(16)  # first call: beta = 0.5
    raw = (2 * probabilities[indices]) ** -0.5
    np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-6)
    assert weights.max() == pytest.approx(1.0)
    for _ in range(10):
        replay.sample(4)
    indices, _, weights = replay.sample(16)  # annealed: beta = 1
    raw = 1.0 / (2 * probabilities[indices])
    np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-6)


def test_new_entries_get_max_priority_and_updates_change_sampling():
    replay = PrioritizedReplay(4, alpha=1.0, eps=1e-9, seed=1)
    replay.add("a")
    replay.add("b")
    replay.update_priorities([0, 1], [5.0, 1e-6])
    replay.add("c")  # highest priority seen so far: 5
    assert replay.probability(2) == pytest.approx(0.5, rel=1e-4)
    indices, _, _ = replay.sample(200)
    assert 1 not in set(indices.tolist())


def test_protected_entries_survive_eviction_and_bonus_raises_probability():
    replay = PrioritizedReplay(5, alpha=1.0, eps=1e-9, seed=0)
    replay.add("demo0", protected=True, bonus=1.0)
    replay.add("demo1", protected=True)
    for i in range(10):
        replay.add(f"x{i}")
    contents = [replay[i] for i in range(len(replay))]
    assert len(replay) == 5 and replay.protected_count == 2
    assert sorted(contents) == ["demo0", "demo1", "x7", "x8", "x9"]
    assert replay.probability(0) == pytest.approx(2 * replay.probability(1), rel=1e-6)
    full = ReplayBuffer(2, seed=0)
    full.add("p", protected=True)
    full.add("q", protected=True)
    with pytest.raises(ValueError, match="protected"):
        full.add("r")


def test_uniform_replay_is_seeded_and_weights_are_one():
    def draws(seed):
        buffer = ReplayBuffer(10, seed=seed)
        for i in range(10):
            buffer.add(i)
        return buffer.sample(32)

    a, b, c = draws(5), draws(5), draws(6)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    assert np.all(a[2] == 1.0) and set(a[0].tolist()) <= set(range(10))


# ------------------------------------------------------------------------------------------- encoders
def test_encoder_handles_every_supported_space():
    space = spaces.Dict({
        "b_box": spaces.Box(0, 1, (2, 3)),
        "a_disc": spaces.Discrete(3, start=1),
        "c_multi": spaces.MultiDiscrete([4, 2]),
        "d_bin": spaces.MultiBinary(5),
    })
    encoder = ObservationEncoder(space, embedding_dim=7)
    assert encoder.output_dim == 3 + 6 + 2 * 7 + 5
    observation = {"b_box": np.ones((2, 3), np.float32), "a_disc": 3, "c_multi": np.array([3, 1]),
                   "d_bin": np.array([1, 0, 1, 0, 0], np.int8)}
    features = encoder(batch_observations(space, [observation, observation]))
    assert features.shape == (2, encoder.output_dim)
    np.testing.assert_array_equal(features[0, :3].detach().numpy(), [0, 0, 1])  # sorted keys: a_disc first, one-hot
    np.testing.assert_array_equal(features[0, -5:].detach().numpy(), [1, 0, 1, 0, 0])
    with pytest.raises(ConfigError):
        ObservationEncoder(spaces.Text(5))


# ------------------------------------------------------------------------------------------ DQN config
@pytest.mark.parametrize("field, value", [
    ("learning_rate", 0.0), ("batch_size", 0), ("hidden_sizes", (128, -1)), ("replay_capacity", 8),
    ("epsilon_start", 1.5), ("epsilon_end", -0.1), ("gamma", 1.01), ("target_sync_every", 0),
    ("updates_per_observation", -1), ("alpha", -0.5), ("beta_start", 2.0), ("learning_starts", 4),
    ("grad_clip", 0.0), ("embedding_dim", 0), ("double_q", "yes"),
])
def test_dqn_config_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(ConfigError) as error:
        DQNConfig(**{field: value})
    assert error.value.field == field and field in str(error.value)


def test_dqn_config_defaults_are_the_studys():
    config = DQNConfig()
    assert (config.learning_rate, config.batch_size, config.hidden_sizes, config.replay_capacity) == \
        (1e-4, 16, (128, 128), 1000)
    assert (config.epsilon_start, config.epsilon_end, config.epsilon_decay_steps) == (1.0, 0.05, 500)
    assert (config.target_sync_every, config.updates_per_observation, config.learning_starts) == (24, 4, 16)


# ------------------------------------------------------------------------------------------- DQN agent
def test_masked_actions_are_never_chosen_greedily_or_exploring():
    agent = small_agent(epsilon_start=1.0, epsilon_end=1.0)
    for observation in observations(40):
        greedy = agent.act(observation, explore=False)
        mask = {name: np.arange(4) != action for name, action in greedy.items()}
        assert all(agent.act(observation, explore=False, mask=mask)[n] != greedy[n] for n in greedy)
        q = agent.greedy_q_values(observation, mask)
        assert all(q[n][greedy[n]] == -np.inf for n in greedy)
        only = {"h0": np.array([0, 0, 1, 0], bool), "h1": np.array([1, 0, 0, 1], bool)}  # h2: no mask
        for _ in range(5):
            action = agent.act(observation, explore=True, mask=only)
            assert action["h0"] == 2 and action["h1"] in (0, 3) and 0 <= action["h2"] < 4
    discrete = DQNAgent(spaces.Box(0, 1, (3,)), spaces.Discrete(5), DQNConfig(**FAST), seed=1)
    mask = np.array([0, 1, 0, 1, 0], bool)
    chosen = {discrete.act(np.full(3, 0.5, np.float32), explore=True, mask=mask) for _ in range(50)}
    assert chosen == {1, 3}
    assert discrete.act(np.zeros(3, np.float32), explore=False, mask=mask) in (1, 3)
    with pytest.raises(ConfigError, match="mask"):
        discrete.act(np.zeros(3, np.float32), mask=np.ones(4, bool))


def test_same_seed_gives_identical_actions_and_weights_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    agents = [small_agent(seed=s) for s in (7, 7, 8)]
    assert torch.equal(torch.rand(1), before)  # construction did not consume the global generator
    actions = []
    for agent in agents:
        env = ContextHeadsEnv(seed=1)
        play(agent, env, 15, learn=True)
        actions.append([agent.act(o, explore=True) for o in observations(20)])
    a, b, c = (dict(agent.online.named_parameters()) for agent in agents)
    assert agents[0].gradient_steps > 0
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    assert actions[0] == actions[1] and actions[0] != actions[2]


def test_gradient_steps_do_not_depend_on_how_often_update_is_called():
    often, rarely = small_agent(seed=3), small_agent(seed=3)
    play(often, ContextHeadsEnv(seed=2), 10, learn=True, update_every=1)
    play(rarely, ContextHeadsEnv(seed=2), 10, learn=True, update_every=5)
    expected = 4 * (30 - 16 + 1)  # updates_per_observation x transitions once 16 (learning_starts) are stored
    assert often.gradient_steps == rarely.gradient_steps == expected


def test_state_dict_round_trip_restores_decisions_and_training():
    trained = small_agent(seed=4)
    play(trained, ContextHeadsEnv(seed=5), 12, learn=True)
    restored = small_agent(seed=99)
    restored.load_state_dict(trained.state_dict(include_replay=True))
    probe = observations(30)
    assert [restored.act(o, explore=False) for o in probe] == [trained.act(o, explore=False) for o in probe]
    assert [restored.act(o, explore=True) for o in probe] == [trained.act(o, explore=True) for o in probe]
    play(trained, ContextHeadsEnv(seed=6), 3, learn=True)
    play(restored, ContextHeadsEnv(seed=6), 3, learn=True)
    for (name, p), q in zip(trained.online.named_parameters(), restored.online.parameters()):
        assert torch.equal(p, q), name
    lean = trained.state_dict()
    assert "data" not in lean["replay"] and "online" in lean


def test_random_agent_is_seeded_and_respects_masks():
    space = spaces.Dict({"x": spaces.Discrete(3), "y": spaces.Discrete(4, start=2)})
    a, b = RandomAgent(space, seed=1), RandomAgent(space, seed=1)
    mask = {"y": np.array([0, 1, 1, 0], bool)}
    draws = [a.act(None, mask=mask) for _ in range(200)]
    assert draws == [b.act(None, mask=mask) for _ in range(200)]
    assert {d["y"] for d in draws} == {3, 4} and {d["x"] for d in draws} == {0, 1, 2}


def test_dqn_learns_a_multi_head_contextual_task_better_than_random():
    agent = small_agent(seed=0)
    play(agent, ContextHeadsEnv(seed=0), 100, learn=True)
    dqn = play(agent, ContextHeadsEnv(seed=100), 50, learn=False)
    random = play(RandomAgent(ContextHeadsEnv().action_space, seed=0), ContextHeadsEnv(seed=100), 50, learn=False)
    assert random < 0.35
    assert dqn > random + 0.3, (dqn, random)


# ------------------------------------------------------------------------- episode ends (issue 43)
def test_ppo_bootstraps_from_the_final_observation_at_a_cut_and_not_at_a_true_end():
    """A hand-built rollout with V(o) = o: gamma 0.5, GAE(1). Episode A: o=1 (r 1), o=2 (r 1), cut
    (truncated) with final observation 10; episode B: o=3 (r 2), terminated with final observation 100.
    The value targets are the discounted returns with V(10) added at the cut and nothing at the true end:
    A: 1 + 0.5 + 0.25 x 10 = 4 and 1 + 0.5 x 10 = 6; B: 2."""
    from wield.agents.ppo import PPOAgent, PPOConfig

    def identity_value() -> torch.nn.Module:
        value = torch.nn.Linear(1, 1)
        with torch.no_grad():
            value.weight.fill_(1.0)
            value.bias.zero_()
        return value

    def targets(cut_as_end: bool) -> list[float]:
        agent = PPOAgent(lambda: torch.nn.Linear(1, 2), PPOConfig(gamma=0.5, gae_lambda=1.0, min_episodes=2),
                         value=identity_value)
        captured = []
        agent._epochs = lambda steps, advantages, returns: captured.append(returns.tolist()) or {}
        o = [np.array([x], dtype=np.float32) for x in (1.0, 2.0, 10.0, 3.0, 100.0)]
        agent.observe(Transition(o[0], 0, 1.0, o[1], False))
        agent.observe(Transition(o[1], 1, 1.0, o[2], cut_as_end, not cut_as_end))
        agent.observe(Transition(o[3], 0, 2.0, o[4], True))
        stats = agent.update()
        assert stats["mean_return"] == pytest.approx(float(np.mean(captured[0])))
        return captured[0]

    assert targets(cut_as_end=False) == pytest.approx([4.0, 6.0, 2.0])
    assert targets(cut_as_end=True) == pytest.approx([1.5, 1.0, 2.0])  # the old semantics: a cut read as an end


def test_dqn_td_target_bootstraps_at_a_cut_and_not_at_a_true_end():
    """The same transition, truncated or terminated: the TD target differs by gamma x Q_target(next, best)."""
    agent = small_agent(gamma=0.5)
    observation, following = observations(2)
    action = {"h0": 1, "h1": 2, "h2": 3}
    cut = Transition(observation, action, 1.0, following, False, True)
    end = Transition(observation, action, 1.0, following, True, False)
    batch = agent.make_batch([cut, end])
    assert batch.terminated.tolist() == [0.0, 1.0]
    with torch.no_grad():
        q_values = agent.online(batch.observations)
        next_q = agent.target(batch.next_observations)
        _, td_errors, _ = agent.td_loss(batch, q_values)
    expected = []
    for row, bootstrap in ((0, True), (1, False)):
        errors = []
        for name in agent.heads.sizes:
            target = 1.0 + (0.5 * float(next_q[name][row].max()) if bootstrap else 0.0)
            errors.append(abs(target - float(q_values[name][row, action[name]])))
        expected.append(np.mean(errors))
    assert td_errors == pytest.approx(expected, abs=1e-5)
