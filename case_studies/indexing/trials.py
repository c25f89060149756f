"""One trial of an indexing experiment, as a top-level function that any executor can run."""

from __future__ import annotations

from typing import Any, Mapping

from case_studies.indexing.methods import run_method_trial


def run_indexing_trial(config: Mapping[str, Any], trial: Mapping[str, Any], directory: str) -> dict[str, Any]:
    """Run one planned trial into ``directory``; returns the summary the classification reads.

    ``config["method"]`` picks the method (``dqn`` when absent; see methods.py for the others); the summary
    holds ``trial``, ``seeds``, ``transitions``, ``evaluations`` (system evaluations charged), the
    method's ``metrics``, every evaluated method's metrics, ``train_test_similarity`` and ``seconds``.
    """
    return run_method_trial(config, trial, directory)
