"""Evaluation of index configurations with the study's metrics (docs/design.md section 5).

A configuration is built for real on the engine (exactly its indexes, created in canonical order, so the
planner's choice never depends on what was measured before) and every query of the test workload is
executed: work is the engine's deterministic count and the plan says which indexes each query used. Against
the no-index and full-index baselines this gives the relative mean and p99 latency (and work) improvement,
index size relative to the full index, indexes created, uses per index, unused indexes and their size.

**Latency is measured so that load cannot decide the objective** (``evaluate_methods``). Measured one
configuration after another, a burst of load on the machine lands on one configuration and not on the
other, and the improvement flips (seed 0 at the defaults: 60% idle, -22% at load 5.8, for the same set). So
the configurations compared (no index, the full index, every method's set) are built once, each on its own
in-memory copy of the database (``SQLiteEngine.memory_copy``; an engine without copies, or copies that
would not fit ``COPY_BUDGET_BYTES``, is switched between configurations on its one database instead, which
rebuilds indexes every round; rows given the same set, such as a greedy policy that created no index and
the no-index row, share one copy and one measurement; the full-index copy, and the copies of rows whose set
does not depend on the method (``shared``: the learners' random policy), are kept on disk for later trials
on the same workload: ``SQLiteEngine.kept_copy``). Each configuration's work and plans come from one
counted execution of every query (``IndexingSystem.execute``); latency is then measured in **rounds** of
bare timed executions (no plan asked for, no work counted: ``IndexingSystem.time_query``): in each round the
whole workload is executed under every configuration in turn (the order rotated by one each round), each query
``EXECUTIONS_PER_ROUND`` (3) times, the fastest counting: an execution is only ever slowed by load, never
sped up, so the fastest is the least disturbed one (measured at load 5 on 2 cores, a no-index query's
single executions spread over 5x their median, the fastest of 3 over 0.1x). A query's latency is the median
over rounds of those, and the improvement is computed from the per-query latencies as before (1 - mean /
mean of no index). Its 95% confidence interval is a percentile bootstrap over rounds (whole rounds resampled,
so a round's configurations stay together: ``BOOTSTRAP_RESAMPLES``, a fixed seed, so the interval is a
function of the measurements). Rounds continue after the minimum (``--repetitions``, at least
``MIN_ROUNDS``) until the objective (``decide``) can tell for every row (each row's interval for a clause lies
wholly on one side of its threshold, or a deterministic clause already decides it) or ``MAX_ROUNDS`` is
reached; an interval that still straddles a threshold then makes the objective ``inconclusive``
(wield/protocols/objective.py). The metrics carry ``mean_latency_improvement_ci`` and
``p99_latency_improvement_ci`` ([low, high]) and ``latency_rounds``; work and sizes are exact and have none.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.system import EngineCounters, IndexingSystem
from wield.workflows import trial_stopwatch

MIN_ROUNDS = 5  # rounds before an interval is trusted to decide (a bootstrap over fewer is too coarse)
MAX_ROUNDS = 40  # the cap: an objective still undecided after this many rounds is inconclusive
# A query's latency in a round: the fastest of this many timed executions (three passes over the workload).
# Load can only slow an execution down (preempted, its caches evicted), never speed it up.
EXECUTIONS_PER_ROUND = 3
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
COPY_BUDGET_BYTES = 4 << 30  # in-memory copies of the database (one per configuration) at most this large
NONE, FULL = "none", "full"


@dataclass
class ConfigurationMeasurement:
    """One configuration measured on a workload: per query the median latency over the rounds (``rounds``
    keeps every round's latencies, rounds by queries), the work and the plans' index uses."""

    indexes: list[IndexSpec]
    latencies_s: list[float]
    work: list[float]
    index_bytes: dict[str, int]
    uses: dict[str, int]
    rounds: list[list[float]] = field(default_factory=list)
    _resampled: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def total_bytes(self) -> int:
        return int(sum(self.index_bytes.values()))

    def resampled_medians(self) -> np.ndarray:
        """Every query's median latency per bootstrap resample of the rounds (computed once)."""
        if self._resampled is None:
            self._resampled = _resampled_medians(self.rounds)
        return self._resampled


def full_index_configuration(workload: Sequence) -> list[IndexSpec]:
    """The full-index baseline: one compound index per query (identical ones built once)."""
    return list(dict.fromkeys(full_index(query).canonical() for query in workload))


def measure_configuration(system: IndexingSystem, workload: Sequence, configuration: Sequence[IndexSpec],
                          repetitions: int = 5) -> ConfigurationMeasurement:
    """Build exactly ``configuration`` on the engine and execute every query ``repetitions`` times (one
    configuration alone; ``evaluate_methods`` measures configurations side by side)."""
    configuration = _canonical(configuration)
    system.configure(configuration)
    system.materialise_all()
    results = [system.execute(query, repetitions=repetitions) for query in workload]
    return _measurement(system, configuration, results, [[r.latency_s for r in results]])


def improvement(values: Sequence[float], baseline: Sequence[float], how: str) -> float:
    """1 - agg(values) / agg(baseline): 0.6 means 60% lower than the baseline."""
    agg = np.mean if how == "mean" else (lambda v: np.percentile(v, 99))
    base = float(agg(baseline))
    return float(1.0 - float(agg(values)) / base) if base > 0 else 0.0


def improvement_interval(rounds: Sequence[Sequence[float]], baseline_rounds: Sequence[Sequence[float]], how: str,
                         confidence: float = CONFIDENCE) -> list[float]:
    """The percentile-bootstrap interval of ``improvement`` of per-query medians over rounds (rows: rounds,
    columns: queries): rounds resampled with replacement, the same rounds for the configuration and its
    baseline (they were measured together). [value, value] with a single round."""
    return _interval(_resampled_medians(rounds), _resampled_medians(baseline_rounds), how, confidence)


def _resampled_medians(rounds: Sequence[Sequence[float]]) -> np.ndarray:
    """Per bootstrap resample of the rounds (``BOOTSTRAP_RESAMPLES``, drawn with ``BOOTSTRAP_SEED``, so the
    same resamples for every configuration measured in as many rounds), every query's median latency."""
    values = np.asarray(rounds, dtype=float)
    if len(values) < 2:
        return np.median(values, axis=0, keepdims=True)
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return np.median(values[picks], axis=1)


def _interval(ours: np.ndarray, theirs: np.ndarray, how: str, confidence: float = CONFIDENCE) -> list[float]:
    """The ``confidence`` percentile interval of the improvement over resamples (rows of ``ours`` and
    ``theirs``: resamples by queries, paired)."""
    count = min(len(ours), len(theirs))
    ours, theirs = ours[:count], theirs[:count]
    if how == "mean":
        ours_agg, theirs_agg = ours.mean(axis=1), theirs.mean(axis=1)
    else:
        ours_agg, theirs_agg = np.percentile(ours, 99, axis=1), np.percentile(theirs, 99, axis=1)
    safe = np.where(theirs_agg > 0, theirs_agg, 1.0)
    found = np.where(theirs_agg > 0, 1.0 - ours_agg / safe, 0.0)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(found, [tail, 100.0 - tail])
    return [float(low), float(high)]


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
    # 95% intervals of the latency improvements (bootstrap over rounds) and the rounds measured
    mean_latency_improvement_ci: list[float] = field(default_factory=list)
    p99_latency_improvement_ci: list[float] = field(default_factory=list)
    latency_rounds: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def study_metrics(method: str, measured: ConfigurationMeasurement, no_index: ConfigurationMeasurement,
                  full: ConfigurationMeasurement, intervals: bool = True) -> StudyMetrics:
    """The metrics of ``measured`` against the baselines; with ``intervals`` (and at least two rounds) the
    latency improvements' bootstrap intervals over the rounds both were measured in."""
    created = len(measured.indexes)
    unused = [name for name, count in measured.uses.items() if count == 0]
    rounds = min(len(measured.rounds), len(no_index.rounds))
    resampled = (measured.resampled_medians(), no_index.resampled_medians()) if intervals and rounds > 1 else None
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
        mean_latency_improvement_ci=_interval(*resampled, "mean") if resampled else [],
        p99_latency_improvement_ci=_interval(*resampled, "p99") if resampled else [],
        latency_rounds=rounds,
    )


def evaluate_methods(system: IndexingSystem, workload: Sequence, configurations: Mapping[str, Sequence[IndexSpec]],
                     repetitions: int = 5, decide: Callable[[Mapping[str, Any]], bool] | None = None,
                     max_rounds: int = MAX_ROUNDS, shared: Sequence[str] = ()) -> dict[str, StudyMetrics]:
    """The no-index and full-index baselines and every named configuration measured side by side in rounds
    on ``workload`` (see the module docstring): at least ``max(repetitions, MIN_ROUNDS)`` rounds, then more
    until ``decide(metrics)`` holds for every row's metrics (e.g. the objective is not inconclusive), at
    most ``max_rounds``. The copies of the full index and of the rows named in ``shared`` (sets other
    methods' trials on the same workload measure too) are kept for those trials."""
    named = {NONE: [], FULL: full_index_configuration(workload), **configurations}
    measured = measure_side_by_side(system, workload, named, repetitions, _every_row(decide), max_rounds,
                                    kept=(FULL, *shared))
    results = {name: study_metrics(name, measurement, measured[NONE], measured[FULL])
               for name, measurement in measured.items()}
    return {name: results[name] for name in (NONE, FULL, *configurations)}


def _every_row(decide: Callable[[Mapping[str, Any]], bool] | None):
    """A stopping rule over measurements: ``decide`` holds for the metrics of every row."""
    if decide is None:
        return None

    def decided(measured: dict[str, ConfigurationMeasurement]) -> bool:
        return all(decide(study_metrics(name, m, measured[NONE], measured[FULL]).as_dict())
                   for name, m in measured.items())
    return decided


def measure_side_by_side(system: IndexingSystem, workload: Sequence, configurations: Mapping[str, Sequence[IndexSpec]],
                         repetitions: int = 5,
                         decided: Callable[[dict[str, ConfigurationMeasurement]], bool] | None = None,
                         max_rounds: int = MAX_ROUNDS, kept: Sequence[str] = ()) -> dict[str, ConfigurationMeasurement]:
    """Every configuration built once, then measured in interleaved rounds: each round executes every query
    once under every configuration in turn (the order rotated each round); names given the same configuration
    (after ``_canonical``) share one copy and one measurement. Runs ``max(repetitions, MIN_ROUNDS)`` rounds,
    then more until ``decided(measurements)`` (if given) or ``max_rounds``. The copies of the configurations
    named in ``kept`` are loaded where an earlier trial kept them, else built and kept
    (``SQLiteEngine.kept_copy``). Engine time, executions and builds are charged to ``system``'s counters."""
    canonical = {name: _canonical(c) for name, c in configurations.items()}
    # names with the same configuration (e.g. a learner's greedy row that created no index, and no index)
    # share one copy and one measurement: the first name of each configuration stands for the others
    standing: dict[tuple[IndexSpec, ...], str] = {}
    stands_for = {name: standing.setdefault(tuple(c), name) for name, c in canonical.items()}
    distinct = {name: canonical[name] for name in standing.values()}
    kept = [stands_for[name] for name in kept if name in stands_for]  # a kept row may stand for another
    least = max(int(repetitions), MIN_ROUNDS)
    most = max(int(max_rounds), least)
    phase = trial_stopwatch().phase  # building the copies and their indexes, then one block per round
    with phase("evaluation: building"):
        stands = _stands(system, workload, distinct, kept)
    names = list(distinct)
    latencies: dict[str, list[list[float]]] = {name: [] for name in names}
    first: dict[str, list] = {}
    try:
        with phase("evaluation: work"):  # on its own copy a configuration's work and plans come first
            first.update({name: _work(stand.system, workload) for name, stand in stands.items() if stand.own})
        for number in range(most):
            with phase("evaluation: latency rounds"):
                _round(workload, number, names, stands, canonical, latencies, first)
            if number + 1 >= least:
                with phase("evaluation: deciding"):
                    once = {name: _measurement(system, distinct[name], first[name], latencies[name])
                            for name in names}
                    measured = {name: once[stands_for[name]] for name in canonical}
                    if decided is None or decided(measured):
                        break
    finally:
        for stand in stands.values():
            stand.close(system)
    return measured


def _work(system: IndexingSystem, workload: Sequence) -> list:
    """Every query of ``workload`` executed once on ``system`` as it stands, its work counted and its plan read
    (``IndexingSystem.execute``): a configuration's deterministic figures."""
    return [system.execute(query, repetitions=0) for query in workload]


def _round(workload: Sequence, number: int, names: list[str], stands: dict[str, "_Stand"],
           configurations: dict[str, list[IndexSpec]], latencies: dict[str, list[list[float]]],
           first: dict[str, list]) -> None:
    """Round ``number``: the workload timed under every configuration in turn (the order rotated by
    ``number``): ``EXECUTIONS_PER_ROUND`` passes over its queries, each query's fastest kept in
    ``latencies``. A configuration whose work and plans ``first`` does not hold yet (one on the shared system)
    has them measured when it is first entered."""
    for offset in range(len(names)):
        name = names[(number + offset) % len(names)]
        stand = stands[name]
        stand.enter(configurations[name])
        if name not in first:
            first[name] = _work(stand.system, workload)
        fastest = [math.inf] * len(workload)
        for _ in range(EXECUTIONS_PER_ROUND):
            fastest = [min(seconds, stand.system.time_query(query)[0]) for seconds, query in zip(fastest, workload)]
        latencies[name].append(fastest)


class _Stand:
    """Where one configuration is measured: ``own`` a system on its own copy of the database, built once;
    otherwise the shared system, switched to the configuration every time it is entered."""

    def __init__(self, system: IndexingSystem, own: bool) -> None:
        self.system = system
        self.own = own
        self.built = False

    def enter(self, configuration: list[IndexSpec]) -> None:
        if self.own and self.built:
            return
        self.system.configure(configuration)
        self.system.materialise_all()
        self.built = True

    def close(self, charged: IndexingSystem) -> None:
        """Charge a copy's engine time, executions and builds to ``charged`` and release the copy."""
        if not self.own:
            return
        for counter in fields(EngineCounters):
            name = counter.name
            setattr(charged.counters, name, getattr(charged.counters, name) + getattr(self.system.counters, name))
        self.system.close()


def _stands(system: IndexingSystem, workload: Sequence, configurations: dict[str, list[IndexSpec]],
            kept: Sequence[str] = ()) -> dict[str, _Stand]:
    """A copy of the database per configuration, its indexes built, where the engine makes in-memory copies
    and they fit ``COPY_BUDGET_BYTES``; otherwise every configuration on the shared system. The copies of the
    configurations named in ``kept`` are loaded as an earlier trial kept them where the engine keeps copies,
    else built and kept."""
    copy = getattr(system.engine, "memory_copy", None)
    shared = {name: _Stand(system, own=False) for name in configurations}
    if copy is None:
        return shared
    needed = sum(system.engine.collection_size() + sum(system.index_size(spec) for spec in configuration)
                 for configuration in configurations.values())
    if needed > COPY_BUDGET_BYTES:
        return shared
    system.configure([])
    system.materialise_all()  # the copies start from the data without secondary indexes ...
    compact = getattr(system.engine, "compact", None)
    if compact is not None:
        compact()  # ... and without the pages the dropped ones left free
    stands: dict[str, _Stand] = {}
    try:
        for name, configuration in configurations.items():  # each copy's indexes built once, before the rounds
            loaded = _kept_copy(system, configuration) if name in kept else None
            stands[name] = _Stand(IndexingSystem(loaded or copy(), metric="work", cost_cache=False), own=True)
            stands[name].enter(configuration)  # nothing to build on a loaded copy
            if loaded is not None:
                system.counters.copies_loaded += 1
            elif name in kept and hasattr(system.engine, "keep_copy"):
                system.engine.keep_copy(stands[name].system.engine, configuration)
    except BaseException:
        for stand in stands.values():
            stand.close(system)
        raise
    return stands


def _kept_copy(system: IndexingSystem, configuration: list[IndexSpec]):
    """The engine's kept copy of its base database with ``configuration`` built, or None (none kept, or an
    engine that keeps none)."""
    kept_copy = getattr(system.engine, "kept_copy", None)
    return kept_copy(configuration) if kept_copy is not None else None


def _canonical(configuration: Sequence[IndexSpec]) -> list[IndexSpec]:
    return list(dict.fromkeys(spec.canonical() for spec in configuration))


def _measurement(system: IndexingSystem, configuration: list[IndexSpec], results: Sequence,
                 rounds: list[list[float]]) -> ConfigurationMeasurement:
    """A configuration's measurement from its first round's results (work, plans) and every round's
    latencies; sizes from ``system`` (exact, the same on every copy)."""
    names = {spec.name: spec for spec in configuration}
    uses = {str(spec): 0 for spec in configuration}
    for result in results:
        for name in result.indexes_used:
            if name in names:
                uses[str(names[name])] += 1
    sizes = {str(spec): system.index_size(spec) for spec in configuration}
    latencies = [float(v) for v in np.median(np.asarray(rounds, dtype=float), axis=0)]
    return ConfigurationMeasurement(configuration, latencies, [r.work for r in results], sizes, uses,
                                    [list(r) for r in rounds])
