"""The benchmarks' seed pool (``benchmarks/seed_runs.py``): its worker processes end with the benchmark that
started them, so a benchmark stopped by kill -9 (or SIGTERM) leaves no seed running on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["kill", "terminate"])
def test_a_benchmarks_seed_workers_end_with_it(tmp_path, how):
    script = tmp_path / "sleepy_benchmark.py"
    script.write_text(f"""
import os, pathlib, sys, time
sys.path.insert(0, {str(BENCHMARKS)!r})
from seed_runs import run_seeds

def job(seed):
    pathlib.Path({str(tmp_path)!r}, f"worker-{{seed}}").write_text(str(os.getpid()))
    time.sleep(120)
    return {{}}

if __name__ == "__main__":
    run_seeds(job, [0, 1], {str(tmp_path / "out.json")!r}, {{"kind": "sleepy"}}, workers=2)
""")
    benchmark = subprocess.Popen([sys.executable, str(script)])
    try:
        files = [tmp_path / "worker-0", tmp_path / "worker-1"]
        deadline = time.monotonic() + 120
        while not all(f.exists() and f.read_text() for f in files):
            assert benchmark.poll() is None and time.monotonic() < deadline, "the seeds never started"
            time.sleep(0.2)
        workers = [int(f.read_text()) for f in files]
        assert all(_running(pid) for pid in workers)
    finally:
        getattr(benchmark, how)()  # kill -9, or SIGTERM
        benchmark.wait(30)
    deadline = time.monotonic() + 20
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_running(pid) for pid in workers), "a seed worker outlived its benchmark"
    assert not (tmp_path / "out.json").exists()  # no seed finished: nothing recorded, nothing half-written


def _double(seed: int) -> dict:
    return {"value": 2 * seed}


def test_the_results_file_says_what_code_ran_and_a_rerun_resumes_from_it(tmp_path, capsys):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from seed_runs import run_seeds
    finally:
        sys.path.remove(str(BENCHMARKS))
    out = tmp_path / "results.json"
    first = run_seeds(_double, [0, 1], str(out), {"kind": "double"})
    assert {seed: result["value"] for seed, result in first.items()} == {0: 0, 1: 2}
    saved = json.loads(out.read_text())
    repository = Path(__file__).resolve().parents[1]
    assert saved["kind"] == "double" and saved["versions"]["checkout"] == str(repository)
    assert saved["versions"]["python"] == sys.version.split()[0]
    assert f"code: {repository} at " in capsys.readouterr().out
    again = run_seeds(_double, [0, 1, 2], str(out), {"kind": "double"})  # seeds 0 and 1 read back, 2 run
    assert "resuming: seeds [0, 1]" in capsys.readouterr().out
    assert again[0] == first[0] and again[2]["value"] == 4
