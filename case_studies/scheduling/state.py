"""The serving simulator's state: a named tuple of numpy arrays that the compiled kernels read and write.

Arrays are grouped by owner (models, queue slots, lazy heaps, GPUs, counters) so that one call from Python
into a compiled kernel unboxes few arrays. Row and column indices are the constants below. Times are
milliseconds (float64) on the simulated clock.

Per model ``m``: its requests wait in a ring buffer ``q_t[q_off[m] : q_off[m] + q_cap[m]]`` in arrival
order (a model's requests share one SLO, so arrival order is deadline order); ``version[m]`` increases
whenever the oldest pending request of ``m`` changes, which is how the lazy heaps recognise stale entries.

Lazy heaps (one row each of ``h_key`` / ``h_mv``): entries ``(key, model, version)``, valid while the version
is the model's current one. ``H_EXPIRY`` orders models by when their oldest request times out (the urgency
of the RL state); ``H_STRATEGY + i`` holds the Clockwork strategies of batch size ``BATCHES[i]`` keyed by their
latest start; ``H_FIFO`` by the oldest request's arrival; ``H_EDF`` by its deadline.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit


def kernel(inline: bool = False):
    """Decorator of the compiled kernels: cached, and compiled without numba's reference counting (the
    kernels allocate nothing; counting references to the state's arrays on every call cost a quarter of
    the run time). ``inline`` inlines a kernel into its callers (the event loop inlines the whole engine:
    two to three times faster, for about a minute of compilation the first time)."""
    return njit(cache=True, _nrt=False, inline="always" if inline else "never")


# the kernels' files, and the files whose constants the decision kernels compile in (scales, reward factors)
_KERNEL_MODULES = ("state.py", "heaps.py", "engine.py", "schedulers.py", "decision_kernels.py", "task_design.py",
                   "rewards.py")


def _drop_stale_kernel_cache() -> None:
    """numba checks a cached kernel against its own file only, but kernels inline kernels of the other
    modules: when any kernel module changed, drop the package's cached kernels (rebuilt on first use)."""
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join((here / name).read_bytes() for name in _KERNEL_MODULES)).hexdigest()
    cache = here / "__pycache__"
    stamp = cache / "scheduling-kernels.sha256"
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    try:
        for path in cache.glob("*.nb[ci]"):
            path.unlink()
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: numba then caches elsewhere, keyed the same way
        pass


_drop_stale_kernel_cache()


BATCHES = np.array([1, 2, 4, 8, 16], dtype=np.int64)
N_BATCHES = 5

# model_f rows
MF_SLO, MF_EXPIRE, MF_CLOSED_END = 0, 1, 2
# model_i rows (MI_ACTIVE_LIST holds the active models in positions 0 .. n_active - 1)
MI_QOFF, MI_QCAP, MI_QHEAD, MI_QLEN, MI_VERSION, MI_ACTIVE_POS, MI_ACTIVE_LIST = range(7)
# heaps
H_EXPIRY, H_STRATEGY, H_FIFO, H_EDF = 0, 1, 1 + N_BATCHES, 2 + N_BATCHES
N_HEAPS = 3 + N_BATCHES
# gpu_i columns; batch_f / batch_i last axis
GI_HEAD, GI_LEN = 0, 1
BF_FINISH, BF_EXEC = 0, 1
BI_MODEL, BI_SIZE, BI_LATE, BI_CLOSED = 0, 1, 2, 3
# scal_f / scal_i
SF_NOW, SF_BIN_MS = 0, 1
SI_ARRIVAL_PTR, SI_N_ACTIVE, SI_RNG, SI_MAINTAINED, SI_HEAP_SIZE = 0, 1, 2, 3, 4
ALL_HEAPS = (1 << N_HEAPS) - 1
# counters (cumulative; the *_E1 ones weight each request by its model's batch-1 time, for rewards)
(C_ARRIVED, C_DISPATCHED, C_BATCHES, C_ON_TIME, C_LATE, C_TIMED_OUT, C_BUSY_MS,
 C_ON_TIME_E1, C_LATE_E1, C_TIMED_OUT_E1, C_DISPATCHED_E1) = range(11)
C_BATCHES_BY_SIZE = 11  # + batch index
N_COUNTERS = C_BATCHES_BY_SIZE + N_BATCHES
# bins columns (per bin of bin_ms, by the time the thing happened)
B_ARRIVED, B_COMPLETED, B_ON_TIME, B_TIMED_OUT, B_BATCHES, B_DISPATCHED = range(6)
N_BIN_FIELDS = 6

COUNTER_NAMES = ("arrived", "dispatched", "batches", "on_time", "late", "timed_out", "busy_ms", "on_time_e1_ms",
                 "late_e1_ms", "timed_out_e1_ms", "dispatched_e1_ms") + tuple(f"batches_of_{b}" for b in BATCHES)
BIN_NAMES = ("arrived", "completed", "on_time", "timed_out", "batches", "dispatched")


class SimState(NamedTuple):
    exec_ms: np.ndarray  # (M, 5) ms per batch of BATCHES[i]
    model_f: np.ndarray  # (3, M) SLO, SLO - batch-1 time (timeout offset), closed-loop end
    model_i: np.ndarray  # (7, M) queue offset, capacity, head, length, version, active position, active list
    arr_t: np.ndarray  # (N,) pre-generated arrival times, sorted
    arr_m: np.ndarray  # (N,) their models
    arr_closed: np.ndarray  # (N,) bool: from a closed-loop client
    q_t: np.ndarray  # (Q,) arrival time of each queued request (ring buffers)
    q_closed: np.ndarray  # (Q,) bool
    h_key: np.ndarray  # (N_HEAPS, C)
    h_mv: np.ndarray  # (N_HEAPS, C, 2) model, version
    gpu_free: np.ndarray  # (G,) when each GPU finishes the work dispatched to it
    gpu_i: np.ndarray  # (G, 2) head and length of its FIFO of dispatched batches
    batch_f: np.ndarray  # (G, K, 2) finish time, execution time
    batch_i: np.ndarray  # (G, K, 4) model, size, late requests, closed-loop requests
    counters: np.ndarray  # (N_COUNTERS,)
    bins: np.ndarray  # (n_bins, N_BIN_FIELDS)
    scal_f: np.ndarray  # (2,) now, bin width
    scal_i: np.ndarray  # (4 + N_HEAPS,) arrival pointer, active models, RNG state, maintained heaps (bits), heap sizes
    scratch: np.ndarray  # (C,) int64 work space of heaps.min_at_least
    declined: np.ndarray  # (G,) bool work space of schedulers.decide


def allocate(exec_ms: np.ndarray, slo_ms: np.ndarray, closed_end_ms: np.ndarray, arr_t: np.ndarray,
             arr_m: np.ndarray, arr_closed: np.ndarray, queue_capacity: np.ndarray, n_gpus: int, n_bins: int,
             bin_ms: float, rng_seed: int, maintained: int = ALL_HEAPS, batch_capacity: int = 64) -> SimState:
    """A fresh state at time 0: empty queues, idle GPUs, no arrival consumed yet. ``maintained``: bit ``h``
    set keeps heap ``h`` up to date (the timeout heap always is)."""
    n_models = exec_ms.shape[0]
    model_f = np.empty((3, n_models))
    model_f[MF_SLO] = slo_ms
    model_f[MF_EXPIRE] = slo_ms - exec_ms[:, 0]
    model_f[MF_CLOSED_END] = closed_end_ms
    model_i = np.zeros((7, n_models), dtype=np.int64)
    model_i[MI_QCAP] = queue_capacity
    model_i[MI_QOFF, 1:] = np.cumsum(queue_capacity)[:-1]
    model_i[MI_ACTIVE_POS] = -1
    heap_capacity = 2 * n_models + 16  # each heap holds at most one valid entry per model; see heaps.compact
    scal_i = np.zeros(4 + N_HEAPS, dtype=np.int64)
    scal_i[SI_RNG] = _mix_seed(rng_seed)
    scal_i[SI_MAINTAINED] = maintained | (1 << H_EXPIRY)
    total = int(queue_capacity.sum())
    return SimState(
        np.ascontiguousarray(exec_ms, dtype=np.float64), model_f, model_i,
        np.ascontiguousarray(arr_t, dtype=np.float64), np.ascontiguousarray(arr_m, dtype=np.int64),
        np.ascontiguousarray(arr_closed, dtype=np.bool_), np.zeros(total), np.zeros(total, dtype=np.bool_),
        np.zeros((N_HEAPS, heap_capacity)), np.zeros((N_HEAPS, heap_capacity, 2), dtype=np.int64),
        np.zeros(n_gpus), np.zeros((n_gpus, 2), dtype=np.int64), np.zeros((n_gpus, batch_capacity, 2)),
        np.zeros((n_gpus, batch_capacity, 4), dtype=np.int64), np.zeros(N_COUNTERS),
        np.zeros((n_bins, N_BIN_FIELDS)), np.array([0.0, float(bin_ms)]), scal_i,
        np.zeros(heap_capacity, dtype=np.int64), np.zeros(n_gpus, dtype=np.bool_))


def _mix_seed(seed: int) -> int:
    """A non-zero 63-bit starting state for the kernels' splitmix64 generator."""
    return int((int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % (2**63 - 1)) or 1


def grow_batch_fifo(state: SimState) -> SimState:
    """The same state with twice the room for dispatched-but-unfinished batches per GPU (ring order kept)."""
    n_gpus, capacity = state.batch_f.shape[:2]
    batch_f = np.zeros((n_gpus, 2 * capacity, 2))
    batch_i = np.zeros((n_gpus, 2 * capacity, 4), dtype=np.int64)
    for g in range(n_gpus):
        order = (state.gpu_i[g, GI_HEAD] + np.arange(state.gpu_i[g, GI_LEN])) % capacity
        batch_f[g, :order.size] = state.batch_f[g, order]
        batch_i[g, :order.size] = state.batch_i[g, order]
    state.gpu_i[:, GI_HEAD] = 0
    return state._replace(batch_f=batch_f, batch_i=batch_i)
