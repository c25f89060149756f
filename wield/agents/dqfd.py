"""DQfD: Deep Q-learning from Demonstrations with per-sample, signed expert margins (docs/design.md section 6).

``DQfDAgent`` extends ``DQNAgent``: its loss is the double-DQN TD loss plus ``expert_loss_weight`` times
the large-margin expert loss, computed per action head on the transitions that carry expert margins
(demonstrations; online transitions carry none). For sample i with expert action a_E, margin m_i and
l(a_E, a, m) = 0 for a = a_E and m otherwise, over the actions the mask allows:

- m_i >= 0 ("do this"):    J_i = max_a [Q(s,a) + l(a_E, a, m_i)] - Q(s, a_E)   (>= 0; 0 once a_E leads by m_i)
- m_i <  0 ("never this"): J_i = Q(s, a_E) - min_a [Q(s,a) + l(a_E, a, m_i)]   (>= 0; 0 once a_E trails
  every other action by |m_i|)

The negative case is the magnitude of the study's ``min_a[...] - Q(s, a_E)`` (docs/design.md section 6.3):
that quantity is <= 0 (the minimum includes a_E itself), so minimising it as written would raise Q(s, a_E);
minimising its magnitude pushes the forbidden action below every other one, which is what a negative
demonstration means.

Demonstrations are added to the replay as protected entries (never evicted) with their own priority bonus
(``demonstration_bonus``), in capacity reserved for them on top of ``replay_capacity``. ``pretrain(steps)``
runs gradient steps on the demonstrations alone; online training then proceeds as in DQN with the
demonstrations still in the replay. Defaults are the study's: expert margin 0.5, expert reward 0.5.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import torch
from gymnasium import spaces

from wield.agents.base import Transition
from wield.agents.dqn import Batch, DQNAgent
from wield.agents.dqn_config import DQNConfig
from wield.configs import is_integer, require_numbers
from wield.errors import ConfigError

__all__ = ["DQfDAgent", "DQfDConfig", "expert_margin_loss"]

MARGINS_KEY = "expert_margins"


@dataclass
class DQfDConfig(DQNConfig):
    """``DQNConfig`` plus the demonstration hyperparameters (study defaults: margin 0.5, reward 0.5).

    ``expert_margin`` and ``expert_reward`` are the defaults that labelling and importing use;
    ``expert_loss_weight`` is lambda in loss = TD + lambda * expert; ``demonstration_bonus`` is added to a
    demonstration's priority before the exponent alpha, so demonstrations are drawn more often.
    """

    expert_margin: float = 0.5
    expert_reward: float = 0.5
    expert_loss_weight: float = 1.0
    demonstration_bonus: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require_numbers(self, {"expert_margin": (None, None), "expert_reward": (None, None),
                               "expert_loss_weight": (0, None), "demonstration_bonus": (0, None)})


def expert_margin_loss(q_values: torch.Tensor, expert_actions: torch.Tensor, margins: torch.Tensor,
                       mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-sample large-margin expert loss J_i for one head (0 where the margin is NaN: no demonstration).

    ``q_values`` [B, n], ``expert_actions`` long [B], ``margins`` float [B] (signed; NaN = none),
    ``mask`` bool [B, n] (True = allowed; ``None`` = all allowed).
    """
    if mask is None:
        mask = torch.ones_like(q_values, dtype=torch.bool)
    present = ~torch.isnan(margins)
    margin = torch.where(present, margins, torch.zeros_like(margins))
    expert_q = q_values.gather(1, expert_actions[:, None]).squeeze(1)
    others = torch.ones_like(q_values, dtype=torch.bool).scatter(1, expert_actions[:, None], False)
    augmented = q_values + others.to(q_values.dtype) * margin[:, None]
    highest = augmented.masked_fill(~mask, float("-inf")).max(dim=1).values
    lowest = augmented.masked_fill(~mask, float("inf")).min(dim=1).values
    loss = torch.where(margin >= 0, highest - expert_q, expert_q - lowest)
    return torch.where(present, loss, torch.zeros_like(loss))


class DQfDAgent(DQNAgent):
    """DQN + demonstrations: expert large-margin loss, protected demonstration replay, pretraining."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space,
                 config: DQfDConfig | None = None, seed: int = 0, demonstration_capacity: int = 0) -> None:
        if config is not None and not isinstance(config, DQfDConfig):
            raise ConfigError("config", type(config).__name__, ["DQfDConfig", None])
        if not is_integer(demonstration_capacity) or demonstration_capacity < 0:
            raise ConfigError("demonstration_capacity", demonstration_capacity, "an integer >= 0")
        config = config if config is not None else DQfDConfig()
        # Demonstrations live in extra replay slots, so they never crowd out the online experience.
        super().__init__(observation_space, action_space,
                         dataclasses.replace(config, replay_capacity=config.replay_capacity + demonstration_capacity),
                         seed)
        self.config: DQfDConfig = config
        self.demonstration_capacity = int(demonstration_capacity)
        self.demonstrations = 0
        self.pretrain_steps_done = 0

    # --------------------------------------------------------------------------------- demonstrations
    def add_demonstration(self, transition: Transition, margins: Mapping[str, float] | float | None = None) -> None:
        """Store one demonstration (protected, with the priority bonus); ``margins`` default to
        ``expert_margin`` on every head; a mapping gives per-head margins (heads left out: no expert loss)."""
        if self.demonstrations >= self.demonstration_capacity:
            raise ConfigError("demonstrations", self.demonstrations + 1,
                              reason=f"more than the agent's demonstration_capacity "
                                     f"({self.demonstration_capacity}); build the agent with a larger one")
        if margins is None:
            margins = self.config.expert_margin
        if not isinstance(margins, Mapping):
            margins = {head: float(margins) for head in self.heads.names}
        unknown = sorted(set(margins) - set(self.heads.names))
        if unknown:
            raise ConfigError("margins", unknown, self.heads.names, "demonstration margins name unknown heads")
        for head, value in margins.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise ConfigError(f"margins.{head}", value, reason="margins are finite numbers")
        info = {**dict(transition.info or {}), MARGINS_KEY: {h: float(m) for h, m in margins.items()}}
        self.heads.split_action(transition.action)  # a malformed action fails here, not in a later batch
        self.replay.add(dataclasses.replace(transition, info=info), protected=True,
                        bonus=self.config.demonstration_bonus)
        self.demonstrations += 1

    def add_demonstrations(self, demonstrations: Iterable[Any]) -> int:
        """Add every item with ``.transition`` and ``.margins`` (e.g. a ``DemonstrationDataset``)."""
        heads = getattr(demonstrations, "heads", None)
        if heads is not None and list(heads) != self.heads.names:
            raise ConfigError("demonstrations", list(heads), self.heads.names,
                              "the dataset's action heads differ from the agent's")
        added = 0
        for demonstration in demonstrations:
            self.add_demonstration(demonstration.transition, demonstration.margins)
            added += 1
        return added

    def pretrain(self, steps: int, progress: bool = False) -> dict[str, float]:
        """``steps`` gradient steps on the replay (the demonstrations, before online experience).

        The target network syncs every ``target_sync_every * updates_per_observation`` steps: the same
        number of gradient steps between syncs as online training.
        """
        if not is_integer(steps) or steps < 0:
            raise ConfigError("pretrain_steps", steps, "an integer >= 0")
        if steps and len(self.replay) == 0:
            raise ConfigError("demonstrations", 0, reason="pretraining needs demonstrations in the replay")
        from tqdm.auto import tqdm

        sync_every = max(1, self.config.target_sync_every * max(1, self.config.updates_per_observation))
        losses = []
        for _ in tqdm(range(steps), desc="pretraining", unit="step", disable=not progress, leave=False):
            loss, _ = self.gradient_step()
            losses.append(loss)
            self.pretrain_steps_done += 1
            if self.pretrain_steps_done % sync_every == 0:
                self.sync_target()
        if steps:
            self.sync_target()
        stats = {"pretrain_steps": float(steps), "demonstrations": float(self.demonstrations)}
        if losses:
            stats.update(first_loss=float(np.mean(losses[: max(1, steps // 10)])),
                         final_loss=float(np.mean(losses[-max(1, steps // 10):])))
        return stats

    # ------------------------------------------------------------------------------------------- loss
    def margin_tensors(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Per head, the batch's margins as a float tensor [B] (NaN where a sample has none)."""
        result = {name: np.full(len(batch), np.nan, dtype=np.float32) for name in self.heads.sizes}
        for row, transition in enumerate(batch.transitions):
            margins = (transition.info or {}).get(MARGINS_KEY)
            if margins:
                for name, value in margins.items():
                    result[name][row] = value
        return {name: torch.from_numpy(array) for name, array in result.items()}

    def expert_loss(self, batch: Batch, q_values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Importance-weighted expert loss: per head the batch mean of w_i * J_i, averaged over heads."""
        margins = self.margin_tensors(batch)
        per_head = [(batch.weights * expert_margin_loss(q_values[name], batch.actions[name], margins[name],
                                                         batch.masks[name])).mean()
                    for name in self.heads.sizes]
        return torch.stack(per_head).mean()

    def compute_loss(self, batch: Batch) -> tuple[torch.Tensor, np.ndarray, dict[str, float]]:
        q_values = self.online(batch.observations)
        td, td_errors, stats = self.td_loss(batch, q_values)
        expert = self.expert_loss(batch, q_values)
        loss = td + self.config.expert_loss_weight * expert
        return loss, td_errors, {**stats, "expert_loss": float(expert.detach())}

    # ------------------------------------------------------------------------------------ persistence
    def state_dict(self, include_replay: bool = False) -> dict[str, Any]:
        state = super().state_dict(include_replay)
        state.update(demonstrations=self.demonstrations, demonstration_capacity=self.demonstration_capacity,
                     pretrain_steps_done=self.pretrain_steps_done)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.demonstrations = int(state.get("demonstrations", 0))
        self.pretrain_steps_done = int(state.get("pretrain_steps_done", 0))
