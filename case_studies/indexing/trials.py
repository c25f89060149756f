"""The indexing trial function that the core calls (``CaseStudy.trial_function``): one planned trial of
``config["method"]`` (default ``dqn``; ``--agent`` names the learner of ``wield run indexing --class``)."""

from __future__ import annotations

from typing import Any, Mapping

from case_studies.indexing.methods import available_methods
from case_studies.indexing.run import IndexingRunConfig, run_indexing
from wield.errors import ConfigError
from wield.protocols import TrialSeeds, TrialSummary
from wield.workflows import RunRecord, progress_wanted


def run_indexing_trial(config: Mapping[str, Any], seeds: TrialSeeds, record: RunRecord) -> TrialSummary:
    """Run ``config``'s method with ``seeds`` into ``record``; the summary the classification reads."""
    import torch

    torch.set_num_threads(1)
    config = dict(config)
    method = config.pop("method", config.get("agent") or available_methods()[0])
    if method not in available_methods():
        raise ConfigError("method", method, available_methods())
    progress = progress_wanted()
    return run_indexing(IndexingRunConfig.from_dict(config), method, seeds, record, progress=progress,
                        echo=print if progress else (lambda _: None))
