"""The scheduling vector environment as a Stable-Baselines3 ``VecEnv``, for sb3-contrib's MaskablePPO.

SB3 steps a ``VecEnv`` with one batch of actions for all its environments and asks for the masks through
``env_method("action_masks")`` (sb3-contrib's ``get_action_masks``): both map onto
``SchedulingVectorEnv``'s array calls. Episodes end with ``dones[i]`` and the next one starts at once, with
``infos[i]["terminal_observation"]``, as SB3 expects.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from case_studies.scheduling.vector_env import SchedulingVectorEnv


class SB3SchedulingVecEnv(VecEnv):
    """``vector``'s environments under SB3's ``VecEnv`` API."""

    def __init__(self, vector: SchedulingVectorEnv) -> None:
        self.vector = vector
        super().__init__(vector.num_envs, vector.observation_space, vector.action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        return self.vector.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        observations, rewards, dones, infos = self.vector.step(self._actions)
        return observations, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Nothing to release: the simulators are plain arrays."""

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "action_masks":
            return [self.action_masks for _ in self._indices(indices)]
        if attr_name == "render_mode":
            return [None for _ in self._indices(indices)]
        raise AttributeError(attr_name)

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"the scheduling vector environment has no settable attribute {attr_name!r}")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name == "action_masks":
            masks = self.vector.action_masks()
            return [masks[i] for i in self._indices(indices)]
        raise AttributeError(method_name)

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def action_masks(self) -> np.ndarray:
        return self.vector.action_masks()

    def seed(self, seed: int | None = None) -> Sequence[None]:
        """The workloads are seeded by their tasks; nothing to seed here."""
        return [None] * self.num_envs
