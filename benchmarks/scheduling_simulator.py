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
- ``vector env (N) + PPO policy``: the same network and greedy decisions (identical episodes) through the
  vector environment (``vector_env.SchedulingVectorEnv``: the step compiled, observations, masks and rewards
  in arrays) on ``--envs`` instances at once, the network evaluated once per step for all of them
  (``batched_policy.BatchedPolicy``); ``... MaskablePPO`` the same for sb3-contrib's model (whose own
  ``predict`` through the Wield environment is timed too, ``--maskable-seconds`` of it).

The last line, ``policy-in-the-loop speed-up``, is the Wield environment's microseconds per decision with the
PPO policy over the vector environment's, on the low-SLO workload, measured side by side in this run.

Each row is the fastest of ``--repeats`` runs; "x real time" is simulated time / wall time, and "(CPU s)"
the same per CPU second of this process, which other processes on a shared machine disturb less. Workload
generation and the first compilation are not timed and are reported separately. Usage:
python benchmarks/scheduling_simulator.py [--seconds 60] [--hook-seconds 5] [--policy-seconds 1]
    [--train-decisions 0] [--repeats 3] [--envs 64] [--maskable-seconds 0.1]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from case_studies.scheduling.batched_policy import BatchedPolicy
from case_studies.scheduling.environment import DEFAULT_REWARD, episode_lengths, evaluation_env, training_env
from case_studies.scheduling.families import AZURE_GPUS, LOW_SLO_GPUS, azure_like_workload, low_slo_workload
from case_studies.scheduling.learners import make_maskable_ppo, make_ppo
from case_studies.scheduling.vector_training import serve
from case_studies.scheduling.runner import EveryInterval, RandomAgent, run_policy
from case_studies.scheduling.simulator import ServingSimulator
from wield import evaluate_policy, train_online
from wield.agents.base import Agent
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


class SB3Predict(Agent):
    """MaskablePPO's own ``predict`` at every decision of the Wield environment (a Wield agent, no learning)."""

    def __init__(self, model) -> None:
        from wield.agents.heads import ActionHeads

        self.model = model
        self.heads = ActionHeads.from_space(evaluation_env([low_slo_workload(duration_s=0.05)], 1).action_space)

    def act(self, observation, explore: bool = True, mask=None):
        import numpy as np

        action, _ = self.model.predict(np.asarray(observation, dtype=np.float32), action_masks=self.heads.flat_mask(mask),
                                       deterministic=not explore)
        return self.heads.join_action(dict(zip(self.heads.names, np.asarray(action).reshape(-1).tolist())))


class VectorRun:
    """What ``fastest`` reads, for a batched policy serving ``workloads`` to the end in one vector environment
    (``now``: the simulated time of all of them together)."""

    def __init__(self, workloads, n_gpus: int, policy: BatchedPolicy) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.served = [result["episode"] for result in serve(policy, workloads, [n_gpus] * len(workloads),
                                                             DEFAULT_REWARD)]
        self.timing = (time.perf_counter() - wall, time.process_time() - cpu)
        self.now = sum(m["elapsed_ms"] for m in self.served)
        self.decisions = sum(m["decisions"] for m in self.served)

    def metrics(self):
        from types import SimpleNamespace

        on_time = sum(m["on_time"] for m in self.served)
        answered = sum(m["on_time"] + m["late"] + m["timed_out"] for m in self.served)
        batches = sum(sum(m["batches_by_size"].values()) for m in self.served)
        sizes = sum(int(b) * n for m in self.served for b, n in m["batches_by_size"].items())
        return SimpleNamespace(arrived=sum(m["arrived"] for m in self.served),
                               slo_satisfaction=100.0 * on_time / max(1, answered),
                               mean_batch_size=sizes / max(1, batches))


def vector_path(build, seconds: float, n_gpus: int, envs: int, policy: BatchedPolicy):
    workloads = [build(duration_s=seconds, seed=seed) for seed in range(envs)]

    def run():
        return VectorRun(workloads, n_gpus, policy)
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
    parser.add_argument("--envs", type=int, default=64, help="instances served at once by the vector environment")
    parser.add_argument("--maskable-seconds", type=float, default=0.1,
                        help="simulated seconds served by MaskablePPO's own predict through the Wield environment")
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
    maskable = make_maskable_ppo(evaluation_env([low_slo_workload(duration_s=0.1)], LOW_SLO_GPUS), seed=0)
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
        if build is low_slo_workload:
            short_policy = build(duration_s=args.maskable_seconds)
            paths += [("Wield env + MaskablePPO predict",
                       policy_path(short_policy, n_gpus, SB3Predict(maskable))),
                      (f"vector env ({args.envs}) + PPO policy",
                       vector_path(build, args.policy_seconds, n_gpus, args.envs, BatchedPolicy.from_heads_ppo(agent))),
                      (f"vector env ({args.envs}) + MaskablePPO",
                       vector_path(build, args.policy_seconds, n_gpus, args.envs, BatchedPolicy.from_sb3(maskable)))]
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
    per_decision = {row["path"]: row["us_decision"] for row in rows if row["workload"].startswith("low-SLO")}
    old, new = per_decision["Wield env + PPO policy"], per_decision[f"vector env ({args.envs}) + PPO policy"]
    print(f"PPO policy: {old:.1f} us per decision through the Wield environment, {new:.1f} through the vector "
          f"environment ({args.envs} instances)")
    print(f"policy-in-the-loop speed-up: {old / new:.1f}x")


if __name__ == "__main__":
    main()
