"""WieldEnv: a gymnasium environment assembled from system + schema + converter + workload schedule.

One episode walks the items of one workload task (e.g. the 20 queries of an indexing task). At step t the
environment shows the agent the system state in the context of item t, converts the agent's action into a
system action, applies it, measures the whole workload and converts the metrics into a reward. ``info``
carries the system action, the system state after it, the raw metrics and the action mask of the next
decision, so any gymnasium
learner (Stable-Baselines3, RLlib, Wield's own agents) can train on a Wield task unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import gymnasium as gym

from wield.converters.base import Converter
from wield.schemas.base import Schema
from wield.systems.base import SystemAdapter


class EpisodeSource(Protocol):
    """Anything that yields the workload items of episode ``i`` (a WorkloadSchedule does)."""

    @property
    def n_episodes(self) -> int: ...

    def task_for_episode(self, index: int) -> Sequence[Any]: ...


class StepContext(dict):
    """Context handed to the converter: the current ``item``, the whole ``workload`` and the ``step``."""


class WieldEnv(gym.Env):
    """A gymnasium environment over one system, one schema, one converter and one schedule.

    Episodes take the schedule's tasks in order (episode i uses task ``i mod n_episodes``); pass
    ``options={"episode": i}`` to ``reset`` to choose one. ``reset(seed=...)`` restarts at episode 0: the
    environment itself draws nothing at random, its schedule is already fixed by the workload seed.
    """

    metadata = {"render_modes": []}

    def __init__(self, system: SystemAdapter, schema: Schema, converter: Converter,
                 schedule: EpisodeSource) -> None:
        super().__init__()
        self.system = system
        self.schema = schema
        self.converter = converter
        self.schedule = schedule
        self.observation_space = schema.state_space
        self.action_space = schema.action_space
        self.episode = -1
        self._items: Sequence[Any] = ()
        self._step = 0
        self._last_metrics: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------------
    def _context(self, step: int) -> StepContext:
        return StepContext(item=self._items[step], workload=self._items, step=step, episode=self.episode)

    def _observe(self, step: int) -> tuple[Any, Any]:
        context = self._context(step)
        observation = self.converter.system_to_agent_state(self.system.state(), context)
        return observation, self.schema.action_mask(context)

    @property
    def workload(self) -> Sequence[Any]:
        """The items of the current episode."""
        return self._items

    # -- gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "episode" in options:
            self.episode = int(options["episode"])
        else:  # a seeded reset restarts the schedule, so equal seeds give equal episodes
            self.episode = 0 if seed is not None else self.episode + 1
        self._items = list(self.schedule.task_for_episode(self.episode % self.schedule.n_episodes))
        if not self._items:
            raise ValueError(f"episode {self.episode} of the schedule has no items")
        self.system.reset()
        self._step = 0
        observation, mask = self._observe(0)
        return observation, {"action_mask": mask, "episode": self.episode}

    def step(self, action: Any):
        if not self._items or self._step >= len(self._items):
            raise RuntimeError("step() called before reset() or after the episode ended")
        context = self._context(self._step)
        system_action = self.converter.agent_to_system_action(action, context)
        self.system.apply(system_action)
        metrics = self.system.measure(self._items)
        reward = float(self.converter.system_to_agent_reward(metrics, context))
        self._last_metrics = metrics
        self._step += 1
        terminated = self._step >= len(self._items)
        observation, mask = self._observe(min(self._step, len(self._items) - 1))
        info = {"system_action": system_action, "system_state": self.system.state(), "metrics": metrics,
                "action_mask": mask,
                "step": self._step - 1, "episode": self.episode}
        return observation, reward, terminated, False, info

    def close(self) -> None:
        self.system.close()
        super().close()
