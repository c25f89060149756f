"""Built-in agents: the Agent contract, DQN (double, dueling, prioritised, multi-head), PPO with
action masks, random baseline."""

from wield.agents.base import Agent, Transition, allowed_actions
from wield.agents.dqfd import DQfDAgent, DQfDConfig
from wield.agents.dqn import Batch, DQNAgent, DQNConfig
from wield.agents.opentuner_agent import OpenTunerAgent
from wield.agents.ppo import HeadsPPOAgent, PPOAgent, PPOConfig
from wield.agents.random_agent import RandomAgent
from wield.agents.search import ConfigurationSearchAgent, RandomSearchAgent
from wield.agents.replay import PrioritizedReplay, ReplayBuffer, SumTree
from wield.agents.schedules import LinearSchedule

__all__ = ["Agent", "Batch", "DQNAgent", "DQNConfig", "LinearSchedule", "PrioritizedReplay", "RandomAgent",
           "ReplayBuffer", "SumTree", "Transition", "allowed_actions",
           "ConfigurationSearchAgent", "OpenTunerAgent", "RandomSearchAgent", "DQfDAgent", "DQfDConfig",
           "PPOAgent", "PPOConfig", "HeadsPPOAgent"]
