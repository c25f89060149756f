"""Configuration-search agents: black-box optimisers under the Agent contract, and random search.

An optimiser sees a task as a one-step episode: ``act`` proposes a whole configuration of a
``SearchSpace`` (a dict parameter name -> value), the case study evaluates it on the system once, and
``observe`` receives that evaluation as a terminal transition whose reward is the objective (higher is
better). One evaluation is one transition, so optimisers are charged in the same units as learners
(transitions n, system evaluations). ``act(explore=False)`` returns the best configuration seen so far.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wield.agents.base import Action, ActionMask, Agent, Observation, Transition
from wield.schemas.search_space import SearchSpace
from wield.seeding import make_rng

#: The observation of a configuration search: optimisers are blind to state.
NO_OBSERVATION = np.zeros(0, dtype=np.float32)


class ConfigurationSearchAgent(Agent):
    """Shared bookkeeping: the best configuration and reward seen, and the evaluations observed."""

    def __init__(self, search_space: SearchSpace, seed: int = 0) -> None:
        self.search_space = search_space
        self.seed = int(seed)
        self.best_configuration: dict[str, Any] | None = None
        self.best_reward = -math.inf
        self._steps_observed = 0

    def act(self, observation: Observation = NO_OBSERVATION, explore: bool = True,
            mask: ActionMask = None) -> Action:
        if not explore and self.best_configuration is not None:
            return dict(self.best_configuration)
        return self.search_space.validate(self.propose())

    def propose(self) -> dict[str, Any]:
        """The next configuration to evaluate."""
        raise NotImplementedError

    def observe(self, transition: Transition) -> None:
        configuration = self.search_space.validate(transition.action)
        reward = float(transition.reward)
        self._steps_observed += 1
        self.record(configuration, reward)
        if reward > self.best_reward:
            self.best_reward = reward
            self.best_configuration = configuration

    def record(self, configuration: dict[str, Any], reward: float) -> None:
        """Hand one evaluation to the optimiser (no-op for optimisers that do not learn)."""

    def state_dict(self) -> dict[str, Any]:
        return {"best_configuration": self.best_configuration, "best_reward": self.best_reward,
                "steps_observed": self._steps_observed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best_configuration = state["best_configuration"]
        self.best_reward = float(state["best_reward"])
        self._steps_observed = int(state["steps_observed"])

    def close(self) -> None:
        """Release the optimiser's resources."""


class RandomSearchAgent(ConfigurationSearchAgent):
    """Uniformly random configurations of the search space, from its own seeded generator."""

    def __init__(self, search_space: SearchSpace, seed: int = 0) -> None:
        super().__init__(search_space, seed)
        self._rng = make_rng(seed, "random-search")

    def propose(self) -> dict[str, Any]:
        return self.search_space.sample(self._rng)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self._rng.bit_generator.state = state["rng"]
