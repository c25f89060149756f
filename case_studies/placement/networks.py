"""Policy networks of the placers.

``GrouperNetwork``: a shared per-operation MLP giving logits over groups, added to an optional fixed prior
(the layer-major blocks), so the grouper starts from contiguous blocks and learns where to move
operations. ``PlacerNetwork``: permutation-invariant over groups: each group is embedded from its own
features plus the SUM of its neighbours' embeddings weighted by the share of bytes exchanged (the
study's placer), then mapped to logits over devices. Both accept any number of operations or groups.
"""

from __future__ import annotations

import torch
from torch import nn


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, outputs))


class GrouperNetwork(nn.Module):
    def __init__(self, op_features: int, n_groups: int, hidden: int = 32, output_scale: float = 0.1) -> None:
        super().__init__()
        self.body = _mlp(op_features, hidden, n_groups)
        with torch.no_grad():
            self.body[-1].weight.mul_(output_scale)
            self.body[-1].bias.zero_()

    def forward(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.body(observation["features"])
        prior = observation.get("prior")
        return logits if prior is None else logits + prior


class PlacerNetwork(nn.Module):
    def __init__(self, group_features: int, n_devices: int, hidden: int = 64) -> None:
        super().__init__()
        inputs = group_features + n_devices
        self.own = _mlp(inputs, hidden, hidden)
        self.neighbour = _mlp(inputs, hidden, hidden)
        self.out = _mlp(hidden + inputs, hidden, n_devices)

    def forward(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        x = torch.cat([observation["features"], observation["current"]], dim=-1)
        embedding = torch.tanh(self.own(x) + observation["adjacency"] @ self.neighbour(x))
        return self.out(torch.cat([embedding, x], dim=-1))
