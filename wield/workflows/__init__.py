"""Workflows: online training, policy evaluation, trials with their run records."""

from wield.workflows.evaluation import (Comparator, PolicyEvaluation, RulePolicy, assess_learning, evaluate_policy,
                                        instance_scores, trial_verdict)
from wield.workflows.run_record import RunRecord, library_versions
from wield.workflows.training import EpisodeResult, StepRecord, run_episode, train_online
from wield.workflows.trial import progress_wanted, reproduce_run, run_trial, trial_stopwatch

__all__ = ["RunRecord", "library_versions", "EpisodeResult", "StepRecord", "run_episode", "train_online",
           "PolicyEvaluation", "RulePolicy", "evaluate_policy", "assess_learning", "trial_verdict",
           "Comparator", "instance_scores", "run_trial",
           "reproduce_run", "progress_wanted", "trial_stopwatch"]
