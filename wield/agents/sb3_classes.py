"""The Stable-Baselines3 algorithms Wield offers and their classes, imported on demand: the light part of
``wield.agents.sb3`` (no gymnasium, no training loop), so that ``wield.agents.hyperparameters`` can read a
class's keyword arguments without depending on the workflows."""

from __future__ import annotations

import importlib

from wield.errors import ConfigError, MissingDependency

# name -> (module, class, uses action masks)
SB3_ALGORITHMS: dict[str, tuple[str, str, bool]] = {
    "sb3-ppo": ("stable_baselines3", "PPO", False),
    "sb3-maskable-ppo": ("sb3_contrib", "MaskablePPO", True),
    "sb3-a2c": ("stable_baselines3", "A2C", False),
    "sb3-dqn": ("stable_baselines3", "DQN", False),
}
SB3_NOTES = {
    "sb3-ppo": "Stable-Baselines3 PPO on the standard view (no action masks)",
    "sb3-maskable-ppo": "sb3-contrib MaskablePPO on the standard view, sampling only allowed actions",
    "sb3-a2c": "Stable-Baselines3 A2C on the standard view (no action masks)",
    "sb3-dqn": "Stable-Baselines3 DQN on the standard view (a single Discrete action space only)",
}
INSTALL_HINT = "pip install 'wield[sb3]'"


def import_sb3_class(algorithm: str) -> type:
    """The SB3 / sb3-contrib class of ``algorithm`` (one of ``SB3_ALGORITHMS``), imported now."""
    if algorithm not in SB3_ALGORITHMS:
        raise ConfigError("agent", algorithm, tuple(SB3_ALGORITHMS))
    module, name, _ = SB3_ALGORITHMS[algorithm]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise MissingDependency(f"agent '{algorithm}' needs Stable-Baselines3 and sb3-contrib "
                                f"({error.name or module} is not installed): {INSTALL_HINT}") from None
