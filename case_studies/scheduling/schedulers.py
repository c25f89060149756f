"""Compiled baseline schedulers and the event loop that advances the simulated system.

Every baseline uses Clockwork's trigger: a GPU is offered work whenever its outstanding work (the time
until it finishes what was dispatched to it) is at most ``lookahead_ms`` (5 ms by default). The GPU with the
least outstanding work is offered first (ties: lowest index); a GPU keeps receiving batches until its
outstanding work exceeds the lookahead or the scheduler finds nothing to run on it. Decisions are made at
event times (arrivals, completions, a GPU's work falling to the lookahead), after every event of that
instant. What each scheduler runs on the GPU it is offered, with ``start`` = when that GPU becomes free
(now, if idle):

- ``clockwork`` (Clockwork's inference scheduler): every model with pending requests has one strategy per
  batch size ``b`` in 1, 2, 4, 8, 16 that it has at least ``b`` requests for: run its ``b`` oldest requests,
  latest start = oldest request's deadline - ``exec_ms[model, b]``. Strategies are taken in order of latest
  start (for one model, larger batches come first); the first whose latest start is not before ``start``
  is run (so all its requests meet their deadline). Ties prefer the larger batch, then the lower model index.
  Strategies whose latest start is before now can never run and are discarded.
- ``fifo``: the model of the oldest pending request (by arrival); the largest batch size <= its pending
  requests. Not SLO-aware: it runs requests that will miss their deadline.
- ``edf`` (earliest deadline first): the model whose oldest request has the earliest deadline; the largest
  batch size <= its pending requests.
- ``random``: a uniformly random model with pending requests and a uniformly random batch size among those
  <= its pending requests (the kernels' seeded generator).

All of them leave timeouts to the system (see ``engine``).
"""

from __future__ import annotations

import numpy as np

from case_studies.scheduling import engine, heaps
from case_studies.scheduling.state import (H_EDF, H_FIFO, H_STRATEGY, MI_ACTIVE_LIST, MI_QLEN, MI_VERSION, N_BATCHES,
                                           SF_NOW, SI_ARRIVAL_PTR, SI_HEAP_SIZE, SI_N_ACTIVE, kernel)

NONE, CLOCKWORK, FIFO, EDF, RANDOM = 0, 1, 2, 3, 4
SCHEDULERS = {"clockwork": CLOCKWORK, "fifo": FIFO, "edf": EDF, "random": RANDOM}
# the heaps (bits of state.SI_MAINTAINED) each baseline reads
HEAPS_USED = {"clockwork": sum(1 << (H_STRATEGY + i) for i in range(N_BATCHES)), "fifo": 1 << H_FIFO,
              "edf": 1 << H_EDF, "random": 0}
DEFAULT_LOOKAHEAD_MS = 5.0
_EPS = 1e-9  # tolerance of "outstanding work <= lookahead" against rounding of gpu_free - lookahead


@kernel()
def _clockwork_choice(s, start, now):
    """(model, batch index) of the first valid strategy for a GPU free at ``start``, or (-1, -1)."""
    version = s.model_i[MI_VERSION]
    best_key = np.inf
    best_m = -1
    best_i = -1
    for i in range(N_BATCHES - 1, -1, -1):  # larger batches first: a tie keeps the larger one
        h = H_STRATEGY + i
        while heaps.valid_top(s.h_key, s.h_mv, s.scal_i, h, version) >= 0 and s.h_key[h, 0] < now:
            heaps.pop(s.h_key, s.h_mv, s.scal_i, h)  # latest start already passed: never valid again
        if s.scal_i[SI_HEAP_SIZE + h] == 0:
            continue
        pos = 0 if s.h_key[h, 0] >= start else heaps.min_at_least(s.h_key, s.h_mv, s.scal_i, h, version, start,
                                                                               s.scratch)
        if pos >= 0 and s.h_key[h, pos] < best_key:
            best_key = s.h_key[h, pos]
            best_m = s.h_mv[h, pos, 0]
            best_i = i
    return best_m, best_i


@kernel()
def choose(s, scheduler, start, now):
    """(model, batch index) that ``scheduler`` runs on a GPU free at ``start``, or (-1, -1)."""
    if s.scal_i[SI_N_ACTIVE] == 0:
        return -1, -1
    if scheduler == CLOCKWORK:
        return _clockwork_choice(s, start, now)
    if scheduler == FIFO or scheduler == EDF:
        m = heaps.valid_top(s.h_key, s.h_mv, s.scal_i, H_FIFO if scheduler == FIFO else H_EDF, s.model_i[MI_VERSION])
        return m, engine.largest_batch_index(s.model_i[MI_QLEN, m])
    if scheduler == RANDOM:
        m = s.model_i[MI_ACTIVE_LIST, heaps.next_random(s.scal_i) % s.scal_i[SI_N_ACTIVE]]
        top = engine.largest_batch_index(s.model_i[MI_QLEN, m])
        return m, heaps.next_random(s.scal_i) % (top + 1)
    return -1, -1


@kernel()
def decide(s, scheduler, lookahead, only_gpu) -> int:
    """Offer work to the eligible GPUs (or only to ``only_gpu`` if >= 0) at the current time.

    Returns the number of batches dispatched, or -1 if a GPU's batch FIFO was full (grow it and call again).
    """
    now = s.scal_f[SF_NOW]
    n_gpus = s.gpu_free.shape[0]
    declined = s.declined
    declined[:] = False
    dispatched = 0
    while s.scal_i[SI_N_ACTIVE] > 0:
        g = -1
        for k in range(n_gpus):
            if declined[k] or (only_gpu >= 0 and k != only_gpu) or s.gpu_free[k] - now > lookahead + _EPS:
                continue
            if g < 0 or s.gpu_free[k] < s.gpu_free[g]:
                g = k
        if g < 0:
            break
        m, i = choose(s, scheduler, max(now, s.gpu_free[g]), now)
        if m < 0:
            declined[g] = True
            continue
        if engine.dispatch(s, g, m, i, now) < 0:
            return -1
        dispatched += 1
    return dispatched


@kernel()
def advance(s, until, scheduler, lookahead) -> int:
    """Process events in time order up to ``until`` (ms), deciding with ``scheduler`` unless it is NONE.

    Order at one instant: batch completions, then arrivals, then scheduling decisions; a request whose
    timeout time equals the instant is dropped only after the decisions. Events at exactly ``until`` are
    processed; timeouts at exactly ``until`` are not (the request may still be dispatched then). At the
    end the clock is ``until`` (or the last event, if ``until`` is infinite). Returns 0, or -1 if a batch
    FIFO needs to grow (the state is consistent; call again after growing it).
    """
    deciding = scheduler != NONE
    pending_decision = deciding
    n_arrivals = s.arr_t.shape[0]
    n_gpus = s.gpu_free.shape[0]
    while True:
        now = s.scal_f[SF_NOW]
        t_done, g_done = engine.next_completion(s)
        p = s.scal_i[SI_ARRIVAL_PTR]
        t_arrive = s.arr_t[p] if p < n_arrivals else np.inf
        t_wake = np.inf
        if deciding and s.scal_i[SI_N_ACTIVE] > 0:
            for g in range(n_gpus):
                w = s.gpu_free[g] - lookahead
                if now < w < t_wake:
                    t_wake = w
        t_next = min(t_done, t_arrive, t_wake)
        if pending_decision and t_next > now:
            pending_decision = False
            if decide(s, scheduler, lookahead, -1) < 0:
                return -1
            continue
        t_out = engine.next_timeout(s)
        if t_out < t_next and t_out < until:
            if engine.time_out_next(s):
                pending_decision = deciding
            continue
        if t_next > until or t_next == np.inf:
            break
        if t_done <= t_arrive and t_done <= t_wake:
            engine.complete(s, g_done)
        elif t_arrive <= t_wake:
            engine.arrive_next(s)
        else:
            s.scal_f[SF_NOW] = t_wake
        pending_decision = deciding
    if until != np.inf and until > s.scal_f[SF_NOW]:
        s.scal_f[SF_NOW] = until
    return 0
