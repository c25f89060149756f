"""The NumPy forward pass of a trained Q network (``wield.agents.numpy_forward``): the network's Q values to
float32 rounding, for every observation part and both networks, and ``None`` where it has no twin."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from wield.agents import DQNAgent
from wield.agents.dqn_config import DQNConfig
from wield.agents.encoders import batch_observations
from wield.agents.networks import QNetwork, SlotQNetwork
from wield.agents.numpy_forward import TIE_MARGIN, decided_by_margin, numpy_q_function

MIXED = spaces.Dict({"box": spaces.Box(-2.0, 2.0, (3, 2)), "flags": spaces.MultiBinary(4),
                     "phase": spaces.Discrete(5, start=-1), "keys": spaces.MultiDiscrete([3, 6, 2], start=[1, 0, 0])})
SLOTS = spaces.Dict({"candidates": spaces.Box(0.0, 1.0, (6, 4)), "workload": spaces.Box(0.0, 1.0, (3,))})


def _network_q(network: nn.Module, space: spaces.Space, observation) -> dict[str, np.ndarray]:
    with torch.inference_mode():
        found = network(batch_observations(space, [observation]))
    return {name: values[0].numpy().astype(np.float64) for name, values in found.items()}


def _randomise(network: nn.Module, seed: int) -> nn.Module:
    """Weights far from initialisation (larger, with biases), so every layer counts."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return network


@pytest.mark.parametrize("network, space", [
    (QNetwork(MIXED, {"a": 4, "b": 7}, hidden_sizes=(32, 16), dueling=True, embedding_dim=3), MIXED),
    (QNetwork(MIXED, {"a": 4}, hidden_sizes=(8,), dueling=False, embedding_dim=2), MIXED),
    (QNetwork(spaces.Box(-1.0, 1.0, (5,)), {"only": 3}, hidden_sizes=(), dueling=True), spaces.Box(-1.0, 1.0, (5,))),
    (SlotQNetwork(SLOTS, {"index": 7}, hidden_sizes=(24,)), SLOTS),
    (SlotQNetwork(spaces.Dict({"candidates": SLOTS["candidates"]}), {"index": 7}, hidden_sizes=(16,)),
     spaces.Dict({"candidates": SLOTS["candidates"]})),
])
def test_the_numpy_pass_gives_the_networks_q_values(network, space):
    _randomise(network, seed=3)
    forward = numpy_q_function(network)
    assert forward is not None
    space.seed(5)
    for filled in range(20):
        observation = space.sample()
        if isinstance(space, spaces.Dict) and "candidates" in space.spaces:  # empty slots, as a short list has
            observation["candidates"][filled % 7:] = 0.0
        mine, theirs = forward(observation), _network_q(network, space, observation)
        assert mine.keys() == theirs.keys()
        for name in theirs:
            assert mine[name].dtype == np.float64 and mine[name].shape == theirs[name].shape
            assert np.allclose(mine[name], theirs[name], rtol=1e-5, atol=1e-6), (name, mine[name], theirs[name])
            assert int(np.argmax(mine[name])) == int(np.argmax(theirs[name])) or not decided_by_margin(mine[name])


def test_a_layer_without_a_numpy_twin_gives_none():
    network = QNetwork(MIXED, {"a": 4}, hidden_sizes=(8,))
    network.trunk = nn.Sequential(nn.Linear(network.encoder.output_dim, 8), nn.Tanh())
    assert numpy_q_function(network) is None
    assert numpy_q_function(nn.Linear(3, 2)) is None


def test_only_a_clear_lead_is_decided_by_the_margin():
    assert decided_by_margin(np.array([0.1, 0.3, -np.inf]))
    assert decided_by_margin(np.array([-np.inf, 0.2, -np.inf]))  # one allowed value
    assert not decided_by_margin(np.array([0.3, 0.3 + TIE_MARGIN / 2, 0.0]))
    assert not decided_by_margin(np.array([0.5, 0.5]))


def test_the_snapshot_keeps_the_weights_it_was_taken_with():
    agent = DQNAgent(SLOTS, spaces.Dict({"index": spaces.Discrete(7)}), DQNConfig(network="slots", hidden_sizes=(16,)),
                     seed=1)
    observation = SLOTS.sample()
    forward = numpy_q_function(agent.online)
    assert forward is not None
    before = forward(observation)["index"].copy()
    with torch.no_grad():
        for parameter in agent.online.parameters():
            parameter.add_(1.0)
    assert np.array_equal(forward(observation)["index"], before)
    assert not np.allclose(numpy_q_function(agent.online)(observation)["index"], before)


def test_a_slot_table_seen_before_gives_the_same_values_bit_for_bit():
    """Steps that share a slot table (a play's steps that build nothing) reuse what the table alone gives: the
    same Q values, bit for bit, as a fresh snapshot that has seen no table, in any order of tables."""
    network = _randomise(SlotQNetwork(SLOTS, {"index": 7}, hidden_sizes=(24,)), seed=4)
    kept = numpy_q_function(network)
    assert kept is not None
    SLOTS.seed(9)
    tables = [SLOTS["candidates"].sample() for _ in range(3)]
    for step in range(12):
        observation = {"candidates": tables[(step * 5) % 3].copy(), "workload": SLOTS["workload"].sample()}
        fresh = numpy_q_function(network)
        assert fresh is not None
        assert kept(observation)["index"].tobytes() == fresh(observation)["index"].tobytes()
