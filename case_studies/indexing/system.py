"""IndexingSystem: the system adapter of the indexing task, with the study's incremental, cached reward.

The adapter keeps the *logical* index configuration (the indexes the agent has built in this episode, or
the index set an optimiser proposes) and measures a workload under it: each query's cost and the bytes of
every index. Every figure it returns was measured on the engine; what it asks of the engine is kept to the
minimum (docs/design.md section 9):

1. **Relevant indexes.** A query's plan can only change with the indexes that share a field with it, so a
   cost is cached by (query, relevant indexes): after a configuration change only the queries touching a
   changed field can miss. An optimiser's whole index set is thereby evaluated incrementally, query by
   query, from cached costs.
2. **Plans** (engines with a what-if planner: SQLite). A miss is planned first, without building anything
   (``engines/sqlite_whatif.py``), and costs are cached by (query, program): a change that leaves the
   query's program as it was needs no measurement. A new program is executed exactly on the real database:
   its one index forced with ``INDEXED BY`` (``NOT INDEXED`` for none), or, for a program that opens several
   indexes (an OR served by one index per branch), with exactly those indexes present among the query's
   relevant ones. The executed program must be the planned one; if it is not, the query is measured the
   slow way (its relevant indexes created in canonical order, the planner's free choice) and the event is
   counted (``plan_fallbacks``; ``planner_disagreements`` if even that differs). Under the work metric a
   program that visits whole ranges and equals one measured before up to the unused trailing keys of its
   index does the same work (``engines/sqlite_equivalence.py``): it is answered from that measurement
   (``equivalent_hits``), or measured once on the index of its used leading keys, shared by all.
   Under the work metric a forced program whose index is not built yet, and an OR's program over one
   index per branch, are executed on a *slice* of the table instead (``engines/sqlite_slice.py``: the rows
   the program's seeks can reach, and for a skip-scan a few rows of every group of the keys it steps over,
   with its indexes built on those rows only), where they count the same steps (``slice_runs``); no real
   index is built for them, nor dropped to steer the planner. An equivalence class whose representative
   runs another program is measured on the planned program itself, a member of the class too.
3. **Indexes are built once and kept.** An index is built when its size is first needed (its statistics are
   then read for the planner), unless the engine computes both exactly without building
   (``index_geometry``, SQLite: ``engines/sqlite_index_size.py``; checked against builds, ``sizes_computed``
   and ``size_checks``: every computed index that is built anyway, and at least one in ``SIZE_CHECK_EVERY``
   built for the check), and stays while the indexes kept fit ``index_budget_bytes`` (1 GiB by
   default, the least recently used dropped first); an index dropped and needed again is rebuilt
   (``index_rebuilds``; a larger budget did not pay, docs/design.md section 9). Moving between
   configurations costs nothing on the engine: with forced plans the other indexes present do not change
   what is measured.
4. **A measurement store** (``measurement_store.py``) keeps deterministic measurements of the collection
   across runs: index sizes and statistics always, work by (query, program) under the work metric.
5. **Order independence.** Where the planner chooses freely (evaluation, the slow path, engines without a
   what-if planner, multi-index programs), indexes are created in canonical (sorted) order, so a plan
   depends only on the configuration, never on the configurations measured before it (SQLite breaks ties
   between equally good indexes by creation order).

Latency (``metric="latency"``) is noisy, so a cached latency is not kept as first measured: each time a
configuration revisits a cached (query, plan), it is executed again until it has ``latency_samples``
measurements, and its cost is the median of those. Work is exact and measured once.

With ``cost_cache=False`` the adapter is the slow path instead: before every measurement the engine's
indexes are made exactly the configuration, created in canonical order, and every query is executed with
the planner's free choice, with no cache. Benchmarks and tests compare the fast path with it.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any, Iterator, Literal, Sequence

import numpy as np

from case_studies.indexing.engines.contract import METRICS, IndexingEngine, QueryResult
from case_studies.indexing.engines.sqlite_equivalence import equivalent_program, visits_whole_ranges
from case_studies.indexing.engines.sqlite_whatif import opened_indexes
from case_studies.indexing.engines.sqlite_whatif import signature as signature_of
from case_studies.indexing.index_spec import IndexSpec, canonical_switch, full_index
from wield.errors import ConfigError, SystemFailure
from wield.systems import SystemAdapter

AGGREGATES = ("mean", "p99")
DEFAULT_INDEX_BUDGET_BYTES = 1 << 30
DEFAULT_LATENCY_SAMPLES = 3
SIZE_CHECKS = 3  # computed index sizes built as well before the model is trusted ...
SIZE_CHECK_EVERY = 50  # ... and then at least one in this many (a computed index built anyway counts as one)
WORK_CHECKS = 5  # counted programs measured as well before the work model is trusted ...
WORK_CHECK_EVERY = 25  # ... and then one in this many, taken on a program that is cheap to measure (a check
# that would build an index on the whole table waits for the next counted program a slice or a built index serves)
# why an index is built on the whole table (counted as builds_for_<purpose>)
BuildPurpose = Literal["sizes", "programs", "representatives", "configurations"]


def aggregate_costs(costs: Sequence[float], how: str) -> float:
    """The workload's cost from its queries' ``costs``: their ``mean`` or 99th percentile (``p99``)."""
    if how == "mean":
        values = np.asarray(costs)
        if values.dtype == np.float64 and values.ndim == 1 and values.size:
            return float(np.add.reduce(values) / values.size)  # np.mean's arithmetic, without its overhead
        return float(np.mean(values))
    if how == "p99":
        return float(np.percentile(costs, 99))
    raise ConfigError("aggregate", how, AGGREGATES)


@dataclass
class EngineCounters:
    """What the adapter asked of the engine, what it answered without asking, and the time it took."""

    query_executions: int = 0
    cache_hits: int = 0  # answers without an execution: relevant + plan + equivalent + store hits
    relevant_hits: int = 0  # (query, relevant indexes) measured before
    plan_hits: int = 0  # a new configuration, but a program measured before
    equivalent_hits: int = 0  # a program doing the same work as one measured before (sqlite_equivalence.py)
    store_hits: int = 0  # a program measured in an earlier run on the same collection
    representative_runs: int = 0  # programs measured on an index of only the keys they use
    row_counts: int = 0  # queries with a LIMIT whose matching rows were counted
    plans: int = 0  # queries planned by the what-if planner
    plan_fallbacks: int = 0  # the executed program was not the planned one: measured the slow way
    planner_disagreements: int = 0  # ... and the slow way ran yet another program
    index_builds: int = 0  # on the whole table, of which:
    builds_for_sizes: int = 0  # an index's size and statistics (no model, or a computed one checked)
    builds_for_programs: int = 0  # a program executed on its index (no count, slice or store answered)
    builds_for_representatives: int = 0  # an equivalence class measured on its representative
    builds_for_configurations: int = 0  # a configuration made exact (the slow path, fallbacks, evaluation)
    slice_runs: int = 0  # programs measured on a slice of the table instead of on a built index
    slices_made: int = 0  # slices made (per and-query, sought key and keys a skip-scan steps over; per or-query)
    slice_group_scans: int = 0  # skip-scan slices' group rows found on the engine (not in the store)
    slice_index_builds: int = 0  # indexes built on slices
    index_rebuilds: int = 0  # builds of an index this adapter had built and dropped before
    index_drops: int = 0
    size_measurements: int = 0
    sizes_from_store: int = 0
    sizes_computed: int = 0  # sizes and statistics from the engine's exact model, no index built
    size_checks: int = 0  # computed sizes compared with a build (the first SIZE_CHECKS, then >= 1 in SIZE_CHECK_EVERY)
    works_declined: int = 0  # new programs over indexes the model does not interpret (measured instead)
    works_counted: int = 0  # programs' work counted by the engine's model, not executed (sqlite_work_model.py)
    work_checks: int = 0  # counted works compared with an execution (the first WORK_CHECKS, then 1 in WORK_CHECK_EVERY)
    work_checks_deferred: int = 0  # counted programs a due check passed over (only a build could measure them)
    advice_reused: int = 0  # the index advisor's advice on a workload read from the store (advisor.shared_advice)
    copies_loaded: int = 0  # evaluation's copies (full index, random policy) loaded as an earlier trial kept them
    engine_seconds: float = 0.0  # everything inside the engine, of which:
    execution_seconds: float = 0.0  # executing queries
    build_seconds: float = 0.0  # building indexes
    size_model_seconds: float = 0.0  # computing sizes and statistics without building (sqlite_index_size.py)
    work_model_seconds: float = 0.0  # counting programs' work without executing them (sqlite_work_model.py)
    slice_seconds: float = 0.0  # making slices, building their indexes and measuring on them
    planner_seconds: float = 0.0  # what-if planning (an in-memory database; not in engine_seconds)

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


@dataclass
class CostEntry:
    """A measured query: its first result, every latency sample, and how to execute it again."""

    result: QueryResult
    force: str | None  # SQLite's INDEXED BY name, "" for NOT INDEXED, None for the planner's choice
    indexes: tuple[IndexSpec, ...]  # what must exist to execute it again
    latencies: list[float] = field(default_factory=list)


class IndexingSystem(SystemAdapter):
    """Logical index configuration + cost cache over one ``IndexingEngine``."""

    name = "indexing"

    def __init__(self, engine: IndexingEngine, metric: str = "work", aggregate: str = "mean",
                 repetitions: int = 3, cost_cache: bool = True, store=None,
                 index_budget_bytes: int = DEFAULT_INDEX_BUDGET_BYTES,
                 latency_samples: int = DEFAULT_LATENCY_SAMPLES, slices: bool = True,
                 computed_sizes: bool = True, counted_work: bool = True) -> None:
        if metric not in METRICS:
            raise ConfigError("metric", metric, METRICS)
        if aggregate not in AGGREGATES:
            raise ConfigError("aggregate", aggregate, AGGREGATES)
        if repetitions < 0:
            raise ConfigError("repetitions", repetitions, reason="must be >= 0")
        if latency_samples < 1:
            raise ConfigError("latency_samples", latency_samples, reason="must be >= 1")
        self.engine = engine
        self.metric = metric
        self.aggregate = aggregate
        # Under the work metric one execution gives the exact count; latency needs repetitions.
        self.repetitions = repetitions if metric == "latency" else 0
        self.cost_cache = cost_cache
        self.store = store if cost_cache else None
        self.index_budget_bytes = int(index_budget_bytes)
        self.latency_samples = int(latency_samples)
        self.counters = EngineCounters()
        self._logical: list[IndexSpec] = []
        self._physical: list[IndexSpec] = [s.canonical() for s in engine.list_indexes()]  # creation order
        self._last_use: dict[IndexSpec, int] = {}
        self._dropped: set[IndexSpec] = set()
        self._clock = 0
        self._by_relevant: dict[tuple, CostEntry] = {}
        self._by_program: dict[tuple, CostEntry] = {}
        self._sizes: dict[IndexSpec, int] = {}
        self._statistics: dict[IndexSpec, str] = {}
        self._references: dict[tuple, dict[str, float]] = {}
        self._keys: dict[Any, str] = {}
        self._matching_rows: dict[str, int | None] = {}
        whatif = getattr(engine, "whatif_planner", None)
        self._planner = whatif() if cost_cache and whatif is not None else None
        table_slices = getattr(engine, "table_slices", None)
        self._slices = (table_slices(self.store) if slices and self._planner is not None and metric == "work"
                        and table_slices is not None else None)
        geometry = getattr(engine, "index_geometry", None)
        self._geometry = (geometry if cost_cache and computed_sizes and os.environ.get("WIELD_COMPUTED_SIZES") != "0"
                          else None)
        self._unchecked: dict[IndexSpec, Any] = {}  # computed sizes (their geometry) not yet compared with a build
        self._computed_from_store = 0  # sizes a model computed in an earlier run, read from the store
        program_work = getattr(engine, "program_work", None)
        self._work_model = (program_work if counted_work and self._planner is not None and metric == "work"
                            and os.environ.get("WIELD_COUNTED_WORK") != "0" else None)
        self._created_in_episode = 0

    # -- SystemAdapter ---------------------------------------------------------------------------
    def reset(self) -> None:
        self._logical = []
        self._created_in_episode = 0

    def state(self) -> tuple[IndexSpec, ...]:
        return tuple(self._logical)

    def apply(self, action: IndexSpec | None) -> None:
        if action is None:
            return
        spec = action.canonical()
        if spec in self._logical:
            return
        self._logical.append(spec)
        self._created_in_episode += 1

    def measure(self, workload: Sequence[Any]) -> dict[str, Any]:
        if not self.cost_cache:
            self._switch_exact(self._logical)
        index_bytes = sum(self.index_size(spec) for spec in self._logical)
        results = [self.query_result(query) for query in workload]
        costs = [self._cost(result) for result in results]
        metrics = {
            "cost": aggregate_costs(costs, self.aggregate),
            "costs": costs,
            "index_bytes": index_bytes,
            "n_indexes": len(self._logical),
            **self.references(workload),
            "metric": self.metric,
        }
        self._evict(protect=set(self._logical))
        return metrics

    def close(self) -> None:
        if self._planner is not None:
            self._planner.close()
        if self._slices is not None:
            self._slices.close()
        if self.store is not None:
            self.store.close()
        self.engine.close()

    @property
    def stats(self) -> dict[str, float]:
        return self.counters.as_dict()

    # -- measurements ----------------------------------------------------------------------------
    def relevant(self, query, configuration: Sequence[IndexSpec]) -> frozenset[IndexSpec]:
        """The indexes of ``configuration`` that can change how ``query`` runs: those sharing a field."""
        fields = set(query.attributes())
        return frozenset(spec for spec in configuration if fields.intersection(spec.fields))

    def query_result(self, query, configuration: Sequence[IndexSpec] | None = None) -> QueryResult:
        """The query's measured result under ``configuration`` (default: the current logical one)."""
        configuration = (tuple(self._logical) if configuration is None
                         else tuple(dict.fromkeys(s.canonical() for s in configuration)))
        if not self.cost_cache:
            self._switch_exact(configuration)
            return self._run(query)
        relevant = self.relevant(query, configuration)
        key = (self._key(query), relevant)
        entry = self._by_relevant.get(key)
        if entry is not None:
            self._hit("relevant_hits")
            return self._revisit(query, entry, relevant)
        if self._planner is not None:
            entry, fresh = self._planned_entry(query, configuration, relevant)
        else:
            entry, fresh = self._measured_entry(query, relevant), True
        self._by_relevant[key] = entry
        return self._cost_result(entry) if fresh else self._revisit(query, entry, relevant)

    def execute(self, query, repetitions: int) -> QueryResult:
        """Execute ``query`` on the engine as it stands (the planner's free choice), timed and counted:
        what evaluation measures after ``materialise_all``."""
        return self._run(query, repetitions=repetitions)

    def time_query(self, query, repetitions: int = 1) -> list[float]:
        """Wall seconds of ``repetitions`` bare executions of ``query`` on the engine as it stands (the
        planner's free choice; no plan asked for, no work counted): evaluation's latency rounds."""
        with self._in_engine("execution_seconds"):
            timings = self.engine.time_query(query, repetitions)
        self.counters.query_executions += repetitions
        return list(timings)

    def references(self, workload: Sequence[Any]) -> dict[str, float]:
        """The reward's normalisers for a workload, computed once per workload (in every mode)."""
        key = tuple(self._key(query) for query in workload)
        if key not in self._references:
            self._references[key] = {"no_index_cost": self.no_index_cost(workload),
                                     "full_index_bytes": self.full_index_bytes(workload)}
        return self._references[key]

    def no_index_cost(self, workload: Sequence[Any]) -> float:
        return aggregate_costs([self._cost(self.query_result(q, ())) for q in workload], self.aggregate)

    def full_index_bytes(self, workload: Sequence[Any]) -> int:
        # sized in a fixed order: which computed sizes are built as checks must not follow string hashes
        specs = sorted({full_index(query).canonical() for query in workload})
        return sum(self.index_size(spec) for spec in specs)

    def index_size(self, spec: IndexSpec) -> int:
        """Bytes of an index: measured on the engine once (built if need be), or from the store."""
        spec = spec.canonical()
        if not self.cost_cache:  # the slow path measures every time
            self._build(spec, "sizes")
            return self._measure_size(spec)
        if spec not in self._sizes:
            stored = self.store.index(spec) if self.store is not None else None
            if stored is not None and (stored[1] is not None or self._planner is None):
                self._sizes[spec] = stored[0]
                if stored[1] is not None:
                    self._statistics[spec] = stored[1]
                self.counters.sizes_from_store += 1
                self._computed_from_store += stored[2]
            elif not self._computed_size(spec):
                self._build(spec, "sizes")
        return self._sizes[spec]

    def _computed_size(self, spec: IndexSpec) -> bool:
        """Take an index's size and statistics from the engine's exact model instead of building it
        (``engines/sqlite_index_size.py``); False where there is no model. A computed index that is built
        later for another reason is compared then; besides, the first ``SIZE_CHECKS`` and as many more as
        keep one in ``SIZE_CHECK_EVERY`` compared are built for the check. A model that disagrees before it
        was used is switched off (every size is then built), one that disagrees later stops the run."""
        if self._geometry is None:
            return False
        with self._in_engine("size_model_seconds"):
            geometry = self._geometry(spec)
        if self.counters.size_checks < SIZE_CHECKS + self.counters.sizes_computed // SIZE_CHECK_EVERY:
            self._build(spec, "sizes")  # measures the size and statistics
            self._check_size(spec, geometry, (self._sizes[spec], self._statistics.get(spec, geometry.statistics)))
            return True
        self._keep_size(spec, geometry.bytes, geometry.statistics, computed=True)
        self.counters.sizes_computed += 1
        self._unchecked[spec] = geometry
        return True

    def _check_size(self, spec: IndexSpec, geometry, measured: tuple[int, str]) -> None:
        """Compare a computed size and statistics with those of the index built: see ``_computed_size``."""
        self.counters.size_checks += 1
        if measured == (geometry.bytes, geometry.statistics):
            return
        if self.store is not None:  # no later run may read a size of this model: the store keeps measured ones
            self.store.forget_computed()
        self._model_disagrees(
            "index sizes", self.counters.sizes_computed + self._computed_from_store,
            "WIELD_COMPUTED_SIZES=0 (every size built)",
            f"index {spec}: computed {geometry.bytes} bytes and statistics '{geometry.statistics}', built "
            f"{measured[0]} bytes and '{measured[1]}'")
        self._geometry = None

    def _model_disagrees(self, what: str, used: int, switch: str, disagreement: str) -> None:
        """An exact model (``what``) disagrees with a measurement. If none of its answers was used yet
        (``used`` 0), a warning: the caller then switches the model off and measures from then on.
        Otherwise answers already used may be wrong: a ``SystemFailure`` saying how to rerun without it."""
        if used:
            store = f" {self.store.path}" if self.store is not None else ""
            raise SystemFailure(f"the model of {what} disagrees with this SQLite ({disagreement}); what it "
                                f"gave this run may be wrong: remove the measurement store{store} and rerun "
                                f"with {switch}")
        warnings.warn(f"the model of {what} disagrees with this SQLite ({disagreement}); {what} are measured "
                      "from now on", RuntimeWarning, stacklevel=4)

    def configure(self, configuration: Sequence[IndexSpec]) -> None:
        """Set the logical configuration directly (baselines, an optimiser's index set, evaluation)."""
        self._logical = list(dict.fromkeys(spec.canonical() for spec in configuration))

    def materialise_all(self) -> None:
        """Make the engine's indexes exactly the logical configuration, created in canonical order (for
        evaluation on the engine with the planner's free choice)."""
        self._switch_exact(self._logical)

    # -- the fast path -----------------------------------------------------------------------------
    def _planned_entry(self, query, configuration: tuple[IndexSpec, ...],
                       relevant: frozenset[IndexSpec]) -> tuple[CostEntry, bool]:
        """(entry, whether it was just measured) for a query the relevant-index cache missed."""
        for spec in configuration:
            self.index_size(spec)  # the planner needs every index's statistics
        started = time.perf_counter()
        self._planner.configure(configuration, self._statistics)
        planned = self._planner.plan(query)
        self.counters.planner_seconds += time.perf_counter() - started
        self.counters.plans += 1
        key = (self._key(query), planned.signature)
        entry = self._by_program.get(key)
        if entry is not None:
            self._hit("plan_hits")
            return entry, False
        named = {spec.name: spec for spec in configuration}
        used = tuple(named[name] for name in planned.indexes)
        stored = self._stored(key)
        if stored is not None:
            entry = CostEntry(stored, *self._how_to_run(used))
            self._by_program[key] = entry
            return entry, False
        equivalent = self._equivalent(query, planned, named)
        if equivalent is not None:
            ekey = (key[0], "=" + equivalent.signature)
            entry = self._by_program.get(ekey)
            fresh = False
            if entry is not None:
                self._hit("equivalent_hits")
            else:
                stored = self._stored(ekey)
                counted: tuple[QueryResult | None, bool] | None = None  # (_count's answer, once asked)
                if stored is not None:
                    entry = CostEntry(stored, None, used)
                elif used[0] not in self._physical:  # not built: count it, or measure the class on its representative
                    counted = self._count(query, used, planned.instructions)
                    result, check = counted
                    if result is not None and not check:
                        entry = CostEntry(result, used[0].name, used)
                    else:
                        entry = self._run_representative(query, equivalent)
                        if entry is not None and result is not None:
                            self._check_work(used[0], result, entry.result)
                if entry is None and stored is None:  # built already (no build needed), or the representative
                    # runs another program: the planned program, a member of the class too, answers it
                    entry, agreed = self._execute_planned(query, planned.signature, used, relevant,
                                                          planned.instructions, counted)
                    entry = entry if agreed else None
                fresh = stored is None and entry is not None
            if entry is not None:
                self._by_program[key] = self._by_program[ekey] = entry
                if fresh:
                    self._store(ekey, entry)
                return entry, fresh
        entry, agreed = self._execute_planned(query, planned.signature, used, relevant, planned.instructions)
        if agreed:
            self._by_program[key] = entry
            self._store(key, entry)
        return entry, True

    def _stored(self, key: tuple[str, str]) -> QueryResult | None:
        """A work measurement of an earlier run (work metric only), counted as a store hit."""
        if self.store is None or self.metric != "work":
            return None
        stored = self.store.work(*key)
        if stored is None:
            return None
        self._hit("store_hits")
        work, rows, names = stored
        return QueryResult(latency_s=float("nan"), work=work, indexes_used=names, rows=rows)

    def _store(self, key: tuple[str, str], entry: CostEntry) -> None:
        if self.store is not None and self.metric == "work":
            self.store.put_work(*key, entry.result.work, entry.result.rows, entry.result.indexes_used)

    def _equivalent(self, query, planned, named: dict[str, IndexSpec]):
        """The planned program up to the unused part of its index, when one measurement then serves every
        index that shares the used part (work metric, whole ranges visited, one index opened)."""
        if self.metric != "work" or len(planned.indexes) != 1:
            return None
        key = self._key(query)
        if key not in self._matching_rows:
            matching = None
            if query.limit is not None:
                with self._in_engine():
                    matching = self.engine.count_rows(query)
                self.counters.row_counts += 1
            self._matching_rows[key] = matching
        if not visits_whole_ranges(query, self._matching_rows[key]):
            return None
        return equivalent_program(planned.instructions, named, self.engine.table, self.engine.translator.fields)

    def _run_representative(self, query, equivalent) -> CostEntry | None:
        """Measure an equivalence class on its representative (the used leading keys, one build shared by
        every index that starts with them), forced; None when the representative's program is not
        equivalent (e.g. the full index also served a sort)."""
        representative = equivalent.representatives[0]

        def agrees(instructions: tuple) -> bool:
            executed = equivalent_program(instructions, {representative.name: representative}, self.engine.table,
                                          self.engine.translator.fields)
            return executed is not None and executed.signature == equivalent.signature

        result = self._on_slice(query, (representative,), agrees)
        if result is None:
            self._build(representative, "representatives")
            if not agrees(self._instructions(query, representative.name)):
                return None
            result = self._run(query, representative.name)
        self.counters.representative_runs += 1
        return CostEntry(result, representative.name, (representative,))

    @staticmethod
    def _how_to_run(used: tuple[IndexSpec, ...]) -> tuple[str | None, tuple[IndexSpec, ...]]:
        """(force, indexes): a single-index (or no-index) program is forced, a multi-index one is not (a
        stored measurement is re-run this way under latency; one whose forced program differs falls back
        to ``_execute_planned``'s other ways when it is first measured)."""
        if len(used) <= 1:
            return (used[0].name if used else ""), used
        return None, used

    def _execute_planned(self, query, signature: str, used: tuple[IndexSpec, ...], relevant: frozenset[IndexSpec],
                         instructions: tuple | None = None,
                         asked: tuple[QueryResult | None, bool] | None = None) -> tuple[CostEntry, bool]:
        """The planned program's entry: its work counted by the engine's model (``_count``, unless ``asked``
        already holds its answer) where it can be, else (or as a check) measured by ``_measure_planned``;
        (entry, whether the program measured was the planned one)."""
        counted, check = asked if asked is not None else self._count(query, used, instructions)
        if counted is not None and not check:
            return CostEntry(counted, *self._how_to_run(used)), True
        entry, agreed = self._measure_planned(query, signature, used, relevant)
        if counted is not None and agreed:
            self._check_work(used[0] if used else None, counted, entry.result)
        return entry, agreed

    def _count(self, query, used: tuple[IndexSpec, ...], instructions: tuple | None) -> tuple[QueryResult | None, bool]:
        """(the work of a program over ``used`` (one forced index, an OR's one per branch, or none: a scan of
        the table) counted by the engine's model without executing it (``sqlite_work_model.py``), whether it
        must be compared with a measurement as well); (None, False) where there is no model or it does not
        interpret the program. The first ``WORK_CHECKS`` counted programs, and then one in
        ``WORK_CHECK_EVERY``, are measured as well (``_check_work``); after the first ones, a check due on a
        program that only a build on the whole table could measure (no slice serves it, its index is not
        built) is taken on the next counted program that is cheap to measure (``work_checks_deferred``)."""
        if self._work_model is None or instructions is None:
            return None, False
        with self._in_engine("work_model_seconds"):
            counted = self._work_model(query, used, instructions)
        if counted is None:
            self.counters.works_declined += 1
            return None, False
        if self.counters.work_checks < WORK_CHECKS + self.counters.works_counted // WORK_CHECK_EVERY:
            if self.counters.work_checks < WORK_CHECKS or self._cheap_to_measure(query, used, counted):
                return counted, True
            self.counters.work_checks_deferred += 1
        self.counters.works_counted += 1
        return counted, False

    def _cheap_to_measure(self, query, used: tuple[IndexSpec, ...], counted: QueryResult) -> bool:
        """Whether measuring a program over ``used`` needs no index built on the whole table: its indexes
        are built, or a slice serves it (condition 1 of ``sqlite_slice.py``) and it is not one a slice
        would decline as too large (a slice holds the rows the program's seeks reach, and each row visited
        costs at least one VM step: a count within the slice's limit in steps keeps the rows within it,
        unless a LIMIT ended the program early)."""
        if all(spec in self._physical for spec in used):
            return True
        slices = self._slices
        return slices is not None and counted.work <= slices.max_rows and slices.serves(query, used)

    def _check_work(self, spec: IndexSpec | None, counted: QueryResult, measured: QueryResult) -> None:
        """Compare a counted work with the measured one: see ``_count`` and ``_model_disagrees``."""
        self.counters.work_checks += 1
        if (counted.work, counted.rows) == (measured.work, measured.rows):
            return
        over = f"index {spec}" if spec is not None else "no index (a table scan)"
        self._model_disagrees(
            "programs' work", self.counters.works_counted, "WIELD_COUNTED_WORK=0 (every program "
            "executed)", f"{over}: counted {counted.work} work and {counted.rows} rows, executed "
            f"{measured.work} and {measured.rows}")
        self._work_model = None

    def _measure_planned(self, query, signature: str, used: tuple[IndexSpec, ...],
                         relevant: frozenset[IndexSpec]) -> tuple[CostEntry, bool]:
        """Execute the planned program on the real database; (entry, whether the executed program was the
        planned one). A single-index program is forced; if forcing changes it (SQLite forgoes a skip-scan
        under INDEXED BY) or it opens several indexes, the planner chooses among the planned indexes with
        the ones it would prefer dropped; failing that, the query is measured the slow way."""
        force, indexes = self._how_to_run(used)
        if used:
            result = self._on_slice(query, used, lambda instructions: signature_of(instructions) == signature)
            if result is not None:
                return CostEntry(result, force, indexes), True
        if force is not None and self._prepare(query, force, indexes, signature):
            return CostEntry(self._run(query, force), force, indexes), True
        if self._prepare(query, None, used, signature):
            return CostEntry(self._run(query), None, used), True
        self.counters.plan_fallbacks += 1
        indexes = tuple(sorted(relevant))
        self._switch_relevant(query, indexes)
        agreed = self._program(query, None) == signature
        if not agreed:
            self.counters.planner_disagreements += 1
        return CostEntry(self._run(query), None, indexes), agreed

    def _on_slice(self, query, used: tuple[IndexSpec, ...], agrees) -> QueryResult | None:
        """The work of the query's program over ``used``, measured on a slice of the table
        (``sqlite_slice.py``) instead of building ``used`` on all of it (or, for an OR served by several
        indexes, instead of dropping the others the planner prefers); None when no slice can serve it, its
        one index is built already (measuring there costs nothing more) or the slice's program is not one
        ``agrees`` accepts."""
        slices = self._slices
        if slices is None or (len(used) == 1 and used[0] in self._physical) or not slices.serves(query, used):
            return None
        made, builds, groups = slices.made, slices.index_builds, slices.groups_found
        with self._in_engine("slice_seconds"):
            instructions = slices.program(query, used, self._statistics)
            result = slices.run(query, used) if instructions is not None and agrees(instructions) else None
        self.counters.slices_made += slices.made - made
        self.counters.slice_index_builds += slices.index_builds - builds
        self.counters.slice_group_scans += slices.groups_found - groups
        if result is not None:
            self.counters.slice_runs += 1
            self.counters.query_executions += 1
        return result

    def _prepare(self, query, force: str | None, indexes: tuple[IndexSpec, ...],
                 signature: str | None = None) -> bool:
        """Make the engine ready to run a query's program; whether it will run the one with ``signature``
        (when given). A forced program needs its index built. A program the planner chooses needs its
        indexes built and no index beside them that the planner prefers: the indexes it opens instead are
        dropped until the program is the planned one, and as a last resort the query's relevant indexes
        become exactly ``indexes``, in canonical order."""
        for spec in indexes:
            self._build(spec, "programs")
        if force is not None:
            return signature is None or self._program(query, force) == signature
        if signature is None:
            self._switch_relevant(query, indexes)
            return True
        wanted = set(indexes)
        for _ in range(len(self._physical) + 1):  # drop what the planner prefers to the planned indexes
            instructions = self._instructions(query, None)
            if signature_of(instructions) == signature:
                return True
            opened = set(opened_indexes(instructions, (spec.name for spec in self._physical)))
            interfering = [spec for spec in self._physical if spec.name in opened and spec not in wanted]
            if not interfering:
                break
            for spec in interfering:
                self._drop(spec)
        self._switch_relevant(query, indexes)
        return self._program(query, None) == signature

    def _measured_entry(self, query, relevant: frozenset[IndexSpec]) -> CostEntry:
        """Engines without a what-if planner: the relevant indexes in canonical order, the planner's choice."""
        indexes = tuple(sorted(relevant))
        self._switch_relevant(query, indexes)
        return CostEntry(self._run(query), None, indexes)

    def _revisit(self, query, entry: CostEntry, relevant: frozenset[IndexSpec]) -> QueryResult:
        """A cached entry's result; under latency re-measured until it has ``latency_samples`` samples."""
        if self.metric == "latency" and len(entry.latencies) < self.latency_samples:
            self._prepare(query, entry.force, entry.indexes)
            result = self._run(query, entry.force)
            entry.latencies.append(result.latency_s)
        return self._cost_result(entry)

    def _cost_result(self, entry: CostEntry) -> QueryResult:
        if self.metric == "latency":
            if not entry.latencies:
                entry.latencies.append(entry.result.latency_s)
            return replace(entry.result, latency_s=float(median(entry.latencies)))
        return entry.result

    def _hit(self, kind: str) -> None:
        setattr(self.counters, kind, getattr(self.counters, kind) + 1)
        self.counters.cache_hits += 1

    # -- engine side -----------------------------------------------------------------------------
    def _key(self, query) -> str:
        key = self._keys.get(query)
        if key is None:
            key = self._keys[query] = query.key()
        return key

    def _cost(self, result: QueryResult) -> float:
        return result.work if self.metric == "work" else result.latency_s

    @contextlib.contextmanager
    def _in_engine(self, also: str | None = None) -> Iterator[None]:
        """Count the block's wall time in ``engine_seconds`` (and in the counter ``also``)."""
        started = time.perf_counter()
        yield
        elapsed = time.perf_counter() - started
        self.counters.engine_seconds += elapsed
        if also is not None:
            setattr(self.counters, also, getattr(self.counters, also) + elapsed)

    def _run(self, query, force: str | None = None, repetitions: int | None = None) -> QueryResult:
        repetitions = self.repetitions if repetitions is None else repetitions
        with self._in_engine("execution_seconds"):
            if force is None:
                result = self.engine.run_query(query, repetitions=repetitions)
            else:
                result = self.engine.run_query(query, repetitions=repetitions, force=force)
        self.counters.query_executions += 1
        return result

    def _instructions(self, query, force: str | None) -> tuple:
        with self._in_engine():
            return self.engine.program(query, force)

    def _program(self, query, force: str | None) -> str:
        return signature_of(self._instructions(query, force))

    def _switch_exact(self, target: Sequence[IndexSpec]) -> None:
        """The engine's indexes become exactly ``target``, created in canonical order."""
        self._switch(self._physical, target)

    def _switch_relevant(self, query, wanted: Sequence[IndexSpec]) -> None:
        """Among the indexes sharing a field with ``query``, exactly ``wanted``, created in canonical order."""
        fields = set(query.attributes())
        self._switch([spec for spec in self._physical if fields.intersection(spec.fields)], wanted)

    def _switch(self, present: Sequence[IndexSpec], target: Sequence[IndexSpec]) -> None:
        """``present`` (indexes on the engine, in creation order) becomes ``target`` (``canonical_switch``)."""
        drop, build = canonical_switch(present, target)
        for spec in drop:
            self._drop(spec)
        for spec in build:
            self._build(spec)

    def _build(self, spec: IndexSpec, purpose: BuildPurpose = "configurations") -> None:
        """Make sure ``spec`` exists on the engine; a build is counted under ``purpose`` (``builds_for_*``)."""
        self._clock += 1
        self._last_use[spec] = self._clock
        if spec in self._physical:
            return
        with self._in_engine("build_seconds"):
            self.engine.create_index(spec)
        self.counters.index_builds += 1
        setattr(self.counters, f"builds_for_{purpose}", getattr(self.counters, f"builds_for_{purpose}") + 1)
        self.counters.index_rebuilds += spec in self._dropped
        self._physical.append(spec)
        if self.cost_cache and spec not in self._sizes:
            self._keep_size(spec, self._measure_size(spec),
                            self.engine.index_statistics(spec) if self._planner is not None else None)
        elif spec in self._unchecked:  # a computed size, built now for another reason: compared for free
            geometry = self._unchecked.pop(spec)
            statistics = self.engine.index_statistics(spec) if self._planner is not None else geometry.statistics
            self._check_size(spec, geometry, (self._measure_size(spec), statistics))

    def _keep_size(self, spec: IndexSpec, size: int, statistics: str | None, computed: bool = False) -> None:
        """Keep an index's size, and its statistics where the planner needs them, here and in the store
        (``computed``: the model's, not measured)."""
        self._sizes[spec] = size
        if self._planner is not None and statistics is not None:
            self._statistics[spec] = statistics
        else:
            statistics = None
        if self.store is not None:
            self.store.put_index(spec, size, statistics, computed=computed)

    def _measure_size(self, spec: IndexSpec) -> int:
        with self._in_engine():
            size = self.engine.index_size(spec)
        self.counters.size_measurements += 1
        return size

    def _drop(self, spec: IndexSpec) -> None:
        if spec not in self._physical:
            return
        with self._in_engine():
            self.engine.drop_index(spec)
        self.counters.index_drops += 1
        self._physical.remove(spec)
        self._dropped.add(spec)

    def _evict(self, protect: set[IndexSpec]) -> None:
        """Drop the least recently used indexes until those kept fit the budget (fast path only)."""
        if not self.cost_cache:
            return
        kept = sum(self._sizes.get(spec, 0) for spec in self._physical)
        if kept <= self.index_budget_bytes:
            return
        for spec in sorted(self._physical, key=lambda s: self._last_use.get(s, 0)):
            if kept <= self.index_budget_bytes:
                break
            if spec in protect:
                continue
            kept -= self._sizes.get(spec, 0)
            self._drop(spec)
