"""Workflows: online training, policy evaluation, trials with their run records.

The names below are loaded on first use, so importing a light submodule (``wield.workflows.ownership``,
``wield.workflows.signals``) does not import torch through the learners that ``evaluation`` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wield.workflows.evaluation import (Comparator, InstanceBatch, PolicyEvaluation, RulePolicy,
                                            assess_learning, evaluate_policy, instance_scores, trial_verdict)
    from wield.workflows.verdict_settings import verdict_cap, verdict_settings
    from wield.workflows.objective_settings import objective_settings, run_objective
    from wield.workflows.run_record import RunRecord, library_versions
    from wield.workflows.training import EpisodeResult, StepRecord, run_episode, train_online
    from wield.workflows.trial import progress_wanted, reproduce_run, run_trial, trial_stopwatch

_EXPORTS = {
    "RunRecord": "run_record", "library_versions": "run_record",
    "EpisodeResult": "training", "StepRecord": "training", "run_episode": "training", "train_online": "training",
    "PolicyEvaluation": "evaluation", "RulePolicy": "evaluation", "evaluate_policy": "evaluation",
    "assess_learning": "evaluation", "trial_verdict": "evaluation", "Comparator": "evaluation",
    "instance_scores": "evaluation", "InstanceBatch": "evaluation", "verdict_cap": "verdict_settings",
    "verdict_settings": "verdict_settings", "run_objective": "objective_settings",
    "objective_settings": "objective_settings",
    "run_trial": "trial", "reproduce_run": "trial", "progress_wanted": "trial", "trial_stopwatch": "trial",
}

__all__ = ["RunRecord", "library_versions", "EpisodeResult", "StepRecord", "run_episode", "train_online",
           "PolicyEvaluation", "RulePolicy", "evaluate_policy", "assess_learning", "trial_verdict",
           "Comparator", "instance_scores", "InstanceBatch", "verdict_cap", "verdict_settings", "run_trial",
           "reproduce_run", "progress_wanted", "trial_stopwatch", "run_objective", "objective_settings"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
