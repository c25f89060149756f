"""DQNConfig: the DQN family's hyperparameters, defaulting to the study's values, validated on construction."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from wield.configs import (is_finite_number, is_integer, require_booleans, require_integers,
                           require_numbers)
from wield.errors import ConfigError


NETWORKS = ("mlp", "slots")  # wield.agents.networks: QNetwork, SlotQNetwork
MAX_LAYER = 65_536  # units of one hidden layer
MAX_LAYERS = 64
UPPER_BOUNDS = {"batch_size": 1_000_000, "replay_capacity": 10_000_000, "embedding_dim": 65_536,
                "updates_per_observation": 1_000, "target_sync_every": 10**9, "epsilon_decay_steps": 10**9,
                "beta_steps": 10**9}


@dataclass
class DQNConfig:
    """Hyperparameters of ``DQNAgent``. Defaults are the study's (learning rate 1e-4, batch 16, layers of
    128, prioritised replay of 1000, epsilon 1.0 -> 0.05 over 500 steps, target sync every 24 steps,
    4 updates per transition). Step counts are in observed transitions; ``beta_steps`` is in gradient steps.
    ``network`` is the Q network's shape (``wield.agents.networks``): ``mlp``, one trunk over the whole
    observation (the study's), or ``slots``, one scorer shared by the rows of the observation's table
    ``slot_key`` (for a design whose actions are those rows).
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
    network: str = "mlp"
    slot_key: str = "candidates"

    def __post_init__(self) -> None:
        self._check_upper_bounds()
        if isinstance(self.hidden_sizes, list):
            self.hidden_sizes = tuple(self.hidden_sizes)
        if self.learning_starts is None and is_integer(self.batch_size):
            self.learning_starts = self.batch_size
        require_numbers(self, {"learning_rate": (0, None)}, exclusive_low=True)
        require_integers(self, {"batch_size": 1, "replay_capacity": 1, "target_sync_every": 1, "embedding_dim": 1,
                                "beta_steps": 1})
        if not (isinstance(self.hidden_sizes, tuple) and all(is_integer(h) and h >= 1 for h in self.hidden_sizes)):
            raise ConfigError("hidden_sizes", self.hidden_sizes, reason="must be a tuple of integers >= 1")
        if self.replay_capacity < self.batch_size:
            raise ConfigError("replay_capacity", self.replay_capacity,
                              reason=f"must be an integer >= batch_size ({self.batch_size})")
        require_numbers(self, {name: (0, 1) for name in ("epsilon_start", "epsilon_end", "gamma", "beta_start",
                                                         "beta_end")})
        require_integers(self, {"epsilon_decay_steps": 0, "updates_per_observation": 0})
        require_booleans(self, ("double_q", "dueling", "prioritized"))
        if self.network not in NETWORKS:
            raise ConfigError("network", self.network, NETWORKS)
        if not isinstance(self.slot_key, str) or not self.slot_key:
            raise ConfigError("slot_key", self.slot_key, reason="must name an entry of the observation")
        require_numbers(self, {"alpha": (0, None)})
        require_numbers(self, {"priority_eps": (0, None)}, exclusive_low=True)
        starts = self.learning_starts
        if not (is_integer(starts) and starts is not None and self.batch_size <= starts <= self.replay_capacity):
            raise ConfigError("learning_starts", starts, reason=f"must be an integer in [batch_size "
                              f"({self.batch_size}), replay_capacity ({self.replay_capacity})]")
        if self.grad_clip is not None and not (is_finite_number(self.grad_clip) and self.grad_clip > 0):
            raise ConfigError("grad_clip", self.grad_clip,
                              reason="must be a finite number > 0, or None for no clipping")

    def _check_upper_bounds(self) -> None:
        """Sizes a run could not allocate or finish (a layer of 10**8 units, a replay of 10**11 transitions,
        10**9 updates per transition) are refused by name before anything is built."""
        for name, most in UPPER_BOUNDS.items():
            value = getattr(self, name)
            if is_integer(value) and value > most:
                raise ConfigError(name, value, reason=f"must be an integer <= {most:,}")
        sizes = self.hidden_sizes
        if isinstance(sizes, (list, tuple)) and (len(sizes) > MAX_LAYERS or any(
                is_integer(h) and h > MAX_LAYER for h in sizes)):
            raise ConfigError("hidden_sizes", sizes, reason=f"at most {MAX_LAYERS} layers of at most {MAX_LAYER:,} "
                                                            "units each")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
