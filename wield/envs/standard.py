"""StandardView: a Wield environment as standard RL libraries (Stable-Baselines3, sb3-contrib) expect it.

Wield's own agents act through named action heads (a ``Dict`` of ``Discrete``) and read masks per head from
``info["action_mask"]``. The standard view of the same environment has

- a ``MultiDiscrete`` action space, one entry per head in the ``Dict``'s order (a single ``Discrete`` head
  stays ``Discrete``);
- a flat ``float32`` ``Box`` observation (``gymnasium.spaces.flatten`` of the schema's state, so one-hot
  for discrete parts);
- ``action_masks()``: the current decision's per-head boolean masks concatenated in head order, as
  sb3-contrib's MaskablePPO expects (``MaskableActionMasker`` / ``get_action_masks`` call it).

``info`` is passed through untouched (Wield writes no ``info["episode"]``, so the episode statistics of
SB3's ``Monitor`` and gymnasium's ``RecordEpisodeStatistics`` stay theirs). Use it directly, through
``gymnasium.make("wield/<Name>-v0", standard_view=True)``, or with ``gymnasium.make_vec(...,
wrappers=[StandardView])``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from wield.schemas.base import full_mask


class StandardView(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """MultiDiscrete actions, a flat Box observation and ``action_masks()`` over a Wield environment."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        space = env.action_space
        if isinstance(space, gym.spaces.Dict):
            heads = {name: sub for name, sub in space.spaces.items() if isinstance(sub, gym.spaces.Discrete)}
            if len(heads) != len(space.spaces):
                raise TypeError(f"the standard view needs a Discrete or Dict-of-Discrete action space, not {space}")
            self.heads: tuple[str, ...] | None = tuple(heads)
            sizes = [int(sub.n) for sub in heads.values()]
            self.starts = np.array([int(sub.start) for sub in heads.values()], dtype=np.int64)
            self.action_space = gym.spaces.MultiDiscrete(sizes)
        elif isinstance(space, gym.spaces.Discrete):
            self.heads = None
            self.action_space = gym.spaces.Discrete(space.n, start=space.start)
        else:
            raise TypeError(f"the standard view needs a Discrete or Dict-of-Discrete action space, not {space}")
        flat = gym.spaces.flatten_space(env.observation_space)
        if not isinstance(flat, gym.spaces.Box):
            raise TypeError(f"the standard view needs an observation space that flattens to a Box, not {flat}")
        self.observation_space = gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32),
                                                dtype=np.float32)
        self._mask: Any = None

    def _observation(self, observation: Any) -> np.ndarray:
        flat = gym.spaces.flatten(self.env.observation_space, observation)
        return np.asarray(flat, dtype=np.float32)

    def _env_action(self, action: Any) -> Any:
        if self.heads is None:
            return int(action)
        values = np.asarray(action, dtype=np.int64).reshape(-1) + self.starts
        return {head: int(value) for head, value in zip(self.heads, values, strict=True)}

    def reset(self, **kwargs: Any):
        observation, info = self.env.reset(**kwargs)
        self._mask = info.get("action_mask")
        return self._observation(observation), info

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(self._env_action(action))
        self._mask = info.get("action_mask")
        return self._observation(observation), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The current decision's valid actions: per-head boolean masks concatenated in head order."""
        mask = self._mask if self._mask is not None else full_mask(self.env.action_space)
        if self.heads is None:
            return np.asarray(mask, dtype=bool).reshape(-1)
        return np.concatenate([np.asarray(mask[head], dtype=bool).reshape(-1) for head in self.heads])
