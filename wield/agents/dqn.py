"""DQNAgent: double, dueling DQN with prioritised replay and several action heads on one shared trunk.

Exploration is epsilon-greedy per head with epsilon annealed over observed transitions; masked actions
are never chosen. ``update()`` runs ``updates_per_observation`` gradient steps for each transition observed
since the previous call, so learning does not depend on how often it is called. ``compute_loss`` is the
per-batch loss (Huber double-DQN TD loss averaged over heads); subclasses such as DQfD extend it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wield.agents.optimizers import ExactAdam
from wield.agents.base import Action, ActionMask, Agent, Observation, Transition, allowed_actions
from wield.agents.dqn_config import DQNConfig
from wield.agents.encoders import TensorTree, batch_observations
from wield.agents.heads import ActionHeads
from wield.agents.networks import make_q_network
from wield.agents.replay import PrioritizedReplay, ReplayBuffer
from wield.agents.schedules import LinearSchedule
from wield.errors import ConfigError
from wield.seeding import derive_seed, make_rng

__all__ = ["Batch", "DQNAgent", "DQNConfig"]


@dataclass
class Batch:
    """A sampled minibatch as tensors; ``transitions`` keeps the originals (e.g. for expert margins)."""

    observations: TensorTree
    actions: dict[str, torch.Tensor]  # long [B], indices from 0
    rewards: torch.Tensor  # float [B]
    next_observations: TensorTree
    terminated: torch.Tensor  # float [B]
    masks: dict[str, torch.Tensor]  # bool [B, n], True = allowed
    next_masks: dict[str, torch.Tensor]
    weights: torch.Tensor  # importance-sampling weights, float [B]
    transitions: list[Transition]

    def __len__(self) -> int:
        return len(self.transitions)


class DQNAgent(Agent):
    """Deep Q-learning for a ``Discrete`` action space or a ``Dict`` of named ``Discrete`` heads."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space,
                 config: DQNConfig | None = None, seed: int = 0) -> None:
        if config is not None and not isinstance(config, DQNConfig):
            raise ConfigError("config", type(config).__name__, ["DQNConfig", None])
        self.config = config = config if config is not None else DQNConfig()
        self.observation_space = observation_space
        self.action_space = action_space
        self.heads = ActionHeads.from_space(action_space)
        self.seed = int(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "dqn", "network"))
            self.online = make_q_network(observation_space, self.heads.sizes, config)
        self.target = copy.deepcopy(self.online).requires_grad_(False)
        self.optimizer = ExactAdam(self.online.parameters(), lr=config.learning_rate)  # same on every CPU
        self.epsilon = LinearSchedule(config.epsilon_start, config.epsilon_end, config.epsilon_decay_steps)
        replay_seed = derive_seed(seed, "dqn", "replay")
        self.replay: ReplayBuffer = (
            PrioritizedReplay(config.replay_capacity, config.alpha, config.beta_start, config.beta_steps,
                              config.priority_eps, replay_seed, config.beta_end)
            if config.prioritized else ReplayBuffer(config.replay_capacity, replay_seed))
        self._rng = make_rng(seed, "dqn", "explore")
        self._steps_observed = 0
        self._processed = 0  # observed transitions whose gradient steps have run
        self._pending: list[bool] = []  # per unprocessed transition: was the buffer ready for learning?
        self.gradient_steps = 0

    # ----------------------------------------------------------------------------------------- acting
    def _q_values(self, observation: Observation) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            q = self.online(batch_observations(self.observation_space, [observation]))
        return {name: values[0].numpy().astype(np.float64) for name, values in q.items()}

    def greedy_q_values(self, observation: Observation, mask: ActionMask = None) -> dict[str, np.ndarray]:
        """Q values of each head for one observation; masked actions are ``-inf``."""
        masks = self.heads.split_mask(mask)
        q = self._q_values(observation)
        for name, head_mask in masks.items():
            if head_mask is not None:
                q[name][~head_mask] = -np.inf
        return q

    def current_epsilon(self) -> float:
        return self.epsilon.value(self._steps_observed)

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        masks = self.heads.split_mask(mask)
        epsilon = self.current_epsilon() if explore else 0.0
        q: dict[str, np.ndarray] | None = None
        choice = {}
        for name, size in self.heads.sizes.items():
            allowed = allowed_actions(masks[name], size)
            if explore and self._rng.random() < epsilon:
                choice[name] = int(self._rng.choice(allowed))
                continue
            if q is None:
                q = self._q_values(observation)
            choice[name] = int(allowed[np.argmax(q[name][allowed])])
        return self.heads.join_action(choice)

    # --------------------------------------------------------------------------------------- learning
    def observe(self, transition: Transition) -> None:
        self.replay.add(transition)
        self._steps_observed += 1
        self._pending.append(len(self.replay) >= (self.config.learning_starts or self.config.batch_size))

    def update(self) -> dict[str, float]:
        """Run the gradient steps due for the transitions observed since the last call."""
        losses, q_means = [], []
        for ready in self._pending:
            self._processed += 1
            if ready:
                for _ in range(self.config.updates_per_observation):
                    loss, q_mean = self.gradient_step()
                    losses.append(loss)
                    q_means.append(q_mean)
            if self._processed % self.config.target_sync_every == 0:
                self.sync_target()
        self._pending.clear()
        stats = {"updates": float(len(losses)), "epsilon": self.current_epsilon()}
        if losses:
            stats.update(loss=float(np.mean(losses)), mean_q=float(np.mean(q_means)))
        return stats

    def sync_target(self) -> None:
        self.target.load_state_dict(self.online.state_dict())

    def gradient_step(self) -> tuple[float, float]:
        """One gradient step on a sampled minibatch (also usable for offline pretraining): (loss, mean Q)."""
        indices, transitions, weights = self.replay.sample(self.config.batch_size)
        batch = self.make_batch(transitions, weights)
        self.online.train()
        loss, td_errors, stats = self.compute_loss(batch)
        self.optimizer.zero_grad()
        loss.backward()
        if self.config.grad_clip is not None:
            nn.utils.clip_grad_norm_(self.online.parameters(), self.config.grad_clip, foreach=True)
        self.optimizer.step()
        self.replay.update_priorities(indices, td_errors)
        self.gradient_steps += 1
        return float(loss.detach()), float(stats.get("mean_q", 0.0))

    def _mask_tensor(self, masks: list[Any]) -> dict[str, torch.Tensor]:
        result = {name: np.ones((len(masks), size), dtype=bool) for name, size in self.heads.sizes.items()}
        for row, mask in enumerate(masks):
            if mask is None:
                continue
            for name, head_mask in self.heads.split_mask(mask).items():
                if head_mask is not None:
                    result[name][row] = head_mask
        return {name: torch.from_numpy(array) for name, array in result.items()}

    def make_batch(self, transitions: list[Transition], weights: np.ndarray | None = None) -> Batch:
        """Tensors for a list of transitions (weights default to 1)."""
        actions = [self.heads.split_action(t.action) for t in transitions]
        if weights is None:
            weights = np.ones(len(transitions), dtype=np.float32)
        return Batch(
            observations=batch_observations(self.observation_space, [t.observation for t in transitions]),
            actions={name: torch.tensor([a[name] for a in actions], dtype=torch.long) for name in self.heads.sizes},
            rewards=torch.tensor([float(t.reward) for t in transitions], dtype=torch.float32),
            next_observations=batch_observations(self.observation_space,
                                                 [t.next_observation for t in transitions]),
            terminated=torch.tensor([float(bool(t.terminated)) for t in transitions], dtype=torch.float32),
            masks=self._mask_tensor([t.mask for t in transitions]),
            next_masks=self._mask_tensor([t.next_mask for t in transitions]),
            weights=torch.as_tensor(np.asarray(weights, dtype=np.float32)),
            transitions=list(transitions))

    def compute_loss(self, batch: Batch) -> tuple[torch.Tensor, np.ndarray, dict[str, float]]:
        """The loss to minimise, the per-sample |TD error| (new priorities) and statistics."""
        q_values = self.online(batch.observations)
        return self.td_loss(batch, q_values)

    def td_loss(self, batch: Batch, q_values: Mapping[str, torch.Tensor]
                ) -> tuple[torch.Tensor, np.ndarray, dict[str, float]]:
        """Importance-weighted Huber double-DQN loss averaged over heads; priorities = mean |TD| over heads.

        The bootstrap action is the online network's argmax over the actions valid in the next state.
        """
        with torch.no_grad():
            next_target = self.target(batch.next_observations)
            next_online = self.online(batch.next_observations) if self.config.double_q else next_target
        not_done = 1.0 - batch.terminated
        losses, td_abs, q_taken = [], [], []
        for name in self.heads.sizes:
            valid = batch.next_masks[name]
            valid = valid | ~valid.any(dim=1, keepdim=True)  # a state with no valid action: do not mask
            q = q_values[name].gather(1, batch.actions[name][:, None]).squeeze(1)
            with torch.no_grad():
                best = next_online[name].masked_fill(~valid, float("-inf")).argmax(dim=1)
                next_value = next_target[name].gather(1, best[:, None]).squeeze(1)
                target = batch.rewards + self.config.gamma * not_done * next_value
            per_sample = nn.functional.smooth_l1_loss(q, target, reduction="none")
            losses.append((batch.weights * per_sample).mean())
            td_abs.append((target - q).detach().abs())
            q_taken.append(q.detach().mean())
        loss = torch.stack(losses).mean()
        td_errors = torch.stack(td_abs).mean(dim=0).numpy().astype(np.float64)
        return loss, td_errors, {"td_loss": float(loss.detach()), "mean_q": float(torch.stack(q_taken).mean())}

    # ------------------------------------------------------------------------------------ persistence
    def state_dict(self, include_replay: bool = False) -> dict[str, Any]:
        """Networks, optimiser, counters and generator states; the replay contents only on request."""
        return copy.deepcopy({
            "online": self.online.state_dict(),
            "target": self.target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "steps_observed": self._steps_observed,
            "processed": self._processed,
            "pending": list(self._pending),
            "gradient_steps": self.gradient_steps,
            "rng": self._rng.bit_generator.state,
            "replay": self.replay.state_dict(include_data=include_replay),
            "config": self.config.to_dict(),
        })

    def load_state_dict(self, state: dict[str, Any]) -> None:
        state = copy.deepcopy(state)
        self.online.load_state_dict(state["online"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._steps_observed = int(state["steps_observed"])
        self._processed = int(state["processed"])
        self._pending = [bool(p) for p in state["pending"]]
        self.gradient_steps = int(state["gradient_steps"])
        self._rng.bit_generator.state = state["rng"]
        self.replay.load_state_dict(state["replay"])
