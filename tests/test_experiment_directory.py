"""``ExperimentDirectory`` as a context manager: the claim ends with the block, so a report or classify in
the same process sees the experiment complete (notebook 01's report said "still running")."""

from __future__ import annotations

from wield.plugins import get_case_study
from wield.workflows.experiment import ExperimentDirectory, ExperimentSpec, run_trials


def test_the_claim_ends_with_the_block(tmp_path):
    study = get_case_study("caching")
    config = {"frames": 8, "episodes": 3, "scan_share": 0.06}
    spec = ExperimentSpec("caching", "C1", trials=1, base_seed=0, config=config, objective=study.objective.as_dict())
    with ExperimentDirectory.open(tmp_path / "c1", spec) as directory:
        run_trials(directory, spec, progress=False)
        assert ExperimentDirectory(tmp_path / "c1").state == "running"
    assert ExperimentDirectory(tmp_path / "c1").state == "complete"
