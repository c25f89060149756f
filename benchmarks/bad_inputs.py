"""Battery of hostile inputs: every one must be refused with a one-line error, no traceback, nothing left.

Feeds the ``wield`` command malformed collection files, out-of-range and contradictory option values, bad
query traces, bad identifiers (a trailing newline, a case-only clash, 2,500 fields, a 10,000-character
name, duplicate JSON keys) and damaged run, experiment and server directories, among them a battery of
hand-edited records (wrong types, NaN and Infinity, huge numbers, symbolic links, directories and FIFOs
where files belong, a foreign trial, a config naming another file or cache), and prints, per input, the
exit code, whether a traceback appeared, whether it hung (each input runs with a timeout), whether it
printed figures although its input was bad (a zero exit), whether anything was left behind (a new or
changed file anywhere under the battery's directory, e.g. a partial run record) and the error message.
The expected outcome for every input: a non-zero exit code, no traceback, no hang, one line naming the
problem, nothing left behind. (A few inputs are bad only in part and must be *handled*: a record's
``cache_dir`` is ignored, so reproduce succeeds without writing there; ``expect_zero`` marks them.)

Each input runs through ``wield.cli.main`` in a forked child of this process (the modules imported once),
exactly as the console script runs it (an exception escaping ``main`` is what Python would print as a
traceback); a child still running after ``--timeout`` seconds is killed and counted as a hang. Two small
real records (a run and an experiment) are made first and damaged copies of them are fed to
``classify``, ``report``, ``reproduce`` and resumed runs.

Usage: python benchmarks/bad_inputs.py [--workdir DIR] [--json] [--timeout S] [--only SUBSTRING]
       (exit status 1 if any input misbehaves)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

SMALL = ["--documents", "3000", "--queries", "6", "--episodes", "2", "--repetitions", "1", "--quiet"]
SCHED = ["--episodes", "2", "--first-decisions", "200", "--max-decisions", "400", "--train-s", "0.3", "--test-s",
         "0.3", "--curve-s", "0.1", "--quiet"]
SKIPPED: list[str] = []  # inputs that cannot be fed here, with the reason (printed with the summary)
DEMO = ["--documents", "3000", "--queries", "6", "--quiet"]


@dataclass
class Case:
    """One hostile input: a name, the ``wield`` arguments (``{root}`` is the battery's directory) and an
    optional setup that writes the input files before the snapshot is taken."""

    name: str
    argv: list[str]
    setup: Callable[[Path], None] | None = None
    expect_zero: bool = False  # bad only in part: must succeed, ignoring the bad part (and leave nothing)
    env: dict[str, str] | None = None  # environment variables of this input ({root} replaced)


@dataclass
class Outcome:
    name: str
    code: int
    traceback: bool
    left_behind: list[str]
    message: str
    stderr: str = field(repr=False, default="")
    hung: bool = False
    stdout: str = field(repr=False, default="")
    expect_zero: bool = False
    quiet: bool = False  # must end printing nothing at all (a closed output pipe)

    @property
    def wrong_figures(self) -> bool:
        """Exit 0 on bad input: whatever it printed was computed from input it should have refused."""
        return self.code == 0 and not self.expect_zero

    @property
    def ok(self) -> bool:
        if self.hung or self.traceback or self.left_behind:
            return False
        if self.quiet:
            return not self.stderr.strip()
        if self.expect_zero:
            return self.code == 0
        return self.code != 0 and self.one_line

    @property
    def one_line(self) -> bool:
        """One line names the problem (argparse's usage lines before its error line, and the step lines
        ``wield reproduce`` prints as it goes, ``reproduce: ...``, are allowed)."""
        lines = [line for line in self.stderr.strip().splitlines() if line.strip()]
        errors = [line for line in lines if "error:" in line]
        usage = [line for line in lines if line.startswith("usage:") or line.startswith(" ")]
        steps = [line for line in lines if line.startswith("reproduce: ") and "error:" not in line]
        return len(errors) == 1 and len(lines) == len(errors) + len(usage) + len(steps) and lines[-1] == errors[0]


# ------------------------------------------------------------------------------------------ inputs
def _write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def _file(name: str, content: str | bytes) -> Callable[[Path], None]:
    return lambda root: _write(root / "inputs" / name, content)


def _copy(source: str, name: str, mutate: Callable[[Path], None]) -> Callable[[Path], None]:
    """A damaged copy of a fixture record (``run`` or ``experiment``) under ``root/damaged/name``."""
    def setup(root: Path) -> None:
        target = root / "damaged" / name
        shutil.copytree(root / "fixtures" / source, target, ignore=shutil.ignore_patterns(".wield.lock"))
        mutate(target)
    return setup


def _truncate(relative: str, keep: int = 20) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        data = (path / relative).read_bytes()
        (path / relative).write_bytes(data[:keep])
    return mutate


def _edit_json(relative: str, change: Callable[[object], object]) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        target = path / relative
        target.write_text(json.dumps(change(json.loads(target.read_text()))))
    return mutate


def _replace(relative: str, content: str) -> Callable[[Path], None]:
    return lambda path: _write(path / relative, content)


def _chain(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        for step in steps:
            step(path)
    return mutate


def _drop_checksums(path: Path) -> None:
    (path / "checksums.json").unlink()


def _recompute_checksums(path: Path) -> None:
    """Make ``checksums.json`` agree with the edited files (as someone editing a record would), so that
    reproduce gets past the checksums to the check the case is about (a record without them is refused)."""
    import hashlib

    sums = json.loads((path / "checksums.json").read_text())
    for name in sums:
        target = path / name
        if target.is_file() and not target.is_symlink():
            sums[name] = hashlib.sha256(target.read_bytes()).hexdigest()
    (path / "checksums.json").write_text(json.dumps(sums))


def _fifo(relative: str) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        (path / relative).unlink(missing_ok=True)
        os.mkfifo(path / relative)
    return mutate


def _symlink(relative: str, target: str) -> Callable[[Path], None]:
    """``relative`` replaced by a symbolic link to ``target`` (absolute, or relative to the record)."""
    def mutate(path: Path) -> None:
        (path / relative).unlink(missing_ok=True)
        os.symlink(target if target.startswith("/") else str(path / target), path / relative)
    return mutate


def _directory(relative: str) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        (path / relative).unlink(missing_ok=True)
        (path / relative).mkdir()
    return mutate


def _sparse(relative: str, size: int) -> Callable[[Path], None]:
    """``relative`` grown (sparsely, nothing written) to ``size`` bytes: a reader must not read it whole."""
    def mutate(path: Path) -> None:
        with open(path / relative, "r+b") as handle:
            handle.truncate(size)
    return mutate


def _raw(relative: str, edit: Callable[[str], str]) -> Callable[[Path], None]:
    """A textual edit of a JSON file (for what ``json.dumps`` cannot write: 1e400, duplicate keys)."""
    def mutate(path: Path) -> None:
        (path / relative).write_text(edit((path / relative).read_text()))
    return mutate


def _foreign_summary(path: Path) -> None:
    """trial-000's summary replaced by the single run's (another experiment's trial)."""
    shutil.copy(path.parent.parent / "fixtures" / "run" / "summary.json", path / SUMMARY)


def _fixture_fifo(name: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / "inputs").mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / "inputs" / name)
    return setup


DEEP = "[" * 100_000 + "]" * 100_000
SUMMARY = "trials/trial-000/summary.json"
EPISODES = "trials/trial-000/episodes.csv"
ROWS = "".join(f"{i},{i % 7}\n" for i in range(200))
QUERY = {"predicates": [{"field": "genre", "op": "eq", "value": "Drama"}]}


def cases() -> list[Case]:
    run = ["run", "indexing"]
    out = ["--out", "{root}/out"]
    collection = lambda name: ["--collection", f"{{root}}/inputs/{name}"]  # noqa: E731
    demo = ["demonstrate", "indexing", "--out", "{root}/out", *DEMO]
    trace = lambda name: ["--trace", f"{{root}}/inputs/{name}"]  # noqa: E731
    damaged = lambda name: f"{{root}}/damaged/{name}"  # noqa: E731
    return [
        # -- option values ---------------------------------------------------------------------------
        Case("k beyond the collection's fields", [*run, "--k", "100", *out, *SMALL]),
        Case("k zero", [*run, "--k", "0", *out, *SMALL]),
        Case("workers zero", [*run, "--class", "C1", "--workers", "0", *out, *SMALL]),
        Case("workers absurd", [*run, "--class", "C1", "--workers", "100000", *out, *SMALL]),
        Case("a billion episodes under C4", [*run, "--class", "C4", "--trials", "1", *out, *SMALL,
                                               "--episodes", "1000000000"]),
        Case("a billion episodes, one run", [*run, *out, *SMALL, "--episodes", "1000000000"]),
        Case("negative episodes", [*run, *out, *SMALL, "--episodes", "-1"]),
        Case("documents above 2**63", [*run, *out, *SMALL, "--documents", str(2**64)]),
        Case("documents too few", [*run, *out, *SMALL, "--documents", "5"]),
        Case("seed above 2**63", [*run, *out, *SMALL, "--seed", str(2**70)]),
        Case("negative seed", [*run, *out, *SMALL, "--seed", "-1"]),
        Case("trials zero", [*run, "--class", "C1", "--trials", "0", *out, *SMALL]),
        Case("a trillion trials", [*run, "--class", "C1", "--trials", str(10**12), *out, *SMALL]),
        Case("unknown class", [*run, "--class", "C9", *out, *SMALL]),
        Case("repetitions zero", [*run, *out, *SMALL, "--repetitions", "0"]),
        Case("queries zero", [*run, *out, *SMALL, "--queries", "0"]),
        Case("a billion queries", [*run, *out, *SMALL, "--queries", "1000000000"]),
        Case("size weight NaN", [*run, *out, *SMALL, "--size-weight", "nan"]),
        Case("runtime weight infinite", [*run, *out, *SMALL, "--runtime-weight", "inf"]),
        Case("metric unknown", [*run, *out, *SMALL, "--metric", "speed"]),
        Case("integer option not a number", [*run, *out, *SMALL, "--k", "three"]),
        Case("objective threshold NaN", [*run, "--class", "C1", "--objective-threshold", "nan", *out, *SMALL]),
        Case("objective metric unknown", [*run, "--class", "C1", "--objective-metric", "speedup", *out, *SMALL]),
        Case("--out is a file", [*run, "--out", "{root}/inputs/a-file", *SMALL], _file("a-file", "x")),
        Case("--out below a file", [*run, "--out", "{root}/inputs/a-file/run", *SMALL], _file("a-file", "x")),
        Case("--cache-dir is a file", [*run, *out, *SMALL, "--cache-dir", "{root}/inputs/a-file"],
             _file("a-file", "x")),
        Case("URI with SQLite", [*run, *out, *SMALL, "--uri", "postgresql://u:hunter2@127.0.0.1:5432/db"]),
        Case("postgres without URI", [*run, *out, *SMALL, "--engine", "postgres"]),
        Case("postgres URI with a password", [*run, *out, *SMALL, "--engine", "postgres", "--uri",
                                              "postgresql://wield:hunter2@127.0.0.1:5432/postgres"]),
        Case("postgres URI of another scheme", [*run, *out, *SMALL, "--engine", "postgres", "--uri",
                                                "mysql://127.0.0.1/db"]),
        Case("server dir that does not exist", [*run, *out, *SMALL, "--engine", "postgres", "--server-dir",
                                                "{root}/no-such-server"]),
        Case("server dir with SQLite", [*run, *out, *SMALL, "--server-dir", "{root}/inputs"],
             _file("placeholder", "")),
        Case("demonstrations that do not exist", [*run, *out, *SMALL, "--agent", "dqfd", "--demonstrations",
                                                  "{root}/no-such-dataset"]),
        Case("demonstrations for DQN", [*run, *out, *SMALL, "--demonstrations", "{root}/inputs"],
             _file("placeholder", "")),
        Case("negative pretraining steps", [*run, *out, *SMALL, "--agent", "dqfd", "--pretrain-steps", "-5"]),
        Case("checkpoint that does not exist", [*run, *out, "--evaluate-checkpoint", "{root}/no-such-run"]),
        Case("checkpoint of a killed run", [*run, *out, "--evaluate-checkpoint", damaged("stale-run")],
             _copy("run", "stale-run", _replace("status.json", '{"status": "running", "pid": 999999999}'))),
        # -- collection files ------------------------------------------------------------------------
        Case("CSV with an unterminated quote", [*run, *out, *SMALL, *collection("quote.csv")],
             _file("quote.csv", 'a,b\r\n1,"unterminated\r\n2,z')),
        Case("CSV with a ragged row", [*run, *out, *SMALL, *collection("ragged.csv")],
             _file("ragged.csv", "a,b\n1,x\n2\n")),
        Case("CSV with a header only", [*run, *out, *SMALL, *collection("header.csv")],
             _file("header.csv", "a,b\n")),
        Case("empty collection file", [*run, *out, *SMALL, *collection("empty.csv")], _file("empty.csv", "")),
        Case("collection not UTF-8", [*run, *out, *SMALL, *collection("latin.csv")],
             _file("latin.csv", b"a,b\n1,\xe9t\xe9\n")),
        Case("JSON truncated", [*run, *out, *SMALL, *collection("cut.json")],
             _file("cut.json", '[{"a": 1, "b": "x"}, {"a": 2, ')),
        Case("JSON nested 100,000 deep", [*run, *out, *SMALL, *collection("deep.json")], _file("deep.json", DEEP)),
        Case("JSON lines with an array", [*run, *out, *SMALL, *collection("lines.jsonl")],
             _file("lines.jsonl", '{"a": 1, "b": "x"}\n[1, 2]\n')),
        Case("JSON with a nested value", [*run, *out, *SMALL, *collection("nested.json")],
             _file("nested.json", '[{"a": 1, "b": {"c": 2}}]')),
        Case("JSON top level a string", [*run, *out, *SMALL, *collection("string.json")],
             _file("string.json", '"just a string"')),
        Case("CSV integer beyond 64 bits", [*run, *out, *SMALL, *collection("big.csv")],
             _file("big.csv", "a,b\n1,x\n99999999999999999999999,y\n")),
        Case("JSON integer beyond 64 bits", [*run, *out, *SMALL, *collection("big.json")],
             _file("big.json", '[{"a": 1, "b": "x"}, {"a": 100000000000000000000000, "b": "y"}]')),
        Case("CSV header not an identifier", [*run, *out, *SMALL, *collection("header-name.csv")],
             _file("header-name.csv", "a,b c\n1,x\n")),
        Case("CSV header repeated", [*run, *out, *SMALL, *collection("twice.csv")],
             _file("twice.csv", "a,a\n1,x\n")),
        Case("CSV missing value", [*run, *out, *SMALL, *collection("missing.csv")],
             _file("missing.csv", "a,b\n1,\n")),
        Case("CSV NaN value", [*run, *out, *SMALL, *collection("nan.csv")], _file("nan.csv", "a,b\nnan,1\n2,3\n")),
        Case("collection is a directory", [*run, *out, *SMALL, "--collection", "{root}/inputs"],
             _file("placeholder", "")),
        Case("collection missing", [*run, *out, *SMALL, *collection("no-such-file.csv")]),
        Case("k beyond a file's fields", [*run, *out, *SMALL, "--k", "3", *collection("two.csv")],
             _file("two.csv", "a,b\n" + "".join(f"{i},{i % 7}\n" for i in range(200)))),
        Case("bad collection file under --class", [*run, "--class", "C1", *out, *SMALL, *collection("quote.csv")],
             _file("quote.csv", 'a,b\r\n1,"unterminated\r\n2,z')),
        # -- query traces and demonstrations -------------------------------------------------------
        Case("trace nested 100,000 deep", [*demo, *trace("deep.json")], _file("deep.json", DEEP)),
        Case("trace truncated", [*demo, *trace("cut.json")], _file("cut.json", json.dumps([QUERY])[:-5])),
        Case("trace integer beyond 64 bits, measured rewards", [*demo, "--rewards", "measured",
                                                                 *trace("big.json")],
             _file("big.json", json.dumps([{"predicates": [{"field": "num_votes", "op": "gt",
                                                            "value": 10**30}]}]))),
        Case("trace with an unknown field", [*demo, *trace("field.json")],
             _file("field.json", json.dumps([{"predicates": [{"field": "budget", "op": "eq", "value": 1}]}]))),
        Case("trace empty", [*demo, *trace("empty.json")], _file("empty.json", "[]")),
        Case("trace a number", [*demo, *trace("number.json")], _file("number.json", "42")),
        Case("trace with a bad operator", [*demo, *trace("op.json")],
             _file("op.json", json.dumps([{"predicates": [{"field": "genre", "op": "like", "value": "D%"}]}]))),
        Case("human demonstrations, bad direction", [*demo, "--human", "{root}/inputs/human.json"],
             _file("human.json", json.dumps([{"query": QUERY, "index": [["genre", "up"]]}]))),
        Case("demonstrate zero episodes", [*demo, "--episodes", "0"]),
        Case("demonstrate unknown rule", [*demo, "--rules", "magic"]),
        # -- damaged experiments ---------------------------------------------------------------------
        Case("classify: experiment.json truncated", ["classify", damaged("exp-cut")],
             _copy("experiment", "exp-cut", _truncate("experiment.json"))),
        Case("classify: experiment.json extra key", ["classify", damaged("exp-extra")],
             _copy("experiment", "exp-extra", _edit_json("experiment.json", lambda d: {**d, "extra": 1}))),
        Case("classify: experiment.json trials a string", ["classify", damaged("exp-type")],
             _copy("experiment", "exp-type", _edit_json("experiment.json", lambda d: {**d, "trials": "x"}))),
        Case("classify: experiment.json nested 100,000 deep", ["classify", damaged("exp-deep")],
             _copy("experiment", "exp-deep", _replace("experiment.json", DEEP))),
        Case("classify: objective malformed", ["classify", damaged("exp-objective")],
             _copy("experiment", "exp-objective",
                   _edit_json("experiment.json", lambda d: {**d, "objective": {"metric": 3, "threshold": "x"}}))),
        Case("classify: summary missing keys", ["classify", damaged("sum-keys")],
             _copy("experiment", "sum-keys", _edit_json(SUMMARY, lambda d: {"trial": 0}))),
        Case("classify: summary a list", ["classify", damaged("sum-list")],
             _copy("experiment", "sum-list", _edit_json(SUMMARY, lambda d: [d]))),
        Case("classify: summary truncated", ["classify", damaged("sum-cut")],
             _copy("experiment", "sum-cut", _truncate(SUMMARY))),
        Case("classify: metric not a number", ["classify", damaged("sum-metric")],
             _copy("experiment", "sum-metric", _edit_json(SUMMARY, lambda d: {
                 **d, "metrics": {**d["metrics"], "mean_latency_improvement": "fast"}}))),
        Case("classify: not an experiment", ["classify", "{root}/inputs"], _file("placeholder", "")),
        Case("classify: killed before any trial", ["classify", damaged("exp-none")],
             _copy("experiment", "exp-none", _chain(lambda p: shutil.rmtree(p / "trials")))),
        Case("report: experiment.json truncated", ["report", damaged("exp-cut2")],
             _copy("experiment", "exp-cut2", _truncate("experiment.json"))),
        Case("report: summary of wrong type", ["report", damaged("sum-type")],
             _copy("experiment", "sum-type", _edit_json(SUMMARY, lambda d: {**d, "transitions": "many"}))),
        Case("report: directory missing", ["report", "{root}/no-such-experiment"]),
        Case("report: --out is a file", ["report", "{root}/fixtures/run", "--out", "{root}/inputs/a-file"],
             _file("a-file", "x")),
        Case("--out holds a finished run", [*run, "--out", damaged("run-again"), *SMALL],
             _copy("run", "run-again", lambda p: None)),
        Case("--out holds a killed run", [*run, "--out", damaged("run-killed"), *SMALL],
             _copy("run", "run-killed", _replace("status.json", '{"status": "running", "pid": 999999999}'))),
        Case("resume with fewer trials", [*run, "--class", "C1", "--trials", "1", "--out", damaged("exp-fewer"),
                                          *SMALL], _copy("experiment", "exp-fewer", lambda p: None)),
        Case("resume with other settings", [*run, "--class", "C1", "--trials", "2", "--out", damaged("exp-other"),
                                            *SMALL, "--queries", "7"], _copy("experiment", "exp-other", lambda p: None)),
        Case("resume trials without experiment.json", [*run, "--class", "C1", "--trials", "2", "--out",
                                                       damaged("exp-orphan"), *SMALL],
             _copy("experiment", "exp-orphan", lambda p: (p / "experiment.json").unlink())),
        # -- damaged run records ---------------------------------------------------------------------
        Case("reproduce: no run.json", ["reproduce", "{root}/inputs"], _file("placeholder", "")),
        Case("reproduce: run.json truncated", ["reproduce", damaged("run-cut")],
             _copy("run", "run-cut", _truncate("run.json"))),
        Case("reproduce: unknown case study", ["reproduce", damaged("run-study")],
             _copy("run", "run-study", _chain(_edit_json("run.json", lambda d: {**d, "case_study": "chess"}),
                                              _recompute_checksums))),
        Case("reproduce: schedule.json truncated", ["reproduce", damaged("run-schedule")],
             _copy("run", "run-schedule", _truncate("schedule.json", 500))),
        Case("reproduce: model.pt truncated", ["reproduce", damaged("run-model")],
             _copy("run", "run-model", _truncate("model.pt", 4096))),
        Case("reproduce: model.pt truncated, no checksums", ["reproduce", damaged("run-model-old")],
             _copy("run", "run-model-old", _chain(_truncate("model.pt", 4096), _drop_checksums))),
        Case("reproduce: killed run (stale)", ["reproduce", damaged("run-stale")],
             _copy("run", "run-stale", _replace("status.json", '{"status": "running", "pid": 999999999}'))),
        Case("reproduce: status.json truncated", ["reproduce", damaged("run-status")],
             _copy("run", "run-status", _truncate("status.json", 5))),
        Case("reproduce: config.json extra key, no checksums", ["reproduce", damaged("run-config")],
             _copy("run", "run-config", _chain(_edit_json("config.json", lambda d: {**d, "turbo": True}),
                                               _drop_checksums))),
        Case("reproduce: missing directory", ["reproduce", "{root}/no-such-run"]),
        # -- cache and servers -----------------------------------------------------------------------
        Case("cache clear of an unknown entry", ["cache", "clear", "no-such-entry"]),
        Case("db start in a file", ["db", "start", "postgres", "--dir", "{root}/inputs/a-file"],
             _file("a-file", "x")),
        Case("db start on port 70000", ["db", "start", "postgres", "--dir", "{root}/out", "--port", "70000"]),
        Case("db stop where none started", ["db", "stop", "--dir", "{root}/inputs"], _file("placeholder", "")),
        Case("db status with damaged server.json", ["db", "status", "--dir", "{root}/inputs/server"],
             lambda root: _write(root / "inputs" / "server" / "server.json", '{"port": ')),
        *identifier_cases(run, out, collection),
        *record_cases(damaged),
        *third_round_cases(damaged),
    ]


def identifier_cases(run: list[str], out: list[str], collection: Callable[[str], list[str]]) -> list[Case]:
    """Names that must be refused up front (issue 37.11-12), and input files that are not regular files."""
    return [
        Case("CSV header with a trailing newline", [*run, *out, *SMALL, *collection("nl.csv")],
             _file("nl.csv", 'a,"b\n"\n' + ROWS)),
        Case("JSON field with a trailing newline", [*run, *out, *SMALL, *collection("nl.json")],
             _file("nl.json", json.dumps([{"a": i, "b\n": i % 7} for i in range(200)]))),
        Case("JSON collection with a duplicate key", [*run, *out, *SMALL, *collection("dup.json")],
             _file("dup.json", "[" + ",".join(f'{{"a": {i}, "b": {i % 7}, "b": 3}}' for i in range(200)) + "]")),
        Case("fields a and A (one column to SQLite)", [*run, *out, *SMALL, *collection("case.csv")],
             _file("case.csv", "a,A\n" + ROWS)),
        Case("2,500 fields", [*run, *out, *SMALL, *collection("wide.csv")],
             _file("wide.csv", ",".join(f"c{j}" for j in range(2500)) + "\n"
                   + "".join(",".join(str((i + j) % 5) for j in range(2500)) + "\n" for i in range(120)))),
        Case("a 10,000-character field name", [*run, *out, *SMALL, *collection("long.csv")],
             _file("long.csv", "a," + "b" * 10_000 + "\n" + ROWS)),
        Case("collection is a FIFO", [*run, *out, *SMALL, *collection("fifo.csv")], _fixture_fifo("fifo.csv")),
        Case("collection links to /dev/zero", [*run, *out, *SMALL, *collection("zero.csv")],
             lambda root: (root / "inputs").mkdir(parents=True) or os.symlink("/dev/zero", root / "inputs" / "zero.csv")),
        Case("trace is a FIFO", ["demonstrate", "indexing", "--out", "{root}/out", *DEMO, "--trace",
                                 "{root}/inputs/fifo.json"], _fixture_fifo("fifo.json")),
    ]


def record_cases(damaged: Callable[[str], str]) -> list[Case]:
    """Hand-edited records: wrong types, NaN/Infinity, huge numbers, links, directories and FIFOs where files
    belong, a foreign trial, a configuration naming another file or cache (issue 37.11, 37.15)."""
    def exp(name: str, mutate: Callable[[Path], None], command: str = "classify") -> Case:
        slug = f"{command[0]}-" + "".join(c if c.isalnum() else "-" for c in name)[:40]
        return Case(f"{command}: {name}", [command, damaged(slug)], _copy("experiment", slug, mutate))

    def run(name: str, mutate: Callable[[Path], None], *, checksums: bool = False, zero: bool = False) -> Case:
        steps = (mutate,) if checksums else (mutate, _recompute_checksums)
        slug = "r-" + "".join(c if c.isalnum() else "-" for c in name)[:40]
        return Case(f"reproduce: {name}", ["reproduce", damaged(slug)], _copy("run", slug, _chain(*steps)),
                    expect_zero=zero)

    def summary(change: Callable[[dict], object]) -> Callable[[Path], None]:
        return _edit_json(SUMMARY, change)

    huge = "1" + "0" * 400
    return [
        # -- a trial's summary.json ------------------------------------------------------------------
        exp("summary transitions 10**400", summary(lambda d: {**d, "transitions": int(huge)})),
        exp("summary trial -1", summary(lambda d: {**d, "trial": -1})),
        exp("summary trial 10**6", summary(lambda d: {**d, "trial": 10**6})),
        exp("summary trial a string", summary(lambda d: {**d, "trial": "0"})),
        exp("summary verdict a string", summary(lambda d: {**d, "verdict": "yes"})),
        exp("summary verdict effect size a string", summary(lambda d: {**d, "verdict": {"learned": True, "effect_size": "big"}})),
        exp("summary transitions NaN", summary(lambda d: {**d, "transitions": float("nan")})),
        exp("summary objective metric NaN", summary(lambda d: {**d, "metrics": {**d["metrics"],
                                                                              "mean_latency_improvement": float("nan")}})),
        exp("summary objective metric Infinity", summary(lambda d: {**d, "metrics": {**d["metrics"], "mean_latency_improvement": float("inf")}})),
        exp("summary objective metric 1e400", _chain(
            summary(lambda d: {**d, "metrics": {**d["metrics"], "mean_latency_improvement": "HUGE"}}),
            _raw(SUMMARY, lambda t: t.replace('"HUGE"', "1e400")))),
        exp("summary seconds negative", summary(lambda d: {**d, "seconds": -5})),
        exp("summary timing a list", summary(lambda d: {**d, "timing": [1, 2]})),
        exp("summary methods a list", summary(lambda d: {**d, "methods": [1]})),
        exp("summary a method's metrics a string", summary(lambda d: {**d, "methods": {"dqn": "good"}})),
        exp("summary metrics a list", summary(lambda d: {**d, "metrics": [["mean_latency_improvement", 1.0]]})),
        exp("summary a duplicate key", _raw(SUMMARY, lambda t: t.replace("{", '{"trial": 1, ', 1))),
        exp("summary links to /dev/zero", _symlink(SUMMARY, "/dev/zero")),
        exp("summary links to another trial's", _symlink(SUMMARY, "trials/trial-001/summary.json")),
        exp("summary is a FIFO", _fifo(SUMMARY)),
        exp("summary is a directory", _directory(SUMMARY)),
        exp("summary of 100 MB (sparse)", _sparse(SUMMARY, 100 * 2**20)),
        exp("summary of another experiment (foreign trial)", _foreign_summary),
        exp("trials is a file", lambda p: (shutil.rmtree(p / "trials"), _write(p / "trials", "x"))),
        # -- experiment.json ---------------------------------------------------------------------------
        exp("experiment trials 10**12", _edit_json("experiment.json", lambda d: {**d, "trials": 10**12})),
        exp("experiment base seed 2**70", _edit_json("experiment.json", lambda d: {**d, "base_seed": 2**70})),
        exp("experiment base seed -1", _edit_json("experiment.json", lambda d: {**d, "base_seed": -1})),
        exp("experiment class unknown", _edit_json("experiment.json", lambda d: {**d, "class_name": "C9"})),
        exp("experiment config a list", _edit_json("experiment.json", lambda d: {**d, "config": []})),
        exp("experiment.json links to /dev/zero", _symlink("experiment.json", "/dev/zero")),
        exp("experiment.json is a FIFO", _fifo("experiment.json")),
        exp("experiment.json a duplicate key", _raw("experiment.json", lambda t: t.replace("{", '{"trials": 1, ', 1))),
        # -- what report reads ---------------------------------------------------------------------------
        exp("summary is a FIFO", _fifo(SUMMARY), "report"),
        exp("summary verdict a string", summary(lambda d: {**d, "verdict": "yes"}), "report"),
        exp("episodes.csv is a FIFO", _fifo(EPISODES), "report"),
        exp("episodes.csv links to /dev/zero", _symlink(EPISODES, "/dev/zero"), "report"),
        # -- a run record under reproduce ----------------------------------------------------------------
        run("evaluation methods a list", _edit_json("evaluation.json", lambda d: {**d, "methods": []})),
        run("evaluation methods missing", _edit_json("evaluation.json", lambda d: {k: v for k, v in d.items() if k != "methods"})),
        run("evaluation a method's metrics a number", _edit_json("evaluation.json", lambda d: {**d, "methods": {"dqn": 1}})),
        run("config collection /etc/passwd", _edit_json("config.json", lambda d: {**d, "collection": "/etc/passwd"})),
        run("config collection a FIFO", _chain(_fifo("collection.csv"), _edit_json("config.json", lambda d: {**d, "collection": "collection.csv"}))),
        run("config cache_dir planted (must be ignored)", lambda p: _edit_json("config.json", lambda d: {**d, "cache_dir": str(p / "planted-cache")})(p), zero=True),
        run("config seed 2**70", _edit_json("config.json", lambda d: {**d, "seed": 2**70})),
        run("config documents a string", _edit_json("config.json", lambda d: {**d, "documents": "many"})),
        run("config a list", _edit_json("config.json", lambda d: [d])),
        run("config a duplicate key", _raw("config.json", lambda t: t.replace("{", '{"seed": 1, ', 1))),
        run("seeds optimisation seed 2**70", _edit_json("seeds.json", lambda d: {**d, "optimisation_seed": 2**70})),
        run("seeds trial -1", _edit_json("seeds.json", lambda d: {**d, "trial": -1})),
        run("seeds mode a number", _edit_json("seeds.json", lambda d: {**d, "mode": 3})),
        run("status.json is a FIFO", _fifo("status.json"), checksums=True),
        run("model.pt is a FIFO", _fifo("model.pt"), checksums=True),
        run("episodes.csv is a FIFO, no checksums", _fifo("episodes.csv")),
        run("schedule.json links to /dev/zero, no checksums", _symlink("schedule.json", "/dev/zero")),
        run("run.json links to /etc/passwd", _symlink("run.json", "/etc/passwd"), checksums=True),
        run("checksums name ../../../etc/passwd", _edit_json("checksums.json", lambda d: {**d, "../../../../etc/passwd": "0" * 64}), checksums=True),
        run("demonstrations.json a list", lambda p: _write(p / "demonstrations.json", "[]")),
    ]


class _Payload:
    """Pickles to a call that would write a file: what a hostile model.pt carries (never unpickled)."""

    def __reduce__(self):
        return (exec, ("open('/tmp/wield-bad-inputs-payload-ran', 'w').write('code ran')",))


def _payload_model(path: Path) -> None:
    import torch

    state = torch.load(path / "model.pt", weights_only=True)
    torch.save({"state": state, "payload": _Payload()}, path / "model.pt")


def _open_directory(relative: str, mode: int = 0o777) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        directory = root / "inputs" / relative
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(mode)
    return setup


def _marked_cache(root: Path) -> None:
    from wield.cache import MARKER, MARKER_TEXT

    cache = root / "inputs" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / MARKER).write_text(MARKER_TEXT)
    (cache / "sqlite-keep-1docs-0123456789abcdef.sqlite").write_text("an entry that must stay")


_OTHER_USER: list[str] = []


def _other_user() -> str | None:
    """A throwaway second local user (``useradd``; removed when the battery ends), or None with the reason
    recorded in ``SKIPPED`` when this process is not root or has no useradd."""
    import atexit
    import subprocess

    if _OTHER_USER:
        return _OTHER_USER[0]
    if os.geteuid() != 0 or not shutil.which("useradd"):
        return None
    name = f"wieldb{os.getpid() % 100000}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
                          capture_output=True)
    if made.returncode != 0:
        return None
    atexit.register(subprocess.run, ["userdel", name], capture_output=True)
    _OTHER_USER.append(name)
    return name


def _as_other(*command: str) -> None:
    import pwd
    import subprocess

    entry = pwd.getpwnam(_OTHER_USER[0])
    subprocess.run(command, check=True, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                   stdin=subprocess.DEVNULL)


def _sticky(root: Path) -> Path:
    sticky = root / "inputs" / "sticky"
    sticky.mkdir(parents=True, exist_ok=True)
    sticky.chmod(0o1777)
    return sticky


def _planted_cache_link(root: Path) -> None:
    _marked_cache(root)
    _as_other("ln", "-s", str(root / "inputs" / "cache"), str(_sticky(root) / "cache"))


def _their_directory(root: Path) -> None:
    _as_other("mkdir", "-m", "0755", str(_sticky(root) / "theirs"))


def third_round_cases(damaged: Callable[[str], str]) -> list[Case]:
    """Issue 45: directories another user can reach, bad hyperparameters and scheduling options, Python's
    digit and recursion limits, crafted records under report and reproduce, file-store MLflow URIs."""
    sched = ["run", "scheduling", "--out", "{root}/out", *SCHED]
    small = ["run", "indexing", "--out", "{root}/out", *SMALL]
    cache = {"WIELD_CACHE_DIR": "{root}/inputs/cache"}

    def exp(name: str, mutate: Callable[[Path], None], command: str) -> Case:
        slug = "x-" + "".join(c if c.isalnum() else "-" for c in name)[:40]
        return Case(f"{command}: {name}", [command, damaged(slug)], _copy("experiment", slug, mutate))

    def sched_run(name: str, mutate: Callable[[Path], None]) -> Case:
        slug = "s-" + "".join(c if c.isalnum() else "-" for c in name)[:40]
        return Case(f"reproduce scheduling: {name}", ["reproduce", damaged(slug)], _copy("sched-run", slug, mutate))

    def comparison(path: Path) -> None:
        shutil.move(str(path), str(path.parent / "dqn"))
        path.mkdir()
        shutil.move(str(path.parent / "dqn"), str(path / "dqn"))
        _write(path / "comparison.json", json.dumps({"methods": [{"method": f"m{i}"} for i in range(20_000)]}))

    def wide_episodes(path: Path) -> None:
        _write(path / "trials" / "trial-000" / "episodes.csv",
               ",".join(f"c{i}" for i in range(1_000_000)) + "\n" + ",".join("1" * 1_000_000) + "\n")

    found = [
        # -- directories: the ownership policy, the cache root, cache clear ----------------------------
        Case("--out below a directory every user may write", ["run", "indexing", "--out", "{root}/inputs/open/run",
                                                               *SMALL], _open_directory("open")),
        Case("cache root below a directory every user may write", ["cache", "list"], _open_directory("open"),
             env={"WIELD_CACHE_DIR": "{root}/inputs/open/cache"}),
        Case("a run whose cache root every user may write", small, _open_directory("cache"), env=cache),
        Case("cache clear without --yes, stdin not a terminal", ["cache", "clear"], _marked_cache, env=cache),
        Case("cache clear --yes of a directory Wield never marked", ["cache", "clear", "--yes"],
             lambda root: _write(root / "inputs" / "cache" / "sqlite-x.sqlite", "not Wield's"), env=cache),
        Case("cache clear --yes of a link entry", ["cache", "clear", "--yes", "link"],
             _chain(_marked_cache, lambda root: (root / "inputs" / "cache" / "link").symlink_to(root / "inputs")),
             env=cache),
        Case("log mlflow: a file store without MLFLOW_ALLOW_FILE_STORE", [*small, "--log", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "file://{root}/inputs/mlruns", "MLFLOW_ALLOW_FILE_STORE": "false"}),
        Case("log mlflow: a file store every user may write", [*small, "--log", "mlflow"], _open_directory("open"),
             env={"MLFLOW_TRACKING_URI": "file://{root}/inputs/open/mlruns", "MLFLOW_ALLOW_FILE_STORE": "true"}),
        # -- [agent] hyperparameters and scheduling options -------------------------------------------
        Case("ppo learning_rate inf", [*sched, "--method", "ppo", "--set", "agent.learning_rate=inf"]),
        Case("ppo learning_rate text", [*sched, "--method", "ppo", "--set", 'agent.learning_rate="x"']),
        Case("maskable-ppo n_steps 0", [*sched, "--set", "agent.sb3-maskable-ppo.n_steps=0"]),
        Case("maskable-ppo learning_rate inf", [*sched, "--set", "agent.sb3-maskable-ppo.learning_rate=inf"]),
        Case("maskable-ppo gamma text", [*sched, "--set", 'agent.sb3-maskable-ppo.gamma="x"']),
        Case("maskable-ppo a policy keyword SB3 refuses", [*sched, "--config", "{root}/inputs/agent.toml"],
             _file("agent.toml", "[agent.sb3-maskable-ppo.policy_kwargs]\nno_such_argument = 1\n")),
        Case("sb3-ppo n_steps 0 (indexing)", [*small, "--method", "sb3-ppo", "--set", "agent.sb3-ppo.n_steps=0"]),
        Case("dqn a hidden layer of 10**8 units", [*small, "--set", "agent.hidden_sizes=[100000000]"]),
        Case("dqn a replay of 10**11 transitions", [*small, "--set", "agent.replay_capacity=100000000000"]),
        Case("scheduling --rate 1e9", [*sched, "--rate", "1e9"]),
        Case("scheduling --gpus 1e7", [*sched, "--gpus", "10000000"]),
        Case("scheduling --test-s 1e5", [*sched, "--test-s", "1e5"]),
        Case("scheduling --models 1e8", [*sched, "--models", "100000000"]),
        Case("scheduling --episodes 1e9", [*sched, "--episodes", "1000000000"]),
        Case("scheduling --reward-scale inf", [*sched, "--reward-scale", "inf"]),
        Case("scheduling --gpu-weight inf", [*sched, "--gpu-weight", "inf"]),
        Case("scheduling rate x seconds beyond 20M requests", [*sched, "--rate", "90000", "--test-s", "3000"]),
        # -- Python's own limits ------------------------------------------------------------------------
        Case("--set an integer of 5,000 digits", [*small, "--set", "episodes=" + "9" * 5000]),
        Case("--set a value nested 3,000 deep", [*small, "--set", "agent.x=" + "[" * 3000 + "]" * 3000]),
        Case("--config a value nested 5,000 deep", [*small, "--config", "{root}/inputs/deep.toml"],
             _file("deep.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n")),
        Case("--config an integer of 5,000 digits", [*small, "--config", "{root}/inputs/big.toml"],
             _file("big.toml", "episodes = " + "9" * 5000 + "\n")),
        # -- crafted records ------------------------------------------------------------------------
        exp("a method name of 5,000 characters", _edit_json("trials/trial-000/summary.json",
                                                            lambda d: {**d, "method": "m" * 5000}), "report"),
        exp("comparison.json listing 20,000 methods", comparison, "report"),
        exp("episodes.csv of 1,000,000 columns", wide_episodes, "report"),
        sched_run("config method os.system", _chain(_edit_json("config.json", lambda d: {**d, "method": "os.system"}),
                                                    _recompute_checksums)),
        sched_run("model.pt carrying a pickle payload", _chain(_payload_model, _recompute_checksums)),
        sched_run("no checksums.json", _drop_checksums),
    ]
    if _other_user() is None:
        SKIPPED.append("3 inputs planted by a second local user (a cache-root link, --out and db --dir in their "
                       "directory): they need root and useradd")
    else:
        found += [
            Case("cache root a link planted by another user", ["cache", "clear", "--yes"], _planted_cache_link,
                 env={"WIELD_CACHE_DIR": "{root}/inputs/sticky/cache"}),
            Case("--out inside another user's directory", ["run", "indexing", "--out",
                                                           "{root}/inputs/sticky/theirs/run", *SMALL],
                 _their_directory),
            Case("db --dir inside another user's directory", ["db", "start", "postgres", "--dir",
                                                              "{root}/inputs/sticky/theirs/pg"], _their_directory),
        ]
    return found


# ------------------------------------------------------------------------------------------ running
def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for p in root.rglob("*"):
        info = p.lstat()  # a link planted by a case is not followed (it may name /dev/zero)
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            continue
        found[str(p.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return found


def _invoke(argv: list[str]) -> tuple[int, bool, str]:
    """Run ``wield argv`` as the console script does; (exit code, traceback?, stderr)."""
    from wield.cli import main

    err, outp = io.StringIO(), io.StringIO()
    tb = False
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(outp):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # what Python would print as a traceback
            traceback.print_exc()
            tb, code = True, 1
    return int(code), tb or "Traceback (most recent call last)" in err.getvalue(), err.getvalue(), outp.getvalue()


def _invoke_isolated(argv: list[str], timeout: float,
                     env: dict[str, str] | None = None) -> tuple[int, bool, str, str, bool]:
    """``_invoke`` in a forked child (modules already imported) with ``env`` set in it: (exit code,
    traceback?, stderr, stdout, hung?); a child still running after ``timeout`` seconds is killed (a hang)."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result, leave without running the parent's clean-up
        os.close(reader)
        os.environ.update(env or {})
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # no terminal to answer a question on, as in a script
        try:
            result = json.dumps(_invoke(argv)).encode()
        except BaseException as exc:  # noqa: BLE001 - reported as a traceback
            result = json.dumps([1, True, f"{type(exc).__name__}: {exc}", ""]).encode()
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(result)
        os._exit(0)
    os.close(writer)
    chunks, deadline, hung = [], time.monotonic() + timeout, False
    with os.fdopen(reader, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                hung = True
                break
            chunk = os.read(pipe.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    if hung:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    if hung:
        return 124, False, f"(killed after {timeout:g} s: it hung)", "", True
    code, tb, err, out = json.loads(b"".join(chunks) or b'[1, true, "the child died", ""]')
    return int(code), bool(tb), err, out, False


def make_fixtures(root: Path) -> None:
    """A finished run record and a finished two-trial experiment, to be copied and damaged."""
    fixtures = root / "fixtures"
    if not (fixtures / "run" / "checksums.json").exists():
        shutil.rmtree(fixtures / "run", ignore_errors=True)
        code, tb, err, _ = _invoke(["run", "indexing", "--out", str(fixtures / "run"), *SMALL])
        assert code == 0 and not tb, err
    if not (fixtures / "sched-run" / "checksums.json").exists():
        shutil.rmtree(fixtures / "sched-run", ignore_errors=True)
        code, tb, err, _ = _invoke(["run", "scheduling", "--out", str(fixtures / "sched-run"), *SCHED])
        assert code == 0 and not tb, err
    if not (fixtures / "experiment" / "classification.json").exists():
        shutil.rmtree(fixtures / "experiment", ignore_errors=True)
        code, tb, err, _ = _invoke(["run", "indexing", "--class", "C1", "--trials", "2",
                                    "--out", str(fixtures / "experiment"), *SMALL])
        assert code == 0 and not tb, err


def run_case(case: Case, root: Path, timeout: float = 120.0) -> Outcome:
    for scratch in ("inputs", "damaged", "out"):
        shutil.rmtree(root / scratch, ignore_errors=True)
    if case.setup:
        case.setup(root)
    before = _snapshot(root)
    env = {key: value.replace("{root}", str(root)) for key, value in (case.env or {}).items()}
    code, tb, err, out, hung = _invoke_isolated([arg.replace("{root}", str(root)) for arg in case.argv], timeout,
                                                env)
    after = _snapshot(root)
    left = sorted(name for name in after if before.get(name) != after[name]
                  and not name.startswith("fixtures/run/report") and not name.startswith("fixtures/experiment/report"))
    lines = [line for line in err.strip().splitlines() if line.strip()]
    return Outcome(case.name, code, tb, left, lines[-1] if lines else "", err, hung, out, case.expect_zero)


def run_broken_pipe(root: Path, timeout: float = 120.0) -> Outcome:
    """``wield classify EXPERIMENT | head`` with the reader already gone: no "Broken pipe", no traceback."""
    import subprocess

    reader, writer = os.pipe()
    os.close(reader)  # the reader went away before a line was written
    try:
        completed = subprocess.run([sys.executable, "-m", "wield.cli", "classify", str(root / "fixtures" / "experiment")],
                                   stdout=writer, stderr=subprocess.PIPE, text=True, timeout=timeout)
        code, err, hung = completed.returncode, completed.stderr, False
    except subprocess.TimeoutExpired:
        code, err, hung = 124, "", True
    finally:
        os.close(writer)
    quiet = not err.strip()
    # A closed pipe is not bad input: the command ends quietly (141, as a SIGPIPE) and prints nothing.
    return Outcome("classify | head (the reader gone)", code if quiet else max(code, 1),
                   "Traceback" in err, [] if quiet else ["stderr: " + err.strip().splitlines()[-1]],
                   err.strip().splitlines()[-1] if err.strip() else "(quiet)", err, hung, "", False, True)


def run_battery(root: Path, only: str | None = None, timeout: float = 120.0,
                names: Iterable[str] | None = None) -> list[Outcome]:
    """Every case of ``cases()`` under ``root`` (fixtures are made once and reused); ``only``: the cases whose
    name holds that text; ``names``: exactly these cases (the test suite's subset)."""
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WIELD_CACHE_DIR", str(root.parent / f"{root.name}-cache"))
    os.environ.setdefault("WIELD_TORCH_THREADS", "1")
    make_fixtures(root)
    chosen = [case for case in cases() if (only is None or only in case.name)
              and (names is None or case.name in set(names))]
    outcomes = [run_case(case, root, timeout) for case in chosen]
    if names is None and (only is None or only in "classify | head (the reader gone)"):
        outcomes.append(run_broken_pipe(root, timeout))
    return outcomes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=None, help="where inputs and fixtures go (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds an input may run before it counts as "
                                                                     "a hang")
    parser.add_argument("--only", default=None, help="run only the inputs whose name holds this text")
    args = parser.parse_args(argv)
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="wield-bad-inputs-"))
    outcomes = run_battery(root, args.only, args.timeout)
    if args.json:
        print(json.dumps([{"input": o.name, "exit": o.code, "traceback": o.traceback, "hung": o.hung,
                           "wrong_figures": o.wrong_figures, "left_behind": o.left_behind,
                           "one_line": o.one_line, "ok": o.ok, "message": o.message} for o in outcomes], indent=2))
    else:
        print(f"{'input':52s} {'exit':>4s}  {'traceback':9s}  {'hang':4s}  {'figures':7s}  {'left':4s}  message")
        for o in outcomes:
            flag = "" if o.ok else "  <-- FAIL"
            print(f"{o.name[:52]:52s} {o.code:>4d}  {'YES' if o.traceback else 'no':9s}  "
                  f"{'YES' if o.hung else 'no':4s}  {'WRONG' if o.wrong_figures else 'no':7s}  "
                  f"{len(o.left_behind):>4d}  {o.message[:150]}{flag}")
        bad = [o for o in outcomes if not o.ok]
        print(f"\n{len(outcomes)} hostile inputs: {sum(o.traceback for o in outcomes)} tracebacks, "
              f"{sum(o.hung for o in outcomes)} hangs, {sum(o.wrong_figures for o in outcomes)} zero exits on bad "
              f"input, {sum(bool(o.left_behind) for o in outcomes)} left something behind, "
              f"{sum(not o.one_line and not (o.expect_zero or o.quiet) for o in outcomes)} without a one-line "
              "message; "
              f"exit codes: {sorted({o.code for o in outcomes})}; {len(bad)} misbehaved")
        for reason in SKIPPED:
            print(f"skipped: {reason}")
    return 1 if any(not o.ok for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
