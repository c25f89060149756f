"""Controls for the placement cross-graph matrix: what does a cell measure before and after training?

The matrix of a generalisation run (``case_studies.placement.experiment.cross_graph_matrix``) trains a fresh
Wield placer on graph a for ``matrix_budget`` evaluations and scores graph b as ``1 - best / reference``:
``best`` is the best of ``test_samples`` placements of b by the trained policy (greedy first), and
``reference`` is the *mean* of 20 random layer-major group placements of b. This script rebuilds the matrix
for the graphs of one C5 trial with several training budgets, including 0 (an untrained policy), and prints
beside it the same score for the best of ``test_samples`` *random* placements, the equal-sample control:

    python scripts/research/placement_matrix_control.py --budgets 0 100 500

A cell only says something about training where it exceeds the budget-0 row and the random control.
``--per-row-seeds`` rebuilds the construction before the fix on branch learn-research (each row its own
initial model, seed ``derive_seed(seed, "matrix", a)``); by default the library's ``cross_graph_matrix``
(one initial model for every row) is used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from case_studies.placement.baselines import random_search  # noqa: E402
from case_studies.placement.experiment import (PlacementRunConfig, _reference, _system,  # noqa: E402
                                               cross_graph_matrix, generalisation_graphs, place_unseen,
                                               run_method, trial_seeds)
from case_studies.placement.topology import Topology  # noqa: E402
from wield.protocols.plan import TrialPlan  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--class-name", default="C5")
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--budgets", type=int, nargs="+", default=[0, 100, 500])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--per-row-seeds", action="store_true", help="the construction before the fix")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = PlacementRunConfig().validate()
    trial = TrialPlan.make(args.class_name, args.trial + 1, config.seed).trials[args.trial]
    seeds = trial_seeds(trial.as_dict())
    topology = Topology.load(config.topology)
    train, test = generalisation_graphs(config, seeds)
    graphs = train[:2] + test[:2]
    seed = int(seeds["agent"])
    names = [f"G{i} {g.name} ({g.n_ops} ops)" for i, g in enumerate(graphs)]
    print("\n".join(names))
    references = [_reference(_system(g, topology), seed).metrics()["initial_mean_step_time_ms"] / 1e3
                  for g in graphs]
    controls = []
    for b, graph in enumerate(graphs):
        system = _system(graph, topology)
        random_search(system, args.samples, derive_seed(seed, "control", b))
        controls.append(1 - system.best_time / references[b])
    print("random best-of-%d vs mean-of-20 random: " % args.samples + "  ".join(f"{v:6.1%}" for v in controls))
    for budget in args.budgets:
        print(f"training budget {budget} evaluations per row:")
        if not args.per_row_seeds:
            matrix = cross_graph_matrix("wield", graphs, topology, budget, args.samples, seed)["improvement"]
            for a, row in enumerate(matrix):
                print(f"  trained on G{a}: " + "  ".join(f"{v:6.1%}" for v in row), flush=True)
            continue
        for a, graph_a in enumerate(graphs):
            placer = run_method("wield", [_system(graph_a, topology)], budget, derive_seed(seed, "matrix", a))
            row = []
            for b, graph_b in enumerate(graphs):
                best = place_unseen("wield", placer, _system(graph_b, topology), args.samples,
                                    derive_seed(seed, "matrix", a, b))
                row.append(1 - best / references[b] if np.isfinite(best) else float("-inf"))
            print(f"  trained on G{a}: " + "  ".join(f"{v:6.1%}" for v in row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
