"""Benchmark: the same 4-trial experiment with 1 and 2 local workers, side by side.

Prints the wall time of each, the speed-up (2 cores: expect close to 2x) and whether the per-trial results
are identical under the deterministic work metric.

Usage: python benchmarks/parallel_trials.py [--class C2] [--trials 4] [--documents 20000] [--episodes 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from case_studies.indexing.reproduce import DETERMINISTIC
from wield.cli import main as wield


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
        wield(common[:4] + ["--trials", "1", "--episodes", "1", "--out", str(Path(scratch) / "warm")] + common[6:])
        for workers in (1, 2):
            out = Path(scratch) / f"workers-{workers}"
            started = time.perf_counter()
            code = wield(common + ["--workers", str(workers), "--out", str(out)])
            wall = time.perf_counter() - started
            if code != 0:
                print(f"experiment with {workers} worker(s) failed (exit {code})")
                return 1
            trials = [json.loads(p.read_text()) for p in sorted(out.glob("trials/trial-*/summary.json"))]
            results[workers] = [{c: t["metrics"][c] for c in DETERMINISTIC} for t in trials]
            rows.append((workers, wall, [t["seconds"] for t in trials]))
    print(f"{args.class_name}, {args.trials} trials, {args.documents:,} documents, {args.episodes} episodes x "
          f"{args.queries} queries, work metric")
    print(f"  {'workers':>7s} {'wall s':>8s}  seconds of each trial")
    for workers, wall, seconds in rows:
        print(f"  {workers:7d} {wall:8.1f}  " + " ".join(f"{s:.1f}" for s in seconds))
    print(f"  speed-up 2 workers vs 1: {rows[0][1] / rows[1][1]:.2f}x (load average now: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; the machine may be shared)")
    identical = results[1] == results[2]
    print(f"  per-trial results identical: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
