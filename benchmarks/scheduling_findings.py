"""The scheduling case study's findings, reproduced at a small budget with seeds and 95% confidence intervals.

The modelled study reported five findings; this benchmark measures each one with Wield's PPO with masks
(``learners.make_ppo``) trained for a fixed number of decisions per seed, and prints a table of what was
measured beside what was reported:

1. a random agent (uniform over the valid actions) fails the hard training workload (2,400 r/s over 48
   ResNet-50 instances, SLO 24 ms, 6 GPUs);
2. the agent trained on it learns it (SLO satisfaction of the greedy policy on a fresh 1 s instance);
3. the dense three-part reward learns where the sparse one does not (and better than dense without the GPU
   term);
4. the Clockwork heuristic beats the agent trained on the hard workload at 2,400 r/s over 12 models, 24 ms
   (the study: by about 40 points);
5. the agent trained on the hard workload generalises to the Azure-like workload (SYNTHETIC here) and uses
   larger batches than the heuristic, while one trained on the easy 96 ms workload does not.

Every row gives the mean over seeds and the 95% t-interval. Training workloads use the seed; evaluation
workloads are separate instances (seed + 1000). The random agent and the heuristics serve the same
evaluation workloads. Results are written to ``--out`` (JSON, rewritten after every seed). The budget is far
below the study's (tens of thousands of decisions, not hundreds of thousands): where a finding does not
reproduce, the table says so. Usage:
python benchmarks/scheduling_findings.py [--seeds 0 1 2] [--episodes 9] [--max-decisions 4000] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

import numpy as np

from case_studies.scheduling.environment import DEFAULT_REWARD, episode_lengths, evaluation_env, training_env
from case_studies.scheduling.families import AZURE_GPUS, LOW_SLO_GPUS, azure_like_workload, low_slo_workload
from case_studies.scheduling.learners import make_ppo
from case_studies.scheduling.plugin import served
from case_studies.scheduling.rewards import Reward
from case_studies.scheduling.runner import run_baseline
from wield import RandomAgent, evaluate_policy, train_online
from wield.analysis import format_table
from wield.io import atomic_write_json

HARD = (2400.0, 48, 24.0)
EASY = (2400.0, 48, 96.0)
TWELVE = (2400.0, 12, 24.0)


def ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of the 95% t-interval (0 for one value)."""
    from scipy import stats

    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return float(array.mean()), 0.0
    return float(array.mean()), float(stats.t.ppf(0.975, array.size - 1) * array.std(ddof=1) / math.sqrt(array.size))


def train(shape: tuple, reward: Reward, seed: int, lengths: list[int]):
    env = training_env([low_slo_workload(*shape, duration_s=2.0, seed=seed)], LOW_SLO_GPUS, lengths, reward)
    agent = make_ppo(env, seed)
    train_online(env, agent, len(lengths), progress=False)
    return agent


def serve(agent, workload, gpus: int, explore: bool = False) -> dict[str, Any]:
    result = evaluate_policy(evaluation_env([workload], gpus), agent, 1, explore=explore)
    return served(result.metrics[0]["episode"])


def one_seed(seed: int, lengths: list[int], test_s: float) -> dict[str, dict[str, Any]]:
    """Every measurement of one seed."""
    hard_test = low_slo_workload(*HARD, duration_s=test_s, seed=seed + 1000)
    twelve_test = low_slo_workload(*TWELVE, duration_s=test_s, seed=seed + 1000)
    azure = azure_like_workload(duration_s=max(1, round(test_s)), seed=seed + 1000)
    out: dict[str, dict[str, Any]] = {}
    out["random@hard"] = serve(RandomAgent(evaluation_env([hard_test], 6).action_space, seed=seed), hard_test,
                               LOW_SLO_GPUS, explore=True)
    out["clockwork@hard"] = served(run_baseline(hard_test, "clockwork", LOW_SLO_GPUS))
    for kind in ("dense", "dense-no-gpu", "sparse"):
        started = time.perf_counter()
        reward = Reward(kind, DEFAULT_REWARD.gpu_weight, DEFAULT_REWARD.late_charge, DEFAULT_REWARD.scale)
        agent = train(HARD, reward, seed, lengths)
        out[f"{kind}@hard"] = serve(agent, hard_test, LOW_SLO_GPUS)
        if kind == "dense":
            out["dense@12-models"] = serve(agent, twelve_test, LOW_SLO_GPUS)
            out["dense@azure"] = serve(agent, azure, AZURE_GPUS)
        print(f"seed {seed}: {kind} trained and served in {time.perf_counter() - started:.0f} s", flush=True)
    out["clockwork@12-models"] = served(run_baseline(twelve_test, "clockwork", LOW_SLO_GPUS))
    out["clockwork@azure"] = served(run_baseline(azure, "clockwork", AZURE_GPUS))
    easy = train(EASY, DEFAULT_REWARD, seed, lengths)
    out["easy@azure"] = serve(easy, azure, AZURE_GPUS)
    return out


FINDINGS = [
    ("1 random agent fails the hard workload", "random@hard", "slo_satisfaction", "fails (well below 100%)"),
    ("  Clockwork on the hard workload", "clockwork@hard", "slo_satisfaction", "100%"),
    ("2 trained agent (dense) learns the hard workload", "dense@hard", "slo_satisfaction", "~100% in ~20 episodes"),
    ("3 reward: dense without the GPU term", "dense-no-gpu@hard", "slo_satisfaction", "lower, slower"),
    ("3 reward: sparse +-1", "sparse@hard", "slo_satisfaction", "learns nothing"),
    ("4 agent (hard) at 2,400 r/s, 12 models, 24 ms", "dense@12-models", "slo_satisfaction", "~40 points below"),
    ("4 Clockwork at 2,400 r/s, 12 models, 24 ms", "clockwork@12-models", "slo_satisfaction", "~100%"),
    ("5 agent (hard) on Azure-like", "dense@azure", "slo_satisfaction", "~100% (real trace)"),
    ("5 agent (hard) on Azure-like: mean batch", "dense@azure", "mean_batch_size", "larger than heuristic"),
    ("5 Clockwork on Azure-like: mean batch", "clockwork@azure", "mean_batch_size", "smaller"),
    ("5 Clockwork on Azure-like", "clockwork@azure", "slo_satisfaction", "~100%"),
    ("5 agent (easy 96 ms) on Azure-like", "easy@azure", "slo_satisfaction", "poor"),
]


def table(results: dict[int, dict[str, dict[str, Any]]]) -> str:
    rows = []
    for label, key, metric, reported in FINDINGS:
        values = [r[key][metric] for r in results.values() if key in r]
        if not values:
            continue
        mean, half = ci95(values)
        scale, unit = (100.0, "%") if metric == "slo_satisfaction" else (1.0, "")
        rows.append({"finding": label, "measured": f"{mean * scale:.1f}{unit} +- {half * scale:.1f}",
                     "seeds": len(values), "reported": reported})
    return format_table(rows, [("finding", "finding", None), ("measured", "measured (mean +- 95% CI)", None),
                               ("seeds", "seeds", "d"), ("reported", "modelled study", None)])


def main() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("WIELD_TORCH_THREADS", "1")))  # as the wield command does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=9)
    parser.add_argument("--first-decisions", type=int, default=1000)
    parser.add_argument("--max-decisions", type=int, default=4000)
    parser.add_argument("--test-s", type=float, default=1.0, help="seconds of every evaluation workload")
    parser.add_argument("--out", default="scheduling_findings.json")
    args = parser.parse_args()
    lengths = episode_lengths(args.episodes, args.first_decisions, args.max_decisions)
    print(f"training: {len(lengths)} episodes, {sum(lengths):,} decisions per agent; seeds {args.seeds}")
    results: dict[int, dict[str, dict[str, Any]]] = {}
    for seed in args.seeds:
        results[seed] = one_seed(seed, lengths, args.test_s)
        atomic_write_json(args.out, {"lengths": lengths, "results": {str(k): v for k, v in results.items()}})
        print(table(results), flush=True)


if __name__ == "__main__":
    main()
