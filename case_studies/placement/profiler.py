"""Operation costs profiled from real execution on this machine, cached on disk by operation and shapes.

``profile_graph`` runs the traced training step through a timing torch.fx interpreter: every node really
executes on its real inputs, and the nodes whose cost key (target + input shapes + constant arguments) is
not cached yet are timed (``repetitions`` timed passes after one warm-up; the median per key). Identical
operations, such as the same LSTM cell at every unrolled step, share one key, so a graph of thousands of
operations has a few hundred distinct keys and is profiled once per machine. The cache is a JSON file
under the cache directory, named after this machine's platform, torch version and thread count.
"""

from __future__ import annotations

import json
import os
import platform
import time
from statistics import median

import numpy as np
import torch

from wield.cache import cache_root
from wield.io import atomic_write_json
from workloads.graphs.trace import TracedGraph


class OpCostCache:
    """Seconds per cost key measured on this machine (the reference device, speed 1.0)."""

    def __init__(self, cache_dir: str | os.PathLike | None = None) -> None:
        machine = f"{platform.node()}-{platform.machine()}-torch{torch.__version__}-threads{torch.get_num_threads()}"
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in machine)
        self.path = cache_root(cache_dir, create=True) / "placement" / f"op-costs-v2-{safe}.json"
        self.costs: dict[str, float] = {}
        if self.path.exists():
            try:
                self.costs = {str(k): float(v) for k, v in json.loads(self.path.read_text()).items()}
            except (json.JSONDecodeError, ValueError, AttributeError):
                self.costs = {}  # a damaged cache is re-profiled, never trusted
        self.profiled_keys = 0

    def save(self) -> None:
        atomic_write_json(self.path, self.costs)


class _TimingInterpreter(torch.fx.Interpreter):
    def __init__(self, module: torch.fx.GraphModule, wanted: set[str], device: torch.device) -> None:
        super().__init__(module)
        self.wanted = wanted
        self.current = ""
        self.times: dict[str, list[float]] = {}
        # on a CUDA device an operation has finished only once the device is synchronised
        self.synchronise = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)

    def run_node(self, n: torch.fx.Node):
        self.current = n.name
        return super().run_node(n)

    def call_function(self, target, args, kwargs):
        if self.current not in self.wanted:
            return super().call_function(target, args, kwargs)
        self.synchronise()
        start = time.perf_counter()  # the operation alone: not the interpreter's argument lookup
        result = target(*args, **kwargs)
        self.synchronise()
        self.times.setdefault(self.current, []).append(time.perf_counter() - start)
        return result


STATISTICS = {"median": median, "min": min}


def profile_graph(traced: TracedGraph, cache: OpCostCache, repetitions: int = 3,
                  statistic: str = "median", device: str = "cpu") -> np.ndarray:
    """Seconds of every operation of ``traced.graph`` (also stored as ``graph.seconds``): per cost key the
    ``statistic`` ("median", the default, or "min": the uncontended cost on a busy machine) of its timings,
    executed on the torch ``device`` ("cpu", the reference device of topologies, or "cuda:N": give each
    device its own cache)."""
    from wield.errors import ConfigError

    if statistic not in STATISTICS:
        raise ConfigError("statistic", statistic, sorted(STATISTICS))
    graph = traced.graph
    missing = {key for key, kind in zip(graph.cost_keys, graph.kinds) if kind == "compute" and key not in cache.costs}
    if missing:
        wanted = {node for node, key in zip(traced.node_of_op, graph.cost_keys) if key in missing}
        where = torch.device(device)
        module = traced.module.to(where)
        inputs = [x.to(where) if isinstance(x, torch.Tensor) else x for x in traced.example_inputs]
        interpreter = _TimingInterpreter(module, wanted, where)
        with torch.no_grad():
            for _ in range(repetitions + 1):
                interpreter.run(*inputs)
        per_key: dict[str, list[float]] = {}
        for node, key in zip(traced.node_of_op, graph.cost_keys):
            if node in interpreter.times:
                per_key.setdefault(key, []).extend(interpreter.times[node][1:])  # first pass is the warm-up
        for key, samples in per_key.items():
            cache.costs[key] = float(STATISTICS[statistic](samples))
        cache.profiled_keys += len(per_key)
        cache.save()
    seconds = np.array([cache.costs.get(key, 0.0) if kind == "compute" else 0.0
                        for key, kind in zip(graph.cost_keys, graph.kinds)], dtype=np.float64)
    graph.seconds = seconds
    return seconds
