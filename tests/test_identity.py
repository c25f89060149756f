"""What identifies an experiment and its trials (issue 37): a trial copied in from another experiment is
refused by ``classify`` and by a resume, never counted; a metric that is not a finite number (``Infinity``,
``1e400``) is refused, never a success; and a resume with different data (the ``--collection`` file edited
between a killed run and its resume) is refused naming the collection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from wield.cli import main

TINY = ["--documents", "500", "--queries", "3", "--repetitions", "1", "--quiet"]


def experiment(out: Path, *extra: str, trials: int = 2) -> list[str]:
    return ["run", "indexing", "--class", "C2", "--trials", str(trials), "--out", str(out), *TINY, *extra]


def test_a_trial_copied_from_another_experiment_is_refused_by_classify_and_resume(tmp_path, capsys):
    ours, theirs = tmp_path / "two-episodes", tmp_path / "three-episodes"
    assert main(experiment(ours, "--episodes", "2")) == 0
    assert main(experiment(theirs, "--episodes", "3")) == 0
    capsys.readouterr()
    shutil.rmtree(ours / "trials" / "trial-001")
    shutil.copytree(theirs / "trials" / "trial-001", ours / "trials" / "trial-001")
    copied = (ours / "trials" / "trial-001" / "summary.json").read_text()
    for command in (["classify", str(ours)], experiment(ours, "--episodes", "2")):
        assert main(command) == 2
        error = capsys.readouterr().err
        assert "trial-001/summary.json: a trial of another experiment" in error, error
        assert "episodes = 3 there, 2 in experiment.json" in error and "Traceback" not in error
    assert (ours / "trials" / "trial-001" / "summary.json").read_text() == copied  # refused, not moved aside

    # A summary of before identities were recorded is checked against its record's config.json.
    summary = json.loads(copied)
    del summary["identity"]
    (ours / "trials" / "trial-001" / "summary.json").write_text(json.dumps(summary))
    assert main(["classify", str(ours)]) == 2
    assert "episodes = 3 there, 2 in experiment.json" in capsys.readouterr().err
    # A trial moved into another trial's directory (same experiment) is refused too.
    shutil.rmtree(ours / "trials" / "trial-001")
    shutil.copytree(ours / "trials" / "trial-000", ours / "trials" / "trial-001")
    assert main(["classify", str(ours)]) == 2
    assert "the summary of trial 0 in trial-001" in capsys.readouterr().err


def test_a_metric_that_is_not_a_finite_number_is_refused_never_a_success(tmp_path, capsys):
    out = tmp_path / "experiment"
    assert main(experiment(out, "--episodes", "2", trials=1)) == 0
    capsys.readouterr()
    assert main(["classify", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["experiments"][0]["classification"]["f"] == 0.0
    path = out / "trials" / "trial-000" / "summary.json"
    summary = json.loads(path.read_text())
    metric = json.loads((out / "experiment.json").read_text())["objective"]["metric"]
    for value in ("Infinity", "1e400", "NaN"):  # JSON numbers json.dumps cannot write: put in by a placeholder
        summary["metrics"][metric] = "@non-finite@"
        path.write_text(json.dumps(summary).replace('"@non-finite@"', value))
        assert json.loads(path.read_text(), parse_constant=str)["metrics"][metric] in (value, float("inf"))
        assert main(["classify", str(out)]) == 2
        error = capsys.readouterr().err
        assert f"metric '{metric}' must be a finite number" in error and "summary.json" in error, (value, error)


def write_collection(path: Path, seed: int, documents: int = 400) -> None:
    """A CSV collection file: generated IMDB-like documents (``seed`` decides the data)."""
    import csv

    from workloads import generate_imdb_collection

    collection = generate_imdb_collection(documents, seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(collection.field_names)
        writer.writerows(collection.rows())


def test_a_resume_on_an_edited_collection_file_is_refused(tmp_path, capsys):
    data, out = tmp_path / "titles.csv", tmp_path / "experiment"
    write_collection(data, seed=3)
    command = ["--collection", str(data), "--episodes", "2"]
    assert main(experiment(out, *command, trials=1)) == 0
    manifest = json.loads((out / "experiment.json").read_text())
    assert manifest["config"]["collection_fingerprint"]
    write_collection(data, seed=4)  # the file edited between the run and its resume
    capsys.readouterr()
    assert main(experiment(out, *command, trials=2)) == 2
    error = capsys.readouterr().err
    assert "'collection_fingerprint'" in error and "holds a different experiment" in error, error
    assert sorted(p.name for p in (out / "trials").iterdir()) == ["trial-000"]  # nothing mixed in
    assert json.loads((out / "experiment.json").read_text()) == manifest
    # The trial's own record names the data it ran on: rerunning it on other data is refused too.
    assert main(["reproduce", str(out / "trials" / "trial-000")]) == 2
    assert "invalid value for 'collection'" in capsys.readouterr().err  # reproduce's own check, or the load's
    write_collection(data, seed=3)  # the same data again: the experiment resumes
    assert main(experiment(out, *command, trials=2)) == 0
    assert sorted(p.name for p in (out / "trials").iterdir()) == ["trial-000", "trial-001"]
