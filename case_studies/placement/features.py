"""What the placers see: operation features, the layer-major order, groups and their neighbourhoods.

``GraphView`` precomputes, once per graph, the per-operation features the groupers read and a
*layer-major* position: every operation is labelled with its nearest parameter (multi-source breadth-first
search over the undirected graph), parameters are ranked by their first use, and operations are ordered
by (parameter rank, topological index). Contiguous blocks of that order keep a layer's operations
together across unrolled time steps and across forward and backward, which is what model parallelism
across devices needs. ``group_view`` summarises a grouping: per-group features and the bytes flowing
between groups (the neighbourhood the placer's network sums over).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from workloads.graphs.graph import ComputationGraph

OP_FEATURES = 8
GROUP_FEATURES = 8


@dataclass
class GraphView:
    """Per-operation arrays of one graph, normalised for networks."""

    graph: ComputationGraph
    features: np.ndarray  # [n_ops, OP_FEATURES] float32
    layer_position: np.ndarray  # [n_ops] in [0, 1)
    edge_src: np.ndarray
    edge_dst: np.ndarray

    @classmethod
    def build(cls, graph: ComputationGraph) -> "GraphView":
        n = graph.n_ops
        src, dst = graph.edges()
        seconds = graph.seconds if graph.seconds is not None else np.zeros(n)
        label = _nearest_parameter(graph, src, dst)
        params = [i for i, k in enumerate(graph.kinds) if k == "parameter"]
        indptr, consumers = graph.consumers_csr()
        first_use = {p: int(consumers[indptr[p]:indptr[p + 1]].min()) if indptr[p + 1] > indptr[p] else p
                     for p in params}
        rank = {p: r for r, p in enumerate(sorted(params, key=lambda p: (first_use[p], p)))}
        key = np.array([rank.get(int(label[i]), len(params)) for i in range(n)], dtype=np.int64)
        order = np.lexsort((np.arange(n), key))
        layer_position = np.empty(n)
        layer_position[order] = np.arange(n) / n
        topo = np.arange(n) / max(n, 1)
        phase = np.array(graph.phases)
        fan_in = np.bincount(dst, minlength=n)
        fan_out = np.bincount(src, minlength=n)
        features = np.stack([
            topo, layer_position, (phase == "forward").astype(float), (phase == "backward").astype(float),
            np.log1p(seconds * 1e6) / 10.0, np.log1p(graph.output_bytes) / 20.0,
            np.log1p(fan_in) / 3.0, np.log1p(fan_out) / 3.0,
        ], axis=1).astype(np.float32)
        return cls(graph, features, layer_position, src, dst)

    def block_groups(self, n_groups: int) -> np.ndarray:
        """The layer-major grouping: ``n_groups`` contiguous blocks of the layer-major order."""
        return np.minimum((self.layer_position * n_groups).astype(np.int64), n_groups - 1)

    def prior_logits(self, n_groups: int, width: float = 0.3) -> np.ndarray:
        """Logits favouring each operation's layer-major block (Gaussian in block units, ``width`` wide)."""
        centres = np.arange(n_groups) + 0.5
        distance = centres[None, :] - self.layer_position[:, None] * n_groups
        return (-(distance ** 2) / (2 * width ** 2)).astype(np.float32)


def _nearest_parameter(graph: ComputationGraph, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Label of the nearest parameter of every operation (ties to the earliest reached); -1 if none."""
    n = graph.n_ops
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    label = np.full(n, -1, dtype=np.int64)
    queue = deque()
    for i, kind in enumerate(graph.kinds):
        if kind == "parameter":
            label[i] = i
            queue.append(i)
    while queue:
        u = queue.popleft()
        for v in neighbours[u]:
            if label[v] < 0:
                label[v] = label[u]
                queue.append(v)
    return label


def group_view(view: GraphView, groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-group features ``[n_groups, GROUP_FEATURES]`` and the symmetric share of bytes between groups."""
    graph = view.graph
    seconds = graph.seconds if graph.seconds is not None else np.zeros(graph.n_ops)
    count = np.bincount(groups, minlength=n_groups).astype(float)
    total = lambda w: np.bincount(groups, weights=w, minlength=n_groups) / max(w.sum(), 1e-12)  # noqa: E731
    param = np.where(np.array(graph.kinds) == "parameter", graph.output_bytes, 0.0)
    safe = np.maximum(count, 1)
    features = np.stack([
        count / graph.n_ops, total(seconds), total(graph.output_bytes), total(param),
        np.bincount(groups, weights=view.features[:, 0], minlength=n_groups) / safe,
        np.bincount(groups, weights=view.features[:, 1], minlength=n_groups) / safe,
        np.bincount(groups, weights=view.features[:, 3], minlength=n_groups) / safe,
        (count > 0).astype(float),
    ], axis=1).astype(np.float32)
    gs, gd = groups[view.edge_src], groups[view.edge_dst]
    crossing = gs != gd
    weights = graph.output_bytes[view.edge_src[crossing]]
    adjacency = np.zeros((n_groups, n_groups))
    np.add.at(adjacency, (gs[crossing], gd[crossing]), weights)
    adjacency = adjacency + adjacency.T
    adjacency /= max(adjacency.sum(axis=1).max(), 1e-12)
    return features, adjacency.astype(np.float32)
