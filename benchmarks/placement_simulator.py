"""Placement simulator speed: evaluations per second at about 1,000 and 10,000 operations, and growth.

Builds NMT training-step graphs whose unroll length gives about 1,000 and 10,000 operations (traced and
profiled once, then cached), and times the simulator on the same kind of placements at both sizes: random
devices for 100 layer-major groups (what the placers propose) and random devices per operation (the most
transfers). Prints evaluations per second, microseconds per operation + edge, and how the time per
evaluation grows against how the graph grows (linear: the two ratios match).
Usage: python benchmarks/placement_simulator.py [--evaluations 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from case_studies.placement.features import GraphView
from case_studies.placement.graphs import prepare_graph
from case_studies.placement.simulator import Simulator
from case_studies.placement.topology import Topology
from wield.analysis import format_table


def time_placements(simulator: Simulator, placements: list[np.ndarray]) -> float:
    simulator.evaluate(placements[0])  # compiled code loaded
    start = time.perf_counter()
    for placement in placements:
        simulator.evaluate(placement)
    return (time.perf_counter() - start) / len(placements)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=1000, help="evaluations timed per size and kind")
    args = parser.parse_args()
    topology = Topology.load("4gpu-cpu")
    rng = np.random.default_rng(0)
    rows = []
    for unroll in (3, 33):
        graph, _ = prepare_graph("nmt", {"unroll": unroll})
        simulator = Simulator(graph, topology)
        blocks = GraphView.build(graph).block_groups(100)
        kinds = {
            "100 groups": [rng.integers(0, topology.n_devices, 100)[blocks] for _ in range(args.evaluations)],
            "per operation": [rng.integers(0, topology.n_devices, graph.n_ops) for _ in range(args.evaluations)],
        }
        for kind, placements in kinds.items():
            seconds = time_placements(simulator, placements)
            rows.append({"graph": graph.name, "ops": graph.n_ops, "edges": graph.n_edges, "kind": kind,
                         "per_s": 1 / seconds, "us": seconds * 1e6,
                         "us_per_item": seconds * 1e6 / (graph.n_ops + graph.n_edges)})
    print(format_table(rows, [("graph", "graph", None), ("ops", "operations", "d"), ("edges", "edges", "d"),
                              ("kind", "placements", None), ("per_s", "evaluations/s", ",.0f"),
                              ("us", "us/evaluation", ".0f"), ("us_per_item", "us per op+edge", ".3f")]))
    for kind in ("100 groups", "per operation"):
        small, large = [r for r in rows if r["kind"] == kind]
        size = (large["ops"] + large["edges"]) / (small["ops"] + small["edges"])
        print(f"{kind}: graph grows {size:.1f}x (operations + edges), time per evaluation grows "
              f"{large['us'] / small['us']:.1f}x")


if __name__ == "__main__":
    main()
