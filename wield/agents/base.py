"""The Agent contract every learner, optimiser and baseline implements.

Observations are what a gymnasium environment returns (a numpy array or a dict of arrays). Actions are an
``int`` for a ``Discrete`` action space or a ``dict[str, int]`` for a ``Dict`` of named ``Discrete`` heads.
An action mask has the same shape as the action: a boolean array per head (True = allowed), or ``None``
when every action is allowed.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

Observation = Any  # np.ndarray | dict[str, np.ndarray]
Action = Any  # int | dict[str, int]
ActionMask = Any  # np.ndarray | dict[str, np.ndarray] | None
RewardFn = Callable[[float, Mapping[str, Any]], float]  # (environment reward, info) -> a learner's reward


@dataclass
class Transition:
    """One step of experience, as an agent receives it in ``observe``."""

    observation: Observation
    action: Action
    reward: float
    next_observation: Observation
    terminated: bool
    truncated: bool = False
    mask: ActionMask = None
    next_mask: ActionMask = None
    info: Mapping[str, Any] = field(default_factory=dict)


class Agent(abc.ABC):
    """A decision maker: ``act``, ``observe`` experience, ``update`` its parameters, save and load.

    Agents are seeded at construction: two agents built with the same spaces, configuration and seed and fed
    the same observations act identically.
    """

    @abc.abstractmethod
    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        """Choose an action; ``explore=False`` is the greedy (evaluation) policy."""

    def observe(self, transition: Transition) -> None:
        """Record one transition. Learners store it; non-learning baselines ignore it."""

    def update(self) -> dict[str, float]:
        """Run the learner's updates that are due; returns statistics such as ``{"loss": ...}``."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to restore the agent's decisions (weights, counters)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""

    @property
    def steps_observed(self) -> int:
        """Transitions observed so far (n in the C_i(n, s, f) classification)."""
        return getattr(self, "_steps_observed", 0)


class EnvironmentLearner(Agent):
    """An agent whose library runs its own training loop on the environment (e.g. Stable-Baselines3).

    ``wield.workflows.train_online`` hands it the environment instead of stepping it: ``learn_episodes``
    plays exactly ``episodes`` episodes starting at schedule episode ``start_episode`` and passes each one's
    ``EpisodeResult`` to ``on_episode`` (with the environment's rewards); ``steps_observed`` counts its
    transitions like any learner's. ``reward_fn`` (its task's, ``Task.reward_fn``), when given, is what
    the learner is rewarded with instead of the environment's reward.
    """

    @abc.abstractmethod
    def learn_episodes(self, env: Any, episodes: int, *, start_episode: int = 0,
                       on_episode: Callable[[Any], None], reward_fn: RewardFn | None = None) -> None:
        """Train on ``env`` for ``episodes`` episodes, reporting each through ``on_episode``."""


def allowed_actions(mask: np.ndarray | None, size: int) -> np.ndarray:
    """Indices of the allowed actions of one head; all of them when there is no mask."""
    if mask is None:
        return np.arange(size)
    allowed = np.flatnonzero(np.asarray(mask, dtype=bool))
    if allowed.size == 0:
        raise ValueError("action mask allows no action")
    return allowed
