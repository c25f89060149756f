"""Wield: a system-agnostic workbench for reinforcement learning in computer systems.

The core package defines the abstractions (schemas, converters, system adapters, environments, agents,
task graphs, workflows). Case studies and workload generators live outside it and use only its public API.
What a new system needs is exported here (loaded on first use, so ``import wield`` stays light):

- the task design: ``Schema``, ``Converter``, ``full_mask``;
- the system: ``SystemAdapter``, ``StepContext``, ``LabellingRule``, ``Label``;
- the environment: ``WieldEnv``, ``EpisodeSource`` (the workload/schedule protocol), ``EpisodeList``,
  ``StandardView``;
- the plugin: ``CaseStudy``, ``Option``, ``Metric``, ``Objective``;
- the trial: ``TrialSeeds``, ``TrialSummary``, ``RunRecord``, ``train_online``, ``evaluate_policy``,
  ``assess_learning`` and ``trial_verdict`` (the learning verdict: ``LadderVerdict``, its ``Comparator`` rungs
  played on ``EvaluationInstances``; ``InstanceBatch``: more instances while a rung is undecided),
  ``instance_scores``, ``progress_wanted``, ``trial_stopwatch`` (where
  a trial's time goes: ``TrialSummary.timing``);
- learners: ``DQNAgent``, ``DQNConfig``, ``RandomAgent``, ``SB3Agent`` (Stable-Baselines3 algorithms, the
  ``sb3`` extra; more in ``wield.agents``); ``apply_torch_threads`` (one torch thread while training unless
  you chose a count: ``wield.workflows.threads``; ``train_online`` applies it);
- seeds: ``derive_seed``, ``make_rng``; errors: ``ConfigError``.

Diagnostics go through the standard ``logging`` module under the logger ``wield`` (``wield.logs``); importing
``wield`` adds only a ``NullHandler``, so nothing is shown until the application configures logging.
Importing ``wield`` registers a gymnasium id ``wield/<Name>-v0`` for every installed case study.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Schema": "wield.schemas", "full_mask": "wield.schemas", "Converter": "wield.converters",
    "SystemAdapter": "wield.systems", "StepContext": "wield.envs", "WieldEnv": "wield.envs",
    "EpisodeSource": "wield.envs", "EpisodeList": "wield.envs", "StandardView": "wield.envs",
    "LabellingRule": "wield.demonstrations", "Label": "wield.demonstrations",
    "CaseStudy": "wield.plugins", "Option": "wield.plugins", "Metric": "wield.metrics",
    "Objective": "wield.protocols", "TrialSeeds": "wield.protocols", "TrialSummary": "wield.protocols",
    "RunRecord": "wield.workflows", "train_online": "wield.workflows", "evaluate_policy": "wield.workflows",
    "assess_learning": "wield.workflows", "trial_verdict": "wield.workflows",
    "Comparator": "wield.workflows", "instance_scores": "wield.workflows", "InstanceBatch": "wield.workflows",
    "LadderVerdict": "wield.protocols", "EvaluationInstances": "wield.protocols",
    "progress_wanted": "wield.workflows", "trial_stopwatch": "wield.workflows",
    "apply_torch_threads": "wield.workflows.threads",
    "DQNAgent": "wield.agents", "DQNConfig": "wield.agents", "RandomAgent": "wield.agents", "SB3Agent": "wield.agents",
    "derive_seed": "wield.seeding", "make_rng": "wield.seeding", "ConfigError": "wield.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'wield' has no attribute {name!r}")


def _quiet_library_logging() -> None:
    """Wield logs through ``logging.getLogger("wield")`` and its children (``wield.logs``) and configures no
    output when imported: the application routes the messages (the ``wield`` command shows them on stderr)."""
    import logging

    logging.getLogger("wield").addHandler(logging.NullHandler())


def _register_environments() -> None:
    from wield.envs.registry import register_environments

    register_environments()


_quiet_library_logging()
_register_environments()
