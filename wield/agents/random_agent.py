"""RandomAgent: uniform over the allowed actions of each head; the random-search baseline and a sanity floor."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from wield.agents.base import Action, ActionMask, Agent, Observation, Transition, allowed_actions
from wield.agents.heads import ActionHeads
from wield.seeding import make_rng


class RandomAgent(Agent):
    """Picks each head's action uniformly among the allowed ones, from its own seeded generator."""

    def __init__(self, action_space: spaces.Space, seed: int = 0) -> None:
        self.action_space = action_space
        self.heads = ActionHeads.from_space(action_space)
        self._rng = make_rng(seed, "random-agent")
        self._steps_observed = 0

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        masks = self.heads.split_mask(mask)
        return self.heads.join_action({name: int(self._rng.choice(allowed_actions(masks[name], size)))
                                       for name, size in self.heads.sizes.items()})

    def observe(self, transition: Transition) -> None:
        self._steps_observed += 1

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self._rng.bit_generator.state, "steps_observed": self._steps_observed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.bit_generator.state = state["rng"]
        self._steps_observed = int(state["steps_observed"])
