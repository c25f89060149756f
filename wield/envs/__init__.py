"""Gymnasium environments assembled from Wield's parts."""

from wield.envs.env import EpisodeSource, StepContext, WieldEnv

__all__ = ["WieldEnv", "EpisodeSource", "StepContext"]
