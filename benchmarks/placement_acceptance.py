"""Placement acceptance: the Wield placer vs the baselines on the default NMT graph, per seed.

For each seed: the Wield placer (PPO grouper + placer task graph), random search and the grappler-style
REINFORCE placer each get the same budget of graph evaluations (500 by default); HEFT and single device
are deterministic. Prints per seed the best step time of every method and the Wield placer's improvement
over the mean of its first 20 measurements (success: >= 30%), then how many seeds succeeded and in how
many the Wield placer beat random search. Usage: python benchmarks/placement_acceptance.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import time

import torch

from case_studies.placement.placing import new_system, run_method
from case_studies.placement.graphs import prepare_graph
from case_studies.placement.topology import Topology
from wield.analysis import format_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--topology", default="4gpu-cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    graph, _ = prepare_graph("nmt", {})
    topology = Topology.load(args.topology)
    print(f"{graph.summary()}; topology {topology.name}; budget {args.budget} evaluations per learner")
    fixed = {}
    for method in ("heft", "single"):
        system = new_system(graph, topology)
        run_method(method, [system], args.budget, 0)
        fixed[method] = system.best_time * 1e3
    rows = []
    for seed in range(args.seeds):
        row = {"seed": seed, "heft": fixed["heft"], "single": fixed["single"]}
        for method in ("wield", "random", "grappler"):
            started = time.perf_counter()
            system = new_system(graph, topology)
            run_method(method, [system], args.budget, seed)
            metrics = system.metrics()
            row[method] = metrics["best_step_time_ms"]
            row[f"{method}_improvement"] = metrics["improvement"]
            row[f"{method}_seconds"] = time.perf_counter() - started
            if method == "wield":
                row["first20"] = metrics["initial_mean_step_time_ms"]
        row["success"] = "yes" if row["wield_improvement"] >= 0.3 else "no"
        row["beats_random"] = "yes" if row["wield"] < row["random"] else "no"
        rows.append(row)
        print(f"seed {seed}: wield {row['wield']:.3f} ms ({row['wield_improvement']:.1%}), random {row['random']:.3f} ms,"
              f" grappler {row['grappler']:.3f} ms  [{row['wield_seconds']:.0f} s / {row['random_seconds']:.0f} s / "
              f"{row['grappler_seconds']:.0f} s]", flush=True)
    print()
    print(format_table(rows, [
        ("seed", "seed", "d"), ("first20", "wield first 20 (ms)", ".3f"), ("wield", "wield best (ms)", ".3f"),
        ("wield_improvement", "wield improvement", ".1%"), ("success", ">= 30%", None),
        ("random", "random best (ms)", ".3f"), ("beats_random", "wield < random", None),
        ("grappler", "grappler best (ms)", ".3f"), ("grappler_improvement", "grappler impr.", ".1%"),
        ("heft", "HEFT (ms)", ".3f"), ("single", "single GPU (ms)", ".3f")]))
    successes = sum(r["success"] == "yes" for r in rows)
    beats = sum(r["beats_random"] == "yes" for r in rows)
    beats_heft = sum(r["wield"] < r["heft"] for r in rows)
    beats_grappler = sum(r["wield"] < r["grappler"] for r in rows)
    print(f"\nwield >= 30% improvement in {successes}/{len(rows)} seeds; beats random search in {beats}/{len(rows)}, "
          f"HEFT in {beats_heft}/{len(rows)}, the grappler-style placer in {beats_grappler}/{len(rows)} "
          f"(same budget of {args.budget} evaluations for the learners and random search)")


if __name__ == "__main__":
    main()
