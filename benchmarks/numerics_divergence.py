"""Where two arithmetic settings make the same DQN training diverge, and whether Wield's reproducible mode holds.

Trains the quickstart's task (``wield run indexing``, seed 0, ``--episodes`` episodes) once per setting, each
in a fresh process with its own environment variables (``MKL_CBWR``: MKL's code path; ``ATEN_CPU_CAPABILITY``:
torch's kernels; ``WIELD_TORCH_THREADS``; ``WIELD_NUMERICS``: Wield's mode). Each child records a sha256 of
the online network's parameters after every gradient step and every decision the agent takes (explored or
greedy). The parent prints, against the first setting, the first gradient step whose parameters differ, the
first decision that differs, the training curve's last-10 mean and the wall time per setting:

    python benchmarks/numerics_divergence.py                   # native settings, then reproducible ones
    python benchmarks/numerics_divergence.py --episodes 60 --json traces.json

``--json`` writes every setting's trace summary (hash of the whole trace, first hashes) so that two machines
can be compared: run it on each and compare the ``trace_sha256`` of the same setting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NATIVE_SETTINGS = {
    "native (machine's choice)": {"WIELD_NUMERICS": "native"},
    "native, MKL_CBWR=AVX2": {"WIELD_NUMERICS": "native", "MKL_CBWR": "AVX2"},
    "native, MKL_CBWR=COMPATIBLE": {"WIELD_NUMERICS": "native", "MKL_CBWR": "COMPATIBLE"},
    "native, ATEN_CPU_CAPABILITY=default": {"WIELD_NUMERICS": "native", "ATEN_CPU_CAPABILITY": "default"},
    "native, 2 torch threads": {"WIELD_NUMERICS": "native", "WIELD_TORCH_THREADS": "2"},
}
REPRODUCIBLE_SETTINGS = {
    "reproducible": {"WIELD_NUMERICS": "reproducible"},
    "reproducible, user MKL_CBWR=AVX2": {"WIELD_NUMERICS": "reproducible", "MKL_CBWR": "AVX2"},
    "reproducible, user ATEN_CPU_CAPABILITY=avx512": {"WIELD_NUMERICS": "reproducible",
                                                       "ATEN_CPU_CAPABILITY": "avx512"},
    "reproducible, 2 torch threads": {"WIELD_NUMERICS": "reproducible", "WIELD_TORCH_THREADS": "2"},
}
CLEARED = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "WIELD_TORCH_THREADS", "WIELD_NUMERICS", "OMP_NUM_THREADS",
           "MKL_NUM_THREADS")


def child(episodes: int, out: str, trace_path: str) -> None:
    """Train once with the environment as given, recording parameter hashes and decisions."""
    from wield.agents.dqn import DQNAgent
    from wield.cli import main
    from wield.numerics import numerics_state

    hashes: list[str] = []
    decisions: list[str] = []
    gradient_step, act = DQNAgent.gradient_step, DQNAgent.act

    def hashed_step(self, *args, **kwargs):
        result = gradient_step(self, *args, **kwargs)
        digest = hashlib.sha256()
        for tensor in self.online.state_dict().values():
            digest.update(tensor.detach().contiguous().numpy().tobytes())
        hashes.append(digest.hexdigest()[:16])
        return result

    def recorded_act(self, observation, explore=True, mask=None):
        action = act(self, observation, explore=explore, mask=mask)
        decisions.append(str(sorted(action.items())) if isinstance(action, dict) else str(action))
        return action

    DQNAgent.gradient_step, DQNAgent.act = hashed_step, recorded_act
    started = time.perf_counter()
    code = main(["run", "indexing", "--episodes", str(episodes), "--out", out, "--quiet"])
    seconds = time.perf_counter() - started
    import csv

    with open(Path(out) / "episodes.csv", newline="", encoding="utf-8") as handle:
        rewards = [float(row["total_reward"]) for row in csv.DictReader(handle)]
    last = rewards[-10:]
    Path(trace_path).write_text(json.dumps({
        "exit": code, "seconds": seconds, "hashes": hashes, "decisions": decisions,
        "last10": sum(last) / len(last), "numerics": numerics_state()}))


def first_difference(a: list, b: list) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=40, help="training episodes per setting (default 40)")
    parser.add_argument("--only", choices=("native", "reproducible", "both"), default="both",
                        help="which group of settings to run (default both)")
    parser.add_argument("--json", metavar="FILE", default=None, help="write every setting's summary here")
    parser.add_argument("--child", nargs=2, metavar=("OUT", "TRACE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.episodes < 6:
        parser.error("--episodes must be at least 6")
    if args.child:
        child(args.episodes, *args.child)
        return 0
    groups = {"native": NATIVE_SETTINGS, "reproducible": REPRODUCIBLE_SETTINGS}
    chosen = [groups[args.only]] if args.only != "both" else list(groups.values())
    summaries = {}
    with tempfile.TemporaryDirectory(prefix="wield-numerics-") as scratch:
        os.environ.setdefault("WIELD_CACHE_DIR", str(Path(scratch) / "cache"))
        for settings in chosen:
            baseline = None
            print(f"\n{'setting':<48} {'torch kernels':>13} {'MKL path':>18} {'last-10':>8} "
                  f"{'1st differing step':>18} {'1st differing decision':>22} {'wall s':>7}")
            for name, variables in settings.items():
                env = {k: v for k, v in os.environ.items() if k not in CLEARED}
                env.update(variables)
                out, trace = Path(scratch) / f"run-{len(summaries)}", Path(scratch) / f"trace-{len(summaries)}"
                done = subprocess.run([sys.executable, __file__, "--episodes", str(args.episodes), "--child",
                                       str(out), str(trace)], env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
                    raise SystemExit(f"setting {name!r} failed (exit {done.returncode})")
                result = json.loads(trace.read_text())
                if baseline is None:
                    baseline = result
                step = first_difference(baseline["hashes"], result["hashes"])
                decision = first_difference(baseline["decisions"], result["decisions"])
                numerics = result["numerics"]
                steps, decided = len(result["hashes"]), len(result["decisions"])
                step_text = "none" if step is None else f"{step} of {steps}"
                decision_text = "none" if decision is None else f"{decision} of {decided}"
                print(f"{name:<48} {numerics.get('torch_capability', '?'):>13} "
                      f"{numerics.get('mkl_branch', '?'):>18} {result['last10']:>8.3f} "
                      f"{step_text:>18} {decision_text:>22} {result['seconds']:>7.1f}")
                trace_hash = hashlib.sha256(json.dumps([result["hashes"], result["decisions"]]).encode())
                summaries[name] = {"trace_sha256": trace_hash.hexdigest(), "last10": result["last10"],
                                   "seconds": result["seconds"], "first_hashes": result["hashes"][:3],
                                   "numerics": numerics, "gradient_steps": len(result["hashes"]),
                                   "decisions": len(result["decisions"])}
    cpu = next(iter(summaries.values()))["numerics"]["cpu"]
    print(f"\nprocessor: {cpu['model']} ({cpu['vendor']}; {' '.join(cpu['vector_flags'])}); "
          f"{args.episodes} episodes, seed 0, the quickstart's other defaults")
    print("'none': identical to the group's first setting at every gradient step and decision")
    if args.json:
        Path(args.json).write_text(json.dumps(summaries, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
