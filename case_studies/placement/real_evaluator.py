"""Real evaluator: run the placed training step on real devices and time it.

A placement on one device runs the traced torch.fx module's generated code there. A mixed placement
runs through an interpreter that executes every operation on the device its placement names (the topology maps each device to a torch device: ``cpu``, ``cuda:N``) and moves tensor
inputs there first, so cross-device edges are real copies. The step time is the median of
``repetitions`` timed runs after ``warmup`` untimed ones (CUDA devices are synchronised before the clock
stops). On a machine without CUDA only CPU placements can run; asking for a missing device is an error.
"""

from __future__ import annotations

import time
from statistics import median

import numpy as np
import torch
from torch.utils._pytree import tree_map

from case_studies.placement.topology import Topology
from wield.errors import ConfigError
from workloads.graphs.trace import TracedGraph


class _PlacedInterpreter(torch.fx.Interpreter):
    def __init__(self, module: torch.fx.GraphModule, device_of_node: dict[str, torch.device]) -> None:
        super().__init__(module)
        self.device_of_node = device_of_node

    def run_node(self, n: torch.fx.Node):
        device = self.device_of_node.get(n.name)
        if device is None:  # tuple element reads and the output stay where their producer is
            return super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        move = lambda x: x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x  # noqa: E731
        args, kwargs = tree_map(move, args), tree_map(move, kwargs)
        if n.op == "placeholder":
            return move(next(self.args_iter))
        return getattr(self, n.op)(n.target, args, kwargs)


class RealEvaluator:
    """Times a placement of ``traced`` on the real devices that ``topology`` names."""

    def __init__(self, traced: TracedGraph, topology: Topology) -> None:
        self.traced = traced
        self.topology = topology

    def _torch_devices(self, placement: np.ndarray) -> list[torch.device]:
        devices = []
        for index in sorted(set(int(d) for d in placement)):
            if not 0 <= index < self.topology.n_devices:
                raise ConfigError("placement device", index, list(range(self.topology.n_devices)))
            spec = self.topology.devices[index]
            device = torch.device(spec.torch_device)
            if device.type == "cuda" and (not torch.cuda.is_available() or
                                          (device.index or 0) >= torch.cuda.device_count()):
                raise ConfigError("placement device", spec.name, reason=(
                    f"runs on {spec.torch_device}, which this machine does not have "
                    f"({torch.cuda.device_count()} CUDA devices)"))
            devices.append(device)
        return devices

    def step_time(self, placement, warmup: int = 2, repetitions: int = 5) -> float:
        """Median seconds of one training step with every operation on its placed device."""
        placement = np.asarray(placement, dtype=np.int64)
        if placement.shape != (self.traced.graph.n_ops,):
            raise ConfigError("placement", f"{placement.size} entries",
                              reason=f"graph has {self.traced.graph.n_ops} operations")
        used = self._torch_devices(placement)
        device_of_node = {node: torch.device(self.topology.devices[int(d)].torch_device)
                          for node, d in zip(self.traced.node_of_op, placement)}
        cuda = [d for d in used if d.type == "cuda"]
        if len(used) == 1:  # one device: the traced module's own generated code runs the step
            inputs = [x.to(used[0]) if isinstance(x, torch.Tensor) else x for x in self.traced.example_inputs]
            module = self.traced.module.to(used[0])
            run = lambda: module(*inputs)  # noqa: E731
        else:
            interpreter = _PlacedInterpreter(self.traced.module, device_of_node)
            run = lambda: interpreter.run(*self.traced.example_inputs)  # noqa: E731
        times = []
        with torch.no_grad():
            for i in range(warmup + repetitions):
                start = time.perf_counter()
                run()
                for device in cuda:
                    torch.cuda.synchronize(device)
                if i >= warmup:
                    times.append(time.perf_counter() - start)
        return float(median(times))
