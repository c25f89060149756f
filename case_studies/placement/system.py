"""The placement system under control: evaluates placements, charges graph evaluations, records them.

Every placer (learned or not) measures placements only through ``PlacementSystem.measure``, so they are
compared at the same budget of graph evaluations. The system keeps every measurement in order (invalid
ones as NaN with their reason counted), the best placement found, and derives the study's metrics: best
step time and improvement over the mean of the first 20 measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from case_studies.placement.simulator import SimulationResult, Simulator

FIRST_MEASUREMENTS = 20


@dataclass
class PlacementSystem:
    """A simulator with a record of what was measured on it."""

    simulator: Simulator
    measurements: list[float] = field(default_factory=list)
    invalid: int = 0
    best_time: float = float("inf")
    best_placement: np.ndarray | None = None
    last_reason: str = ""

    @property
    def graph(self):
        return self.simulator.graph

    @property
    def topology(self):
        return self.simulator.topology

    @property
    def evaluations(self) -> int:
        return len(self.measurements)

    @property
    def reference_time(self) -> float:
        """Scale for rewards, known without measuring: the sequential compute time on the fastest device."""
        return float(self.simulator.graph.seconds.sum() / self.simulator.topology.speeds.max())

    def measure(self, op_devices: np.ndarray) -> SimulationResult:
        result = self.simulator.evaluate(op_devices)
        if result.valid:
            self.measurements.append(result.step_time)
            if result.step_time < self.best_time:
                self.best_time = result.step_time
                self.best_placement = np.array(op_devices, dtype=np.int64)
        else:
            self.measurements.append(float("nan"))
            self.invalid += 1
            self.last_reason = result.reason
        return result

    def metrics(self) -> dict[str, float]:
        """Best step time (ms), the mean of the first 20 valid measurements, and the improvement over it."""
        values = np.array(self.measurements, dtype=float)
        first = values[:FIRST_MEASUREMENTS]
        first = first[np.isfinite(first)]
        initial = float(first.mean()) if first.size else float("nan")
        best = self.best_time if np.isfinite(self.best_time) else float("nan")
        return {"best_step_time_ms": best * 1e3, "initial_mean_step_time_ms": initial * 1e3,
                "improvement": float(1 - best / initial) if np.isfinite(best) and np.isfinite(initial) else 0.0,
                "evaluations": self.evaluations, "invalid_placements": self.invalid}
