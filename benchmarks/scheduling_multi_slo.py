"""Multi-SLO workloads: SLO satisfaction of the Clockwork heuristic, EDF, FIFO and random, side by side.

Serves ``families.multi_slo_workload`` (default: 12 ResNet-50 models in three SLO classes of 10, 25 and
100 ms, 1,200 r/s in total, Poisson per model, 2 GPUs) with every compiled baseline (``runner.run_baseline``)
for each seed, and prints per scheduler the mean SLO satisfaction over seeds with its 95% t-interval, the
per-seed figures and the mean batch size, then the wall time. A second table serves the modelled study's own
chapter-6 shape with deadlines only (two models at 150 r/s on one GPU, SLOs 100 ms and 1,000 ms; the study's
lower bound of 100 ms on the second model's response is not modelled): every scheduler meets all of it.

python benchmarks/scheduling_multi_slo.py [--seeds 0 1 2 3 4] [--duration-s 10] [--rate 1200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from confidence import ci95  # benchmarks/confidence.py, beside this script
from case_studies.scheduling.families import (MULTI_SLO_CLASSES_MS, MULTI_SLO_GPUS, MULTI_SLO_MODELS_PER_SLO,
                                              MULTI_SLO_RATE, multi_slo_workload)
from case_studies.scheduling.runner import run_baseline
from case_studies.scheduling.workload import Workload

SCHEDULERS = ("clockwork", "edf", "fifo", "random")


def serve_all(workloads: list[Workload], n_gpus: int) -> dict[str, dict[str, list[float]]]:
    """Per scheduler: SLO satisfaction (%) and mean batch size of each workload."""
    out: dict[str, dict[str, list[float]]] = {s: {"slo": [], "batch": []} for s in SCHEDULERS}
    for workload in workloads:
        for scheduler in SCHEDULERS:
            metrics = run_baseline(workload, scheduler, n_gpus, seed=workload.seed)
            out[scheduler]["slo"].append(metrics.slo_satisfaction)
            out[scheduler]["batch"].append(metrics.mean_batch_size)
    return out


def print_table(title: str, results: dict[str, dict[str, list[float]]]) -> None:
    print(title)
    print(f"  {'scheduler':10s} {'SLO met % (mean +- 95% CI)':>28s}   per seed                         mean batch")
    for scheduler, values in results.items():
        mean, half = ci95(values["slo"])
        per_seed = ", ".join(f"{v:.1f}" for v in values["slo"])
        print(f"  {scheduler:10s} {mean:19.1f} +- {half:5.1f}   ({per_seed:30s}) {np.mean(values['batch']):6.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--duration-s", type=float, default=10.0, help="simulated seconds per workload")
    parser.add_argument("--rate", type=float, default=MULTI_SLO_RATE, help="total requests/s")
    parser.add_argument("--slos-ms", type=float, nargs="+", default=list(MULTI_SLO_CLASSES_MS))
    parser.add_argument("--models-per-slo", type=int, default=MULTI_SLO_MODELS_PER_SLO)
    parser.add_argument("--gpus", type=int, default=MULTI_SLO_GPUS)
    args = parser.parse_args(argv)
    begin = time.perf_counter()
    workloads = [multi_slo_workload(args.rate, args.slos_ms, args.models_per_slo, args.duration_s, seed)
                 for seed in args.seeds]
    n_models = workloads[0].n_models
    classes = ", ".join(f"{v:g}" for v in args.slos_ms)
    print_table(f"multi-SLO: {n_models} ResNet-50 models, SLO classes {classes} ms ({args.models_per_slo} models "
                f"each), {args.rate:g} r/s, {args.gpus} GPUs, {args.duration_s:g} s, seeds {args.seeds}",
                serve_all(workloads, args.gpus))
    study = [multi_slo_workload(300.0, (100.0, 1000.0), 1, args.duration_s, seed) for seed in args.seeds]
    print_table("the modelled study's chapter-6 shape, deadlines only: 2 models x 150 r/s, SLO 100 / 1000 ms, 1 GPU",
                serve_all(study, 1))
    print(f"wall time: {time.perf_counter() - begin:.1f} s")


if __name__ == "__main__":
    main()
