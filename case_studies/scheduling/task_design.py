"""The scheduling task design: what the agent sees (25 numbers), what it chooses (12 x infer/batch) and
which choices are valid.

State (``SchedulingSchema.state_space``, ``2 x slots + 1`` numbers): for each of the ``slots`` most urgent
models (most urgent first) its pending requests and the laxity of its oldest request, padded with (0 pending,
1,000 ms laxity: not urgent) when fewer models have requests; then the decided GPU's outstanding work. The
converter scales them so a network sees numbers of order one: pending / 16 (the largest batch) and times /
25 ms, each clipped at 4 (64 requests; 100 ms, so the padding reads as "far from urgent").

Action (a ``Dict`` of named heads, ``slotNN_infer`` and ``slotNN_batch`` per slot; the standard view shows
it as ``MultiDiscrete([5, 2] x slots)``, heads in name order: a slot's batch, then its infer): per slot null (0) or infer (1), and a batch size index into
1, 2, 4, 8, 16. The chosen slots' batches are dispatched onto the decided GPU in urgency order.

Masks (``masks``, one of ``MASK_DESIGNS``): ``fit`` (the default, the modelled study's) allows infer only for a
slot that holds a model with pending requests, and batch sizes only up to the model's pending requests. ``late``
also forbids every batch that would finish late: one that, dispatched alone onto the decided GPU (starting now, or
when the GPU finishes the work already dispatched to it), would finish after the deadline (arrival + SLO) of its
model's oldest pending request; a slot with no such batch that is on time allows null only, as an empty slot does.
(Two batches chosen in one action run one after the other, so the second may still be late: the mask judges each
batch alone.) ``late-idle`` is ``late`` that also waits for the decided GPU, as Clockwork does: while the GPU's
outstanding work is at least ``IDLE_BEFORE_MS`` (1 ms, the interval between decision points, so it would still be
busy at the next one) every slot allows null only, and a batch is dispatched only onto a GPU that frees before the
next decision point. ``late-idle-joint`` is ``late-idle`` with an action's batches judged together, which
per-head masks cannot express: the chosen batches are taken in urgency order, each starting when the one before
it finishes, and a batch that would then end after its model's oldest deadline is not dispatched (its requests
stay pending, and it earns no reward); the batches before and after it are judged as usual. An empty slot allows
null and batch index 0 (no head is ever fully masked). An agent that ignores the masks is corrected, not failed:
infer on an empty slot does nothing and a batch larger than the pending requests becomes the largest that fits; a
late batch is dispatched (except under ``late-idle-joint``, where it is not).
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from case_studies.scheduling.rewards import Reward
from case_studies.scheduling.simulator import SUPPORTED_BATCH_SIZES
from case_studies.scheduling.system import SLOTS, SchedulingState
from case_studies.scheduling.tasks import MASK_DESIGNS
from wield.converters import Converter
from wield.errors import ConfigError
from wield.schemas import Schema

PADDING_LAXITY_MS = 1000.0
PENDING_SCALE = 16.0
TIME_SCALE_MS = 25.0
CLIP = 4.0
_BATCHES = np.array(SUPPORTED_BATCH_SIZES)
IDLE_BEFORE_MS = 1.0  # late-idle: nothing is dispatched onto a GPU with this much outstanding work or more
WAITING_DESIGNS = ("late-idle", "late-idle-joint")  # the mask designs that wait for the GPU
JOINT_DESIGN = "late-idle-joint"  # the design that judges an action's batches together


def infer_head(slot: int) -> str:
    return f"slot{slot:02d}_infer"


def batch_head(slot: int) -> str:
    return f"slot{slot:02d}_batch"


class SchedulingSchema(Schema):
    """The layout for ``slots`` models per decision, with the ``masks`` design (``MASK_DESIGNS``; see the
    module docstring)."""

    name = "scheduling"

    def __init__(self, slots: int = SLOTS, masks: str = MASK_DESIGNS[0]) -> None:
        if masks not in MASK_DESIGNS:
            raise ConfigError("masks", masks, list(MASK_DESIGNS))
        self.slots = slots
        self.masks = masks
        self.state_space = gym.spaces.Box(0.0, CLIP, (2 * slots + 1,), np.float32)
        heads: dict[str, gym.spaces.Discrete] = {}
        for slot in range(slots):
            heads[infer_head(slot)] = gym.spaces.Discrete(2)
            heads[batch_head(slot)] = gym.spaces.Discrete(len(SUPPORTED_BATCH_SIZES))
        self.action_space = gym.spaces.Dict(heads)
        empty_batch = np.zeros(len(SUPPORTED_BATCH_SIZES), dtype=bool)
        empty_batch[0] = True
        self._empty = (np.array([True, False]), empty_batch)
        self._active_infer = np.array([True, True])

    def layout(self) -> Mapping[str, Any]:
        return {"slots": self.slots, "state": ["pending", "laxity_ms"] * self.slots + ["gpu_outstanding_ms"],
                "batch_sizes": list(SUPPORTED_BATCH_SIZES), "pending_scale": PENDING_SCALE,
                "time_scale_ms": TIME_SCALE_MS, "clip": CLIP, "padding_laxity_ms": PADDING_LAXITY_MS,
                "masks": self.masks}

    def action_mask(self, context: Any = None) -> dict[str, np.ndarray]:
        state: SchedulingState = context["state"]
        mask = {}
        late = self.masks != "fit"
        waiting = self.masks in WAITING_DESIGNS and state.outstanding_ms >= IDLE_BEFORE_MS
        if late and state.models.size and (state.deadline_ms is None or state.exec_ms is None
                                           or state.start_ms is None):
            raise ConfigError("state", "without start_ms, deadline_ms and exec_ms",
                              reason="the late masks need when a batch would start, the deadlines and the batch times")
        for slot in range(self.slots):  # new arrays every time: callers may keep and modify them
            if slot < state.models.size:
                allowed = _BATCHES <= state.pending[slot]
                if late:  # finish = start + batch time, on time while <= the oldest request's deadline
                    allowed &= state.start_ms + state.exec_ms[slot] <= state.deadline_ms[slot]
                    if waiting or not allowed.any():
                        mask[infer_head(slot)], mask[batch_head(slot)] = self._empty[0].copy(), self._empty[1].copy()
                        continue
                mask[infer_head(slot)] = self._active_infer.copy()
                mask[batch_head(slot)] = allowed
            else:
                mask[infer_head(slot)], mask[batch_head(slot)] = self._empty[0].copy(), self._empty[1].copy()
        return mask


class SchedulingConverter(Converter[SchedulingSchema]):
    """Observation scaling, slot actions to dispatches and back, and the reward (``rewards.Reward``)."""

    def __init__(self, schema: SchedulingSchema, reward: Reward | None = None) -> None:
        super().__init__(schema)
        self.reward = reward or Reward()

    def system_to_agent_state(self, system_state: SchedulingState, context: Any = None) -> np.ndarray:
        slots = self.schema.slots
        observation = np.zeros(2 * slots + 1, dtype=np.float32)
        observation[1:2 * slots:2] = PADDING_LAXITY_MS / TIME_SCALE_MS
        found = system_state.models.size
        observation[0:2 * found:2] = system_state.pending / PENDING_SCALE
        observation[1:2 * found:2] = system_state.laxity_ms / TIME_SCALE_MS
        observation[-1] = system_state.outstanding_ms / TIME_SCALE_MS
        return np.clip(observation, 0.0, CLIP, out=observation)

    def agent_to_system_action(self, agent_action: Mapping[str, Any], context: Any = None) -> tuple:
        state: SchedulingState = context["state"]
        dispatches = []
        joint = self.schema.masks == JOINT_DESIGN
        start = state.start_ms
        for slot in range(state.models.size):
            if int(agent_action[infer_head(slot)]) != 1:
                continue
            pending = int(state.pending[slot])
            index = min(int(agent_action[batch_head(slot)]), int(np.searchsorted(_BATCHES, pending, "right")) - 1)
            if joint:  # after the batches dispatched before it in this action: not dispatched if it would be late
                finish = start + float(state.exec_ms[slot][index])
                if finish > state.deadline_ms[slot]:
                    continue
                start = finish
            dispatches.append((int(state.models[slot]), int(_BATCHES[index])))
        return tuple(dispatches)

    def system_to_agent_action(self, system_action: Any, context: Any = None) -> dict[str, int]:
        state: SchedulingState = context["state"]
        slot_of = {int(model): slot for slot, model in enumerate(state.models.tolist())}
        action = {head: 0 for head in self.schema.action_space.spaces}
        for model, batch in system_action:
            slot = slot_of[int(model)]
            action[infer_head(slot)] = 1
            action[batch_head(slot)] = SUPPORTED_BATCH_SIZES.index(int(batch))
        return action

    def system_to_agent_reward(self, metrics: Mapping[str, Any], context: Any = None) -> float:
        return self.reward(metrics)
