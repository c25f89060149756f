"""Built-in agents: the Agent contract, DQN (double, dueling, prioritised, multi-head), PPO with
action masks, random baseline, and Stable-Baselines3 algorithms as reference learners (optional extra)."""

from wield.agents.base import Agent, EnvironmentLearner, Transition, allowed_actions
from wield.agents.dqfd import DQfDAgent, DQfDConfig
from wield.agents.dqn import Batch, DQNAgent, DQNConfig
from wield.agents.opentuner_agent import OpenTunerAgent
from wield.agents.ppo import HeadsPPOAgent, PPOAgent, PPOConfig
from wield.agents.random_agent import RandomAgent
from wield.agents.sb3 import SB3_ALGORITHMS, SB3Agent  # Stable-Baselines3 itself is imported only when built
from wield.agents.search import ConfigurationSearchAgent, RandomSearchAgent
from wield.agents.replay import PrioritizedReplay, ReplayBuffer, SumTree
from wield.agents.schedules import LinearSchedule

__all__ = ["Agent", "Batch", "DQNAgent", "DQNConfig", "LinearSchedule", "PrioritizedReplay", "RandomAgent",
           "ReplayBuffer", "SumTree", "Transition", "allowed_actions",
           "ConfigurationSearchAgent", "OpenTunerAgent", "RandomSearchAgent", "DQfDAgent", "DQfDConfig",
           "PPOAgent", "PPOConfig", "HeadsPPOAgent", "EnvironmentLearner", "SB3Agent", "SB3_ALGORITHMS"]
