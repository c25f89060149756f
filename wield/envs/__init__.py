"""Gymnasium environments assembled from Wield's parts, their standard view and their gymnasium ids."""

from wield.envs.env import EpisodeList, EpisodeSource, WieldEnv
from wield.envs.episode import Episode, StepContext
from wield.envs.registry import environment_id, register_environments
from wield.envs.standard import StandardView

__all__ = ["WieldEnv", "EpisodeSource", "EpisodeList", "StepContext", "Episode", "StandardView",
           "environment_id", "register_environments"]
