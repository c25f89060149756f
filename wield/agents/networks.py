"""Q networks: an observation encoder, a shared MLP trunk, and one Q output per action head.

Several heads sharing one trunk is the study's shared-parameter multi-head task (e.g. the k positional
keys of a compound index). With ``dueling`` each head has its own value and advantage streams:
``Q_h(s, a) = V_h(s) + A_h(s, a) - mean_a A_h(s, a)``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch
from gymnasium import spaces
from torch import nn

from wield.agents.encoders import ObservationEncoder, TensorTree


class QNetwork(nn.Module):
    """``forward(observations) -> {head: [batch, n_actions_of_head]}``."""

    def __init__(self, observation_space: spaces.Space, head_sizes: Mapping[str, int],
                 hidden_sizes: Sequence[int] = (128, 128), dueling: bool = True, embedding_dim: int = 16) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(observation_space, embedding_dim)
        layers: list[nn.Module] = []
        width = self.encoder.output_dim
        for size in hidden_sizes:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        self.trunk = nn.Sequential(*layers)
        self.head_names = list(head_sizes)
        self.dueling = dueling
        self.advantages = nn.ModuleList(nn.Linear(width, n) for n in head_sizes.values())
        self.values = nn.ModuleList(nn.Linear(width, 1) for _ in head_sizes) if dueling else None

    def forward(self, observations: TensorTree) -> dict[str, torch.Tensor]:
        features = self.trunk(self.encoder(observations))
        result = {}
        for index, name in enumerate(self.head_names):
            advantage = self.advantages[index](features)
            if self.values is not None:
                advantage = self.values[index](features) + advantage - advantage.mean(dim=1, keepdim=True)
            result[name] = advantage
        return result
