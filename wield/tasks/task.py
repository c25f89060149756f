"""Task: one learner node of a task graph, i.e. an agent with its input/output adapters and update schedule.

``preprocess(observation, parent_outputs)`` builds the agent's observation from the environment's
observation and the outputs of the task's parents; ``postprocess(action, agent_observation,
parent_outputs)`` turns the agent's action into the task's output; ``mask_fn(observation,
parent_outputs)`` gives the action mask; ``reward_fn(reward, info)`` derives this task's reward from the
shared one; the agent's ``update()`` runs every ``update_every`` transitions the task observes.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from wield.agents.base import Action, ActionMask, Agent, RewardFn
from wield.errors import ConfigError

Preprocess = Callable[[Any, Mapping[str, Any]], Any]
Postprocess = Callable[[Action, Any, Mapping[str, Any]], Any]
MaskFn = Callable[[Any, Mapping[str, Any]], ActionMask]


class Task:
    """One node of a ``TaskGraph``: an agent plus how it sees, acts, is rewarded and learns."""

    def __init__(self, name: str, agent: Agent, preprocess: Preprocess | None = None,
                 postprocess: Postprocess | None = None, mask_fn: MaskFn | None = None, update_every: int = 1,
                 reward_fn: RewardFn | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("name", name, "a non-empty string")
        for method in ("act", "observe", "update", "state_dict", "load_state_dict"):
            if not callable(getattr(agent, method, None)):
                raise ConfigError("agent", type(agent).__name__, reason=f"an agent must implement {method}()")
        if not isinstance(update_every, int) or isinstance(update_every, bool) or update_every < 1:
            raise ConfigError("update_every", update_every, "an integer >= 1")
        for field, fn in (("preprocess", preprocess), ("postprocess", postprocess), ("mask_fn", mask_fn),
                          ("reward_fn", reward_fn)):
            if fn is not None and not callable(fn):
                raise ConfigError(field, fn, "a callable or None")
        self.name = name
        self.agent = agent
        self.preprocess = preprocess
        self.postprocess = postprocess
        self.mask_fn = mask_fn
        self.update_every = update_every
        self.reward_fn = reward_fn

    def agent_observation(self, observation: Any, parent_outputs: Mapping[str, Any]) -> Any:
        return observation if self.preprocess is None else self.preprocess(observation, parent_outputs)

    def output(self, action: Action, agent_observation: Any, parent_outputs: Mapping[str, Any]) -> Any:
        return action if self.postprocess is None else self.postprocess(action, agent_observation, parent_outputs)

    def mask(self, observation: Any, parent_outputs: Mapping[str, Any]) -> ActionMask:
        return None if self.mask_fn is None else self.mask_fn(observation, parent_outputs)

    def reward(self, reward: float, info: Mapping[str, Any]) -> float:
        return float(reward) if self.reward_fn is None else float(self.reward_fn(reward, info))

    def __repr__(self) -> str:
        return f"Task({self.name!r}, {type(self.agent).__name__}, update_every={self.update_every})"
