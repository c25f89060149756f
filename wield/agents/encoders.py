"""Observation encoders: gymnasium observations -> tensors -> one flat float feature vector per sample.

``batch_observations`` turns a list of numpy observations (arrays, integers, or dicts of those for a
``Dict`` space) into tensors; ``ObservationEncoder`` is the torch module mapping those tensors to a
``[batch, output_dim]`` float tensor. Supported spaces: ``Box`` (flattened), ``MultiBinary`` (as floats),
``Discrete`` (one-hot), ``MultiDiscrete`` (a learned embedding per position from one shared table of
``max(nvec)`` rows, flattened) and ``Dict`` of those (sub-encodings concatenated in sorted key order).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wield.errors import ConfigError

SUPPORTED = ("Box", "MultiBinary", "Discrete", "MultiDiscrete", "Dict")
TensorTree = Any  # torch.Tensor | dict[str, torch.Tensor]


def _check_space(space: spaces.Space) -> None:
    if isinstance(space, spaces.Dict):
        if not space.spaces:
            raise ConfigError("observation_space", space, reason="a Dict space needs at least one entry")
        for sub in space.spaces.values():
            if isinstance(sub, spaces.Dict):
                raise ConfigError("observation_space", space, SUPPORTED, "nested Dict spaces are not supported")
            _check_space(sub)
    elif not isinstance(space, (spaces.Box, spaces.MultiBinary, spaces.Discrete, spaces.MultiDiscrete)):
        raise ConfigError("observation_space", type(space).__name__, SUPPORTED)


def batch_observations(space: spaces.Space, observations: Sequence[Any]) -> TensorTree:
    """Stack a list of observations of ``space`` into tensors (a dict of tensors for a ``Dict`` space).

    Discrete values are shifted by the space's ``start`` so they index from 0.
    """
    if isinstance(space, spaces.Dict):
        return {key: batch_observations(sub, [obs[key] for obs in observations])
                for key, sub in sorted(space.spaces.items())}
    if isinstance(space, spaces.Discrete):
        indices = np.asarray(observations, dtype=np.int64).reshape(len(observations)) - int(space.start)
        return torch.from_numpy(indices)
    if isinstance(space, spaces.MultiDiscrete):
        indices = np.asarray(observations, dtype=np.int64).reshape((len(observations),) + space.shape)
        return torch.from_numpy(indices - np.asarray(space.start, dtype=np.int64))
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        values = np.asarray(observations, dtype=np.float32).reshape((len(observations),) + tuple(space.shape))
        return torch.from_numpy(values)
    raise ConfigError("observation_space", type(space).__name__, SUPPORTED)


class _Flatten(nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.output_dim = size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1).float()


class _OneHot(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.output_dim = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(x.long(), self.output_dim).float()


class _Embed(nn.Module):
    def __init__(self, nvec: np.ndarray, embedding_dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(int(np.max(nvec)), embedding_dim)
        self.output_dim = int(nvec.size) * embedding_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.table(x.long()).reshape(x.shape[0], -1)


class ObservationEncoder(nn.Module):
    """Maps the tensors of ``batch_observations(space, ...)`` to ``[batch, output_dim]`` float features."""

    def __init__(self, space: spaces.Space, embedding_dim: int = 16) -> None:
        super().__init__()
        _check_space(space)
        if not isinstance(embedding_dim, int) or embedding_dim < 1:
            raise ConfigError("embedding_dim", embedding_dim, "an integer >= 1")
        self.space = space
        self.keys: list[str] | None = None
        subspaces: list[spaces.Space] = [space]
        if isinstance(space, spaces.Dict):
            self.keys = sorted(space.spaces)
            subspaces = [space.spaces[k] for k in self.keys]
        # A ModuleList (not a ModuleDict) so that keys containing dots are allowed.
        parts = [self._part(sub, embedding_dim) for sub in subspaces]
        self.parts = nn.ModuleList(parts)
        self.output_dim: int = sum(part.output_dim for part in parts)

    @staticmethod
    def _part(space: spaces.Space, embedding_dim: int) -> "_OneHot | _Embed | _Flatten":
        if isinstance(space, spaces.Discrete):
            return _OneHot(int(space.n))
        if isinstance(space, spaces.MultiDiscrete):
            return _Embed(np.asarray(space.nvec), embedding_dim)
        return _Flatten(int(np.prod(space.shape or ())))

    def forward(self, observations: TensorTree) -> torch.Tensor:
        if self.keys is None:
            return self.parts[0](observations)
        return torch.cat([part(observations[key]) for key, part in zip(self.keys, self.parts)], dim=1)
