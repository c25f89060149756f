"""The hostile-input battery of ``benchmarks/bad_inputs.py``: malformed files, out-of-range options, bad
traces and damaged run, experiment and server directories are each refused with a non-zero exit, one line
naming the problem, no traceback and nothing left behind."""

from __future__ import annotations

import sys

# A fast representative subset of the battery (the whole one: python benchmarks/bad_inputs.py, a few minutes):
# options, malformed and oddly named input files, and hand-edited records of every kind (wrong types, huge
# numbers, links to /dev/zero, FIFOs where files belong, a configuration naming another file).
SUBSET = (
    "k beyond the collection's fields", "JSON nested 100,000 deep", "CSV with an unterminated quote",
    "classify: summary truncated", "reproduce: model.pt truncated",
    "CSV header with a trailing newline", "JSON collection with a duplicate key",
    "fields a and A (one column to SQLite)", "a 10,000-character field name", "collection is a FIFO",
    "classify: summary transitions 10**400", "classify: summary trial -1", "classify: summary verdict a string",
    "classify: summary is a FIFO", "classify: summary links to /dev/zero", "classify: experiment trials 10**12",
    "report: episodes.csv is a FIFO", "reproduce: evaluation methods a list",
    "reproduce: config collection /etc/passwd", "reproduce: seeds optimisation seed 2**70",
)


def test_hostile_inputs_are_refused_cleanly_without_hanging(tmp_path, benchmark_script):
    battery = benchmark_script("bad_inputs")
    names = {case.name for case in battery.cases()}
    assert len(names) >= 150 and set(SUBSET) <= names, set(SUBSET) - names
    outcomes = battery.run_battery(tmp_path / "battery", timeout=60, names=SUBSET)
    assert len(outcomes) == len(SUBSET)
    misbehaved = [(o.name, o.code, o.traceback, o.hung, o.left_behind, o.stderr[-500:]) for o in outcomes if not o.ok]
    assert not misbehaved, misbehaved
    assert not any(o.traceback or o.hung for o in outcomes) and all(o.code != 0 for o in outcomes)
    refused = {o.name: o.message for o in outcomes}
    assert "/etc/passwd" in refused["reproduce: config collection /etc/passwd"]
    assert "root:" not in refused["reproduce: config collection /etc/passwd"]  # never a line of the file
    assert len(refused["a 10,000-character field name"]) < 400  # the name is never echoed whole


def test_a_closed_output_pipe_ends_classify_quietly(tmp_path, benchmark_script):
    battery = benchmark_script("bad_inputs")
    root = tmp_path / "battery"
    battery.run_battery(root, names=())  # the fixtures only
    outcome = battery.run_broken_pipe(root)
    assert outcome.ok and outcome.code == 141 and not outcome.stderr.strip(), outcome.stderr


def test_comma_lists_name_the_field_and_the_allowed_names():
    import pytest

    from wield.configs import parse_name_list
    from wield.errors import ConfigError

    assert parse_name_list(" a, b ,", "methods", ("a", "b", "c")) == ["a", "b"]
    assert parse_name_list(["x"], "metrics") == ["x"]  # no closed set: any name
    for text, reason in (("a,d", "unknown name"), ("a,a", "named twice"), (" , ", "name at least one")):
        with pytest.raises(ConfigError, match=f"'methods'.*{reason}.*allowed: 'a', 'b', 'c'"):
            parse_name_list(text, "methods", ("a", "b", "c"))


def test_a_case_studys_method_costs_name_its_methods_and_are_positive():
    import dataclasses

    import pytest

    from case_studies.indexing.plugin import CASE_STUDY
    from wield.errors import ConfigError

    with pytest.raises(ConfigError, match="method_costs.*'bogus'.*allowed: 'dqn'"):
        dataclasses.replace(CASE_STUDY, method_costs={"bogus": 2.0})
    for cost in (0, -1.0, "big", True):
        with pytest.raises(ConfigError, match="method_costs\\['random'\\].*positive number"):
            dataclasses.replace(CASE_STUDY, method_costs={"random": cost})


STORE_FILLER = """import resource, sys
from pathlib import Path
from case_studies.indexing.measurement_store import MeasurementStore
from wield.cli.exits import describe_os_error
if len(sys.argv) > 2:
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
store = MeasurementStore(Path(sys.argv[1]) / "store.sqlite", {"collection": "x"})
try:
    for i in range(100_000):
        store.put_work(f"q{i}", "p" * 200, 1.0, 1, ("a",))
except OSError as exc:
    print(describe_os_error(exc))
    sys.exit(3)
"""


def _fill_store(directory, *limit: int):
    import subprocess

    return subprocess.run([sys.executable, "-c", STORE_FILLER, str(directory), *map(str, limit)],
                          capture_output=True, text=True, timeout=300)


def test_a_file_size_limit_under_the_measurement_store_is_one_line_not_an_sqlite_traceback(tmp_path):
    completed = _fill_store(tmp_path, 300_000)  # a real write failure (EFBIG: SQLite's "disk I/O error")
    assert completed.returncode == 3 and "Traceback" not in completed.stderr, completed.stderr
    line = completed.stdout.strip()
    assert "measurement store failed: disk I/O error" in line and "ulimit" in line and "store.sqlite" in line, line


def test_a_full_cache_file_system_under_the_measurement_store_is_one_line(mount_tmpfs):
    completed = _fill_store(mount_tmpfs("512k"))
    assert completed.returncode == 3 and "Traceback" not in completed.stderr, completed.stderr
    line = completed.stdout.strip()
    assert "database or disk is full" in line and "the disk is full: free some space" in line, line
