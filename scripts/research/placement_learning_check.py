"""Does the Wield placer learn on the placement task? Seeds side by side, at a given budget.

For every seed this builds the graph and topology as ``wield run placement`` does for a single (blackbox)
run (``PlacementRunConfig.seeds``: the family's default graph, the agent seed = the run seed), trains the
Wield placer (PPO grouper + PPO placer, two measured steps per episode) for ``--budget`` graph evaluations,
and reports:

- the mean step time (ms) of the first 10 and the last 10 training episodes (the second, complete
  placement of each episode; invalid placements counted apart);
- the greedy policy's step time: one placement with ``explore=False``, measured on a fresh record;
- random group placements (uniform device per layer-major group, the reference that the run's improvement
  and the cross-graph matrix use): mean and sd of ``--random-placements`` valid ones;
- the best step time found in training against random search's best at the same number of evaluations, and
  whether each meets the run's objective (>= 30% better than the mean of its own first 20 measurements).

Verdict "learned": greedy < random mean - 2 sd and last-10 < first-10 (step times: lower is better).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from case_studies.placement.baselines import random_search  # noqa: E402
from case_studies.placement.experiment import PlacementRunConfig, _system, blackbox_graph  # noqa: E402
from case_studies.placement.topology import Topology  # noqa: E402
from case_studies.placement.wield_placer import WieldPlacer  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402

OBJECTIVE = 0.3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--family", default="nmt")
    parser.add_argument("--topology", default="4gpu-cpu")
    parser.add_argument("--random-placements", type=int, default=20)
    parser.add_argument("--json-out", default=None)
    return parser.parse_args(argv)


def valid_mean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return statistics.mean(finite) if finite else float("nan")


def check_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    config = PlacementRunConfig(family=args.family, topology=args.topology, budget=args.budget, seed=seed).validate()
    seeds = config.seeds()
    topology = Topology.load(config.topology)
    graph = blackbox_graph(config, seeds)
    started = time.perf_counter()
    system = _system(graph, topology)
    placer = WieldPlacer(topology.n_devices, seed=int(seeds["agent"]))
    placer.train([system], args.budget)
    train_seconds = time.perf_counter() - started
    episodes = [h["step_time_ms"] if h["valid"] else float("nan") for h in placer.history]
    greedy_system = _system(graph, topology)
    greedy = greedy_system.measure(placer.place(greedy_system, explore=False))
    randoms = _system(graph, topology)
    random_search(randoms, args.random_placements, derive_seed(int(seeds["agent"]), "reference"))
    random_ms = [v * 1e3 for v in randoms.measurements if np.isfinite(v)]
    search = _system(graph, topology)
    random_search(search, args.budget, derive_seed(int(seeds["agent"]), "random-search"))
    wield_metrics, search_metrics = system.metrics(), search.metrics()
    row = {
        "seed": seed, "budget": args.budget, "graph": graph.name, "operations": graph.n_ops,
        "first10_ms": valid_mean(episodes[:10]), "last10_ms": valid_mean(episodes[-10:]),
        "invalid_first10": int(np.isnan(episodes[:10]).sum()), "invalid_last10": int(np.isnan(episodes[-10:]).sum()),
        "greedy_ms": greedy.step_time * 1e3 if greedy.valid else float("inf"),
        "random_mean_ms": statistics.mean(random_ms), "random_sd_ms": statistics.stdev(random_ms),
        "random_valid": len(random_ms),
        "wield_best_ms": wield_metrics["best_step_time_ms"], "wield_improvement": wield_metrics["improvement"],
        "random_search_best_ms": search_metrics["best_step_time_ms"],
        "random_search_improvement": search_metrics["improvement"],
        "wield_meets": wield_metrics["improvement"] >= OBJECTIVE,
        "random_search_meets": search_metrics["improvement"] >= OBJECTIVE,
        "train_seconds": train_seconds, "episodes_ms": episodes,
    }
    row["learned"] = bool(row["greedy_ms"] < row["random_mean_ms"] - 2 * row["random_sd_ms"]
                          and row["last10_ms"] < row["first10_ms"])
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for seed in args.seeds:
        row = check_seed(args, seed)
        rows.append(row)
        print(f"seed {seed} ({row['graph']}, {row['operations']} ops): first10 {row['first10_ms']:.2f} ms "
              f"last10 {row['last10_ms']:.2f} ms (invalid {row['invalid_first10']}/{row['invalid_last10']}) "
              f"greedy {row['greedy_ms']:.2f} ms random {row['random_mean_ms']:.2f} +- {row['random_sd_ms']:.2f} ms "
              f"learned={'yes' if row['learned'] else 'no'} | best in training {row['wield_best_ms']:.2f} ms "
              f"({row['wield_improvement']:.1%}, meets={row['wield_meets']}) vs random search "
              f"{row['random_search_best_ms']:.2f} ms ({row['random_search_improvement']:.1%}, "
              f"meets={row['random_search_meets']}) | train {row['train_seconds']:.0f}s", flush=True)
        if args.json_out:
            with open(args.json_out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
    print(f"learned in {sum(r['learned'] for r in rows)}/{len(rows)}; random search meets the objective in "
          f"{sum(r['random_search_meets'] for r in rows)}/{len(rows)}; the placer's best meets it in "
          f"{sum(r['wield_meets'] for r in rows)}/{len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
