"""Topologies: the devices a graph is placed on (relative speed, memory) and the links between them.

A topology file is JSON::

    {"name": "4 GPUs + CPU",
     "devices": [{"name": "cpu:0", "kind": "cpu", "speed": 1.0, "memory_bytes": 68719476736}, ...],
     "links": [{"from": "cpu:0", "to": "gpu:0", "latency_s": 2e-05, "bandwidth_bytes_per_s": 8e9}, ...],
     "default_link": {"latency_s": 1e-05, "bandwidth_bytes_per_s": 1.2e10}}

``speed`` is relative to this machine's CPU, on which operation costs are profiled (speed 1.0): an
operation's time on a device is its profiled time divided by the device's speed. A link given once serves
both directions; pairs without a link use ``default_link`` (an error when there is none). ``torch_device``
(optional) names the real device (``cpu``, ``cuda:N``) the real evaluator uses for it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wield.errors import ConfigError, DataError

TOPOLOGY_DIR = Path(__file__).resolve().parent / "topologies"
BUILTIN = {"4gpu-cpu": "4gpu_cpu.json", "1gpu-cpu": "1gpu_cpu.json"}
DEVICE_KINDS = ("cpu", "gpu")


@dataclass(frozen=True)
class Device:
    name: str
    kind: str
    speed: float
    memory_bytes: float
    torch_device: str


@dataclass(frozen=True)
class Topology:
    """Devices and the latency / bandwidth matrices between them (diagonal unused)."""

    name: str
    devices: tuple[Device, ...]
    latency: np.ndarray
    bandwidth: np.ndarray

    @property
    def n_devices(self) -> int:
        return len(self.devices)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    @property
    def speeds(self) -> np.ndarray:
        return np.array([d.speed for d in self.devices], dtype=np.float64)

    @property
    def memory(self) -> np.ndarray:
        return np.array([d.memory_bytes for d in self.devices], dtype=np.float64)

    def index(self, device: str) -> int:
        names = self.names
        if device not in names:
            raise ConfigError("placement device", device, names, f"not a device of topology {self.name!r}")
        return names.index(device)

    def fastest(self) -> list[int]:
        """Device indices from fastest to slowest (ties by position)."""
        return sorted(range(self.n_devices), key=lambda d: (-self.devices[d].speed, d))

    @classmethod
    def from_dict(cls, data: Any, source: str = "topology") -> "Topology":
        if not isinstance(data, dict) or not isinstance(data.get("devices"), list) or not data["devices"]:
            raise DataError(f"{source}: a topology is an object with a non-empty 'devices' list")
        devices = []
        for i, raw in enumerate(data["devices"]):
            if not isinstance(raw, dict):
                raise DataError(f"{source}: device {i} must be an object")
            name = raw.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"devices[{i}].name", name, reason="a non-empty string")
            if name in [d.name for d in devices]:
                raise ConfigError(f"devices[{i}].name", name, reason="duplicate device name")
            kind = raw.get("kind", "gpu" if name.startswith(("gpu", "cuda")) else "cpu")
            if kind not in DEVICE_KINDS:
                raise ConfigError(f"devices[{i}].kind", kind, DEVICE_KINDS)
            speed, memory = raw.get("speed"), raw.get("memory_bytes")
            for field, value in (("speed", speed), ("memory_bytes", memory)):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value <= 0:
                    raise ConfigError(f"devices[{i}].{field}", value,
                                      reason=f"device {name!r} needs a positive, finite {field}")
            devices.append(Device(name, kind, float(speed), float(memory),
                                  str(raw.get("torch_device", "cpu" if kind == "cpu" else "cuda:0"))))
        n = len(devices)
        names = [d.name for d in devices]
        latency = np.full((n, n), np.nan)
        bandwidth = np.full((n, n), np.nan)
        default = data.get("default_link")
        for i, link in enumerate(data.get("links", [])):
            if not isinstance(link, dict):
                raise DataError(f"{source}: link {i} must be an object")
            a, b = link.get("from"), link.get("to")
            for end in (a, b):
                if end not in names:
                    raise ConfigError(f"links[{i}]", end, names, "a link must join two devices of the topology")
            lat, bw = _link_values(link, f"links[{i}]")
            for x, y in ((a, b), (b, a)):
                xi, yi = names.index(x), names.index(y)
                if (x, y) == (a, b) or np.isnan(latency[xi, yi]):
                    latency[xi, yi], bandwidth[xi, yi] = lat, bw
        if default is not None:
            lat, bw = _link_values(default, "default_link")
            unset = np.isnan(latency)
            latency[unset], bandwidth[unset] = lat, bw
        np.fill_diagonal(latency, 0.0)
        np.fill_diagonal(bandwidth, np.inf)
        if np.isnan(latency).any():
            i, j = map(int, np.argwhere(np.isnan(latency))[0])
            raise ConfigError("links", f"{names[i]} -> {names[j]}", reason="no link and no 'default_link'")
        return cls(str(data.get("name", source)), tuple(devices), latency, bandwidth)

    @classmethod
    def load(cls, path_or_name: str | os.PathLike) -> "Topology":
        """A topology file, or a built-in one by name (``4gpu-cpu``, ``1gpu-cpu``)."""
        key = str(path_or_name)
        path = TOPOLOGY_DIR / BUILTIN[key] if key in BUILTIN else Path(key)
        if not path.exists():
            raise ConfigError("topology", key, list(BUILTIN) + ["a JSON topology file"], "no such built-in or file")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (RecursionError, UnicodeDecodeError):
            raise DataError(f"topology file {path} is not UTF-8 JSON of a readable depth") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"topology file {path} does not parse as JSON: {exc.msg} at line {exc.lineno}") from exc
        return cls.from_dict(data, source=f"topology file {path}")


def _link_values(link: dict, field: str) -> tuple[float, float]:
    lat, bw = link.get("latency_s"), link.get("bandwidth_bytes_per_s")
    if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not math.isfinite(lat) or lat < 0:
        raise ConfigError(f"{field}.latency_s", lat, reason="a finite number of seconds >= 0")
    if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0:
        raise ConfigError(f"{field}.bandwidth_bytes_per_s", bw, reason="a positive number of bytes per second")
    return float(lat), float(bw)
