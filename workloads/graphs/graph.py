"""ComputationGraph: the operations of one training step, as columnar arrays, serialisable to JSON and back.

Operations are stored in a topological order (every input of operation ``i`` has an index below ``i``).
Each operation has a name, a kind (``parameter``, ``input`` or ``compute``), the aten target it runs, its
phase (``forward``, ``backward`` or ``input``), the bytes of its output, an estimate of its floating-point
work, a cost key (operation + input shapes: what profiled costs are cached by) and, once profiled, its
measured seconds on the reference device. Edges are the data dependencies (``inputs``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wield.errors import DataError
from wield.io import atomic_write_text

KINDS = ("parameter", "input", "compute")
PHASES = ("input", "forward", "backward")
FORMAT = "wield.computation_graph/1"


@dataclass
class ComputationGraph:
    """A training-step graph. ``inputs[i]`` lists the operation indices operation ``i`` reads."""

    name: str
    family: str
    params: dict[str, Any]
    op_names: list[str]
    kinds: list[str]
    targets: list[str]
    phases: list[str]
    inputs: list[list[int]]
    output_bytes: np.ndarray
    flops: np.ndarray
    cost_keys: list[str]
    seconds: np.ndarray | None = None
    _csr: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.op_names)
        for label, column in (("kinds", self.kinds), ("targets", self.targets), ("phases", self.phases),
                              ("inputs", self.inputs), ("output_bytes", self.output_bytes),
                              ("flops", self.flops), ("cost_keys", self.cost_keys)):
            if len(column) != n:
                raise DataError(f"graph {self.name!r}: column '{label}' has {len(column)} entries, "
                                f"'op_names' has {n}")
        if self.seconds is not None and len(self.seconds) != n:
            raise DataError(f"graph {self.name!r}: column 'seconds' has {len(self.seconds)} entries, expected {n}")
        self.output_bytes = np.asarray(self.output_bytes, dtype=np.float64)
        self.flops = np.asarray(self.flops, dtype=np.float64)
        if self.seconds is not None:
            self.seconds = np.asarray(self.seconds, dtype=np.float64)
        for i, (kind, phase) in enumerate(zip(self.kinds, self.phases)):
            if kind not in KINDS:
                raise DataError(f"graph {self.name!r}: operation {i} has kind {kind!r}; allowed: {', '.join(KINDS)}")
            if phase not in PHASES:
                raise DataError(f"graph {self.name!r}: operation {i} has phase {phase!r}; "
                                f"allowed: {', '.join(PHASES)}")
        for i, sources in enumerate(self.inputs):
            for j in sources:
                if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < i:
                    raise DataError(f"graph {self.name!r}: operation {i} ({self.op_names[i]}) reads {j!r}; "
                                    f"inputs must be indices of earlier operations (0..{i - 1})")

    # ------------------------------------------------------------------------------------- structure
    @property
    def n_ops(self) -> int:
        return len(self.op_names)

    @property
    def n_edges(self) -> int:
        return sum(len(s) for s in self.inputs)

    @property
    def param_bytes(self) -> float:
        return float(sum(b for b, k in zip(self.output_bytes, self.kinds) if k == "parameter"))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sources, destinations)`` of every data dependency, as int arrays."""
        src = np.fromiter((j for s in self.inputs for j in s), dtype=np.int64, count=self.n_edges)
        dst = np.fromiter((i for i, s in enumerate(self.inputs) for _ in s), dtype=np.int64, count=self.n_edges)
        return src, dst

    def consumers_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Consumers of every operation in CSR form: ``indices[indptr[u]:indptr[u + 1]]``."""
        if self._csr is None:
            src, dst = self.edges()
            order = np.argsort(src, kind="stable")
            counts = np.bincount(src, minlength=self.n_ops)
            indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            self._csr = (indptr, dst[order].astype(np.int64))
        return self._csr

    def fingerprint(self) -> str:
        """A stable hash of the graph's structure and sizes (not of profiled seconds)."""
        payload = json.dumps([self.family, self.params, self.targets, self.inputs,
                              self.output_bytes.tolist()], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def summary(self) -> str:
        phases = {p: self.phases.count(p) for p in PHASES}
        return (f"{self.name}: {self.n_ops} operations ({phases['forward']} forward, {phases['backward']} "
                f"backward), {self.n_edges} edges, parameters {self.param_bytes / 2**20:.1f} MiB")

    # ----------------------------------------------------------------------------------- serialising
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "name": self.name, "family": self.family, "params": self.params,
                "ops": {"name": self.op_names, "kind": self.kinds, "target": self.targets, "phase": self.phases,
                        "inputs": [list(map(int, s)) for s in self.inputs],
                        "output_bytes": self.output_bytes.tolist(), "flops": self.flops.tolist(),
                        "cost_key": self.cost_keys,
                        "seconds": None if self.seconds is None else self.seconds.tolist()}}

    @classmethod
    def from_dict(cls, data: Any, source: str = "graph") -> "ComputationGraph":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise DataError(f"{source}: not a computation graph (expected an object with \"format\": \"{FORMAT}\")")
        ops = data.get("ops")
        required = ("name", "kind", "target", "phase", "inputs", "output_bytes", "flops", "cost_key")
        if not isinstance(ops, dict) or any(k not in ops for k in required):
            missing = [k for k in required if not isinstance(ops, dict) or k not in ops]
            raise DataError(f"{source}: 'ops' must be an object with columns {', '.join(required)}; "
                            f"missing: {', '.join(missing)}")
        try:
            return cls(name=str(data.get("name", "graph")), family=str(data.get("family", "unknown")),
                       params=dict(data.get("params") or {}), op_names=list(ops["name"]),
                       kinds=list(ops["kind"]), targets=list(ops["target"]), phases=list(ops["phase"]),
                       inputs=[list(s) for s in ops["inputs"]], output_bytes=np.asarray(ops["output_bytes"], float),
                       flops=np.asarray(ops["flops"], float), cost_keys=list(ops["cost_key"]),
                       seconds=None if ops.get("seconds") is None else np.asarray(ops["seconds"], float))
        except (TypeError, ValueError) as exc:
            if isinstance(exc, DataError):
                raise DataError(f"{source}: {exc}") from exc
            raise DataError(f"{source}: malformed operation columns ({exc})") from exc

    def save(self, path: str | os.PathLike) -> Path:
        atomic_write_text(path, json.dumps(self.to_dict(), separators=(",", ":")))
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ComputationGraph":
        path = Path(path)
        if not path.exists():
            raise DataError(f"graph file {path} does not exist")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except RecursionError:
            raise DataError(f"graph file {path}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"graph file {path} does not parse as JSON: {exc.msg} at line {exc.lineno}, "
                            f"column {exc.colno}") from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"graph file {path} is not UTF-8 text ({exc.reason})") from exc
        return cls.from_dict(data, source=f"graph file {path}")
