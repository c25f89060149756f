"""Compiled decision steps: the scheduling environment's whole step (the agent's action, the rewards, the next
decision point, its observation and masks) in one call into compiled code, for the vector environment.

The rules are ``system.ServingSystem``'s, ``task_design``'s and ``rewards.Reward``'s, kept identical (the
vector environment's tests play the same actions through both and compare every observation, mask, reward
and final metric):

- decision points at t = 1, 2, ... ms, then GPU 0, 1, ..., G-1 in turn; a point with nothing pending is
  skipped and what happens meanwhile is rewarded to the decision before;
- the observation (``2 x slots + 1`` numbers: pending / 16 and laxity / 25 ms per slot, padding 1,000 ms,
  the GPU's outstanding work / 25 ms, clipped to [0, 4]) and the flat masks in the standard view's head
  order (given by ``layout``: where each slot's infer and batch heads are in the action and in the mask);
  ``design`` is the mask design's index in ``MASK_DESIGNS`` (0 fit, 1 late, 2 late-idle, 3 late-idle-joint):
  with late a batch that would finish after its model's oldest deadline, started when the decided GPU is next
  free, is masked too, and a slot with no batch left allows null only; with late-idle (and late-idle-joint)
  also every slot while the GPU's outstanding work is at least ``IDLE_BEFORE_MS``;
- the chosen slots' batches are dispatched in slot order, a batch larger than the pending requests becomes
  the largest that fits; an infer on an empty slot does nothing; with late-idle-joint a batch that would finish
  after its model's oldest deadline, started when the batches dispatched before it end, is not dispatched;
- the reward of ``rewards.Reward`` (``reward`` holds kind, GPU weight, late charge and scale).

Per environment ``i``, besides its simulator's ``SimState``, row ``i`` of: ``positions`` (tick, GPU, decisions
so far, decision limit or 0, over), ``lasts`` (the counters the previous reward was measured at), and the
current decision's slots (``models``, ``pending``, ``laxity``, ``keys`` work space, ``found``), observation
and masks. One call per environment and step: arrays are passed whole with the row, so no view is made.
"""

from __future__ import annotations

import numpy as np

from case_studies.scheduling import engine, schedulers
from case_studies.scheduling.rewards import CORRECTION_FACTOR, EARLY_FACTOR
from case_studies.scheduling.state import (BATCHES, BI_LATE, C_LATE, C_LATE_E1, C_ON_TIME, C_TIMED_OUT,
                                           C_TIMED_OUT_E1, GI_HEAD, GI_LEN, MF_SLO, MI_QHEAD, MI_QOFF, N_BATCHES,
                                           SF_NOW, SI_ARRIVAL_PTR, SI_N_ACTIVE, kernel)
from case_studies.scheduling.task_design import (CLIP, IDLE_BEFORE_MS, JOINT_DESIGN, MASK_DESIGNS, PADDING_LAXITY_MS,
                                                 PENDING_SCALE, TIME_SCALE_MS, WAITING_DESIGNS)

# position (int64)
P_TICK, P_GPU, P_DECISIONS, P_LIMIT, P_OVER = range(5)
N_POSITION = 5
# last (float64): the counters at the previous measurement
L_ON_TIME, L_LATE, L_TIMED_OUT, L_LATE_E1, L_TIMED_OUT_E1 = range(5)
N_LAST = 5
# reward (float64)
R_KIND, R_GPU_WEIGHT, R_LATE_CHARGE, R_SCALE = range(4)
KIND_DENSE, KIND_DENSE_NO_GPU, KIND_SPARSE = 0, 1, 2
CHARGE_DISPATCH, CHARGE_COMPLETION = 0, 1
# layout (int64, per slot): action index of the infer head, of the batch head; mask offset of each
Y_INFER, Y_BATCH, Y_INFER_MASK, Y_BATCH_MASK = range(4)
# the mask designs by index in MASK_DESIGNS (``design``), named as task_design names them
D_FIT = MASK_DESIGNS.index("fit")
WAITS = np.array([name in WAITING_DESIGNS for name in MASK_DESIGNS])  # per design: waits for the GPU
D_JOINT = MASK_DESIGNS.index(JOINT_DESIGN)

NEED_ROOM = -1  # a GPU's batch FIFO is too small for a whole action: grow it and call again


@kernel(inline=True)
def _finished(s) -> bool:
    if s.scal_i[SI_ARRIVAL_PTR] != s.arr_t.shape[0] or s.scal_i[SI_N_ACTIVE] != 0:
        return False
    for g in range(s.gpu_i.shape[0]):
        if s.gpu_i[g, GI_LEN] > 0:
            return False
    return True


@kernel(inline=True)
def _advance_tick(s, position) -> None:
    """To the next millisecond with a request pending (or to the end of the workload), at GPU 0."""
    while True:
        position[P_TICK] += 1
        schedulers.advance(s, float(position[P_TICK]), schedulers.NONE, 0.0)
        if s.scal_i[SI_N_ACTIVE] > 0:
            break
        if _finished(s):
            position[P_OVER] = 1
            break
    position[P_GPU] = 0


@kernel(inline=True)
def _next_gpu_or_tick(s, position) -> None:
    if position[P_GPU] + 1 < s.gpu_free.shape[0]:
        position[P_GPU] += 1
    else:
        _advance_tick(s, position)


@kernel(inline=True)
def _measure(s, last, reward, decided, outstanding, early, late_dispatched_e1) -> float:
    """The reward of what happened since the previous measurement (``rewards.Reward``)."""
    c = s.counters
    on_time = c[C_ON_TIME] - last[L_ON_TIME]
    late = c[C_LATE] - last[L_LATE]
    timed_out = c[C_TIMED_OUT] - last[L_TIMED_OUT]
    late_e1 = c[C_LATE_E1] - last[L_LATE_E1]
    timed_out_e1 = c[C_TIMED_OUT_E1] - last[L_TIMED_OUT_E1]
    last[L_ON_TIME], last[L_LATE], last[L_TIMED_OUT] = c[C_ON_TIME], c[C_LATE], c[C_TIMED_OUT]
    last[L_LATE_E1], last[L_TIMED_OUT_E1] = c[C_LATE_E1], c[C_TIMED_OUT_E1]
    kind = int(reward[R_KIND])
    if kind == KIND_SPARSE:
        return reward[R_SCALE] * (on_time - late - timed_out)
    charged = late_dispatched_e1 if int(reward[R_LATE_CHARGE]) == CHARGE_DISPATCH else late_e1
    value = early - CORRECTION_FACTOR * EARLY_FACTOR * (charged + timed_out_e1)
    if kind == KIND_DENSE and decided:
        value -= reward[R_GPU_WEIGHT] * outstanding
    return reward[R_SCALE] * value


@kernel(inline=True)
def _clip(value: float) -> float:
    return min(max(value, 0.0), CLIP)


@kernel()
def observe(s, i, positions, layout, models, pending, laxity, keys, found, observations, masks, design) -> None:
    """Write environment ``i``'s current observation and flat masks (row ``i`` of each array) and how many
    of its slots hold a model (``found[i]``); ``design``: the mask design (see the module docstring)."""
    slots = layout.shape[0]
    n = engine.most_urgent(s, slots, models[i], pending[i], laxity[i], keys[i])
    found[i] = n
    now = s.scal_f[SF_NOW]
    start = max(now, s.gpu_free[positions[i, P_GPU]])
    outstanding = max(0.0, s.gpu_free[positions[i, P_GPU]] - now)
    late = design != D_FIT
    waiting = WAITS[design] and outstanding >= IDLE_BEFORE_MS
    observation = observations[i]
    mask = masks[i]
    for k in range(slots):
        batch = layout[k, Y_BATCH_MASK]
        infer = layout[k, Y_INFER_MASK]
        if k < n:
            observation[2 * k] = _clip(pending[i, k] / PENDING_SCALE)
            observation[2 * k + 1] = _clip(laxity[i, k] / TIME_SCALE_MS)
            m = models[i, k]
            deadline = s.q_t[s.model_i[MI_QOFF, m] + s.model_i[MI_QHEAD, m]] + s.model_f[MF_SLO, m]
            any_batch = False
            for b in range(N_BATCHES):
                allowed = BATCHES[b] <= pending[i, k]
                if late and allowed:
                    allowed = not waiting and start + s.exec_ms[m, b] <= deadline
                mask[batch + b] = allowed
                any_batch = any_batch or allowed
            mask[infer] = True
            mask[infer + 1] = any_batch
            if not any_batch:  # every batch would be late: null only, as an empty slot
                mask[batch] = True
        else:
            observation[2 * k] = 0.0
            observation[2 * k + 1] = _clip(PADDING_LAXITY_MS / TIME_SCALE_MS)
            mask[infer] = True
            mask[infer + 1] = False
            mask[batch] = True
            for b in range(1, N_BATCHES):
                mask[batch + b] = False
    observation[2 * slots] = _clip(outstanding / TIME_SCALE_MS)


@kernel()
def start(s, i, positions, lasts) -> None:
    """Begin environment ``i``'s episode on its freshly reset simulator: to the first decision point."""
    position = positions[i]
    last = lasts[i]
    position[P_TICK] = 0
    position[P_GPU] = 0
    position[P_DECISIONS] = 0
    position[P_OVER] = 0
    last[:] = 0.0
    _advance_tick(s, position)


@kernel()
def decide(s, i, positions, lasts, reward, layout, actions, models, pending, laxity, keys, found, observations,
           masks, out, design) -> int:
    """Apply environment ``i``'s action (row ``i`` of ``actions``, the standard view's flat action) at its
    current decision, move to its next decision point (skipping those with nothing pending) and observe it
    (``observe``). Writes the reward (this decision's and the skipped points') to ``out[i, 0]`` and the
    requests dispatched to ``out[i, 1]``; returns 1 if the episode is over (the observation is then the
    final point's), 0 if not, and ``NEED_ROOM`` (nothing changed) if the GPU's batch FIFO could not take
    ``slots`` more batches. ``design``: the mask design (``observe``)."""
    position = positions[i]
    last = lasts[i]
    action = actions[i]
    g = position[P_GPU]
    if s.gpu_i[g, GI_LEN] + layout.shape[0] > s.batch_f.shape[1]:
        return NEED_ROOM
    now = s.scal_f[SF_NOW]
    early = 0.0
    late_dispatched_e1 = 0.0
    dispatched = 0
    for k in range(found[i]):
        if action[layout[k, Y_INFER]] != 1:
            continue
        m = models[i, k]
        index = min(action[layout[k, Y_BATCH]], engine.largest_batch_index(pending[i, k]))
        if design == D_JOINT and (max(now, s.gpu_free[g]) + s.exec_ms[m, index]
                                  > engine.head_arrival(s, m) + s.model_f[MF_SLO, m]):
            continue  # late-idle-joint: late after the batches before it in this action
        engine.dispatch(s, g, m, index, now)
        slot = (s.gpu_i[g, GI_HEAD] + s.gpu_i[g, GI_LEN] - 1) % s.batch_f.shape[1]
        e1 = s.exec_ms[m, 0]
        b = BATCHES[index]
        early += 2.0 * b * e1 - s.exec_ms[m, index]
        late_dispatched_e1 += s.batch_i[g, slot, BI_LATE] * e1
        dispatched += b
    outstanding = max(0.0, s.gpu_free[g] - now)
    position[P_DECISIONS] += 1
    if position[P_LIMIT] > 0 and position[P_DECISIONS] >= position[P_LIMIT]:
        position[P_OVER] = 1
    else:
        _next_gpu_or_tick(s, position)
    total = _measure(s, last, reward, True, outstanding, early, late_dispatched_e1)
    while position[P_OVER] == 0 and s.scal_i[SI_N_ACTIVE] == 0:  # nothing to decide: skipped
        _next_gpu_or_tick(s, position)
        total += _measure(s, last, reward, False, 0.0, 0.0, 0.0)
    out[i, 0] = total
    out[i, 1] = dispatched
    observe(s, i, positions, layout, models, pending, laxity, keys, found, observations, masks, design)
    return position[P_OVER]


KINDS = {"dense": KIND_DENSE, "dense-no-gpu": KIND_DENSE_NO_GPU, "sparse": KIND_SPARSE}
CHARGES = {"dispatch": CHARGE_DISPATCH, "completion": CHARGE_COMPLETION}


def reward_array(kind: str, gpu_weight: float, late_charge: str, scale: float) -> np.ndarray:
    """``decide``'s reward parameters for ``rewards.Reward(kind, gpu_weight, late_charge, scale)``."""
    return np.array([KINDS[kind], gpu_weight, CHARGES[late_charge], scale], dtype=np.float64)
