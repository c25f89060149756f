"""Compiled operations on the simulator state: arrivals, dispatches, completions and timeouts.

Rules (times in ms on the simulated clock):

- A request of model ``m`` arriving at ``a`` has deadline ``a + slo[m]``; it meets its SLO when the batch
  holding it completes at or before the deadline.
- A dispatched batch of ``b`` requests of ``m`` on GPU ``g`` starts when ``g`` finishes the work already
  dispatched to it (or now, if ``g`` is idle) and takes ``exec_ms[m, b]``. It always takes the ``b`` oldest
  pending requests of ``m``. Whether each meets its SLO is known at dispatch; it is counted at completion.
- Timeout: a pending request times out when it can no longer meet its deadline even as a batch of one on an
  idle GPU, that is once the clock passes ``deadline - exec_ms[m, 1]`` (its laxity becomes negative). It is
  dropped from the queue then and counted as timed out (an SLO violation). At exactly that instant it can
  still be dispatched.
- Closed-loop clients send their next request when one is answered: at the completion of the batch holding
  it, or at its timeout.
"""

from __future__ import annotations

import numpy as np

from case_studies.scheduling import heaps
from case_studies.scheduling.state import (
    B_ARRIVED, B_BATCHES, B_COMPLETED, B_DISPATCHED, B_ON_TIME, B_TIMED_OUT, BATCHES, BF_EXEC, BF_FINISH, BI_CLOSED,
    BI_LATE, BI_MODEL, BI_SIZE, C_ARRIVED, C_BATCHES, C_BATCHES_BY_SIZE, C_BUSY_MS, C_DISPATCHED, C_DISPATCHED_E1,
    C_LATE, C_LATE_E1, C_ON_TIME, C_ON_TIME_E1, C_TIMED_OUT, C_TIMED_OUT_E1, GI_HEAD, GI_LEN, H_EDF, H_EXPIRY,
    H_FIFO, H_STRATEGY, MF_CLOSED_END, MF_EXPIRE, MF_SLO, MI_ACTIVE_LIST, MI_ACTIVE_POS, MI_QCAP, MI_QHEAD,
    MI_QLEN, MI_QOFF, MI_VERSION, N_BATCHES, N_HEAPS, SF_BIN_MS, SF_NOW, SI_ARRIVAL_PTR, SI_MAINTAINED, SI_N_ACTIVE,
    kernel)

INF = np.inf


@kernel(inline=True)
def _bin(s, t) -> int:
    return min(int(t / s.scal_f[SF_BIN_MS]), s.bins.shape[0] - 1)


@kernel(inline=True)
def head_arrival(s, m) -> float:
    mi = s.model_i
    return s.q_t[mi[MI_QOFF, m] + mi[MI_QHEAD, m]]


@kernel(inline=True)
def largest_batch_index(pending) -> int:
    """Index in BATCHES of the largest supported batch size <= ``pending`` (which must be >= 1)."""
    index = 0
    while index + 1 < N_BATCHES and BATCHES[index + 1] <= pending:
        index += 1
    return index


@kernel(inline=True)
def head_changed(s, m) -> None:
    """The oldest pending request of ``m`` changed: invalidate its heap entries and push the new ones."""
    mi = s.model_i
    version = mi[MI_VERSION]
    version[m] += 1
    n = mi[MI_QLEN, m]
    if n == 0:  # leave the active set
        pos = mi[MI_ACTIVE_POS, m]
        last = s.scal_i[SI_N_ACTIVE] - 1
        moved = mi[MI_ACTIVE_LIST, last]
        mi[MI_ACTIVE_LIST, pos] = moved
        mi[MI_ACTIVE_POS, moved] = pos
        mi[MI_ACTIVE_POS, m] = -1
        s.scal_i[SI_N_ACTIVE] = last
        return
    if mi[MI_ACTIVE_POS, m] < 0:
        n_active = s.scal_i[SI_N_ACTIVE]
        mi[MI_ACTIVE_LIST, n_active] = m
        mi[MI_ACTIVE_POS, m] = n_active
        s.scal_i[SI_N_ACTIVE] = n_active + 1
    arrival = head_arrival(s, m)
    deadline = arrival + s.model_f[MF_SLO, m]
    maintained = s.scal_i[SI_MAINTAINED]
    for h in range(N_HEAPS):  # one push site: the kernels are inlined, and this keeps them small
        if not (maintained >> h) & 1:
            continue
        if h == H_EXPIRY:
            key = arrival + s.model_f[MF_EXPIRE, m]
        elif h == H_FIFO:
            key = arrival
        elif h == H_EDF:
            key = deadline
        elif BATCHES[h - H_STRATEGY] <= n:
            key = deadline - s.exec_ms[m, h - H_STRATEGY]
        else:
            continue
        heaps.push(s.h_key, s.h_mv, s.scal_i, h, key, m, version[m], version)


@kernel(inline=True)
def enqueue(s, m, t, closed) -> None:
    """A request of model ``m`` arrives at time ``t``."""
    mi = s.model_i
    n = mi[MI_QLEN, m]
    cap = mi[MI_QCAP, m]
    if n == cap:
        raise RuntimeError("request queue capacity exceeded (simulator sizing bug)")
    pos = mi[MI_QOFF, m] + (mi[MI_QHEAD, m] + n) % cap
    s.q_t[pos] = t
    s.q_closed[pos] = closed
    mi[MI_QLEN, m] = n + 1
    s.counters[C_ARRIVED] += 1
    s.bins[_bin(s, t), B_ARRIVED] += 1
    if n == 0:
        head_changed(s, m)
        return
    for i in range(1, N_BATCHES):  # a strategy of batch BATCHES[i] becomes possible for the same head
        if BATCHES[i] == n + 1 and (s.scal_i[SI_MAINTAINED] >> (H_STRATEGY + i)) & 1:
            deadline = head_arrival(s, m) + s.model_f[MF_SLO, m]
            version = mi[MI_VERSION]
            heaps.push(s.h_key, s.h_mv, s.scal_i, H_STRATEGY + i, deadline - s.exec_ms[m, i], m, version[m], version)


@kernel(inline=True)
def arrive_next(s) -> None:
    """Consume the next pre-generated arrival (the clock moves to its time)."""
    p = s.scal_i[SI_ARRIVAL_PTR]
    t = s.arr_t[p]
    s.scal_f[SF_NOW] = t
    s.scal_i[SI_ARRIVAL_PTR] = p + 1
    enqueue(s, s.arr_m[p], t, s.arr_closed[p])


@kernel(inline=True)
def dispatch(s, g, m, bi, now) -> float:
    """Send the ``BATCHES[bi]`` oldest requests of ``m`` to GPU ``g`` at time ``now``; their finish time.

    Returns -1.0 and changes nothing when GPU ``g``'s batch FIFO is full (the caller grows it and retries).
    The caller guarantees that ``m`` has at least ``BATCHES[bi]`` pending requests.
    """
    length = s.gpu_i[g, GI_LEN]
    capacity = s.batch_f.shape[1]
    if length == capacity:
        return -1.0
    mi = s.model_i
    b = BATCHES[bi]
    run = s.exec_ms[m, bi]
    start = max(now, s.gpu_free[g])
    finish = start + run
    off, cap, head = mi[MI_QOFF, m], mi[MI_QCAP, m], mi[MI_QHEAD, m]
    slo = s.model_f[MF_SLO, m]
    late = 0
    closed = 0
    for k in range(b):
        pos = off + (head + k) % cap
        if s.q_t[pos] + slo < finish:
            late += 1
        if s.q_closed[pos]:
            closed += 1
    mi[MI_QHEAD, m] = (head + b) % cap
    mi[MI_QLEN, m] -= b
    slot = (s.gpu_i[g, GI_HEAD] + length) % capacity
    s.batch_f[g, slot, BF_FINISH] = finish
    s.batch_f[g, slot, BF_EXEC] = run
    s.batch_i[g, slot, BI_MODEL] = m
    s.batch_i[g, slot, BI_SIZE] = b
    s.batch_i[g, slot, BI_LATE] = late
    s.batch_i[g, slot, BI_CLOSED] = closed
    s.gpu_i[g, GI_LEN] = length + 1
    s.gpu_free[g] = finish
    s.counters[C_DISPATCHED] += b
    s.counters[C_DISPATCHED_E1] += b * s.exec_ms[m, 0]
    s.counters[C_BATCHES] += 1
    s.counters[C_BATCHES_BY_SIZE + bi] += 1
    row = _bin(s, now)
    s.bins[row, B_BATCHES] += 1
    s.bins[row, B_DISPATCHED] += b
    head_changed(s, m)
    return finish


@kernel(inline=True)
def next_completion(s):
    """(time, GPU) of the earliest unfinished batch, or (inf, -1)."""
    best = INF
    gpu = -1
    for g in range(s.gpu_free.shape[0]):
        if s.gpu_i[g, GI_LEN] > 0:
            finish = s.batch_f[g, s.gpu_i[g, GI_HEAD], BF_FINISH]
            if finish < best:
                best = finish
                gpu = g
    return best, gpu


@kernel(inline=True)
def complete(s, g) -> bool:
    """Finish GPU ``g``'s oldest batch (the clock moves to its finish); True if a closed-loop client re-sent."""
    capacity = s.batch_f.shape[1]
    slot = s.gpu_i[g, GI_HEAD]
    t = s.batch_f[g, slot, BF_FINISH]
    m = s.batch_i[g, slot, BI_MODEL]
    b = s.batch_i[g, slot, BI_SIZE]
    late = s.batch_i[g, slot, BI_LATE]
    closed = s.batch_i[g, slot, BI_CLOSED]
    s.gpu_i[g, GI_HEAD] = (slot + 1) % capacity
    s.gpu_i[g, GI_LEN] -= 1
    s.scal_f[SF_NOW] = t
    e1 = s.exec_ms[m, 0]
    s.counters[C_ON_TIME] += b - late
    s.counters[C_LATE] += late
    s.counters[C_ON_TIME_E1] += (b - late) * e1
    s.counters[C_LATE_E1] += late * e1
    s.counters[C_BUSY_MS] += s.batch_f[g, slot, BF_EXEC]
    row = _bin(s, t)
    s.bins[row, B_COMPLETED] += b
    s.bins[row, B_ON_TIME] += b - late
    resent = closed > 0 and t < s.model_f[MF_CLOSED_END, m]
    if resent:
        for _ in range(closed):
            enqueue(s, m, t, True)
    return resent


@kernel(inline=True)
def next_timeout(s) -> float:
    """When the next pending request times out (the smallest oldest-request timeout), or inf."""
    m = heaps.valid_top(s.h_key, s.h_mv, s.scal_i, H_EXPIRY, s.model_i[MI_VERSION])
    return INF if m < 0 else s.h_key[H_EXPIRY, 0]


@kernel(inline=True)
def time_out_next(s) -> bool:
    """Drop the request at the top of the timeout heap at its timeout time; True if its client re-sent."""
    mi = s.model_i
    m = s.h_mv[H_EXPIRY, 0, 0]
    t = s.h_key[H_EXPIRY, 0]
    heaps.pop(s.h_key, s.h_mv, s.scal_i, H_EXPIRY)
    s.scal_f[SF_NOW] = t
    pos = mi[MI_QOFF, m] + mi[MI_QHEAD, m]
    closed = s.q_closed[pos]
    mi[MI_QHEAD, m] = (mi[MI_QHEAD, m] + 1) % mi[MI_QCAP, m]
    mi[MI_QLEN, m] -= 1
    s.counters[C_TIMED_OUT] += 1
    s.counters[C_TIMED_OUT_E1] += s.exec_ms[m, 0]
    s.bins[_bin(s, t), B_TIMED_OUT] += 1
    head_changed(s, m)
    resent = closed and t < s.model_f[MF_CLOSED_END, m]
    if resent:
        enqueue(s, m, t, True)
    return resent


@kernel()
def most_urgent(s, k, models, pending, laxity, keys) -> int:
    """The up-to-``k`` active models whose oldest request times out first, most urgent first.

    Fills ``models``, ``pending`` (queue lengths), ``laxity`` (timeout time - now = deadline - now -
    batch-1 time, ms) and ``keys`` (timeout times) and returns how many were found; the heaps keep their
    valid entries.
    """
    version = s.model_i[MI_VERSION]
    now = s.scal_f[SF_NOW]
    found = 0
    while found < k and heaps.valid_top(s.h_key, s.h_mv, s.scal_i, H_EXPIRY, version) >= 0:
        m = s.h_mv[H_EXPIRY, 0, 0]
        models[found] = m
        keys[found] = s.h_key[H_EXPIRY, 0]
        pending[found] = s.model_i[MI_QLEN, m]
        laxity[found] = keys[found] - now
        heaps.pop(s.h_key, s.h_mv, s.scal_i, H_EXPIRY)
        found += 1
    for i in range(found):
        heaps.push(s.h_key, s.h_mv, s.scal_i, H_EXPIRY, keys[i], models[i], version[models[i]], version)
    return found


@kernel()
def dispatch_now(s, g, m, bi, out) -> int:
    """``dispatch`` at the current time, reporting (start, finish, late requests) in ``out``; -1 if the
    GPU's batch FIFO is full (nothing changed), else 0."""
    now = s.scal_f[SF_NOW]
    start = max(now, s.gpu_free[g])
    finish = dispatch(s, g, m, bi, now)
    if finish < 0:
        return -1
    slot = (s.gpu_i[g, GI_HEAD] + s.gpu_i[g, GI_LEN] - 1) % s.batch_f.shape[1]
    out[0] = start
    out[1] = finish
    out[2] = s.batch_i[g, slot, BI_LATE]
    return 0
