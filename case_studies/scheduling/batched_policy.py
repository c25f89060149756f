"""Batched policies: one network evaluation per step for every environment of a vector, masks applied in arrays.

A scheduling action is 24 small heads (per slot: infer or not, a batch size). sb3-contrib builds one masked
``Categorical`` per head for every call (about 3 ms a call on one core), and Wield's agents act one
observation at a time; here the logits of every head of every environment are laid out as one padded
``(environments, heads, widest head)`` tensor, invalid and padding entries set to -inf, and the action is
an ``argmax`` over the last axis: greedy, or a sample (the Gumbel-max trick: ``argmax(logits + Gumbel
noise)`` draws from the masked softmax).

``BatchedAgent`` plays a batched policy through the Wield environment, one decision at a time (greedy
decisions are the same as through the vector environment).

``BatchedPolicy.from_sb3(model)`` reads a (Maskable)PPO model's actor; ``from_heads_ppo(agent)`` Wield's
``HeadsPPOAgent``; ``uniform(nvec)`` is the random policy (every valid choice of every head equally likely).
Actions come back in the standard view's ``MultiDiscrete`` order, ``(environments, heads)``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np
import torch

from wield.agents.base import Action, ActionMask, Agent, Observation
from wield.agents.heads import ActionHeads

Logits = Callable[[torch.Tensor], torch.Tensor]  # observations (n, d) -> flat logits (n, sum(nvec))


class BatchedPolicy:
    """A masked multi-head policy evaluated for a batch of observations at once."""

    def __init__(self, nvec: Sequence[int], logits: Logits | None = None, seed: int = 0) -> None:
        self.nvec = [int(n) for n in nvec]
        self.width = max(self.nvec)
        total = sum(self.nvec)
        index = np.full((len(self.nvec), self.width), total, dtype=np.int64)  # ``total``: the padding column
        start = 0
        for head, n in enumerate(self.nvec):
            index[head, :n] = np.arange(start, start + n)
            start += n
        self._index = torch.as_tensor(index)
        self._logits = logits
        self.generator = torch.Generator().manual_seed(int(seed))

    @classmethod
    def from_sb3(cls, model: Any, seed: int = 0) -> "BatchedPolicy":
        """The actor of a Stable-Baselines3 (Maskable)PPO ``model`` with a ``MultiDiscrete`` action space."""
        policy = model.policy

        def logits(observations: torch.Tensor) -> torch.Tensor:
            features = policy.extract_features(observations, policy.pi_features_extractor)
            return policy.action_net(policy.mlp_extractor.forward_actor(features))

        return cls(model.action_space.nvec, logits, seed)

    @classmethod
    def from_heads_ppo(cls, agent: Any, seed: int = 0) -> "BatchedPolicy":
        """Wield's ``HeadsPPOAgent`` (its policy network gives ``(n, heads, widest head)`` logits)."""
        nvec = [agent.heads.sizes[name] for name in agent.heads.names]
        network = agent.ppo.policy
        columns = torch.as_tensor(np.concatenate([np.arange(n) for n in nvec]))
        rows = torch.as_tensor(np.concatenate([np.full(n, head) for head, n in enumerate(nvec)]))

        def logits(observations: torch.Tensor) -> torch.Tensor:
            return network(observations)[:, rows, columns]

        return cls(nvec, logits, seed)

    @classmethod
    def uniform(cls, nvec: Sequence[int], seed: int = 0) -> "BatchedPolicy":
        """Every valid choice of every head equally likely (use with ``explore=True``)."""
        total = int(sum(nvec))
        return cls(nvec, lambda observations: torch.zeros((observations.shape[0], total)), seed)

    def masked_logits(self, observations: torch.Tensor, masks: np.ndarray) -> torch.Tensor:
        """``(n, heads, widest head)`` logits with invalid and padding entries at -inf."""
        flat = self._logits(observations)
        n = flat.shape[0]
        padded = torch.cat([flat, torch.full((n, 1), -torch.inf)], dim=1)[:, self._index]
        valid = torch.cat([torch.as_tensor(masks, dtype=torch.bool), torch.zeros((n, 1), dtype=torch.bool)],
                          dim=1)[:, self._index]
        return padded.masked_fill(~valid, -torch.inf)

    def _choose(self, scores: torch.Tensor, explore: bool) -> torch.Tensor:
        if explore:
            uniform = torch.rand(scores.shape, generator=self.generator).clamp_(1e-12, 1.0 - 1e-7)
            scores = scores - torch.log(-torch.log(uniform))
        return scores.argmax(dim=2)

    def act(self, observations: np.ndarray, masks: np.ndarray, explore: bool = False) -> np.ndarray:
        """One action per row of ``observations`` under that row's flat ``masks``: the most likely valid
        choice of every head, or (``explore``) a sample from the masked distribution."""
        with torch.no_grad():
            scores = self.masked_logits(torch.as_tensor(observations, dtype=torch.float32), masks)
            return self._choose(scores, explore).numpy()

    def sample(self, observations: torch.Tensor, masks: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Sampled actions ``(n, heads)`` and their log-probabilities under the masked distribution (the sum
        over heads, as sb3-contrib's masked multi-categorical distribution computes it)."""
        with torch.no_grad():
            scores = self.masked_logits(observations, masks)
            actions = self._choose(scores, True)
            log_p = torch.log_softmax(scores, dim=2).gather(2, actions.unsqueeze(2)).squeeze(2).sum(dim=1)
            return actions, log_p


class BatchedAgent(Agent):
    """A ``BatchedPolicy`` acting as a Wield agent on an environment with named heads (no learning)."""

    def __init__(self, policy: BatchedPolicy, action_space: gym.spaces.Dict,
                 weights: Callable[[], Mapping[str, Any]] | None = None) -> None:
        """``weights``: what ``state_dict()`` returns (the trained network's weights, for the run record)."""
        self.policy = policy
        self.heads = ActionHeads.from_space(action_space)
        self._weights = weights

    def state_dict(self) -> dict[str, Any]:
        if self._weights is None:
            raise NotImplementedError("this batched agent was given no weights to save")
        return dict(self._weights())

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        flat = self.heads.flat_mask(mask)
        action = self.policy.act(np.asarray(observation, dtype=np.float32)[None], flat[None], explore)[0]
        return self.heads.join_action(dict(zip(self.heads.names, action.tolist())))
