"""Action heads: a ``Discrete`` action space or a ``Dict`` of named ``Discrete`` heads, seen uniformly.

A ``Discrete`` space is one head named ``SINGLE_HEAD``; its action is a plain ``int`` and its mask a plain
array. A ``Dict`` space has one head per key; its action is a ``dict[str, int]`` and its mask a dict of
arrays (a missing key or ``None`` means every action of that head is allowed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from gymnasium import spaces

from wield.errors import ConfigError

SINGLE_HEAD = "action"


@dataclass(frozen=True)
class ActionHeads:
    """Sizes and offsets of the heads of an action space."""

    sizes: dict[str, int]
    starts: dict[str, int]
    single: bool

    @classmethod
    def from_space(cls, space: spaces.Space) -> "ActionHeads":
        if isinstance(space, spaces.Discrete):
            return cls({SINGLE_HEAD: int(space.n)}, {SINGLE_HEAD: int(space.start)}, True)
        if isinstance(space, spaces.Dict) and space.spaces:
            heads = {k: s for k, s in space.spaces.items() if isinstance(s, spaces.Discrete)}
            if len(heads) == len(space.spaces):
                return cls({k: int(s.n) for k, s in heads.items()}, {k: int(s.start) for k, s in heads.items()},
                           False)
        raise ConfigError("action_space", space, "Discrete or a non-empty Dict of Discrete heads")

    @property
    def names(self) -> list[str]:
        return list(self.sizes)

    def split_mask(self, mask: Any) -> dict[str, np.ndarray | None]:
        """The mask of each head as a boolean array of the head's size, or ``None`` (all allowed)."""
        if mask is None:
            return {name: None for name in self.sizes}
        if self.single:
            per_head = {SINGLE_HEAD: mask}
        elif isinstance(mask, Mapping):
            unknown = set(mask) - set(self.sizes)
            if unknown:
                raise ConfigError("mask", sorted(unknown), self.names, "mask names unknown action heads")
            per_head = {name: mask.get(name) for name in self.sizes}
        else:
            raise ConfigError("mask", type(mask).__name__, reason="a Dict action space takes a dict of masks")
        result: dict[str, np.ndarray | None] = {}
        for name, head_mask in per_head.items():
            if head_mask is None:
                result[name] = None
                continue
            array = np.asarray(head_mask, dtype=bool).reshape(-1)
            if array.size != self.sizes[name]:
                raise ConfigError("mask", f"{name}: {array.size} entries", f"{self.sizes[name]} entries",
                                  "a mask has one entry per action of its head")
            result[name] = array
        return result

    def flat_mask(self, mask: Any) -> np.ndarray:
        """The masks of every head concatenated in head order (a head without a mask: all allowed), as
        sb3-contrib's MaskablePPO and other flat multi-discrete policies take them."""
        masks = self.split_mask(mask)
        return np.concatenate([np.ones(size, dtype=bool) if masks[name] is None else masks[name]
                               for name, size in self.sizes.items()])

    def split_action(self, action: Any) -> dict[str, int]:
        """Action indices from 0 per head (the space's ``start`` removed)."""
        values = {SINGLE_HEAD: action} if self.single else action
        return {name: int(values[name]) - self.starts[name] for name in self.sizes}

    def join_action(self, indices: Mapping[str, int]) -> Any:
        """The environment action for per-head indices from 0."""
        action = {name: int(indices[name]) + self.starts[name] for name in self.sizes}
        return action[SINGLE_HEAD] if self.single else action
