"""WieldEnv: a gymnasium environment assembled from system + schema + converter + workload schedule.

One episode walks one workload task (e.g. the 20 queries of an indexing task) decision point by decision point
(``wield.envs.episode``): at each decision the agent sees the system state in the step's context, its action is
converted into a system action and applied, the workload is measured and the metrics are converted into a reward;
steps that need no decision are advanced by the system itself and their reward goes to the preceding decision.
``step`` reports gymnasium's two ends: ``terminated`` when the task is done (the workload handled, the trace
drained) and ``truncated`` when the system says a limit cut the episode short (``SystemAdapter.episode_cut``: a
decision or time budget), from which learners should bootstrap. There is no automatic reset: the observation
``step`` returns at an end is the final one. ``info`` carries the system action, the system state after it, the raw
metrics, the action mask of the next decision, the step and ``episode_index`` (the key ``episode`` is left to
episode statistics: gymnasium's RecordEpisodeStatistics and Stable-Baselines3 write it). Its values are what
gymnasium's checker can compare and vector environments can stack: numbers, arrays, dicts and tuples of them, and
the system's own state and action objects, which must therefore compare with ``==`` to a plain bool (a state
holding arrays defines ``__eq__`` with ``np.array_equal``, as ``SchedulingState`` does).

The action space keeps the schema's named heads (a ``Dict`` of ``Discrete``) for Wield's own agents;
``wield.envs.StandardView`` shows the same environment as standard libraries expect it.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import gymnasium as gym

from wield.converters.base import Converter
from wield.envs.episode import Episode, StepContext
from wield.schemas.base import Schema
from wield.systems.base import SystemAdapter


class EpisodeSource(Protocol):
    """The workload/schedule protocol: anything that yields the workload of episode ``i`` (a sequence of
    items). A ``WorkloadSchedule`` and an ``EpisodeList`` do."""

    @property
    def n_episodes(self) -> int: ...

    def task_for_episode(self, index: int) -> Sequence[Any]: ...


class EpisodeList:
    """The simplest schedule: a list of workloads, one per episode."""

    def __init__(self, workloads: Sequence[Sequence[Any]]) -> None:
        self.workloads = [list(workload) for workload in workloads]

    @property
    def n_episodes(self) -> int:
        return len(self.workloads)

    def task_for_episode(self, index: int) -> Sequence[Any]:
        return self.workloads[index]


class WieldEnv(gym.Env):
    """A gymnasium environment over one system, one schema, one converter and one schedule.

    Episodes take the schedule's tasks in order (episode i uses task ``i mod n_episodes``); pass
    ``options={"episode": i}`` to ``reset`` to choose one. ``reset(seed=...)`` restarts at episode 0: the
    environment itself draws nothing at random, its schedule is already fixed by the workload seed.
    ``context`` is the current decision's ``StepContext`` (policies acting in system terms read it).
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
        self._episode: Episode | None = None

    @property
    def workload(self) -> Sequence[Any]:
        """The items of the current episode."""
        return self._episode.workload if self._episode else ()

    @property
    def context(self) -> StepContext:
        """The current decision's context (the final one once the episode is over)."""
        if self._episode is None:
            raise RuntimeError("reset() first")
        return self._episode.context

    def _observe(self) -> tuple[Any, Any]:
        context = self.context
        observation = self.converter.system_to_agent_state(context["state"], context)
        return observation, self.schema.action_mask(context)

    # -- gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "episode" in options:
            self.episode = int(options["episode"])
        else:  # a seeded reset restarts the schedule, so equal seeds give equal episodes
            self.episode = 0 if seed is not None else self.episode + 1
        items = list(self.schedule.task_for_episode(self.episode % self.schedule.n_episodes))
        if not items:
            raise ValueError(f"episode {self.episode} of the schedule has no items")
        self._episode = Episode(self.system, self.converter, items, self.episode)
        skipped_reward = self._episode.start()
        observation, mask = self._observe()
        return observation, {"action_mask": mask, "episode_index": self.episode,
                             "skipped_steps": self._episode.skipped, "skipped_reward": skipped_reward}

    def step(self, action: Any):
        if self._episode is None or self._episode.over:
            raise RuntimeError("step() called before reset() or after the episode ended")
        context = self._episode.context
        system_action = self.converter.agent_to_system_action(action, context)
        reward = self._episode.decide(system_action)
        observation, mask = self._observe()
        info = {"system_action": system_action, "system_state": self.system.state(),
                "metrics": self._episode.metrics, "action_mask": mask, "step": context["step"],
                "episode_index": self.episode, "skipped_steps": self._episode.skipped}
        return observation, reward, self._episode.terminated, self._episode.truncated, info

    def close(self) -> None:
        self.system.close()
        super().close()
