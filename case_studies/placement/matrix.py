"""The cross-graph matrix of a placement learner: trained on one graph, placing another.

Cell (a, b): a model trained on graph a alone (``budget`` evaluations) places graph b ``samples`` times
(greedy first, then sampled); the cell is ``1 - best / reference_b`` with ``reference_b`` the best of as many
uniformly random layer-major placements of b. Both sides are the best of the same number of placements, so
a cell says how much better than random play at the same sampling effort the model places b (0: no better;
below 0: worse, e.g. negative transfer).

Every row starts from the same initial model and samples its placements of column b with the same seed, so
rows differ only in the graph they were trained on. The **untrained** row is that initial model placing
every graph with no training at all: the control a trained row must beat before its training means
anything (an untrained policy already places some graphs far better than random play).

Written as ``cross_graph_matrix.json`` (``graphs``, ``improvement`` per trained row, ``control_rows`` with
the untrained row, the graphs' families and sizes), ``.csv`` (the untrained row last) and ``.png``.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from case_studies.placement.baselines import random_search
from case_studies.placement.placing import new_system, place_unseen, run_method
from case_studies.placement.topology import Topology
from wield.seeding import derive_seed
from wield.workflows import RunRecord
from workloads.graphs import ComputationGraph

UNTRAINED = "untrained (control)"


def cross_graph_matrix(method: str, graphs: list[ComputationGraph], topology: Topology, budget: int,
                       samples: int, seed: int, record: RunRecord | None = None,
                       agent: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """improvement[a][b] of the model trained on graph a placing graph b, and the untrained control row
    (see the module docstring); written into ``record`` when given."""
    references = []
    for b, graph in enumerate(graphs):
        system = new_system(graph, topology)
        random_search(system, samples, derive_seed(seed, "matrix", "random", b))
        references.append(system.best_time)

    def row(placer) -> list[float]:
        cells = []
        for b, graph_b in enumerate(graphs):
            best = place_unseen(method, placer, new_system(graph_b, topology), samples,
                                derive_seed(seed, "matrix", "place", b))
            cells.append(float(1 - best / references[b]))
        return cells

    values = [row(run_method(method, [new_system(graph_a, topology)], budget, derive_seed(seed, "matrix"),
                             agent=agent)) for graph_a in graphs]
    untrained = row(run_method(method, [new_system(graphs[0], topology)], 0, derive_seed(seed, "matrix"),
                               agent=agent))
    names = [g.name for g in graphs]
    matrix = {"method": method, "train_budget": budget, "graphs": names, "improvement": values,
              "control_rows": {UNTRAINED: untrained},
              "reference": f"best of {samples} random layer-major placements of the placed graph",
              "families": [g.family for g in graphs], "operations": [int(g.n_ops) for g in graphs]}
    if record is not None:
        record.write_json("cross_graph_matrix.json", matrix)
        table = pd.DataFrame(values + [untrained], index=pd.Index(names + [UNTRAINED], name="trained on \\ placed"),
                             columns=names)
        record.write_text("cross_graph_matrix.csv", table.to_csv(float_format="%.4f", lineterminator="\n"))
        _matrix_figure(record, names, [f"{g.family}, {g.n_ops} ops" for g in graphs], np.array(values),
                       np.array(untrained), samples, budget)
    return matrix


def _matrix_figure(record: RunRecord, names: list[str], kinds: list[str], values: np.ndarray,
                   untrained: np.ndarray, samples: int, budget: int) -> None:
    from matplotlib.figure import Figure

    shown = np.vstack([values, untrained[None, :]])
    rows = [f"{name}\n({kind})" for name, kind in zip(names, kinds)] + [UNTRAINED]
    figure = Figure(figsize=(1.6 * len(names) + 3.5, 1.2 * len(rows) + 2))
    axis = figure.subplots()
    image = axis.imshow(shown, cmap="viridis")
    axis.axhline(len(names) - 0.5, color="white", lw=3)
    axis.set_xticks(range(len(names)), [f"{n}\n({k})" for n, k in zip(names, kinds)], rotation=45, ha="right",
                    fontsize=7)
    axis.set_yticks(range(len(rows)), rows, fontsize=7)
    for a in range(shown.shape[0]):
        for b in range(shown.shape[1]):
            axis.text(b, a, f"{shown[a, b]:.0%}", ha="center", va="center", color="w", fontsize=8)
    axis.set_xlabel("placed graph")
    axis.set_ylabel(f"trained on ({budget} evaluations)")
    figure.colorbar(image, ax=axis, label=f"improvement over the best of {samples} random placements")
    record.save_figure(figure, "cross_graph_matrix.png")
