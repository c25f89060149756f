"""Benchmark: the same 4-trial experiment with 1 and 2 local workers, side by side.

Prints the wall time and CPU seconds of each, the speed-up (2 idle cores: expect close to 2x) and whether
the per-trial results are identical under the deterministic work metric. Each timed run starts from its own
copy of the cache holding only the loaded base database (no measurement store filled by the other run).

The 2-worker run's pool forks its workers on Linux (spawns them elsewhere; ``WIELD_START_METHOD=spawn``
to compare): the line "workers started by" says which.

Usage: python benchmarks/parallel_trials.py [--class C2] [--trials 4] [--documents 20000] [--episodes 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from case_studies.indexing.reproduce import DETERMINISTIC
from wield.cli import main as wield
from wield.workflows.executors import start_method


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="C2")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=20)
    args = parser.parse_args(argv)
    rows, results = [], {}
    with tempfile.TemporaryDirectory(prefix="wield-parallel-") as scratch:
        common = ["run", "indexing", "--class", args.class_name, "--trials", str(args.trials),
                  "--documents", str(args.documents), "--queries", str(args.queries),
                  "--episodes", str(args.episodes), "--repetitions", "1", "--quiet",
                  "--cache-dir", str(Path(scratch) / "cache")]
        # Build the cached base database once, so neither timed run pays for loading it.
        warm = common[:4] + ["--trials", "1"] + common[6:] + ["--out", str(Path(scratch) / "warm")]
        warm[warm.index("--episodes") + 1] = "1"  # (a later --episodes would override an earlier one)
        wield(warm)
        for workers in (1, 2):
            out = Path(scratch) / f"workers-{workers}"
            # Each timed run starts from the base database alone: the measurement store the other run
            # filled would otherwise answer for it.
            cache = Path(scratch) / f"cache-{workers}"
            shutil.copytree(Path(scratch) / "cache", cache, ignore=shutil.ignore_patterns("measurements"))
            timed = [*common[:-1], str(cache)]
            if workers > 1:
                how = start_method()  # as the pool will choose a moment later, in this process
            cpu = _cpu_seconds()
            started = time.perf_counter()
            code = wield(timed + ["--workers", str(workers), "--out", str(out)])
            wall = time.perf_counter() - started
            cpu = _cpu_seconds() - cpu
            if code != 0:
                print(f"experiment with {workers} worker(s) failed (exit {code})")
                return 1
            trials = [json.loads(p.read_text()) for p in sorted(out.glob("trials/trial-*/summary.json"))]
            results[workers] = [{c: t["metrics"][c] for c in DETERMINISTIC} for t in trials]
            rows.append((workers, wall, [t["seconds"] for t in trials], cpu))
    print(f"{args.class_name}, {args.trials} trials, {args.documents:,} documents, {args.episodes} episodes x "
          f"{args.queries} queries, work metric")
    print(f"  {'workers':>7s} {'wall s':>8s} {'CPU s':>8s}  seconds of each trial")
    for workers, wall, seconds, cpu in rows:
        print(f"  {workers:7d} {wall:8.1f} {cpu:8.1f}  " + " ".join(f"{s:.1f}" for s in seconds))
    print(f"  workers started by: {how} (the 1-worker run is in-process)")
    print(f"  speed-up 2 workers vs 1: {rows[0][1] / rows[1][1]:.2f}x (load average now: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; the machine may be shared)")
    print(f"  CPU seconds 2 workers / 1 worker: {rows[1][3] / rows[0][3]:.2f} (the work itself; on a busy machine "
          f"wall time also waits for other processes)")
    identical = results[1] == results[2]
    print(f"  per-trial results identical: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
