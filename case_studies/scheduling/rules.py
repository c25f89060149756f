"""Policies that need no learning, acting through the scheduling environment: the trivial rungs of the
learning verdict (``wield.protocols.verdict``).

- ``NeverDispatch``: never runs anything. Every request times out; its return is what an agent gets for
  learning "do nothing", which can beat random dispatching under the dense reward.
- ``UrgentBatch``: when the decided GPU has less than ``idle_below_ms`` of work queued, run the most urgent
  model's largest feasible batch: the largest supported batch no larger than its pending requests whose
  execution, after the queued work, ends within its oldest request's laxity (batch 1 when none does).
  A one-line rule; on the low-SLO workloads it reaches Clockwork's SLO satisfaction.

Both are labelling rules over ``SchedulingState`` (``system.py``), so the environment's converter turns
their system actions into agent actions and they are played with the same steps and rewards as a learner.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from case_studies.scheduling.profile import BatchProfile, load_profile
from case_studies.scheduling.simulator import SUPPORTED_BATCH_SIZES
from case_studies.scheduling.system import SchedulingState
from wield.demonstrations import Label, LabellingRule

IDLE_BELOW_MS = 1.0


class NeverDispatch(LabellingRule):
    """Never dispatch a batch."""

    name = "never-dispatch"

    def label(self, configuration: SchedulingState, context: Any) -> Label:
        return Label((), margin=0.0)


class UrgentBatch(LabellingRule):
    """The most urgent model's largest feasible batch when the GPU is nearly idle (module docstring);
    execution times from ``profile`` when one is given (one for every model, or a list of one per model), else the model's own: its family's profile where
    the episode's workload names one per model (the Azure-like workloads), else the case study's ResNet-50
    profile (the low-SLO workloads)."""

    name = "urgent-batch"

    def __init__(self, profile: BatchProfile | Sequence[BatchProfile] | None = None,
                 idle_below_ms: float = IDLE_BELOW_MS) -> None:
        self.profile = profile  # one for every model, or one per model (the simulator's ``profile``)
        self.default = profile if isinstance(profile, BatchProfile) else load_profile()
        self.idle_below_ms = float(idle_below_ms)
        self._per_model: tuple[Any, list[BatchProfile] | None] = (None, None)  # (workload, its profiles)

    def _model_profile(self, model: int, context: Any) -> BatchProfile:
        if isinstance(self.profile, BatchProfile):
            return self.profile
        if self.profile is not None:
            return self.profile[model]
        tasks = context.get("workload") if isinstance(context, Mapping) else None
        workload = getattr(tasks[0], "workload", None) if tasks else None
        if workload is None:
            return self.default
        if self._per_model[0] is not workload:  # once per episode's workload, not per decision
            self._per_model = (workload, workload.execution_profiles())
        profiles = self._per_model[1]
        return profiles[model] if profiles is not None else self.default

    def label(self, configuration: SchedulingState, context: Any) -> Label:
        state = configuration
        if state.models.size == 0 or state.outstanding_ms >= self.idle_below_ms:
            return Label((), margin=0.0)
        model, pending, laxity = int(state.models[0]), int(state.pending[0]), float(state.laxity_ms[0])
        profile = self._model_profile(model, context)
        fitting = [b for b in SUPPORTED_BATCH_SIZES if b <= pending]
        feasible = [b for b in fitting if state.outstanding_ms + profile.ms(b) <= laxity]
        return Label(((model, max(feasible or [1])),), margin=0.0)
