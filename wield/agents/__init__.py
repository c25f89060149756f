"""Built-in agents: the Agent contract, DQN (double, dueling, prioritised, multi-head), PPO with
action masks, random baseline, and Stable-Baselines3 algorithms as reference learners (optional extra).

The names below are imported on first use (``wield.lazy``): importing ``wield.agents`` or one of its light
modules (``wield.agents.hyperparameters``, ``wield.agents.sb3_classes``) does not import torch."""

from typing import TYPE_CHECKING

from wield.lazy import lazy_exports

if TYPE_CHECKING:
    from wield.agents.base import Agent, EnvironmentLearner, Transition, allowed_actions
    from wield.agents.dqfd import DQfDAgent, DQfDConfig
    from wield.agents.dqn import Batch, DQNAgent
    from wield.agents.dqn_config import DQNConfig  # no torch: a plugin may declare its settings at import
    from wield.agents.opentuner_agent import OpenTunerAgent
    from wield.agents.ppo import HeadsPPOAgent, PPOAgent, PPOConfig
    from wield.agents.random_agent import RandomAgent
    from wield.agents.sb3 import SB3_ALGORITHMS, SB3Agent  # Stable-Baselines3 itself is imported only when built
    from wield.agents.search import ConfigurationSearchAgent, RandomSearchAgent
    from wield.agents.replay import PrioritizedReplay, ReplayBuffer, SumTree
    from wield.agents.schedules import LinearSchedule

_EXPORTS = {
    "Agent": "wield.agents.base", "EnvironmentLearner": "wield.agents.base", "Transition": "wield.agents.base",
    "allowed_actions": "wield.agents.base", "DQfDAgent": "wield.agents.dqfd", "DQfDConfig": "wield.agents.dqfd",
    "Batch": "wield.agents.dqn", "DQNAgent": "wield.agents.dqn", "DQNConfig": "wield.agents.dqn_config",
    "OpenTunerAgent": "wield.agents.opentuner_agent", "HeadsPPOAgent": "wield.agents.ppo",
    "PPOAgent": "wield.agents.ppo", "PPOConfig": "wield.agents.ppo", "RandomAgent": "wield.agents.random_agent",
    "SB3_ALGORITHMS": "wield.agents.sb3", "SB3Agent": "wield.agents.sb3",
    "ConfigurationSearchAgent": "wield.agents.search", "RandomSearchAgent": "wield.agents.search",
    "PrioritizedReplay": "wield.agents.replay", "ReplayBuffer": "wield.agents.replay",
    "SumTree": "wield.agents.replay", "LinearSchedule": "wield.agents.schedules",
}

__all__ = ["Agent", "Batch", "DQNAgent", "DQNConfig", "LinearSchedule", "PrioritizedReplay", "RandomAgent",
           "ReplayBuffer", "SumTree", "Transition", "allowed_actions",
           "ConfigurationSearchAgent", "OpenTunerAgent", "RandomSearchAgent", "DQfDAgent", "DQfDConfig",
           "PPOAgent", "PPOConfig", "HeadsPPOAgent", "EnvironmentLearner", "SB3Agent", "SB3_ALGORITHMS"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
