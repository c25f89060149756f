"""DQfD: the signed large-margin expert loss against hand-computed values, and pretraining on real indexing
demonstrations (no-op rule -> greedy no-op; reverse-order rule -> the reverse index is never greedy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.demonstrations import ReverseOrderRule, rule_factories
from wield.agents import DQfDAgent, DQfDConfig, DQNConfig, Transition
from wield.agents.dqfd import expert_margin_loss
from wield.demonstrations import DemonstrationWorkflow, select_rules
from wield.errors import ConfigError
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule

NAN = math.nan


def test_expert_loss_matches_hand_computed_values_for_mixed_signed_margins():
    q = torch.tensor([[1.0, 2.0, 0.5],    # m=+0.5, a_E=0: max(1.0, 2.5, 1.0) - 1.0 = 1.5
                      [1.0, 2.0, 0.5],    # m=-0.5, a_E=1: 2.0 - min(0.5, 2.0, 0.0) = 2.0
                      [0.0, 3.0, 1.0],    # m=+0.8, a_E=2, action 1 masked: max(0.8, 1.0) - 1.0 = 0.0
                      [0.2, 0.1, 0.0],    # m=-0.3, a_E=0: 0.2 - min(0.2, -0.2, -0.3) = 0.5
                      [-1.0, 0.0, 0.5],   # m=-0.5, a_E=0, already below all by 0.5: 0
                      [5.0, 1.0, 2.0]])   # no margin (an online transition): 0
    actions = torch.tensor([0, 1, 2, 0, 0, 1])
    margins = torch.tensor([0.5, -0.5, 0.8, -0.3, -0.5, NAN])
    mask = torch.ones(6, 3, dtype=torch.bool)
    mask[2, 1] = False
    loss = expert_margin_loss(q, actions, margins, mask)
    assert loss.tolist() == pytest.approx([1.5, 2.0, 0.0, 0.5, 0.0, 0.0])
    unmasked = expert_margin_loss(q, actions, margins)
    assert unmasked[2].item() == pytest.approx(2.8)  # max(0.8, 3.8, 1.0) - 1.0 without the mask


def test_agent_loss_is_td_plus_weighted_per_head_expert_loss_on_a_mixed_batch():
    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Discrete(4)})
    agent = DQfDAgent(observation_space, action_space, DQfDConfig(expert_loss_weight=0.7, batch_size=4),
                      seed=1, demonstration_capacity=4)
    rng = np.random.default_rng(0)
    transitions = []
    for i in range(4):
        observation = rng.uniform(-1, 1, 3).astype(np.float32)
        transitions.append(Transition(observation, {"a": i % 3, "b": (i + 1) % 4}, 0.5, observation, True))
    margins = [{"a": 0.5, "b": 0.5}, {"a": -0.5}, None, {"b": -0.25}]
    for transition, margin in zip(transitions[:2] + transitions[3:], margins[:2] + margins[3:]):
        agent.add_demonstration(transition, margin)
    agent.observe(transitions[2])  # online: no margins
    stored = [agent.replay._data[i] for i in range(4)]
    batch = agent.make_batch(stored)
    q_values = agent.online(batch.observations)
    td, _, _ = agent.td_loss(batch, q_values)
    expected_heads = []
    for head, size in (("a", 3), ("b", 4)):
        per_sample = []
        for t in stored:
            m = (t.info.get("expert_margins") or {}).get(head)
            q = q_values[head][len(per_sample)].detach().numpy()
            a_e = t.action[head]
            if m is None:
                per_sample.append(0.0)
                continue
            augmented = q + np.where(np.arange(size) == a_e, 0.0, m)
            per_sample.append(augmented.max() - q[a_e] if m >= 0 else q[a_e] - augmented.min())
        expected_heads.append(np.mean(per_sample))
    loss, _, stats = agent.compute_loss(batch)
    assert stats["expert_loss"] == pytest.approx(np.mean(expected_heads), rel=1e-5)
    assert loss.item() == pytest.approx(td.item() + 0.7 * np.mean(expected_heads), rel=1e-5)
    assert agent.replay._protected[:4].tolist() == [True, True, True, False]


def test_demonstrations_need_reserved_capacity_and_known_heads():
    space = spaces.Dict({"a": spaces.Discrete(2)})
    agent = DQfDAgent(spaces.Box(0, 1, (1,), np.float32), space, DQfDConfig(), demonstration_capacity=1)
    transition = Transition(np.zeros(1, np.float32), {"a": 1}, 0.5, np.zeros(1, np.float32), True)
    with pytest.raises(ConfigError, match="margins"):
        agent.add_demonstration(transition, {"z": 0.5})
    agent.add_demonstration(transition)
    with pytest.raises(ConfigError, match="demonstration_capacity"):
        agent.add_demonstration(transition)
    with pytest.raises(ConfigError, match="expert_margin"):
        DQfDConfig(expert_margin=float("nan"))
    assert (DQfDConfig().expert_margin, DQfDConfig().expert_reward) == (0.5, 0.5)
    assert agent.replay.capacity == DQNConfig().replay_capacity + 1


@pytest.fixture(scope="module")
def indexing_task(tmp_path_factory):
    collection = generate_imdb_collection(4_000, seed=5)
    task = build_indexing_task(collection, workdir=tmp_path_factory.mktemp("dqfd"), actions="positional")
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=10), 3, 3, per_episode=True)
    episodes = [schedule.task_for_episode(e) for e in range(schedule.n_episodes)]
    yield task, episodes
    task.system.close()


def _demonstrations(task, episodes, rule: str):
    rules = select_rules([rule], rule_factories(task.schema.k))
    return DemonstrationWorkflow(task.system, task.converter).label_trace(episodes, rules)


def _pretrained(task, dataset, steps: int, seed: int = 0) -> DQfDAgent:
    agent = DQfDAgent(task.schema.state_space, task.schema.action_space, DQfDConfig(), seed=seed,
                      demonstration_capacity=len(dataset))
    agent.add_demonstrations(dataset)
    if steps:
        agent.pretrain(steps)
    return agent


def _greedy(agent, demonstration):
    return agent.act(demonstration.transition.observation, explore=False, mask=demonstration.transition.mask)


def test_pretraining_on_noop_demonstrations_makes_noop_greedy(indexing_task):
    task, episodes = indexing_task
    dataset = _demonstrations(task, episodes, "noop")
    noop = {head: 0 for head in task.schema.head_names}
    untrained = _pretrained(task, dataset, 0)
    baseline = np.mean([_greedy(untrained, d) == noop for d in dataset])
    agent = _pretrained(task, dataset, 400)
    share = np.mean([_greedy(agent, d) == noop for d in dataset])
    assert len(dataset) == 30 and share >= 0.95, (share, baseline)
    assert baseline < 0.5  # learning happened: before pretraining no-op was rarely greedy


def test_pretraining_on_reverse_order_demonstrations_never_picks_the_reverse_index(indexing_task):
    task, episodes = indexing_task
    dataset = _demonstrations(task, episodes, "reverse")
    rule = ReverseOrderRule(task.schema.k)
    assert len(dataset) > 10
    assert all(m < 0 for d in dataset for m in d.margins.values())
    agent = _pretrained(task, dataset, 400)
    reverse_greedy = [_greedy(agent, d) == d.transition.action for d in dataset]
    assert not any(reverse_greedy)
    # learning happened: the forbidden value now trails every other valid value of its head by (nearly)
    # the margin, which it did not before pretraining
    assert _share_trailing(agent, dataset, 0.4) >= 0.9
    assert _share_trailing(_pretrained(task, dataset, 0), dataset, 0.4) < 0.5
    assert rule.name == "reverse"


def _share_trailing(agent, dataset, gap: float) -> float:
    """Share of (state, head) pairs whose forbidden value is at least ``gap`` below every other valid one."""
    trailing = []
    for d in dataset:
        q = agent.greedy_q_values(d.transition.observation, d.transition.mask)
        for head in d.margins:
            forbidden = d.transition.action[head]
            others = np.delete(q[head], forbidden)
            trailing.append(np.min(others[np.isfinite(others)]) - q[head][forbidden] >= gap)
    return float(np.mean(trailing))
