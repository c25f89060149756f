"""SchedulingVectorEnv: many scheduling environments stepped together, in arrays, for batched policies.

The Wield environment (``environment.py``) decides one GPU at a time through Python objects: a
``SchedulingState``, a dict of masks, a dict action, a metrics dict for the reward. That is the general path,
and it costs about 150 us per decision before any policy runs. This vector environment plays the same task
(the same decision points, observation, masks, actions and rewards: ``decision_kernels`` keeps them identical,
and the tests compare both paths action for action) with one compiled call per environment and step, on
``num_envs`` simulators at once, so that a policy evaluates its network once per step for all of them.

- ``reset()`` -> observations ``(num_envs, 2 x slots + 1)`` (float32); ``action_masks()`` -> ``(num_envs,
  mask width)`` booleans in the standard view's head order (``wield.envs.StandardView``);
- ``step(actions)`` with ``actions`` ``(num_envs, 2 x slots)`` in the standard view's ``MultiDiscrete``
  order -> observations, rewards, dones, infos. An environment whose episode ends starts its next episode at
  once (its next ``EpisodeTask``, cycling); its info then holds ``serving`` (the serving metrics of the
  finished episode, as ``ServingSystem.measure`` reports them as ``episode``), ``return``, ``decisions``,
  ``episode`` (``r``: return, ``l``: decisions, as SB3's ``Monitor`` writes them),
  ``terminal_observation`` and ``TimeLimit.truncated`` (True when a training episode was cut at its
  decision limit with requests still to serve: learners then bootstrap from its last observation).

``masks`` is the task design's mask design (``task_design.MASK_DESIGNS``: ``fit``, the default, ``late``,
``late-idle`` or ``late-idle-joint``), the same as the Wield environment's with the same ``masks``.

Each environment has its own list of episodes (``EpisodeTask``: a workload, its GPUs, and a decision limit
for training episodes, or none to serve the workload to the end). ``sb3_vec_env.SB3SchedulingVecEnv`` shows the
same environments as a Stable-Baselines3 ``VecEnv`` (with ``action_masks``), which is how MaskablePPO trains
on it.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from case_studies.scheduling import decision_kernels as kernels
from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.rewards import Reward
from case_studies.scheduling.simulator import ServingSimulator
from case_studies.scheduling.state import grow_batch_fifo
from case_studies.scheduling.system import SLOTS, EpisodeTask
from case_studies.scheduling.task_design import MASK_DESIGNS, SchedulingSchema
from wield.errors import ConfigError

__all__ = ["SchedulingVectorEnv"]


def head_layout(schema: SchedulingSchema) -> tuple[np.ndarray, int]:
    """Per slot: where its infer and batch heads sit in the standard view's flat action and mask (heads in
    the ``Dict`` action space's order); and the mask's width."""
    names = list(schema.action_space.spaces)
    sizes = [int(schema.action_space.spaces[name].n) for name in names]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    layout = np.zeros((schema.slots, 4), dtype=np.int64)
    for slot in range(schema.slots):
        infer, batch = names.index(f"slot{slot:02d}_infer"), names.index(f"slot{slot:02d}_batch")
        layout[slot] = (infer, batch, offsets[infer], offsets[batch])
    return layout, int(sum(sizes))


class _Slot:
    """One environment of the vector: its episodes, its simulator and its episode's return."""

    def __init__(self, episodes: Sequence[EpisodeTask]) -> None:
        self.episodes = list(episodes)
        self.sim: ServingSimulator | None = None  # of the current episode's task: kept while tasks repeat
        self.next_episode = 0
        self.episode_return = 0.0
        self.finished_episodes = 0


class SchedulingVectorEnv:
    """``num_envs`` scheduling environments (one list of ``EpisodeTask`` each); see the module docstring."""

    def __init__(self, episodes: Sequence[Sequence[EpisodeTask]], reward: Reward | None = None,
                 slots: int = SLOTS, profile: BatchProfile | Sequence[BatchProfile] | None = None,
                 lookahead_ms: float = 5.0, masks: str = MASK_DESIGNS[0]) -> None:
        if not episodes or any(not list(tasks) for tasks in episodes):
            raise ConfigError("episodes", "empty", reason="every environment needs at least one EpisodeTask")
        for tasks in episodes:
            for task in tasks:
                if not isinstance(task, EpisodeTask):
                    raise ConfigError("episodes", type(task).__name__, reason="must be EpisodeTask objects")
        self.reward = reward or Reward()
        self.schema = SchedulingSchema(slots, masks)  # refuses a mask design it does not know
        self.masks = masks
        self._design = MASK_DESIGNS.index(masks)  # decision_kernels.observe's design
        self.slots = slots
        self.profile = profile
        self.lookahead_ms = lookahead_ms
        self.num_envs = len(episodes)
        self.observation_space = self.schema.state_space
        self.layout, mask_width = head_layout(self.schema)
        self.action_space = gym.spaces.MultiDiscrete([int(space.n) for space in self.schema.action_space.spaces.values()])
        self._reward = kernels.reward_array(self.reward.kind, self.reward.gpu_weight, self.reward.late_charge,
                                            self.reward.scale)
        self._envs = [_Slot(tasks) for tasks in episodes]
        n = self.num_envs
        self._observations = np.zeros((n, 2 * slots + 1), dtype=np.float32)
        self._masks = np.zeros((n, mask_width), dtype=bool)
        self._positions = np.zeros((n, kernels.N_POSITION), dtype=np.int64)
        self._lasts = np.zeros((n, kernels.N_LAST))
        self._models = np.zeros((n, slots), dtype=np.int64)
        self._pending = np.zeros((n, slots), dtype=np.int64)
        self._laxity = np.zeros((n, slots))
        self._keys = np.zeros((n, slots))
        self._found = np.zeros(n, dtype=np.int64)
        self._out = np.zeros((n, 2))

    # ------------------------------------------------------------------ episodes
    def _simulator(self, env: _Slot, task: EpisodeTask) -> ServingSimulator:
        """The environment's simulator for ``task``: the one it has when the task is the same workload on as
        many GPUs (a reset replays it), else a new one (one at a time per environment: memory stays bounded)."""
        sim = env.sim
        if sim is None or sim.workload is not task.workload or sim.n_gpus != int(task.n_gpus):
            sim = ServingSimulator(task.workload, int(task.n_gpus), self.profile, lookahead_ms=self.lookahead_ms,
                                   baselines=())
        return sim

    def _start(self, index: int) -> None:
        env = self._envs[index]
        task = env.episodes[env.next_episode % len(env.episodes)]
        env.next_episode += 1
        env.sim = self._simulator(env, task)
        env.sim.reset(0)
        self._positions[index, kernels.P_LIMIT] = 0 if task.decisions is None else int(task.decisions)
        kernels.start(env.sim._state, index, self._positions, self._lasts)
        if self._positions[index, kernels.P_OVER]:
            raise ConfigError("episodes", task.workload.name, reason="the workload ended before any decision")
        env.episode_return = 0.0
        kernels.observe(env.sim._state, index, self._positions, self.layout, self._models, self._pending,
                        self._laxity, self._keys, self._found, self._observations, self._masks, self._design)

    def reset(self) -> np.ndarray:
        """Every environment starts its next episode (the first, after construction)."""
        for index in range(self.num_envs):
            self._start(index)
        return self._observations.copy()

    def action_masks(self) -> np.ndarray:
        """The current decisions' valid actions, ``(num_envs, mask width)``, in the standard view's order."""
        return self._masks.copy()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Apply one action per environment; see the module docstring."""
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs, -1)
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        out = self._out
        for index, env in enumerate(self._envs):
            while (over := kernels.decide(env.sim._state, index, self._positions, self._lasts, self._reward,
                                          self.layout, actions, self._models, self._pending, self._laxity,
                                          self._keys, self._found, self._observations, self._masks,
                                          out, self._design)) == kernels.NEED_ROOM:
                env.sim._state = grow_batch_fifo(env.sim._state)
            env.episode_return += out[index, 0]
            if over:
                dones[index] = True
                decisions = int(self._positions[index, kernels.P_DECISIONS])
                metrics = env.sim.metrics().as_dict()
                metrics["decisions"] = decisions
                infos[index] = {"serving": metrics, "return": env.episode_return, "decisions": decisions,
                                "episode": {"r": env.episode_return, "l": decisions},  # as SB3's Monitor writes
                                "terminal_observation": self._observations[index].copy(),
                                "TimeLimit.truncated": not env.sim.finished}  # cut at its decision limit
                env.finished_episodes += 1
                self._start(index)
        rewards = out[:, 0].copy()
        return self._observations.copy(), rewards, dones, infos

    def finished_episodes(self) -> list[int]:
        """Episodes each environment has finished since construction."""
        return [env.finished_episodes for env in self._envs]
