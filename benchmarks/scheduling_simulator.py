"""Serving simulator speed: simulated requests per wall second, and the ratio to real time.

Workloads: the low-SLO training workload (2,400 r/s over 48 ResNet-50 instances, SLO 24 ms, 6 GPUs) and the
SYNTHETIC Azure-like workload (about 9,500 r/s over 4,026 instances, SLO 100 ms, 12 GPUs). Paths timed:

- ``clockwork`` (and ``edf``): the compiled baseline serving the whole workload in one call (the fast path);
- ``every-1ms clockwork``: the same baseline invoked from Python every 1 ms for each GPU through the policy
  hook (``runner.run_policy``), the decision points an RL agent gets;
- ``every-1ms random agent``: an untrained agent's random masked actions through the same hook: the
  simulator's and hook's overhead per decision, without a neural network.

Each row is the fastest of ``--repeats`` runs; "x real time" is simulated time / wall time, and "(CPU s)"
the same per CPU second of this process, which other processes on a shared machine disturb less. Workload
generation and the first compilation are not timed and are reported separately. Usage:
python benchmarks/scheduling_simulator.py [--seconds 60] [--hook-seconds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import time

from case_studies.scheduling.families import AZURE_GPUS, LOW_SLO_GPUS, azure_like_workload, low_slo_workload
from case_studies.scheduling.runner import EveryInterval, RandomAgent, run_policy
from case_studies.scheduling.simulator import ServingSimulator
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60, help="simulated seconds of the fast-path workloads")
    parser.add_argument("--hook-seconds", type=int, default=5, help="simulated seconds through the policy hook")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    tiny = low_slo_workload(duration_s=0.1)  # load (or compile) every kernel the timed paths use
    ServingSimulator(tiny, 2).run("clockwork")
    for policy in (EveryInterval("clockwork"), RandomAgent(seed=0)):
        run_policy(ServingSimulator(tiny, 2), policy)
    print(f"kernels loaded/compiled in {time.perf_counter() - start:.1f} s")
    rows = []
    for label, build, n_gpus in (("low-SLO 2,400 r/s, 48 models, 24 ms", low_slo_workload, LOW_SLO_GPUS),
                                 ("Azure-like (SYNTHETIC) ~9,500 r/s", azure_like_workload, AZURE_GPUS)):
        start = time.perf_counter()
        workload = build(duration_s=args.seconds)
        short = build(duration_s=args.hook_seconds)
        generation = time.perf_counter() - start
        paths = [("clockwork", fast_path(workload, n_gpus, "clockwork")),
                 ("edf", fast_path(workload, n_gpus, "edf")),
                 ("every-1ms clockwork", hook_path(short, n_gpus, lambda: EveryInterval("clockwork"))),
                 ("every-1ms random agent", hook_path(short, n_gpus, lambda: RandomAgent(seed=0)))]
        for path, run in paths:
            seconds, cpu, sim = fastest(run, args.repeats)
            metrics = sim.metrics()
            decisions = math.ceil(sim.now) * n_gpus if path.startswith("every") else 0
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
