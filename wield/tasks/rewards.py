"""Task reward functions (a ``Task``'s ``reward_fn``): what a learner is rewarded with, derived from the
environment's reward, while the environment keeps reporting its own.

``ImprovementReward`` turns a *level* reward (a step reward that scores the whole current configuration,
as indexing's -(w_m * size + w_t * runtime) does) into the change of that level since the task's previous
decision. Over an episode the changes sum to the last level minus the level the episode started from, a
constant, so an undiscounted learner then maximises the level of the configuration it ends with, which is
what an evaluation of the configuration scores; summing the levels themselves also rewards reaching a
level early, and every decision's value carries the sum of the levels still to come, so the differences
between actions are a small part of what the learner must estimate.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from wield.errors import ConfigError

EPISODE_KEY = "episode_index"


class ImprovementReward:
    """``reward_fn`` that rewards a decision with the change of the level reward it caused.

    ``start_level`` is the level of the configuration every episode starts from (indexing: no index). A new
    episode is recognised by the environment's ``info["episode_index"]`` changing (a Wield environment puts
    it in every step's info), or by ``info["step"] == 0``.
    """

    def __init__(self, start_level: float) -> None:
        if not isinstance(start_level, (int, float)) or isinstance(start_level, bool) \
                or not math.isfinite(start_level):
            raise ConfigError("start_level", start_level, reason="must be a finite number (the level reward of "
                                                                 "the configuration an episode starts from)")
        self.start_level = float(start_level)
        self._episode: Any = None
        self._previous = self.start_level

    def __call__(self, reward: float, info: Mapping[str, Any]) -> float:
        episode = info.get(EPISODE_KEY)
        if episode != self._episode or info.get("step") == 0:
            self._episode, self._previous = episode, self.start_level
        change = float(reward) - self._previous
        self._previous = float(reward)
        return change
