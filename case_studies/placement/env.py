"""The registered gymnasium environment ``wield/Placement-v0``: place one graph's groups on devices.

Each episode is one decision: a device for every group of the graph's layer-major blocks (the grouping the
Wield placer starts from and random search uses), measured once on the simulator. The observation is each
group's features (``features.group_view``) and its current device; the reward is minus the step time over
the sequential compute time on the fastest device (-5 for a placement that exceeds a device's memory).
Action heads ``group_0`` ... ``group_{G-1}`` each choose a device; every device is allowed (memory validity
is known only after simulating).
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from case_studies.placement.features import GROUP_FEATURES, GraphView, group_view
from case_studies.placement.graphs import prepare_graph
from case_studies.placement.simulator import Simulator
from case_studies.placement.system import PlacementSystem
from case_studies.placement.topology import Topology
from case_studies.placement.wield_placer import default_groups
from wield.converters import Converter
from wield.envs import EpisodeList, WieldEnv
from wield.schemas import Schema
from wield.systems import SystemAdapter
from workloads.graphs import get_family

INVALID_REWARD = -5.0


class GroupPlacementSchema(Schema):
    """State: per group, its features and the one-hot of its current device; action: a device per group."""

    name = "group-placement"

    def __init__(self, n_groups: int, n_devices: int) -> None:
        self.n_groups, self.n_devices = n_groups, n_devices
        width = n_groups * (GROUP_FEATURES + n_devices)
        self._state_space = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)
        self._action_space = gym.spaces.Dict({f"group_{g}": gym.spaces.Discrete(n_devices) for g in range(n_groups)})

    @property
    def state_space(self) -> gym.spaces.Box:
        return self._state_space

    @property
    def action_space(self) -> gym.spaces.Dict:
        return self._action_space

    def layout(self) -> Mapping[str, Any]:
        return {"groups": self.n_groups, "devices": self.n_devices, "group_features": GROUP_FEATURES}


class GroupPlacement(SystemAdapter):
    """One graph on the simulator; the configuration is the device of each layer-major group."""

    name = "placement"

    def __init__(self, system: PlacementSystem, n_groups: int) -> None:
        self.system = system
        self.view = GraphView.build(system.graph)
        self.blocks = self.view.block_groups(n_groups)
        self.features = group_view(self.view, self.blocks, n_groups)[0]
        self.devices = np.zeros(n_groups, dtype=np.int64)
        self.result = None

    def reset(self) -> None:
        self.devices = np.zeros_like(self.devices)
        self.result = None

    def state(self) -> np.ndarray:
        return self.devices.copy()

    def apply(self, action: np.ndarray | None) -> None:
        if action is not None:
            self.devices = np.asarray(action, dtype=np.int64)
            self.result = self.system.measure(self.devices[self.blocks])

    def measure(self, workload) -> dict[str, Any]:
        valid = self.result is not None and self.result.valid
        return {"valid": valid, "step_time_ms": self.result.step_time * 1e3 if valid else float("nan"),
                "reference_ms": self.system.reference_time * 1e3}


class GroupPlacementConverter(Converter[GroupPlacementSchema]):
    def __init__(self, schema: GroupPlacementSchema, adapter: GroupPlacement) -> None:
        super().__init__(schema)
        self.adapter = adapter

    def system_to_agent_state(self, system_state: np.ndarray, context: Any = None) -> np.ndarray:
        current = np.eye(self.schema.n_devices, dtype=np.float32)[system_state]
        return np.concatenate([self.adapter.features, current], axis=1).reshape(-1).astype(np.float32)

    def agent_to_system_action(self, agent_action: Mapping[str, int], context: Any = None) -> np.ndarray:
        return np.array([int(agent_action[f"group_{g}"]) for g in range(self.schema.n_groups)], dtype=np.int64)

    def system_to_agent_action(self, system_action: np.ndarray, context: Any = None) -> dict[str, int]:
        return {f"group_{g}": int(device) for g, device in enumerate(system_action)}

    def system_to_agent_reward(self, metrics: Mapping[str, Any], context: Any = None) -> float:
        if not metrics["valid"]:
            return INVALID_REWARD
        return -metrics["step_time_ms"] / metrics["reference_ms"]


def make_placement_env(family: str = "nmt", batch: int | None = None, unroll: int | None = None,
                       topology: str = "4gpu-cpu", n_groups: int = 0, seed: int | None = None,
                       cache_dir: str | None = None) -> WieldEnv:
    """The placement environment of one graph of ``family`` (its default graph, or the one sampled from
    ``seed``) on ``topology``; ``n_groups`` 0 means min(256, 20 x devices)."""
    overrides = {k: v for k, v in (("batch", batch), ("unroll", unroll)) if v is not None}
    params = get_family(family).sample(seed, **overrides) if seed is not None else get_family(family).params(**overrides)
    graph = prepare_graph(family, params, cache_dir)[0]
    devices = Topology.load(topology)
    groups = n_groups or default_groups(devices.n_devices)
    adapter = GroupPlacement(PlacementSystem(Simulator(graph, devices)), groups)
    schema = GroupPlacementSchema(groups, devices.n_devices)
    return WieldEnv(adapter, schema, GroupPlacementConverter(schema, adapter), EpisodeList([[graph.name]]))
