"""Evaluation of index configurations with the study's metrics (docs/design.md section 5).

A configuration is built for real on the engine (exactly its indexes, created in canonical order, so the
planner's choice never depends on what was measured before) and every query of the test workload is
executed with repetitions: latency is the median of the repetitions, work is the engine's deterministic
count, and the plan says which indexes each query used. Against the no-index and full-index baselines this gives the
relative mean and p99 latency (and work) improvement, index size relative to the full index, indexes
created, uses per index, unused indexes and their size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.system import IndexingSystem


@dataclass
class ConfigurationMeasurement:
    """One configuration measured on a workload."""

    indexes: list[IndexSpec]
    latencies_s: list[float]
    work: list[float]
    index_bytes: dict[str, int]
    uses: dict[str, int]

    @property
    def total_bytes(self) -> int:
        return int(sum(self.index_bytes.values()))


def full_index_configuration(workload: Sequence) -> list[IndexSpec]:
    """The full-index baseline: one compound index per query (identical ones built once)."""
    return list(dict.fromkeys(full_index(query).canonical() for query in workload))


def measure_configuration(system: IndexingSystem, workload: Sequence, configuration: Sequence[IndexSpec],
                          repetitions: int = 5) -> ConfigurationMeasurement:
    """Build exactly ``configuration`` on the engine and execute every query ``repetitions`` times."""
    configuration = list(dict.fromkeys(spec.canonical() for spec in configuration))
    system.configure(configuration)
    system.materialise_all()
    names = {spec.name: spec for spec in configuration}
    uses = {str(spec): 0 for spec in configuration}
    latencies, work = [], []
    for query in workload:
        result = system.execute(query, repetitions=repetitions)
        latencies.append(result.latency_s)
        work.append(result.work)
        for name in result.indexes_used:
            if name in names:
                uses[str(names[name])] += 1
    sizes = {str(spec): system.index_size(spec) for spec in configuration}
    return ConfigurationMeasurement(configuration, latencies, work, sizes, uses)


def improvement(values: Sequence[float], baseline: Sequence[float], how: str) -> float:
    """1 - agg(values) / agg(baseline): 0.6 means 60% lower than the baseline."""
    agg = np.mean if how == "mean" else (lambda v: np.percentile(v, 99))
    base = float(agg(baseline))
    return float(1.0 - float(agg(values)) / base) if base > 0 else 0.0


@dataclass
class StudyMetrics:
    """The study's evaluation metrics for one method on one workload."""

    method: str
    mean_latency_improvement: float
    p99_latency_improvement: float
    mean_work_improvement: float
    p99_work_improvement: float
    relative_index_size: float
    index_bytes: int
    indexes_created: int
    uses_per_index: float
    unused_indexes: int
    unused_index_bytes: int
    mean_latency_ms: float
    indexes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def study_metrics(method: str, measured: ConfigurationMeasurement, no_index: ConfigurationMeasurement,
                  full: ConfigurationMeasurement) -> StudyMetrics:
    created = len(measured.indexes)
    unused = [name for name, count in measured.uses.items() if count == 0]
    return StudyMetrics(
        method=method,
        mean_latency_improvement=improvement(measured.latencies_s, no_index.latencies_s, "mean"),
        p99_latency_improvement=improvement(measured.latencies_s, no_index.latencies_s, "p99"),
        mean_work_improvement=improvement(measured.work, no_index.work, "mean"),
        p99_work_improvement=improvement(measured.work, no_index.work, "p99"),
        relative_index_size=measured.total_bytes / full.total_bytes if full.total_bytes else 0.0,
        index_bytes=measured.total_bytes,
        indexes_created=created,
        uses_per_index=float(sum(measured.uses.values()) / created) if created else 0.0,
        unused_indexes=len(unused),
        unused_index_bytes=int(sum(measured.index_bytes[name] for name in unused)),
        mean_latency_ms=float(np.mean(measured.latencies_s) * 1000.0),
        indexes=[str(spec) for spec in measured.indexes],
    )


def evaluate_methods(system: IndexingSystem, workload: Sequence, configurations: dict[str, Sequence[IndexSpec]],
                     repetitions: int = 5) -> dict[str, StudyMetrics]:
    """Measure the no-index and full-index baselines and every named configuration on ``workload``."""
    no_index = measure_configuration(system, workload, [], repetitions)
    full = measure_configuration(system, workload, full_index_configuration(workload), repetitions)
    results = {"none": study_metrics("none", no_index, no_index, full),
               "full": study_metrics("full", full, no_index, full)}
    for method, configuration in configurations.items():
        results[method] = study_metrics(method, measure_configuration(system, workload, configuration,
                                                                      repetitions), no_index, full)
    return results
