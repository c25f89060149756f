"""DQNConfig: the DQN family's hyperparameters, defaulting to the study's values, validated on construction."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


def _fail(field: str, value: Any, allowed: str) -> None:
    from wield.errors import ConfigError

    raise ConfigError(field, value, allowed)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class DQNConfig:
    """Hyperparameters of ``DQNAgent``. Defaults are the study's (learning rate 1e-4, batch 16, layers of
    128, prioritised replay of 1000, epsilon 1.0 -> 0.05 over 500 steps, target sync every 24 steps,
    4 updates per transition). Step counts are in observed transitions; ``beta_steps`` is in gradient steps.
    """

    learning_rate: float = 1e-4
    batch_size: int = 16
    hidden_sizes: tuple[int, ...] = (128, 128)
    replay_capacity: int = 1000
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_decay_steps: int = 500
    target_sync_every: int = 24
    updates_per_observation: int = 4
    gamma: float = 0.99
    double_q: bool = True
    dueling: bool = True
    prioritized: bool = True
    alpha: float = 0.6
    beta_start: float = 0.4
    beta_end: float = 1.0
    beta_steps: int = 2000
    priority_eps: float = 1e-6
    learning_starts: int | None = None  # None: batch_size
    grad_clip: float | None = 10.0
    embedding_dim: int = 16

    def __post_init__(self) -> None:
        if isinstance(self.hidden_sizes, list):
            self.hidden_sizes = tuple(self.hidden_sizes)
        if self.learning_starts is None and _is_int(self.batch_size):
            self.learning_starts = self.batch_size
        if not (_is_number(self.learning_rate) and self.learning_rate > 0):
            _fail("learning_rate", self.learning_rate, "a finite number > 0")
        for name in ("batch_size", "replay_capacity", "target_sync_every", "embedding_dim", "beta_steps"):
            if not (_is_int(getattr(self, name)) and getattr(self, name) >= 1):
                _fail(name, getattr(self, name), "an integer >= 1")
        if not (isinstance(self.hidden_sizes, tuple) and all(_is_int(h) and h >= 1 for h in self.hidden_sizes)):
            _fail("hidden_sizes", self.hidden_sizes, "a tuple of integers >= 1")
        if self.replay_capacity < self.batch_size:
            _fail("replay_capacity", self.replay_capacity, f"an integer >= batch_size ({self.batch_size})")
        for name in ("epsilon_start", "epsilon_end", "gamma", "beta_start", "beta_end"):
            if not (_is_number(getattr(self, name)) and 0 <= getattr(self, name) <= 1):
                _fail(name, getattr(self, name), "a number in [0, 1]")
        for name in ("epsilon_decay_steps", "updates_per_observation"):
            if not (_is_int(getattr(self, name)) and getattr(self, name) >= 0):
                _fail(name, getattr(self, name), "an integer >= 0")
        for name in ("double_q", "dueling", "prioritized"):
            if not isinstance(getattr(self, name), bool):
                _fail(name, getattr(self, name), "True or False")
        if not (_is_number(self.alpha) and self.alpha >= 0):
            _fail("alpha", self.alpha, "a finite number >= 0")
        if not (_is_number(self.priority_eps) and self.priority_eps > 0):
            _fail("priority_eps", self.priority_eps, "a finite number > 0")
        if not (_is_int(self.learning_starts) and self.batch_size <= self.learning_starts <= self.replay_capacity):
            _fail("learning_starts", self.learning_starts,
                  f"an integer in [batch_size ({self.batch_size}), replay_capacity ({self.replay_capacity})]")
        if self.grad_clip is not None and not (_is_number(self.grad_clip) and self.grad_clip > 0):
            _fail("grad_clip", self.grad_clip, "a finite number > 0, or None for no clipping")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
