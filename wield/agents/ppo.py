"""PPOAgent: proximal policy optimisation with action masks, for one categorical choice or many at once.

The policy is a torch module the caller supplies (so any network shape works: per-item networks, graph
embeddings...). Called on an observation (a tensor, or a dict of tensors, converted from numpy), it returns
logits of shape ``[n_actions]`` (one ``Discrete`` choice, the action is an ``int``) or ``[n_items,
n_actions]`` (one choice per item, e.g. a device per group; the action is an int array). The mask has the
logits' shape (True = allowed). Items whose mask allows a single action are forced: they take no part in
the loss.

Learning is on-policy and episodic: transitions are kept until their episode ends; returns are discounted
by ``gamma``; the advantage is the return minus a baseline: the value network when one is given, else a
moving average of returns per step of the episode (``baseline_decay``). ``update()`` runs ``epochs``
passes of the clipped surrogate objective (per item ratios for factorised actions) over every finished
episode, then drops them. Behaviour log-probabilities are recomputed at the start of ``update`` with the
parameters that acted (they only change in ``update``), so nothing stale is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import torch
from torch import nn

from wield.agents.base import Action, ActionMask, Agent, Observation, Transition
from wield.errors import ConfigError
from wield.seeding import derive_seed

__all__ = ["PPOAgent", "PPOConfig"]


@dataclass
class PPOConfig:
    """Hyper-parameters; ``validate`` names the first invalid field."""

    learning_rate: float = 3e-3
    clip: float = 0.2
    epochs: int = 4
    gamma: float = 1.0
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    baseline_decay: float = 0.9
    normalise_advantages: bool = True
    max_grad_norm: float = 1.0
    min_episodes: int = 1  # update() waits for this many finished episodes

    def validate(self) -> "PPOConfig":
        for name in ("learning_rate", "clip", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"ppo.{name}", getattr(self, name), reason="must be > 0")
        for name in ("gamma", "baseline_decay"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"ppo.{name}", getattr(self, name), reason="must be in [0, 1]")
        for name in ("epochs", "min_episodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"ppo.{name}", value, reason="an integer >= 1")
        return self


def _to_tensor(observation: Observation) -> Any:
    if isinstance(observation, Mapping):
        return {k: _to_tensor(v) for k, v in observation.items()}
    array = np.asarray(observation)
    if array.dtype.kind in "iub":
        return torch.as_tensor(array, dtype=torch.long if array.dtype.kind != "b" else torch.bool)
    return torch.as_tensor(array, dtype=torch.float32)


@dataclass
class _Step:
    observation: Observation
    action: np.ndarray
    mask: np.ndarray | None
    reward: float
    index: int  # step within its episode
    ret: float = 0.0
    forced: bool = False


@dataclass
class _Episodes:
    open: list[_Step] = field(default_factory=list)
    finished: list[_Step] = field(default_factory=list)
    count: int = 0


def logits_forced(mask: ActionMask) -> bool:
    """Whether a mask leaves exactly one allowed action for every item (nothing to sample)."""
    array = np.asarray(mask, dtype=bool)
    return bool((array.reshape(-1, array.shape[-1]).sum(-1) == 1).all())


class PPOAgent(Agent):
    """PPO with action masks. ``policy`` is a module or a zero-argument factory (built under the seed)."""

    def __init__(self, policy: nn.Module | Callable[[], nn.Module], config: PPOConfig | None = None, seed: int = 0,
                 value: nn.Module | Callable[[], nn.Module] | None = None) -> None:
        if config is not None and not isinstance(config, PPOConfig):
            raise ConfigError("config", type(config).__name__, ["PPOConfig", None])
        self.config = (config or PPOConfig()).validate()
        self.seed = int(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "ppo", "network"))
            self.policy = policy if isinstance(policy, nn.Module) else policy()
            self.value = value if value is None or isinstance(value, nn.Module) else value()
        parameters = list(self.policy.parameters()) + (list(self.value.parameters()) if self.value else [])
        self.optimizer = torch.optim.Adam(parameters, lr=self.config.learning_rate)
        self.generator = torch.Generator().manual_seed(derive_seed(seed, "ppo", "sample"))
        self.baselines: dict[int, float] = {}
        self._episodes = _Episodes()
        self._steps_observed = 0
        self.updates = 0

    # ------------------------------------------------------------------------------------- acting
    def _masked_logits(self, observation: Any, mask: ActionMask) -> tuple[torch.Tensor, torch.Tensor | None]:
        logits = self.policy(observation)
        if logits.dim() not in (1, 2):
            raise ConfigError("policy output", tuple(logits.shape), reason="logits must be [actions] or [items, actions]")
        if mask is None:
            return logits, None
        allowed = torch.as_tensor(np.asarray(mask, dtype=bool))
        if allowed.shape != logits.shape:
            raise ConfigError("mask", tuple(allowed.shape), reason=f"must match the logits {tuple(logits.shape)}")
        if not bool(allowed.any(dim=-1).all()):
            raise ValueError("action mask allows no action for some item")
        return logits.masked_fill(~allowed, float("-inf")), allowed

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        if mask is not None and logits_forced(mask):
            chosen_forced = np.asarray(mask, dtype=bool).argmax(axis=-1)
            return int(chosen_forced) if np.ndim(chosen_forced) == 0 else chosen_forced.astype(np.int64)
        with torch.no_grad():
            logits, _ = self._masked_logits(_to_tensor(observation), mask)
            if explore:
                probs = torch.softmax(logits, dim=-1)
                chosen = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=self.generator)[:, 0]
            else:
                chosen = logits.reshape(-1, logits.shape[-1]).argmax(dim=-1)
        if logits.dim() == 1:
            return int(chosen[0])
        return chosen.numpy().astype(np.int64)

    # ------------------------------------------------------------------------------------ learning
    def observe(self, transition: Transition) -> None:
        episodes = self._episodes
        episodes.open.append(_Step(transition.observation, np.asarray(transition.action, dtype=np.int64),
                                   None if transition.mask is None else np.asarray(transition.mask, dtype=bool),
                                   float(transition.reward), len(episodes.open)))
        self._steps_observed += 1
        if transition.terminated or transition.truncated:
            ret = 0.0
            for step in reversed(episodes.open):
                ret = step.reward + self.config.gamma * ret
                step.ret = ret
            episodes.finished.extend(episodes.open)
            episodes.open = []
            episodes.count += 1

    def _log_probs(self, step: _Step) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-item log-probabilities of the taken action, entropies and weights (0 for forced items)."""
        logits, allowed = self._masked_logits(_to_tensor(step.observation), step.mask)
        logits2 = logits.reshape(-1, logits.shape[-1])
        log_p = torch.log_softmax(logits2, dim=-1)
        action = torch.as_tensor(step.action.reshape(-1), dtype=torch.long)
        taken = log_p.gather(1, action[:, None])[:, 0]
        if self.config.entropy_coef > 0:
            entropy = -(log_p.exp() * log_p.clamp(min=-1e4)).sum(-1)  # masked actions: 0 x (-1e4) = 0
        else:  # not part of the loss: skip the cost
            entropy = torch.zeros_like(taken)
        weight = torch.ones_like(taken) if allowed is None else \
            (allowed.reshape(-1, logits.shape[-1]).sum(-1) > 1).float()
        return taken, entropy, weight

    @staticmethod
    def _forced(step: _Step) -> bool:
        """Every item's mask allows a single action: the step carries no choice to learn from."""
        return step.mask is not None and bool((step.mask.reshape(-1, step.mask.shape[-1]).sum(-1) <= 1).all())

    def update(self) -> dict[str, float]:
        episodes = self._episodes
        if episodes.count < self.config.min_episodes or not episodes.finished:
            return {}
        steps, episodes.finished, episodes.count = episodes.finished, [], 0
        for step in steps:  # returns were computed over whole episodes; forced steps add no gradient
            step.forced = self._forced(step)
        returns = torch.tensor([s.ret for s in steps], dtype=torch.float32)
        if self.value is not None:
            with torch.no_grad():
                baseline = torch.stack([self.value(_to_tensor(s.observation)).reshape(()) for s in steps])
        else:
            baseline = torch.tensor([self.baselines.get(s.index, float(np.mean([t.ret for t in steps
                                                                                  if t.index == s.index])))
                                     for s in steps], dtype=torch.float32)
            decay = self.config.baseline_decay
            for index in sorted({s.index for s in steps}):
                mean = float(np.mean([s.ret for s in steps if s.index == index]))
                previous = self.baselines.get(index, mean)
                self.baselines[index] = decay * previous + (1 - decay) * mean
        advantages = returns - baseline
        if self.config.normalise_advantages and len(steps) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        with torch.no_grad():
            old = [None if s.forced else self._log_probs(s)[0] for s in steps]
        stats = {"policy_loss": 0.0, "entropy": 0.0, "value_loss": 0.0}
        for _ in range(self.config.epochs):
            total = torch.zeros(())
            for s, old_log_p, advantage, ret in zip(steps, old, advantages, returns):
                if s.forced and self.value is None:
                    continue
                loss = torch.zeros(())
                if old_log_p is not None:  # None exactly for forced steps
                    log_p, entropy, weight = self._log_probs(s)
                    ratio = torch.exp(log_p - old_log_p)
                    clipped = torch.clamp(ratio, 1 - self.config.clip, 1 + self.config.clip)
                    surrogate = -torch.minimum(ratio * advantage, clipped * advantage)
                    norm = weight.sum().clamp(min=1.0)
                    policy_loss = (surrogate * weight).sum() / norm
                    mean_entropy = (entropy * weight).sum() / norm
                    loss = policy_loss - self.config.entropy_coef * mean_entropy
                    stats["policy_loss"] += float(policy_loss.detach()) / (len(steps) * self.config.epochs)
                    stats["entropy"] += float(mean_entropy.detach()) / (len(steps) * self.config.epochs)
                if self.value is not None:
                    value_loss = (self.value(_to_tensor(s.observation)).reshape(()) - ret) ** 2
                    loss = loss + self.config.value_coef * value_loss
                    stats["value_loss"] += float(value_loss.detach()) / (len(steps) * self.config.epochs)
                total = total + loss / len(steps)
            if not total.requires_grad:
                break  # every step was forced: nothing to learn
            self.optimizer.zero_grad()
            total.backward()
            nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]],
                                     self.config.max_grad_norm)
            self.optimizer.step()
        self.updates += 1
        stats["mean_return"] = float(returns.mean())
        return stats

    # ---------------------------------------------------------------------------------- persistence
    def state_dict(self) -> dict[str, Any]:
        return {"policy": self.policy.state_dict(), "value": self.value.state_dict() if self.value else None,
                "optimizer": self.optimizer.state_dict(), "baselines": dict(self.baselines),
                "generator": self.generator.get_state(), "steps_observed": self._steps_observed,
                "updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_state_dict(state["policy"])
        if self.value is not None and state.get("value") is not None:
            self.value.load_state_dict(state["value"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.baselines = {int(k): float(v) for k, v in state["baselines"].items()}
        self.generator.set_state(state["generator"])
        self._steps_observed = int(state["steps_observed"])
        self.updates = int(state["updates"])
        self._episodes = _Episodes()
