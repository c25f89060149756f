"""Workflows: online training, rollouts and evaluation, run records."""

from wield.workflows.run_record import RunRecord, library_versions
from wield.workflows.training import EpisodeResult, StepRecord, run_episode, train_online

__all__ = ["RunRecord", "library_versions", "EpisodeResult", "StepRecord", "run_episode", "train_online"]
