"""The scheduling learners: Wield's PPO with masks (``ppo``) and sb3-contrib's MaskablePPO (``maskable-ppo``).

Both see the same 25 numbers and choose the same 12 x (null/infer, batch size) with the same masks:

- ``ppo``: ``wield.agents.HeadsPPOAgent`` with an MLP policy over the 24 named heads (one row of logits per
  head) and an MLP value; GAE(0.95), updates every ``ROLLOUT_STEPS`` decisions in shuffled minibatches, as
  PPO usually trains on long episodes.
- ``maskable-ppo``: ``sb3_contrib.MaskablePPO`` (the modelled study's learner); the case study trains it on
  the vector environment (``vector_training``); ``make_maskable_ppo`` builds one on a Wield environment's
  standard view (``MultiDiscrete`` actions, ``action_masks()``) for use with SB3 directly. A trained model
  plays through the Wield environment as a ``batched_policy.BatchedAgent``, so every method is evaluated
  with the same steps and rewards.
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from wield.agents import HeadsPPOAgent, PPOConfig
from wield.agents.heads import ActionHeads
from wield.agents.optimizers import with_exact_adam
from wield.agents.sb3 import silence
from wield.envs import StandardView

HIDDEN = 64
# The untrained policy's log-odds of "infer" per slot: e^-1 / (1 + e^-1) = 27 %, so it starts by dispatching
# about 3 of 12 models per decision instead of 6 (which overloads every GPU from the first millisecond).
INITIAL_INFER_LOGIT = -1.0
ROLLOUT_STEPS = 512
PPO_CONFIG = PPOConfig(learning_rate=2e-3, gamma=0.99, gae_lambda=0.95, epochs=4, minibatch_size=128,
                       batched_policy=True, rollout_steps=ROLLOUT_STEPS, entropy_coef=0.01)


class HeadLogits(nn.Module):
    """An MLP from the observation to ``[heads, width]`` logits (``[batch, heads, width]`` for a batch);
    ``initial_bias`` (``[heads, width]``) starts the output layer's bias (its weights start small)."""

    def __init__(self, inputs: int, heads: int, width: int, hidden: int = HIDDEN,
                 initial_bias: np.ndarray | None = None) -> None:
        super().__init__()
        self.heads, self.width = heads, width
        self.body = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                  nn.Linear(hidden, heads * width))
        if initial_bias is not None:
            out = self.body[-1]
            with torch.no_grad():
                out.weight.mul_(0.01)
                out.bias.copy_(torch.as_tensor(np.asarray(initial_bias, dtype=np.float32).reshape(-1)))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.body(observation).reshape(*observation.shape[:-1], self.heads, self.width)


def value_network(inputs: int, hidden: int = HIDDEN) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, 1))


def infer_bias(action_space: gym.spaces.Dict, infer_logit: float = INITIAL_INFER_LOGIT) -> np.ndarray:
    """``[heads, width]`` initial logits: ``infer_logit`` for "infer" on every ``*_infer`` head, 0 elsewhere."""
    heads = ActionHeads.from_space(action_space)
    bias = np.zeros((len(heads.sizes), max(heads.sizes.values())), dtype=np.float32)
    for row, name in enumerate(heads.names):
        if name.endswith("_infer"):
            bias[row, 1] = infer_logit
    return bias


def make_ppo(env: gym.Env, seed: int, config: PPOConfig = PPO_CONFIG,
             infer_logit: float = INITIAL_INFER_LOGIT) -> HeadsPPOAgent:
    """Wield's PPO with masks on the scheduling environment's named heads."""
    heads = ActionHeads.from_space(env.action_space)
    inputs = int(np.prod(env.observation_space.shape))
    width = max(heads.sizes.values())
    bias = infer_bias(env.action_space, infer_logit)
    return HeadsPPOAgent(env.action_space, lambda: HeadLogits(inputs, len(heads.sizes), width, initial_bias=bias),
                         config, seed, value=lambda: value_network(inputs))


def make_maskable_ppo(env: gym.Env, seed: int, hyperparameters: Mapping[str, Any] | None = None) -> Any:
    """sb3-contrib's MaskablePPO on ``env``'s standard view (``pip install sb3-contrib``); ``hyperparameters``
    (a config file's ``[agent]`` block for it) override the case study's settings."""
    from sb3_contrib import MaskablePPO

    settings = {"n_steps": ROLLOUT_STEPS, "batch_size": 128, "n_epochs": 4, "learning_rate": PPO_CONFIG.learning_rate,
                "gamma": 0.99, "policy_kwargs": {"net_arch": [HIDDEN, HIDDEN]}, **dict(hyperparameters or {})}
    settings["policy_kwargs"] = with_exact_adam(settings.get("policy_kwargs"))  # the same steps on every CPU
    return silence(MaskablePPO("MlpPolicy", StandardView(env), seed=seed % 2**32, device="cpu", **settings))
