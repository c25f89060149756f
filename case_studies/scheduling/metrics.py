"""Serving metrics of a simulated run: SLO satisfaction, goodput vs throughput, batch sizes, GPU utilisation.

Every request ends in one of three ways: completed on time (meets its SLO), completed late, or timed out
(dropped from the queue). Definitions, over the simulated time elapsed so far (``elapsed_ms``):

- ``slo_satisfaction``: on-time requests / requests answered (on time + late + timed out), in percent;
- ``throughput_rps``: completed requests (on time or late) per simulated second; ``goodput_rps``: on-time
  requests per simulated second;
- ``mean_batch_size``: dispatched requests / dispatched batches;
- ``gpu_utilisation``: GPU-busy time of completed batches / (GPUs x elapsed time), in [0, 1].

``time_series`` gives the same quantities per bin (1 s by default), by the time each thing happened.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from case_studies.scheduling.state import (B_ARRIVED, B_BATCHES, B_COMPLETED, B_DISPATCHED, B_ON_TIME, B_TIMED_OUT,
                                           BATCHES, C_ARRIVED, C_BATCHES, C_BATCHES_BY_SIZE, C_BUSY_MS,
                                           C_DISPATCHED, C_LATE, C_ON_TIME, C_TIMED_OUT, SF_BIN_MS, SimState)


@dataclass(frozen=True)
class ServingMetrics:
    elapsed_ms: float
    arrived: int
    on_time: int
    late: int
    timed_out: int
    pending: int
    in_flight: int
    slo_satisfaction: float
    throughput_rps: float
    goodput_rps: float
    mean_batch_size: float
    gpu_utilisation: float
    batches_by_size: dict[int, int]

    @property
    def answered(self) -> int:
        return self.on_time + self.late + self.timed_out

    def as_dict(self) -> dict:
        out = asdict(self)
        out["batches_by_size"] = {str(k): v for k, v in self.batches_by_size.items()}
        return out

    def line(self) -> str:
        """One human-readable line."""
        return (f"SLO met {self.slo_satisfaction:6.2f}%  goodput {self.goodput_rps:8.1f} r/s  throughput "
                f"{self.throughput_rps:8.1f} r/s  timed out {self.timed_out}  late {self.late}  mean batch "
                f"{self.mean_batch_size:5.2f}  GPU busy {100 * self.gpu_utilisation:5.1f}%")


def summarise(state: SimState, n_gpus: int, now: float) -> ServingMetrics:
    """Metrics of the run recorded in ``state`` up to the simulated time ``now`` (ms)."""
    c = state.counters
    on_time, late, timed_out = int(c[C_ON_TIME]), int(c[C_LATE]), int(c[C_TIMED_OUT])
    arrived, dispatched, batches = int(c[C_ARRIVED]), int(c[C_DISPATCHED]), int(c[C_BATCHES])
    answered = on_time + late + timed_out
    seconds = now / 1000.0
    return ServingMetrics(
        elapsed_ms=float(now), arrived=arrived, on_time=on_time, late=late, timed_out=timed_out,
        pending=arrived - dispatched - timed_out, in_flight=dispatched - on_time - late,
        slo_satisfaction=100.0 * on_time / answered if answered else 100.0,
        throughput_rps=(on_time + late) / seconds if seconds > 0 else 0.0,
        goodput_rps=on_time / seconds if seconds > 0 else 0.0,
        mean_batch_size=dispatched / batches if batches else 0.0,
        gpu_utilisation=float(c[C_BUSY_MS]) / (n_gpus * now) if now > 0 else 0.0,
        batches_by_size={int(b): int(c[C_BATCHES_BY_SIZE + i]) for i, b in enumerate(BATCHES)})


def time_series(state: SimState, now: float) -> dict[str, np.ndarray]:
    """Per bin up to ``now``: start time (s), arrivals, throughput and goodput (r/s), timeouts per second,
    mean batch size of the batches dispatched in the bin (0 if none)."""
    bin_ms = float(state.scal_f[SF_BIN_MS])
    n = min(int(np.ceil(now / bin_ms)) if now > 0 else 0, state.bins.shape[0])
    bins = state.bins[:n]
    per_second = 1000.0 / bin_ms
    batches = bins[:, B_BATCHES]
    return {"start_s": np.arange(n) * bin_ms / 1000.0,
            "arrival_rps": bins[:, B_ARRIVED] * per_second,
            "throughput_rps": bins[:, B_COMPLETED] * per_second,
            "goodput_rps": bins[:, B_ON_TIME] * per_second,
            "timeouts_per_s": bins[:, B_TIMED_OUT] * per_second,
            "mean_batch_size": np.divide(bins[:, B_DISPATCHED], batches, out=np.zeros(n), where=batches > 0)}
