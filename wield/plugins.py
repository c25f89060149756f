"""Case-study plugins: how the ``wield`` command finds case studies without importing them by name.

A case study exposes a ``CaseStudy`` object and registers it under the entry-point group
``wield.case_studies`` in its package metadata (see pyproject.toml). The core only iterates that group.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable, Mapping

from wield.errors import ConfigError

ENTRY_POINT_GROUP = "wield.case_studies"
# Extra top-level commands: ``name = "package.module:add_command"`` where ``add_command(subparsers,
# formatter_class)`` adds one sub-command (e.g. ``wield db`` of the indexing case study's database servers).
COMMAND_GROUP = "wield.commands"


@dataclass(frozen=True)
class DemonstrationHook:
    """What ``wield demonstrate NAME`` needs from a case study: the labelling-rule names ``--rules`` accepts
    (and the default ones), the case study's own options, and ``build(args) -> DemonstrationDataset``.

    The core parses ``--rules`` (a validated list in ``args.rules``, ``None`` when not given),
    ``--episodes``, ``--out`` and ``--quiet``, then saves and summarises the dataset ``build`` returns.
    """

    rules: tuple[str, ...]
    default_rules: tuple[str, ...]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class CaseStudy:
    """What ``wield run NAME`` needs: a name, a description, its CLI options and the run function.

    For experiments under a randomisation class (``wield run NAME --class C2 --trials 5``) a case study
    also gives ``config_from_args`` (the JSON-serialisable run configuration, base seed included as
    ``seed``), ``trial_function(config, trial_seeds, directory) -> summary`` (a picklable top-level
    function; the summary holds ``trial``, ``transitions`` and the evaluated ``metrics``) and the default
    objective as ``{"metric": ..., "threshold": ...}``. ``reproduce(run_dir)`` reruns a run from its record
    and returns ``{"match": bool, "differences": [...], ...}``. Run records name their case study in
    ``run.json``. ``metrics`` names the evaluation metrics an objective may use.
    """

    name: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    config_from_args: Callable[[argparse.Namespace], dict[str, Any]] | None = None
    trial_function: Callable[[Mapping[str, Any], Mapping[str, Any], str], dict[str, Any]] | None = None
    objective: Mapping[str, Any] | None = None
    reproduce: Callable[[str], dict[str, Any]] | None = None
    metrics: tuple[str, ...] = ()
    # ``wield demonstrate NAME``: labelling rules -> a demonstration dataset (optional).
    demonstrations: DemonstrationHook | None = None
    # ``wield compare NAME --methods a,b``: the method names the trial function accepts as
    # ``config["method"]`` (the first is the default learner) and the metrics the comparison table shows.
    methods: tuple[str, ...] = ()
    compare_metrics: tuple[str, ...] = ()
    # ``wield report``: axis labels (with units) for metrics whose name alone does not say what they are
    # relative to, e.g. {"relative_index_size": "index size relative to the full index (%)"}.
    metric_labels: Mapping[str, str] | None = None
    # Configuration keys that say where a server is (host, port), not what the experiment is: they may
    # change between resumes of an experiment (a restarted server on a new port), e.g. ("uri",).
    volatile_config: tuple[str, ...] = ()


def load_case_studies() -> dict[str, CaseStudy]:
    """Every installed case study by name."""
    studies = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        study = entry.load()
        if not isinstance(study, CaseStudy):
            raise TypeError(f"entry point {entry.value} is not a wield.plugins.CaseStudy")
        studies[study.name] = study
    return dict(sorted(studies.items()))


def load_commands() -> dict[str, Callable[..., None]]:
    """Every installed extra command's ``add_command(subparsers, formatter_class)`` by entry-point name."""
    return {entry.name: entry.load() for entry in sorted(metadata.entry_points(group=COMMAND_GROUP),
                                                          key=lambda entry: entry.name)}


def get_case_study(name: str) -> CaseStudy:
    studies = load_case_studies()
    if name not in studies:
        raise ConfigError("case study", name, list(studies))
    return studies[name]
