"""Event-driven simulator of one training step of a placed computation graph.

Model (docs/design.md section 7):

- every device runs one operation at a time; its queue holds the operations whose inputs have all
  arrived, served in dependency (topological) order; an operation takes its profiled time divided by the
  device's speed;
- a tensor needed on another device is sent once per destination device when its producer finishes, over
  the directed link, which carries one transfer at a time: ``latency + bytes / bandwidth``;
- memory: an operation's output is allocated on its device when it starts, a transferred copy on the
  receiving device when the transfer starts; a buffer is freed when its last consumer on that device has
  finished (and, on the producer's device, its last transfer has left). Parameters, inputs and the step's
  outputs (loss, gradients) stay allocated. A placement whose peak memory exceeds a device's memory is
  invalid, with the reason.

The step time is the time the last operation finishes. The event loop is compiled with numba and works
on arrays precomputed once per graph and topology, so one evaluation is linear in operations + edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

from case_studies.placement.topology import Topology
from wield.errors import ConfigError
from workloads.graphs.graph import ComputationGraph


@njit(cache=True, inline="always")
def _less(t: np.ndarray, c: np.ndarray, i: int, j: int) -> bool:
    return t[i] < t[j] or (t[i] == t[j] and c[i] < c[j])


@njit(cache=True)
def _event_push(t: np.ndarray, c: np.ndarray, size: int, time: float, code: int) -> int:
    i = size
    t[i] = time
    c[i] = code
    while i > 0:
        parent = (i - 1) >> 1
        if _less(t, c, i, parent):
            t[i], t[parent] = t[parent], t[i]
            c[i], c[parent] = c[parent], c[i]
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _event_pop(t: np.ndarray, c: np.ndarray, size: int) -> int:
    """Moves the earliest event to index ``size - 1`` (where the caller reads it); returns the new size."""
    size -= 1
    t[0], t[size] = t[size], t[0]
    c[0], c[size] = c[size], c[0]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        smallest = left
        right = left + 1
        if right < size and _less(t, c, right, left):
            smallest = right
        if _less(t, c, smallest, i):
            t[i], t[smallest] = t[smallest], t[i]
            c[i], c[smallest] = c[smallest], c[i]
            i = smallest
        else:
            break
    return size


@njit(cache=True)
def _queue_push(q: np.ndarray, size: int, op: int) -> int:
    i = size
    q[i] = op
    while i > 0:
        parent = (i - 1) >> 1
        if q[i] < q[parent]:
            q[i], q[parent] = q[parent], q[i]
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _queue_pop(q: np.ndarray, size: int) -> int:
    size -= 1
    q[0], q[size] = q[size], q[0]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        smallest = left
        if left + 1 < size and q[left + 1] < q[left]:
            smallest = left + 1
        if q[smallest] < q[i]:
            q[i], q[smallest] = q[smallest], q[i]
            i = smallest
        else:
            break
    return size


@njit(cache=True)
def _simulate(dev, cost, nbytes, out_ptr, out_idx, in_ptr, in_idx, persistent, latency, inv_bw, peak):
    n = dev.shape[0]
    n_dev = latency.shape[0]
    stride = n_dev + 1
    uses = np.zeros(n * n_dev, dtype=np.int64)
    pending = np.empty(n, dtype=np.int64)
    sends_left = np.zeros(n, dtype=np.int64)
    queues = np.empty((n_dev, n), dtype=np.int64)
    qsize = np.zeros(n_dev, dtype=np.int64)
    busy = np.zeros(n_dev, dtype=np.bool_)
    mem = np.zeros(n_dev, dtype=np.float64)
    link_free = np.zeros((n_dev, n_dev), dtype=np.float64)
    capacity = n * n_dev + 1
    ev_t = np.empty(capacity, dtype=np.float64)
    ev_c = np.empty(capacity, dtype=np.int64)
    ev_size = 0
    peak[:] = 0.0
    for u in range(n):
        pending[u] = in_ptr[u + 1] - in_ptr[u]
        for k in range(out_ptr[u], out_ptr[u + 1]):
            uses[u * n_dev + dev[out_idx[k]]] += 1
        for d in range(n_dev):
            if d != dev[u] and uses[u * n_dev + d] > 0:
                sends_left[u] += 1
        if pending[u] == 0:
            d = dev[u]
            qsize[d] = _queue_push(queues[d], qsize[d], u)
    makespan = 0.0
    now = 0.0
    started = True
    while True:
        if started:  # start work on idle devices with ready operations
            started = False
            for d in range(n_dev):
                if not busy[d] and qsize[d] > 0:
                    qsize[d] = _queue_pop(queues[d], qsize[d])
                    u = queues[d][qsize[d]]
                    busy[d] = True
                    mem[d] += nbytes[u]
                    if mem[d] > peak[d]:
                        peak[d] = mem[d]
                    ev_size = _event_push(ev_t, ev_c, ev_size, now + cost[u, d], u * stride + n_dev)
        if ev_size == 0:
            break
        ev_size = _event_pop(ev_t, ev_c, ev_size)
        now = ev_t[ev_size]
        code = ev_c[ev_size]
        u = code // stride
        d = code % stride
        started = True
        if d == n_dev:  # operation u finished on its device
            du = dev[u]
            busy[du] = False
            if now > makespan:
                makespan = now
            for dd in range(n_dev):
                if dd != du and uses[u * n_dev + dd] > 0:
                    start = max(now, link_free[du, dd])
                    arrive = start + latency[du, dd] + nbytes[u] * inv_bw[du, dd]
                    link_free[du, dd] = arrive
                    mem[dd] += nbytes[u]
                    if mem[dd] > peak[dd]:
                        peak[dd] = mem[dd]
                    ev_size = _event_push(ev_t, ev_c, ev_size, arrive, u * stride + dd)
            for k in range(out_ptr[u], out_ptr[u + 1]):
                c = out_idx[k]
                if dev[c] == du:
                    pending[c] -= 1
                    if pending[c] == 0:
                        qsize[du] = _queue_push(queues[du], qsize[du], c)
            for k in range(in_ptr[u], in_ptr[u + 1]):  # inputs whose last use on this device was u
                i = in_idx[k]
                slot = i * n_dev + du
                uses[slot] -= 1
                if uses[slot] == 0:
                    if dev[i] != du:
                        mem[du] -= nbytes[i]
                    elif sends_left[i] == 0 and not persistent[i]:
                        mem[du] -= nbytes[i]
            if uses[u * n_dev + du] == 0 and sends_left[u] == 0 and not persistent[u]:
                mem[du] -= nbytes[u]
        else:  # u's output arrived on device d
            if now > makespan:
                makespan = now
            src = dev[u]
            sends_left[u] -= 1
            if sends_left[u] == 0 and uses[u * n_dev + src] == 0 and not persistent[u]:
                mem[src] -= nbytes[u]
            for k in range(out_ptr[u], out_ptr[u + 1]):
                c = out_idx[k]
                if dev[c] == d:
                    pending[c] -= 1
                    if pending[c] == 0:
                        qsize[d] = _queue_push(queues[d], qsize[d], c)
    return makespan


@dataclass(frozen=True)
class SimulationResult:
    """One evaluated placement: step time (seconds), peak bytes per device, validity and why not."""

    step_time: float
    peak_memory: np.ndarray
    valid: bool
    reason: str = ""


class Simulator:
    """Simulates ``graph`` on ``topology``; build once, ``evaluate(placement)`` many times."""

    def __init__(self, graph: ComputationGraph, topology: Topology) -> None:
        if graph.seconds is None:
            raise ConfigError("graph", graph.name, reason="has no profiled operation costs (run profile_graph first)")
        self.graph = graph
        self.topology = topology
        self.n_ops = graph.n_ops
        self.n_devices = topology.n_devices
        self.cost = np.ascontiguousarray(graph.seconds[:, None] / topology.speeds[None, :])
        self.nbytes = np.ascontiguousarray(graph.output_bytes, dtype=np.float64)
        self.out_ptr, self.out_idx = graph.consumers_csr()
        counts = np.array([len(s) for s in graph.inputs], dtype=np.int64)
        self.in_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.in_idx = np.array([j for s in graph.inputs for j in s], dtype=np.int64)
        kinds = np.array(graph.kinds)
        self.persistent = (kinds != "compute") | (np.diff(self.out_ptr) == 0)
        self.latency = np.ascontiguousarray(topology.latency, dtype=np.float64)
        with np.errstate(divide="ignore"):
            self.inv_bw = np.ascontiguousarray(1.0 / topology.bandwidth)
        self.capacity = topology.memory
        self.evaluations = 0

    def placement_array(self, placement: Sequence[int] | Sequence[str] | np.ndarray | dict) -> np.ndarray:
        """A placement as device indices per operation; from indices, device names or {op name: device}."""
        names = self.topology.names
        if isinstance(placement, dict):
            index = {name: i for i, name in enumerate(self.graph.op_names)}
            array = np.full(self.n_ops, -1, dtype=np.int64)
            for op, device in placement.items():
                if op not in index:
                    raise ConfigError("placement operation", op, reason=f"not an operation of graph {self.graph.name!r}")
                array[index[op]] = self.topology.index(device)
            if (array < 0).any():
                missing = self.graph.op_names[int(np.argmax(array < 0))]
                raise ConfigError("placement", missing, reason="operation has no device")
            return array
        if len(placement) != self.n_ops:
            raise ConfigError("placement", f"{len(placement)} entries", reason=f"graph has {self.n_ops} operations")
        if len(placement) and isinstance(placement[0], str):
            return np.array([self.topology.index(d) for d in placement], dtype=np.int64)
        array = np.asarray(placement, dtype=np.int64)
        if array.size and (array.min() < 0 or array.max() >= self.n_devices):
            bad = int(array[(array < 0) | (array >= self.n_devices)][0])
            raise ConfigError("placement device", bad, list(range(self.n_devices)),
                              f"device indices of topology {self.topology.name!r} ({', '.join(names)})")
        return array

    def evaluate(self, placement) -> SimulationResult:
        """Simulate one step under ``placement``; over-memory placements are returned invalid with a reason."""
        dev = self.placement_array(placement)
        peak = np.zeros(self.n_devices)
        step = _simulate(dev, self.cost, self.nbytes, self.out_ptr, self.out_idx, self.in_ptr, self.in_idx,
                         self.persistent, self.latency, self.inv_bw, peak)
        self.evaluations += 1
        over = np.flatnonzero(peak > self.capacity)
        if over.size:
            d = int(over[0])
            reason = (f"out of memory on {self.topology.names[d]}: peak {peak[d] / 2**20:.1f} MiB > "
                      f"{self.capacity[d] / 2**20:.1f} MiB")
            return SimulationResult(float(step), peak, False, reason)
        return SimulationResult(float(step), peak, True)
