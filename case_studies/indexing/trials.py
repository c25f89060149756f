"""One trial of an indexing experiment, as a top-level function that any executor can run."""

from __future__ import annotations

from typing import Any, Mapping

from case_studies.indexing.experiment import IndexingRunConfig, run_indexing


def run_indexing_trial(config: Mapping[str, Any], trial: Mapping[str, Any], directory: str) -> dict[str, Any]:
    """Run one planned trial into ``directory``; returns the summary the classification reads."""
    import torch

    torch.set_num_threads(1)
    run_config = IndexingRunConfig.from_dict({**config, "out": directory})
    seeds = run_config.trial_seeds(trial)
    result = run_indexing(run_config, progress=False, echo=lambda _: None, seeds=seeds)
    evaluation = result.record.read_json("evaluation.json")
    return {
        "trial": int(trial["trial"]),
        "seeds": seeds,
        "transitions": result.transitions,
        "metrics": evaluation["methods"]["dqn"],
        "methods": evaluation["methods"],
        "train_test_similarity": evaluation["train_test_similarity"],
        "seconds": evaluation["seconds"],
    }
