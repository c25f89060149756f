"""Baseline placers, each charged in graph evaluations through ``PlacementSystem.measure``.

- ``random_search``: every evaluation a uniformly random device for each group of the layer-major blocks
  (the same groups the Wield placer starts from).
- ``single_device``: everything on the fastest device that holds the graph (devices tried fastest first).
- ``heft``: the critical-path list scheduler HEFT at operation level (upward ranks with mean costs, each
  operation to the device giving its earliest finish time, transfers on serial links as the simulator
  has them, ties to the fastest device); it reads the cost model directly and is
  charged one evaluation (plus the single-device fallback when its placement is invalid).
- ``GrapplerPlacer``: the hierarchical placer of TensorFlow's grappler as the study describes it:
  groups = min(256, 20 x devices), a feed-forward grouper over operation features and a placer over
  group features, trained together with REINFORCE on reward -sqrt(runtime), a penalty for invalid or
  out-of-memory placements and a moving-average reward baseline (decay 0.9). One evaluation per sample.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from case_studies.placement.features import GROUP_FEATURES, OP_FEATURES, GraphView, group_view
from case_studies.placement.system import PlacementSystem
from case_studies.placement.wield_placer import default_groups
from wield.agents.optimizers import ExactAdam
from wield.seeding import derive_seed, make_rng


def random_search(system: PlacementSystem, budget: int, seed: int, progress=None) -> None:
    n_groups = default_groups(system.topology.n_devices)
    blocks = GraphView.build(system.graph).block_groups(n_groups)
    rng = make_rng(seed, "random-search")
    for _ in range(budget):
        system.measure(rng.integers(0, system.topology.n_devices, n_groups)[blocks])
        if progress is not None:
            progress(1)


def single_device(system: PlacementSystem) -> int:
    """Measure all-on-one-device placements, fastest device first, until one is valid; returns it (-1: none)."""
    for device in system.topology.fastest():
        if system.measure(np.full(system.graph.n_ops, device, dtype=np.int64)).valid:
            return device
    return -1


def heft_placement(system: PlacementSystem) -> np.ndarray:
    """HEFT's placement of ``system``'s graph (no measurement)."""
    sim = system.simulator
    graph = sim.graph
    n, n_dev = graph.n_ops, sim.n_devices
    cost = sim.cost
    off = ~np.eye(n_dev, dtype=bool)
    mean_latency = float(sim.latency[off].mean()) if n_dev > 1 else 0.0
    mean_inv_bw = float(sim.inv_bw[off].mean()) if n_dev > 1 else 0.0
    mean_cost = cost.mean(axis=1)
    speeds = sim.topology.speeds
    indptr, consumers = graph.consumers_csr()
    rank = np.zeros(n)
    for u in range(n - 1, -1, -1):
        succ = consumers[indptr[u]:indptr[u + 1]]
        comm = mean_latency + graph.output_bytes[u] * mean_inv_bw
        rank[u] = mean_cost[u] + (float((rank[succ]).max()) + comm if succ.size else 0.0)
    order = np.lexsort((np.arange(n), -rank))
    device = np.full(n, -1, dtype=np.int64)
    finish = np.zeros(n)
    available = np.zeros(n_dev)
    link_free = np.zeros((n_dev, n_dev))
    sent: dict[tuple[int, int], float] = {}  # (producer, device) -> arrival of its copy there
    for u in order:
        preds = graph.inputs[u]
        ready = np.zeros(n_dev)
        for d in range(n_dev):
            links = link_free[:, d].copy()
            for p in preds:  # transfers ride serial links, as in the simulator
                source = device[p]
                if source == d:
                    arrival = finish[p]
                elif (p, d) in sent:
                    arrival = sent[p, d]
                else:
                    start = max(finish[p], links[source])
                    arrival = start + sim.latency[source, d] + graph.output_bytes[p] * sim.inv_bw[source, d]
                    links[source] = arrival
                ready[d] = max(ready[d], arrival)
        eft = np.maximum(ready, available) + cost[u]
        tied = np.flatnonzero(eft <= eft.min() * (1 + 1e-12))
        best = int(tied[np.argmax(speeds[tied])])  # ties (e.g. free parameter reads) go to the fastest device
        for p in preds:  # commit the chosen device's transfers
            source = device[p]
            if source != best and (p, best) not in sent:
                start = max(finish[p], link_free[source, best])
                sent[p, best] = start + sim.latency[source, best] + graph.output_bytes[p] * sim.inv_bw[source, best]
                link_free[source, best] = sent[p, best]
        device[u] = best
        finish[u] = eft[best]
        available[best] = eft[best]
    return device


def heft(system: PlacementSystem) -> bool:
    """Measure HEFT's placement; when it is invalid, fall back to the single-device baseline."""
    if system.measure(heft_placement(system)).valid:
        return True
    return single_device(system) >= 0


class _GrapplerPolicy(nn.Module):
    def __init__(self, n_groups: int, n_devices: int, hidden: int = 64) -> None:
        super().__init__()
        self.grouper = nn.Sequential(nn.Linear(OP_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, n_groups))
        self.placer = nn.Sequential(nn.Linear(GROUP_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, n_devices))


class GrapplerPlacer:
    """REINFORCE over (grouping, placement) with reward -sqrt(runtime) and an EMA baseline (decay 0.9)."""

    def __init__(self, n_devices: int, seed: int = 0, learning_rate: float = 1e-2, baseline_decay: float = 0.9,
                 invalid_penalty: float = 5.0) -> None:
        self.n_devices = n_devices
        self.n_groups = default_groups(n_devices)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "grappler", "network"))
            self.policy = _GrapplerPolicy(self.n_groups, n_devices)
        self.optimizer = ExactAdam(self.policy.parameters(), lr=learning_rate)
        self.generator = torch.Generator().manual_seed(derive_seed(seed, "grappler", "sample"))
        self.decay = baseline_decay
        self.penalty = invalid_penalty
        self.baseline: float | None = None
        self.history: list[dict[str, float]] = []  # per sample: step time, validity, the common return

    def _sample(self, view: GraphView, explore: bool = True):
        features = torch.as_tensor(view.features)
        group_logits = torch.log_softmax(self.policy.grouper(features), dim=-1)
        groups = torch.multinomial(group_logits.exp(), 1, generator=self.generator)[:, 0] if explore \
            else group_logits.argmax(dim=-1)
        group_features, _ = group_view(view, groups.numpy(), self.n_groups)
        device_logits = torch.log_softmax(self.policy.placer(torch.as_tensor(group_features)), dim=-1)
        devices = torch.multinomial(device_logits.exp(), 1, generator=self.generator)[:, 0] if explore \
            else device_logits.argmax(dim=-1)
        log_prob = group_logits.gather(1, groups[:, None]).sum() + device_logits.gather(1, devices[:, None]).sum()
        return devices.numpy()[groups.numpy()], log_prob

    def train(self, systems: list[PlacementSystem], budget: int, progress=None) -> None:
        """REINFORCE for ``budget`` evaluations, round-robin over ``systems``."""
        views = [GraphView.build(s.graph) for s in systems]
        for step in range(budget):
            system, view = systems[step % len(systems)], views[step % len(systems)]
            placement, log_prob = self._sample(view)
            result = system.measure(placement)
            runtime = result.step_time / system.reference_time if result.valid else self.penalty
            reward = -float(np.sqrt(runtime))
            self.history.append({"episode": step + 1, "step_time_ms": result.step_time * 1e3,
                                 "valid": float(result.valid),
                                 "return": -runtime if result.valid else -self.penalty, "decisions": 1})
            self.baseline = reward if self.baseline is None else self.decay * self.baseline + (1 - self.decay) * reward
            advantage = reward - self.baseline
            self.optimizer.zero_grad()
            (-advantage * log_prob).backward()
            self.optimizer.step()
            if progress is not None:
                progress(1)

    def place(self, system: PlacementSystem, explore: bool = False) -> np.ndarray:
        with torch.no_grad():
            return self._sample(GraphView.build(system.graph), explore)[0]
