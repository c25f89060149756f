"""Serving simulator speed: simulated requests per wall second, and the ratio to real time.

Workloads: the low-SLO training workload (2,400 r/s over 48 ResNet-50 instances, SLO 24 ms, 6 GPUs) and the
SYNTHETIC Azure-like workload (about 9,500 r/s over 4,026 instances, SLO 100 ms, 12 GPUs). Paths timed:

- ``clockwork`` (and ``edf``): the compiled baseline serving the whole workload in one call (the fast path);
- ``every-1ms clockwork``: the same baseline invoked from Python every 1 ms for each GPU through the policy
  hook (``runner.run_policy``), the decision points an RL agent gets;
- ``every-1ms random agent``: an untrained agent's random masked actions through the same hook: the
  simulator's and hook's overhead per decision, without a neural network;
- ``Wield env + PPO policy``: the case study's learner (``learners.make_ppo``: Wield's PPO with masks, its
  MLP over the 25 numbers) acting greedily through the Wield environment (``environment.evaluation_env``:
  converter, masks, rewards, decision points every 1 ms per GPU), i.e. what evaluating a learned policy
  costs. Its weights are trained for ``--train-decisions`` decisions on the low-SLO workload first (0: the
  initial weights; a network of the same size costs the same per decision, but its decisions, and so the
  number of decisions, differ).

Each row is the fastest of ``--repeats`` runs; "x real time" is simulated time / wall time, and "(CPU s)"
the same per CPU second of this process, which other processes on a shared machine disturb less. Workload
generation and the first compilation are not timed and are reported separately. Usage:
python benchmarks/scheduling_simulator.py [--seconds 60] [--hook-seconds 5] [--policy-seconds 1]
    [--train-decisions 0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from case_studies.scheduling.environment import episode_lengths, evaluation_env, training_env
from case_studies.scheduling.families import AZURE_GPUS, LOW_SLO_GPUS, azure_like_workload, low_slo_workload
from case_studies.scheduling.learners import make_ppo
from case_studies.scheduling.runner import EveryInterval, RandomAgent, run_policy
from case_studies.scheduling.simulator import ServingSimulator
from wield import evaluate_policy, train_online
from wield.analysis import format_table


def fastest(run, repeats: int) -> tuple[float, float, ServingSimulator]:
    """The fastest wall time and the fastest CPU time of ``repeats`` runs, and the last run's simulator."""
    wall, cpu, sim = math.inf, math.inf, None
    for _ in range(repeats):
        sim = run()
        wall, cpu = min(wall, sim.timing[0]), min(cpu, sim.timing[1])
    return wall, cpu, sim


def timed(sim: ServingSimulator, body) -> ServingSimulator:
    wall, cpu = time.perf_counter(), time.process_time()
    body()
    sim.timing = (time.perf_counter() - wall, time.process_time() - cpu)
    return sim


def fast_path(workload, n_gpus: int, scheduler: str):
    def run():
        sim = ServingSimulator(workload, n_gpus, baselines=(scheduler,))
        return timed(sim, lambda: sim.run(scheduler))
    return run


def hook_path(workload, n_gpus: int, policy_factory):
    def run():
        sim = ServingSimulator(workload, n_gpus)
        return timed(sim, lambda: run_policy(sim, policy_factory()))
    return run


class PolicyRun:
    """What ``fastest`` reads from a simulator, for a policy played through the Wield environment."""

    def __init__(self, env, agent) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        result = evaluate_policy(env, agent, 1)
        self.timing = (time.perf_counter() - wall, time.process_time() - cpu)
        self.sim = env.unwrapped.system.sim
        self.now = self.sim.now
        self.decisions = int(result.metrics[0]["episode"]["decisions"])

    def metrics(self):
        return self.sim.metrics()


def policy_path(workload, n_gpus: int, agent):
    def run():
        return PolicyRun(evaluation_env([workload], n_gpus), agent)
    return run


def trained_ppo(decisions: int):
    """The PPO learner, trained for ``decisions`` decisions on the low-SLO workload (0: untrained)."""
    env = training_env([low_slo_workload(duration_s=2.0)], LOW_SLO_GPUS, episode_lengths(1, 1, 1))
    agent = make_ppo(env, seed=0)
    if decisions > 0:
        lengths = episode_lengths(16, min(1000, decisions), 4000)
        while sum(lengths) > decisions and len(lengths) > 1:
            lengths.pop()
        train_online(training_env([low_slo_workload(duration_s=2.0)], LOW_SLO_GPUS, lengths), agent,
                     len(lengths), progress=False)
    return agent


def main() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("WIELD_TORCH_THREADS", "1")))  # as the wield command does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60, help="simulated seconds of the fast-path workloads")
    parser.add_argument("--hook-seconds", type=int, default=5, help="simulated seconds through the policy hook")
    parser.add_argument("--policy-seconds", type=float, default=1.0,
                        help="simulated seconds served by the PPO policy through the Wield environment")
    parser.add_argument("--train-decisions", type=int, default=0,
                        help="decisions of PPO training before the policy is timed (0: untrained weights)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    tiny = low_slo_workload(duration_s=0.1)  # load (or compile) every kernel the timed paths use
    ServingSimulator(tiny, 2).run("clockwork")
    for policy in (EveryInterval("clockwork"), RandomAgent(seed=0)):
        run_policy(ServingSimulator(tiny, 2), policy)
    print(f"kernels loaded/compiled in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    agent = trained_ppo(args.train_decisions)
    print(f"PPO policy: {args.train_decisions} training decisions in {time.perf_counter() - start:.1f} s")
    rows = []
    for label, build, n_gpus in (("low-SLO 2,400 r/s, 48 models, 24 ms", low_slo_workload, LOW_SLO_GPUS),
                                 ("Azure-like (SYNTHETIC) ~9,500 r/s", azure_like_workload, AZURE_GPUS)):
        start = time.perf_counter()
        workload = build(duration_s=args.seconds)
        short = build(duration_s=args.hook_seconds)
        policy_workload = build(duration_s=args.policy_seconds) if build is low_slo_workload else \
            build(duration_s=max(1, round(args.policy_seconds)))
        generation = time.perf_counter() - start
        paths = [("clockwork", fast_path(workload, n_gpus, "clockwork")),
                 ("edf", fast_path(workload, n_gpus, "edf")),
                 ("every-1ms clockwork", hook_path(short, n_gpus, lambda: EveryInterval("clockwork"))),
                 ("every-1ms random agent", hook_path(short, n_gpus, lambda: RandomAgent(seed=0))),
                 ("Wield env + PPO policy", policy_path(policy_workload, n_gpus, agent))]
        for path, run in paths:
            seconds, cpu, sim = fastest(run, args.repeats)
            metrics = sim.metrics()
            decisions = math.ceil(sim.now) * n_gpus if path.startswith("every") else getattr(sim, "decisions", 0)
            rows.append({"workload": label, "path": path, "requests": metrics.arrived,
                         "rps": metrics.arrived / seconds, "x": sim.now / 1000.0 / seconds,
                         "x_cpu": sim.now / 1000.0 / cpu,
                         "us_decision": seconds * 1e6 / decisions if decisions else float("nan"),
                         "slo": metrics.slo_satisfaction, "batch": metrics.mean_batch_size})
        print(f"{label}: workloads generated in {generation:.2f} s")
    print(format_table(rows, [("workload", "workload", None), ("path", "path", None),
                              ("requests", "requests", ",d"), ("rps", "sim requests / wall s", ",.0f"),
                              ("x", "x real time", ",.1f"), ("x_cpu", "x real time (CPU s)", ",.1f"),
                              ("us_decision", "us / decision", ".1f"),
                              ("slo", "SLO met %", ".1f"), ("batch", "mean batch", ".2f")]))


if __name__ == "__main__":
    main()
