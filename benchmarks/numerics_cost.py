"""What the reproducible arithmetic costs: training time in each mode, side by side, and Adam's step alone.

1. The quickstart's training (``wield run indexing``, seed 0, ``--episodes`` episodes) under
   ``WIELD_NUMERICS=native`` and ``=reproducible``, alternated ``--repeats`` times in fresh processes; the
   figure is the training time the run record's ``episodes.csv`` counts (the evaluation afterwards is
   engine work, the same in both modes). Note that the two modes train differently (other last bits, so
   other decisions, other index builds): the comparison is of the whole training, not of one computation.
2. One optimiser step on a network of the quickstart's size (2 x 128, dueling): torch's Adam (foreach)
   against ``wield.agents.optimizers.ExactAdam``, in one process, alternated.

    python benchmarks/numerics_cost.py                 # 60 episodes, 3 repeats
    python benchmarks/numerics_cost.py --episodes 200 --repeats 2
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def training_seconds(mode: str, episodes: int, out: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "ATEN_CPU_CAPABILITY")}
    env["WIELD_NUMERICS"] = mode
    subprocess.run([sys.executable, "-m", "wield.cli", "run", "indexing", "--episodes", str(episodes), "--quiet",
                    "--out", str(out)], env=env, check=True, capture_output=True)
    with open(out / "episodes.csv", newline="", encoding="utf-8") as handle:
        return sum(float(row["seconds"]) for row in csv.DictReader(handle))


def adam_steps(rounds: int = 5, steps: int = 300) -> dict[str, float]:
    """Median microseconds per step of each optimiser on a 2 x 128 dueling network's parameters."""
    import torch
    from torch import nn

    from wield.agents.optimizers import ExactAdam

    torch.manual_seed(0)
    torch.set_num_threads(1)

    def parameters():
        net = nn.Sequential(nn.Linear(60, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 11))
        for p in net.parameters():
            p.grad = torch.randn_like(p)
        return list(net.parameters())

    optimizers = {"torch Adam (foreach)": torch.optim.Adam(parameters(), lr=1e-4, foreach=True),
                  "ExactAdam": ExactAdam(parameters(), lr=1e-4)}
    times: dict[str, list[float]] = {name: [] for name in optimizers}
    for _ in range(rounds):
        for name, optimizer in optimizers.items():
            started = time.perf_counter()
            for _ in range(steps):
                optimizer.step()
            times[name].append((time.perf_counter() - started) / steps * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=60, help="training episodes per run (default 60)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per mode, alternated (default 3)")
    args = parser.parse_args()
    if args.episodes < 1 or args.repeats < 1:
        parser.error("--episodes and --repeats must be at least 1")
    seconds: dict[str, list[float]] = {"native": [], "reproducible": []}
    with tempfile.TemporaryDirectory(prefix="wield-numerics-cost-") as scratch:
        os.environ.setdefault("WIELD_CACHE_DIR", str(Path(scratch) / "cache"))
        for repeat in range(args.repeats):
            for mode in seconds:
                seconds[mode].append(training_seconds(mode, args.episodes, Path(scratch) / f"{mode}-{repeat}"))
                print(f"  {mode:<13} run {repeat + 1}: {seconds[mode][-1]:.2f} s training", flush=True)
    native, reproducible = (statistics.median(seconds[m]) for m in ("native", "reproducible"))
    print(f"\ntraining time, {args.episodes} episodes, median of {args.repeats} (min..max):")
    for mode, values in seconds.items():
        print(f"  {mode:<13} {statistics.median(values):7.2f} s ({min(values):.2f}..{max(values):.2f})")
    print(f"  reproducible / native: {reproducible / native:.2f}x")
    steps = adam_steps()
    print("\none optimiser step on the quickstart's network size (median us):")
    for name, value in steps.items():
        print(f"  {name:<22} {value:8.1f}")
    print(f"  ExactAdam / torch Adam: {steps['ExactAdam'] / steps['torch Adam (foreach)']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
