"""The fixed baselines' trials of a comparison measure their two rows once (case_studies/indexing/fixed_rows.py)."""

from __future__ import annotations

import json
import shutil

from case_studies.indexing.fixed_rows import shared_rows
from wield.cli import main
from wield.io import read_json
from wield.workflows import RunRecord

TINY = ["--documents", "2000", "--queries", "5", "--repetitions", "1", "--metric", "work", "--quiet"]


def test_a_none_trial_takes_both_rows_from_the_full_trial_on_its_workload_and_only_from_that(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", "indexing", "--class", "C2", "--trials", "2", "--methods", "full,none", "--workers", "1",
                 "--out", str(out), *TINY]) == 0
    for trial in ("trial-000", "trial-001"):
        full = read_json(out / "full" / "trials" / trial / "evaluation.json")
        none = read_json(out / "none" / "trials" / trial / "evaluation.json")
        assert "rows_from" not in full  # measured: the full trials ran first
        assert none["rows_from"] == f"../../../full/trials/{trial}" and none["methods"] == full["methods"]
        assert none["method"] == "none" and none["success"] == (none["objective_outcome"] == "met")
        phases = read_json(out / "none" / "trials" / trial / "summary.json")["phases"]
        assert "evaluation: latency rounds" not in phases  # nothing measured again
    capsys.readouterr()

    record = RunRecord(out / "none" / "trials" / "trial-000")
    objective = read_json(out / "none" / "trials" / "trial-000" / "evaluation.json")["objective"]
    assert shared_rows(record, "none", objective) is not None
    assert shared_rows(record, "none", {**objective, "threshold": 0.9}) is None  # another objective
    sibling = out / "full" / "trials" / "trial-000"
    config = read_json(sibling / "config.json")
    original = (sibling / "config.json").read_bytes()
    (sibling / "config.json").write_text(json.dumps({**config, "repetitions": 7}))  # another run's trial
    assert shared_rows(record, "none", objective) is None
    (sibling / "config.json").write_bytes(original)
    evaluation = (sibling / "evaluation.json").read_bytes()
    (sibling / "evaluation.json").write_bytes(evaluation.replace(b'"none"', b'"nono"', 1))  # not its checksum
    assert shared_rows(record, "none", objective) is None
    (sibling / "evaluation.json").write_bytes(evaluation)
    assert shared_rows(record, "none", objective) is not None
    # a trial directory planted as a link to a genuine trial is never read
    shutil.move(str(sibling), str(tmp_path / "elsewhere"))
    sibling.symlink_to(tmp_path / "elsewhere")
    assert shared_rows(record, "none", objective) is None
