"""PPOAgent: proximal policy optimisation with action masks, for one categorical choice or many at once.

The policy is a torch module the caller supplies (so any network shape works: per-item networks, graph
embeddings...). Called on an observation (a tensor, or a dict of tensors, converted from numpy), it returns
logits of shape ``[n_actions]`` (one ``Discrete`` choice, the action is an ``int``) or ``[n_items,
n_actions]`` (one choice per item, e.g. a device per group; the action is an int array). The mask has the
logits' shape (True = allowed). Items whose mask allows a single action are forced: they take no part in
the loss.

Learning is on-policy and episodic: transitions are kept until their episode ends; returns are discounted
by ``gamma``; the advantage is the return minus a baseline: the value network when one is given, else a
moving average of returns per step of the episode (``baseline_decay``); with a value network and
``gae_lambda``, generalised advantage estimation (GAE) instead, which long episodes need; with GAE,
``rollout_steps`` also updates during an episode every that many steps (bootstrapping from the value of the
next observation), as PPO usually does. ``update()`` runs ``epochs``
passes of the clipped surrogate objective (per item ratios for factorised actions) over every finished
episode, then drops them. Behaviour log-probabilities are recomputed at the start of ``update`` with the
parameters that acted (they only change in ``update``), so nothing stale is stored.

Long episodes (thousands of steps) need two options: ``minibatch_size`` splits every epoch into shuffled
minibatches, one gradient step each (0: one step per epoch over everything, the default), and
``batched_policy`` says that the policy and value modules accept a batch of observations (stacked arrays
with a leading dimension, returning logits ``[batch, ...]``), so ``update`` evaluates a minibatch in one
call instead of one call per step.

``HeadsPPOAgent`` puts a ``PPOAgent`` on an environment's native action space (a ``Discrete`` or a ``Dict``
of named ``Discrete`` heads, as Wield environments have): its policy returns one row of logits per head,
as wide as the widest head, and each head's mask is padded to that width.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import torch
from torch import nn

from wield.agents.optimizers import ExactAdam
from wield.agents.base import Action, ActionMask, Agent, Observation, Transition
from wield.agents.heads import ActionHeads
from wield.configs import is_finite_number, is_integer
from wield.errors import ConfigError
from wield.seeding import derive_seed

__all__ = ["PPOAgent", "PPOConfig", "HeadsPPOAgent"]

MAX_COUNT = 10_000_000  # the most epochs, episodes or steps a count may name (beyond it a run never ends)


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
    minibatch_size: int = 0  # steps per gradient step (0: every stored step at once)
    batched_policy: bool = False  # policy/value take stacked array observations [batch, ...]
    gae_lambda: float | None = None  # with a value network: GAE(lambda) advantages (None: return - value)
    rollout_steps: int = 0  # with GAE: also update after this many steps of an unfinished episode (0: never)

    def validate(self) -> "PPOConfig":
        for name in ("learning_rate", "clip", "max_grad_norm"):
            if not (is_finite_number(getattr(self, name)) and getattr(self, name) > 0):
                raise ConfigError(f"ppo.{name}", getattr(self, name), reason="must be a finite number > 0")
        for name in ("entropy_coef", "value_coef"):
            if not (is_finite_number(getattr(self, name)) and getattr(self, name) >= 0):
                raise ConfigError(f"ppo.{name}", getattr(self, name), reason="must be a finite number >= 0")
        for name in ("gamma", "baseline_decay"):
            if not (is_finite_number(getattr(self, name)) and 0 <= getattr(self, name) <= 1):
                raise ConfigError(f"ppo.{name}", getattr(self, name), reason="must be a number in [0, 1]")
        for name, least in (("epochs", 1), ("min_episodes", 1), ("minibatch_size", 0), ("rollout_steps", 0)):
            value = getattr(self, name)
            if not is_integer(value) or value < least or value > MAX_COUNT:
                raise ConfigError(f"ppo.{name}", value, reason=f"an integer in [{least}, {MAX_COUNT:,}]")
        if self.gae_lambda is not None and not (is_finite_number(self.gae_lambda) and 0 <= self.gae_lambda <= 1):
            raise ConfigError("ppo.gae_lambda", self.gae_lambda, reason="must be a number in [0, 1], or None")
        for name in ("normalise_advantages", "batched_policy"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"ppo.{name}", getattr(self, name), [True, False])
        if self.rollout_steps and self.gae_lambda is None:
            raise ConfigError("ppo.rollout_steps", self.rollout_steps, reason="needs gae_lambda (and a value network)")
        return self


def _stack(observations: list[Observation]) -> torch.Tensor:
    """Array observations stacked along a new leading dimension (``batched_policy``)."""
    return torch.as_tensor(np.stack([np.asarray(o, dtype=np.float32) for o in observations]))


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
    index: int  # step within its episode (or rollout segment)
    ret: float = 0.0
    forced: bool = False
    bootstrap: Observation | None = None  # after the last step of a segment cut before its episode ended


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
        if self.config.gae_lambda is not None and value is None:
            raise ConfigError("ppo.gae_lambda", self.config.gae_lambda, reason="GAE needs a value network")
        self.seed = int(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "ppo", "network"))
            self.policy = policy if isinstance(policy, nn.Module) else policy()
            self.value = value if value is None or isinstance(value, nn.Module) else value()
        parameters = list(self.policy.parameters()) + (list(self.value.parameters()) if self.value else [])
        self.optimizer = ExactAdam(parameters, lr=self.config.learning_rate)  # same on every CPU
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
        cut = 0 < self.config.rollout_steps <= len(episodes.open)
        if transition.terminated or transition.truncated or cut:
            if not transition.terminated:  # the segment goes on (GAE bootstraps from the next observation)
                episodes.open[-1].bootstrap = transition.next_observation
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
                if self.config.batched_policy:
                    baseline = self.value(_stack([s.observation for s in steps])).reshape(len(steps))
                else:
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
        if self.value is not None and self.config.gae_lambda is not None:
            advantages = self._gae(steps, baseline)
            returns = advantages + baseline
        else:
            advantages = returns - baseline
        if self.config.normalise_advantages and len(steps) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        if self.config.batched_policy:
            stats = self._batched_epochs(steps, advantages, returns)
        else:
            stats = self._epochs(steps, advantages, returns)
        self.updates += 1
        stats["mean_return"] = float(returns.mean())
        return stats

    def _gae(self, steps: list[_Step], values: torch.Tensor) -> torch.Tensor:
        """Generalised advantage estimates over the stored episodes and segments: after an episode's last
        step the value is 0; after a segment cut by ``rollout_steps`` (or truncated) it is the value of the
        next observation."""
        assert self.config.gae_lambda is not None and self.value is not None  # checked when configured
        gamma, lam, value = self.config.gamma, float(self.config.gae_lambda), self.value
        v = values.tolist()
        cut = [i for i, s in enumerate(steps) if s.bootstrap is not None]
        after = {}
        if cut:
            with torch.no_grad():
                if self.config.batched_policy:
                    bootstrap = value(_stack([steps[i].bootstrap for i in cut])).reshape(len(cut)).tolist()
                else:
                    bootstrap = [float(value(_to_tensor(steps[i].bootstrap)).reshape(())) for i in cut]
            after = dict(zip(cut, bootstrap))
        advantages = [0.0] * len(steps)
        running = 0.0
        for i in range(len(steps) - 1, -1, -1):
            last = i + 1 == len(steps) or steps[i + 1].index == 0
            next_value = after.get(i, 0.0) if last else v[i + 1]
            delta = steps[i].reward + gamma * next_value - v[i]
            running = delta + (0.0 if last else gamma * lam * running)
            advantages[i] = running
        return torch.tensor(advantages, dtype=torch.float32)

    def _minibatches(self, count: int) -> list[torch.Tensor]:
        """Step indices of each gradient step of one epoch: all in order, or shuffled minibatches."""
        size = self.config.minibatch_size
        if size <= 0 or size >= count:
            return [torch.arange(count)]
        order = torch.randperm(count, generator=self.generator)
        return list(torch.split(order, size))

    def _gradient_step(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]],
                                 self.config.max_grad_norm)
        self.optimizer.step()

    def _epochs(self, steps: list[_Step], advantages: torch.Tensor, returns: torch.Tensor) -> dict[str, float]:
        """The epochs one step at a time (any policy module)."""
        with torch.no_grad():
            old = [None if s.forced else self._log_probs(s)[0] for s in steps]
        stats = {"policy_loss": 0.0, "entropy": 0.0, "value_loss": 0.0}
        share = 1.0 / (len(steps) * self.config.epochs)
        for _ in range(self.config.epochs):
            learned = False
            for batch in self._minibatches(len(steps)):
                total = torch.zeros(())
                for i in batch.tolist():
                    s, old_log_p, advantage, ret = steps[i], old[i], advantages[i], returns[i]
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
                        stats["policy_loss"] += float(policy_loss.detach()) * share
                        stats["entropy"] += float(mean_entropy.detach()) * share
                    if self.value is not None:
                        value_loss = (self.value(_to_tensor(s.observation)).reshape(()) - ret) ** 2
                        loss = loss + self.config.value_coef * value_loss
                        stats["value_loss"] += float(value_loss.detach()) * share
                    total = total + loss / len(batch)
                if total.requires_grad:
                    self._gradient_step(total)
                    learned = True
            if not learned:
                break  # every step was forced: nothing to learn
        return stats

    def _batched_epochs(self, steps: list[_Step], advantages: torch.Tensor,
                        returns: torch.Tensor) -> dict[str, float]:
        """The epochs with one policy (and value) call per minibatch (``batched_policy``)."""
        observations = _stack([s.observation for s in steps])
        actions = torch.as_tensor(np.stack([s.action.reshape(-1) for s in steps]), dtype=torch.long)
        with torch.no_grad():
            shape = self.policy(observations[:1]).shape[1:]
        masks = torch.as_tensor(np.stack([np.ones(shape, dtype=bool) if s.mask is None else s.mask
                                          for s in steps])).reshape(len(steps), -1, shape[-1])
        with torch.no_grad():
            old, _, _ = self._batch_log_probs(observations, actions, masks)
        stats = {"policy_loss": 0.0, "entropy": 0.0, "value_loss": 0.0}
        batches = 0
        for _ in range(self.config.epochs):
            for batch in self._minibatches(len(steps)):
                log_p, entropy, weight = self._batch_log_probs(observations[batch], actions[batch], masks[batch])
                ratio = torch.exp(log_p - old[batch])
                clipped = torch.clamp(ratio, 1 - self.config.clip, 1 + self.config.clip)
                advantage = advantages[batch][:, None]
                surrogate = -torch.minimum(ratio * advantage, clipped * advantage)
                norm = weight.sum(1).clamp(min=1.0)
                policy_loss = ((surrogate * weight).sum(1) / norm).mean()
                mean_entropy = ((entropy * weight).sum(1) / norm).mean()
                loss = policy_loss - self.config.entropy_coef * mean_entropy
                if self.value is not None:
                    value_loss = ((self.value(observations[batch]).reshape(len(batch)) - returns[batch]) ** 2).mean()
                    loss = loss + self.config.value_coef * value_loss
                    stats["value_loss"] += float(value_loss.detach())
                stats["policy_loss"] += float(policy_loss.detach())
                stats["entropy"] += float(mean_entropy.detach())
                batches += 1
                if loss.requires_grad:
                    self._gradient_step(loss)
        return {name: value / max(batches, 1) for name, value in stats.items()}

    def _batch_log_probs(self, observations: torch.Tensor, actions: torch.Tensor,
                         masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per step and item: log-probability of the taken action, entropy, weight (0 for forced items)."""
        logits = self.policy(observations).reshape(masks.shape)
        log_p = torch.log_softmax(logits.masked_fill(~masks, float("-inf")), dim=-1)
        taken = log_p.gather(2, actions[:, :, None])[:, :, 0]
        entropy = -(log_p.exp() * log_p.clamp(min=-1e4)).sum(-1)
        return taken, entropy, (masks.sum(-1) > 1).float()

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


class HeadsPPOAgent(Agent):
    """PPO on a ``Discrete`` or ``Dict``-of-``Discrete`` action space: the policy returns logits ``[heads,
    width]`` (``width`` = the largest head; with ``batched_policy``, ``[batch, heads, width]``), head ``i``
    choosing among the first ``n_i`` entries of row ``i`` (the others are masked). Actions and masks are
    the environment's (``dict`` per head); everything else is ``PPOAgent``'s."""

    def __init__(self, action_space: Any, policy: nn.Module | Callable[[], nn.Module],
                 config: PPOConfig | None = None, seed: int = 0,
                 value: nn.Module | Callable[[], nn.Module] | None = None) -> None:
        self.heads = ActionHeads.from_space(action_space)
        self.width = max(self.heads.sizes.values())
        self.ppo = PPOAgent(policy, config, seed, value)
        self._padding = np.zeros((len(self.heads.sizes), self.width), dtype=bool)
        for row, size in enumerate(self.heads.sizes.values()):
            self._padding[row, :size] = True

    def array_mask(self, mask: ActionMask) -> np.ndarray:
        """The environment's mask as ``[heads, width]`` booleans (padding and missing heads filled in)."""
        array = self._padding.copy()
        for row, head_mask in enumerate(self.heads.split_mask(mask).values()):
            if head_mask is not None:
                array[row, :head_mask.size] = head_mask
        return array

    def array_action(self, action: Action) -> np.ndarray:
        return np.array(list(self.heads.split_action(action).values()), dtype=np.int64)

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        chosen = np.asarray(self.ppo.act(observation, explore, self.array_mask(mask))).reshape(-1)
        return self.heads.join_action(dict(zip(self.heads.names, chosen.tolist())))

    def observe(self, transition: Transition) -> None:
        self.ppo.observe(Transition(transition.observation, self.array_action(transition.action),
                                    transition.reward, transition.next_observation, transition.terminated,
                                    transition.truncated, self.array_mask(transition.mask)))

    def update(self) -> dict[str, float]:
        return self.ppo.update()

    def state_dict(self) -> dict[str, Any]:
        return self.ppo.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ppo.load_state_dict(state)

    @property
    def steps_observed(self) -> int:
        return self.ppo.steps_observed
