"""Caps on what is read from a record, checked before drawing or parsing (issue 45, item 3).

Before the fix ``wield report`` on a crafted record exhausted memory: a trial summary whose ``method`` is
5,000 characters long (10.9 GB after 10 minutes), a ``comparison.json`` listing 20,000 methods, an
``episodes.csv`` of 1,000,000 columns (still running after 240 s). Each is now a one-line error naming the
field, the file and the limit, within seconds.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from wield.cli import main

QUICK = ["--documents", "500", "--queries", "3", "--episodes", "2", "--repetitions", "1", "--quiet"]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("caps") / "exp"
    assert main(["run", "indexing", "--class", "C0", "--trials", "1", *QUICK, "--out", str(out)]) == 0
    return out


def _copy(experiment: Path, target: Path) -> Path:
    shutil.copytree(experiment, target, ignore=shutil.ignore_patterns(".wield.lock"))
    return target


def _long_method(directory: Path) -> Path:
    path = directory / "trials" / "trial-000" / "summary.json"
    summary = json.loads(path.read_text())
    summary["method"] = "m" * 5000
    path.write_text(json.dumps(summary))
    return path


def _many_methods(directory: Path) -> Path:
    comparison = directory.parent / "comparison"
    comparison.mkdir()
    shutil.move(str(directory), str(comparison / "dqn"))
    path = comparison / "comparison.json"
    path.write_text(json.dumps({"methods": [{"method": f"m{i}"} for i in range(20_000)]}))
    return path


def _wide_episodes(directory: Path) -> Path:
    path = directory / "trials" / "trial-000" / "episodes.csv"
    path.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n" + ",".join("1" * 1_000_000) + "\n")
    return path


@pytest.mark.parametrize("craft, words", [
    (_long_method, ["summary.method", "5,002 characters", "longer than 64 characters"]),
    (_many_methods, ["'methods' lists 20,000 methods", "at most 64"]),
    (_wide_episodes, ["1,000,000 columns", "at most 1,000"]),
])
def test_report_refuses_a_crafted_record_quickly_in_one_line(craft, words, experiment, tmp_path, capsys):
    crafted = craft(_copy(experiment, tmp_path / "crafted"))
    target = crafted.parent if crafted.name == "comparison.json" else tmp_path / "crafted"
    started = time.monotonic()
    code = main(["report", str(target), "--out", str(tmp_path / "report")])
    took = time.monotonic() - started
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert str(crafted) in lines[0] and all(word in lines[0] for word in words), lines[0]
    assert took < 60
