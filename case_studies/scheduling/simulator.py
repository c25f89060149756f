"""ServingSimulator: a discrete-event simulator of a Clockwork-style inference-serving system.

A controller holds one FIFO queue per model; ``n_gpus`` GPUs each run one batch at a time, concurrently with
each other; every model is loaded on every GPU; a batch holds 1, 2, 4, 8 or 16 requests of one model. Times
are milliseconds on the simulated clock, starting at 0. The rules (deadlines, timeouts, closed-loop clients)
are in ``engine``; the baseline schedulers and the event loop in ``schedulers``.

Two ways to drive it:

- step by step, as an RL environment does: ``advance(until_ms)`` processes every arrival, completion and
  timeout up to ``until_ms`` without scheduling anything; then read the state (``pending``,
  ``oldest_laxity_ms``, ``most_urgent``, ``outstanding_ms``) and ``dispatch(gpu, model, batch_size)``, at
  the current time; repeat. ``schedule(gpu, "clockwork")`` lets a baseline decide for one GPU at that point.
- in one call: ``run(scheduler)`` (or ``advance(until_ms, scheduler)``) runs the whole workload (or up to a
  time) under a compiled baseline scheduler; this is the fast path.

``counters()`` are cumulative (an environment takes differences between steps for rewards); ``metrics()``
summarises the run so far (``metrics.ServingMetrics``).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from case_studies.scheduling import engine, schedulers
from case_studies.scheduling.metrics import ServingMetrics, summarise, time_series
from case_studies.scheduling.profile import BatchProfile, load_profile
from case_studies.scheduling.state import (BATCHES, COUNTER_NAMES, GI_LEN, MF_EXPIRE, MF_SLO, MI_QHEAD, MI_QLEN,
                                           MI_QOFF, SF_NOW, SI_ARRIVAL_PTR, SI_N_ACTIVE, SimState, allocate,
                                           grow_batch_fifo)
from case_studies.scheduling.workload import Workload
from wield.errors import ConfigError

SUPPORTED_BATCH_SIZES: tuple[int, ...] = tuple(int(b) for b in BATCHES)
_BATCH_INDEX = {b: i for i, b in enumerate(SUPPORTED_BATCH_SIZES)}


class Dispatch(NamedTuple):
    """One dispatched batch: when it starts and finishes (ms) and how many of its requests meet their SLO."""

    gpu: int
    model: int
    batch_size: int
    start_ms: float
    finish_ms: float
    on_time: int
    late: int


def execution_table(n_models: int, profile: BatchProfile | Sequence[BatchProfile]) -> np.ndarray:
    """``(n_models, 5)`` ms per batch of 1, 2, 4, 8, 16: one profile for every model, or one per model."""
    if isinstance(profile, BatchProfile):
        return np.tile(profile.supported_ms(), (n_models, 1))
    profiles = list(profile)
    if len(profiles) != n_models:
        raise ConfigError("profiles", f"{len(profiles)} profiles", reason=f"need one per model ({n_models})")
    return np.stack([p.supported_ms() for p in profiles])


def queue_capacity(arrival_times: np.ndarray, arrival_models: np.ndarray, closed: np.ndarray,
                   timeout_offset_ms: np.ndarray) -> np.ndarray:
    """Per model, the most requests that can be pending at once: a request is pending at most
    ``timeout_offset_ms`` after it arrives, so at most the arrivals in any window of that length, plus the
    closed-loop clients' requests."""
    n_models = timeout_offset_ms.size
    capacity = np.bincount(arrival_models[closed], minlength=n_models).astype(np.int64)
    open_loop = ~closed
    models, times = arrival_models[open_loop], arrival_times[open_loop]
    order = np.lexsort((times, models))
    models, times = models[order], times[order]
    starts = np.searchsorted(models, np.arange(n_models + 1))
    for m in np.flatnonzero(np.diff(starts)):
        t = times[starts[m]:starts[m + 1]]
        window = np.searchsorted(t, t + timeout_offset_ms[m], side="right") - np.arange(t.size)
        capacity[m] += int(window.max())
    return capacity + 1


class ServingSimulator:
    """The simulated serving system for one workload; see the module docstring."""

    def __init__(self, workload: Workload, n_gpus: int, profile: BatchProfile | Sequence[BatchProfile] | None = None,
                 lookahead_ms: float = schedulers.DEFAULT_LOOKAHEAD_MS, bin_ms: float = 1000.0,
                 seed: int = 0, baselines: Sequence[str] | None = None) -> None:
        """``profile``: one for every model or one per model (default: the workload's per-model
        ``execution_profiles()`` if it names them, else ``load_profile()``); ``baselines``: the
        schedulers that ``run`` / ``advance`` / ``schedule`` may use (default: all; naming fewer skips the
        upkeep of the others' queues, which makes the fast path faster)."""
        if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
            raise ConfigError("n_gpus", n_gpus, reason="must be an integer >= 1")
        if not (math.isfinite(lookahead_ms) and lookahead_ms >= 0):
            raise ConfigError("lookahead_ms", lookahead_ms, reason="must be a number >= 0")
        if not (math.isfinite(bin_ms) and bin_ms > 0):
            raise ConfigError("bin_ms", bin_ms, reason="must be a number > 0")
        self.workload = workload
        self.baselines = tuple(schedulers.SCHEDULERS) if baselines is None else tuple(baselines)
        for name in self.baselines:
            if name not in schedulers.SCHEDULERS:
                raise ConfigError("baselines", name, sorted(schedulers.SCHEDULERS))
        self._maintained = sum(schedulers.HEAPS_USED[name] for name in set(self.baselines))
        self.n_gpus = int(n_gpus)
        self.n_models = workload.n_models
        self.lookahead_ms = float(lookahead_ms)
        if profile is None:
            profile = workload.execution_profiles()
        self.exec_ms = execution_table(self.n_models, profile if profile is not None else load_profile())
        slo = np.asarray(workload.slo_ms)
        short = np.flatnonzero(slo <= self.exec_ms[:, 0])
        if short.size:
            m = int(short[0])
            raise ConfigError("slo_ms", slo[m], reason=f"model {m}'s SLO must exceed its batch-1 time "
                              f"{self.exec_ms[m, 0]:g} ms, or every request times out on arrival")
        self._arrivals = workload.arrivals()
        self._capacity = queue_capacity(self._arrivals.times_ms, self._arrivals.models, self._arrivals.closed,
                                        slo - self.exec_ms[:, 0])
        self._bins = int((workload.duration_ms + float(slo.max()) + 1000.0) // bin_ms) + 2
        self.bin_ms = float(bin_ms)
        self.n_arrivals = int(self._arrivals.times_ms.size)
        self._report = np.zeros(3)
        self.reset(seed)

    def reset(self, seed: int = 0) -> None:
        """Back to time 0 with the same workload: empty queues, idle GPUs, no arrival consumed yet (``seed``
        seeds the ``random`` baseline)."""
        arrivals = self._arrivals
        self._state: SimState = allocate(self.exec_ms, np.asarray(self.workload.slo_ms),
                                         self.workload.closed_loop_end_ms(), arrivals.times_ms, arrivals.models,
                                         arrivals.closed, self._capacity, self.n_gpus, self._bins, self.bin_ms, seed,
                                         self._maintained)

    # ---------------------------------------------------------------- time
    @property
    def now(self) -> float:
        """The simulated clock, ms."""
        return float(self._state.scal_f[SF_NOW])

    def advance(self, until_ms: float, scheduler: str | None = None) -> None:
        """Process every event up to ``until_ms`` (ms; ``math.inf`` runs until nothing is left).

        Without ``scheduler`` nothing is dispatched: requests arrive, batches complete and requests time out
        (a request whose timeout time is exactly ``until_ms`` is still pending afterwards, with laxity 0).
        With a baseline name (``schedulers.SCHEDULERS``) it also makes that scheduler's decisions.
        """
        if not until_ms >= self.now:
            raise ConfigError("until_ms", until_ms, reason=f"must not be before the current time {self.now:g} ms")
        code = schedulers.NONE if scheduler is None else self._scheduler_code(scheduler)
        while schedulers.advance(self._state, float(until_ms), code, self.lookahead_ms) < 0:
            self._state = grow_batch_fifo(self._state)

    def run(self, scheduler: str = "clockwork") -> ServingMetrics:
        """Run the rest of the workload under a baseline scheduler until every request is answered."""
        self.advance(math.inf, scheduler)
        return self.metrics()

    @property
    def finished(self) -> bool:
        """No arrival left to come, no request pending, no batch running."""
        s = self._state
        return (int(s.scal_i[SI_ARRIVAL_PTR]) == self.n_arrivals and int(s.scal_i[SI_N_ACTIVE]) == 0
                and not s.gpu_i[:, GI_LEN].any())

    # ---------------------------------------------------------------- state
    def pending(self, model: int) -> int:
        """Requests of ``model`` waiting in the controller's queue."""
        return int(self._state.model_i[MI_QLEN, self._model(model)])

    def pending_counts(self) -> np.ndarray:
        """Pending requests of every model (a read-only view)."""
        view = self._state.model_i[MI_QLEN]
        view = view.view()
        view.flags.writeable = False
        return view

    def oldest_laxity_ms(self, model: int) -> float:
        """Deadline - now - batch-1 time of ``model``'s oldest pending request (ms); inf if none is pending."""
        m = self._model(model)
        s = self._state
        if s.model_i[MI_QLEN, m] == 0:
            return math.inf
        arrival = s.q_t[s.model_i[MI_QOFF, m] + s.model_i[MI_QHEAD, m]]
        return float(arrival + s.model_f[MF_EXPIRE, m] - self.now)

    def most_urgent(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(models, pending, laxity ms) of the up-to-``k`` models with pending requests whose oldest request
        times out first, most urgent first (ties: lower model index)."""
        models = np.empty(k, dtype=np.int64)
        pending = np.empty(k, dtype=np.int64)
        laxity = np.empty(k)
        found = engine.most_urgent(self._state, k, models, pending, laxity, np.empty(k))
        return models[:found], pending[:found], laxity[:found]

    def active_models(self) -> int:
        """How many models have pending requests."""
        return int(self._state.scal_i[SI_N_ACTIVE])

    def outstanding_ms(self, gpu: int) -> float:
        """Work already dispatched to ``gpu`` that it has not finished, ms from now (0 if idle)."""
        return max(0.0, float(self._state.gpu_free[self._gpu(gpu)]) - self.now)

    def start_ms(self, gpu: int) -> float:
        """When a batch dispatched to ``gpu`` now would start: now, or when the GPU finishes its work (ms)."""
        return max(self.now, float(self._state.gpu_free[self._gpu(gpu)]))

    def oldest_deadlines(self, models: np.ndarray) -> np.ndarray:
        """The deadline (arrival + SLO, ms) of the oldest pending request of each of ``models`` (each must
        have one): a batch of such a model that finishes after it is late."""
        s = self._state
        models = np.asarray(models, dtype=np.int64)
        return s.q_t[s.model_i[MI_QOFF, models] + s.model_i[MI_QHEAD, models]] + s.model_f[MF_SLO, models]

    def execution_ms(self, model: int, batch_size: int) -> float:
        return float(self.exec_ms[self._model(model), self._batch_index(batch_size)])

    def valid_batch_sizes(self, model: int) -> tuple[int, ...]:
        """Supported batch sizes that ``model`` has enough pending requests for."""
        n = self.pending(model)
        return tuple(b for b in SUPPORTED_BATCH_SIZES if b <= n)

    # ---------------------------------------------------------------- decisions
    def dispatch(self, gpu: int, model: int, batch_size: int) -> Dispatch:
        """Run the ``batch_size`` oldest pending requests of ``model`` on ``gpu``, queued behind its work.

        The batch starts when ``gpu`` finishes the work already dispatched to it (now, if idle). Raises
        ``ConfigError`` if the batch size is not supported or ``model`` has fewer pending requests.
        """
        g, m, i = self._gpu(gpu), self._model(model), self._batch_index(batch_size)
        pending = int(self._state.model_i[MI_QLEN, m])
        if pending < batch_size:
            raise ConfigError("batch_size", batch_size, self.valid_batch_sizes(m) or "none (no pending request)",
                              f"model {m} has {pending} pending requests")
        while engine.dispatch_now(self._state, g, m, i, self._report) < 0:
            self._state = grow_batch_fifo(self._state)
        start, finish, late = self._report.tolist()
        return Dispatch(g, m, int(batch_size), start, finish, int(batch_size) - int(late), int(late))

    def schedule(self, gpu: int, scheduler: str = "clockwork") -> int:
        """Let a baseline decide for ``gpu`` now, as it would when invoked (eligibility rule included);
        returns how many batches it dispatched."""
        g, code = self._gpu(gpu), self._scheduler_code(scheduler)
        while (count := schedulers.decide(self._state, code, self.lookahead_ms, g)) < 0:
            self._state = grow_batch_fifo(self._state)
        return count

    # ---------------------------------------------------------------- results
    def counters(self) -> dict[str, float]:
        """Cumulative counts since time 0 (``state.COUNTER_NAMES``)."""
        return dict(zip(COUNTER_NAMES, self._state.counters.tolist()))

    def metrics(self) -> ServingMetrics:
        return summarise(self._state, self.n_gpus, self.now)

    def time_series(self) -> dict[str, np.ndarray]:
        """Per-bin arrivals, throughput, goodput, timeouts and mean batch size (``metrics.time_series``)."""
        return time_series(self._state, self.now)

    # ---------------------------------------------------------------- checks
    def _model(self, model: int) -> int:
        if isinstance(model, bool) or not isinstance(model, (int, np.integer)) or not 0 <= model < self.n_models:
            raise ConfigError("model", model, reason=f"must be a model index 0..{self.n_models - 1}")
        return int(model)

    def _gpu(self, gpu: int) -> int:
        if isinstance(gpu, bool) or not isinstance(gpu, (int, np.integer)) or not 0 <= gpu < self.n_gpus:
            raise ConfigError("gpu", gpu, reason=f"must be a GPU index 0..{self.n_gpus - 1}")
        return int(gpu)

    @staticmethod
    def _batch_index(batch_size: int) -> int:
        if isinstance(batch_size, bool) or batch_size not in _BATCH_INDEX:
            raise ConfigError("batch_size", batch_size, SUPPORTED_BATCH_SIZES)
        return _BATCH_INDEX[int(batch_size)]

    def _scheduler_code(self, name: str) -> int:
        if name not in self.baselines:
            raise ConfigError("scheduler", name, self.baselines,
                              "this simulator was built for these baselines" if name in schedulers.SCHEDULERS else None)
        return schedulers.SCHEDULERS[name]
