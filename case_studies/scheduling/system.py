"""ServingSystem: the serving simulator as a Wield system adapter, with decision points every 1 ms per GPU.

Decision points (the time-driven invocation of the scheduler being modelled): at t = 1, 2, 3, ... ms the
simulator first processes every arrival, completion and timeout up to t, then the agent decides for GPU 0,
1, ..., G-1 in turn, at that instant (each GPU sees the dispatches of the GPUs before it). A point where no
request is pending needs no decision: the adapter skips it (and jumps over whole idle milliseconds), and
whatever happens meanwhile (late completions, timeouts) is rewarded to the decision before.

The system state at a decision is a ``SchedulingState``: the GPU and the time, the up to ``slots`` most
urgent models (those whose oldest request times out first) with their pending requests and the laxity of
their oldest request (deadline - now - batch-1 time, ms), and the GPU's outstanding work (ms). A system
action is a tuple of ``(model, batch_size)`` dispatches onto that GPU, in order (``()``: wait).

``measure`` reports what happened since the previous step: the early reward of the dispatched batches
(per request twice the batch-1 time minus its share of the batch time, GPU ms), requests finished on time,
late or timed out (counts and sums of their batch-1 times), the decided GPU's outstanding work after the
action, and, once the episode is over, the serving metrics of the whole episode (``metrics.ServingMetrics``).

Episodes (``start_episode``) take one ``EpisodeTask``: a workload, its GPU count, and optionally a limit on
decisions (training episodes, which the learner plays for a number of decisions); without a limit the
episode serves the whole workload (evaluation). An episode stopped at its limit with requests still to
serve is cut (``episode_cut``: the environment reports ``truncated``); one that served every request ends
(``terminated``). Simulators are cached per workload, so replaying a workload costs a reset only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.simulator import ServingSimulator
from case_studies.scheduling.workload import Workload
from wield.errors import ConfigError
from wield.systems import SystemAdapter

SLOTS = 12  # models shown to the agent per decision (the modelled design's N)
_CACHED_SIMULATORS = 4


@dataclass(frozen=True)
class EpisodeTask:
    """One episode: serve ``workload`` on ``n_gpus`` GPUs for ``decisions`` decisions (None: the whole
    workload, until every request is answered)."""

    workload: Workload
    n_gpus: int
    decisions: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.n_gpus, bool) or not isinstance(self.n_gpus, (int, np.integer)) or self.n_gpus < 1:
            raise ConfigError("n_gpus", self.n_gpus, reason="must be an integer >= 1")
        if self.decisions is not None and (isinstance(self.decisions, bool) or self.decisions < 1):
            raise ConfigError("decisions", self.decisions, reason="must be an integer >= 1 or None")


@dataclass(frozen=True, eq=False)
class SchedulingState:
    """What the agent is asked about: GPU ``gpu`` at ``now_ms``; per slot (most urgent first) the model,
    its pending requests and the laxity of its oldest request (ms); the GPU's outstanding work (ms). For the
    late masks (``task_design``): when a batch dispatched now would start (``start_ms``), each slot's oldest
    deadline (``deadline_ms``, arrival + SLO) and its execution times per batch size (``exec_ms``, slots x 5);
    None in a state built without them.

    Two states are equal when every field is (the arrays element by element, ``np.array_equal``), so
    ``==`` gives a plain bool and gymnasium's checker can compare ``info["system_state"]``. Not hashable
    (it holds arrays)."""

    gpu: int
    now_ms: float
    models: np.ndarray
    pending: np.ndarray
    laxity_ms: np.ndarray
    outstanding_ms: float
    start_ms: float | None = None
    deadline_ms: np.ndarray | None = None
    exec_ms: np.ndarray | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchedulingState):
            return NotImplemented
        return bool(self.gpu == other.gpu and self.now_ms == other.now_ms
                    and self.outstanding_ms == other.outstanding_ms
                    and np.array_equal(self.models, other.models) and np.array_equal(self.pending, other.pending)
                    and np.array_equal(self.laxity_ms, other.laxity_ms) and self.start_ms == other.start_ms
                    and _same(self.deadline_ms, other.deadline_ms) and _same(self.exec_ms, other.exec_ms))

    __hash__ = None  # type: ignore[assignment]


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is b if a is None or b is None else bool(np.array_equal(a, b))


class ServingSystem(SystemAdapter):
    """The serving simulator under Wield's control; see the module docstring."""

    name = "scheduling"

    def __init__(self, profile: BatchProfile | Sequence[BatchProfile] | None = None, slots: int = SLOTS,
                 lookahead_ms: float = 5.0) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ConfigError("slots", slots, reason="must be an integer >= 1")
        self.profile = profile
        self.slots = slots
        self.lookahead_ms = lookahead_ms
        self._simulators: dict[tuple[str, int], ServingSimulator] = {}
        self.sim: ServingSimulator | None = None
        self.task: EpisodeTask | None = None
        self.decisions = 0
        self._calls = 0

    # ------------------------------------------------------------------ episodes
    def reset(self) -> None:
        """Nothing to do before ``start_episode`` loads the episode's workload."""

    def start_episode(self, workload: Sequence[Any]) -> None:
        tasks = list(workload)
        if len(tasks) != 1 or not isinstance(tasks[0], EpisodeTask):
            raise ConfigError("episode workload", type(tasks[0]).__name__ if tasks else "empty",
                              reason="a scheduling episode is a list of one EpisodeTask")
        self.task = tasks[0]
        self.sim = self._simulator(self.task)
        self.sim.reset(0)
        self.decisions = 0
        self.gpu, self.tick = 0, 0
        self.over = False
        self._last_counters = self._counter_array()
        self._step_report = _EMPTY_STEP
        self._state: SchedulingState | None = None
        self._advance_tick()

    def _simulator(self, task: EpisodeTask) -> ServingSimulator:
        key = (task.workload.fingerprint(), int(task.n_gpus))
        sim = self._simulators.get(key)
        if sim is None:
            if len(self._simulators) >= _CACHED_SIMULATORS:
                self._simulators.pop(next(iter(self._simulators)))
            sim = ServingSimulator(task.workload, int(task.n_gpus), self.profile, lookahead_ms=self.lookahead_ms,
                                   baselines=())
            self._simulators[key] = sim
        return sim

    # ------------------------------------------------------------------ decision points
    def _advance_tick(self) -> None:
        """Move to the next millisecond with a request pending (or to the end of the workload)."""
        sim = self.sim
        while True:
            self.tick += 1
            sim.advance(float(self.tick))
            if sim.active_models() > 0:
                break
            if sim.finished:
                self.over = True
                break
        self.gpu = 0

    def _next_point(self) -> None:
        """After GPU ``gpu`` at the current tick: the next GPU, or the next tick."""
        self._state = None
        if self.task.decisions is not None and self.decisions >= self.task.decisions:
            self.over = True
            return
        if self.gpu + 1 < self.sim.n_gpus:
            self.gpu += 1
        else:
            self._advance_tick()

    def context(self) -> Mapping[str, Any]:
        return {"item": (self.tick, self.gpu)}

    def needs_decision(self, context: Mapping[str, Any]) -> bool:
        return self.sim.active_models() > 0

    def episode_over(self, context: Mapping[str, Any]) -> bool:
        return self.over

    def episode_cut(self, context: Mapping[str, Any]) -> bool:
        """The episode stopped at its decision limit with requests still to serve (``truncated``); it ends
        ``terminated`` only once every request is answered (as the vector environment's
        ``TimeLimit.truncated``)."""
        return self.over and not self.sim.finished

    def skip(self, context: Mapping[str, Any]) -> None:
        self._step_report = _EMPTY_STEP
        if self.gpu + 1 < self.sim.n_gpus:
            self.gpu += 1
        else:
            self._advance_tick()
        self._state = None

    # ------------------------------------------------------------------ state and actions
    def state(self) -> SchedulingState:
        if self._state is None:
            sim = self.sim
            models, pending, laxity = sim.most_urgent(self.slots)
            self._state = SchedulingState(self.gpu, sim.now, models, pending, laxity, sim.outstanding_ms(self.gpu),
                                          sim.start_ms(self.gpu), sim.oldest_deadlines(models), sim.exec_ms[models])
        return self._state

    def apply(self, action: Sequence[tuple[int, int]] | None) -> None:
        """Dispatch ``action``'s ``(model, batch_size)`` batches onto the current GPU, then move on."""
        sim, gpu = self.sim, self.gpu
        early = late_e1 = 0.0
        dispatched = 0
        for model, batch in action or ():
            done = sim.dispatch(gpu, int(model), int(batch))
            e1 = sim.execution_ms(int(model), 1)
            early += 2.0 * batch * e1 - sim.execution_ms(int(model), int(batch))
            late_e1 += done.late * e1
            dispatched += int(batch)
        self._step_report = (True, gpu, sim.outstanding_ms(gpu), early, dispatched, len(action or ()), late_e1)
        self.decisions += 1
        self._calls += 1
        self._next_point()

    def measure(self, workload: Sequence[Any]) -> dict[str, Any]:
        """What happened since the previous step (see the module docstring)."""
        counters = self._counter_array()
        change = counters - self._last_counters
        self._last_counters = counters
        decided, gpu, outstanding, early, dispatched, batches, late_dispatched_e1 = self._step_report
        self._step_report = _EMPTY_STEP
        on_time, late, timed_out, on_time_e1, late_e1, timed_out_e1 = change.tolist()
        metrics = {"decided": decided, "gpu": gpu, "outstanding_ms": outstanding, "early_ms": early,
                   "dispatched": dispatched, "batches": batches, "on_time": int(on_time), "late": int(late),
                   "timed_out": int(timed_out), "on_time_e1_ms": on_time_e1,
                   "late_e1_ms": late_e1, "timed_out_e1_ms": timed_out_e1,
                   "late_dispatched_e1_ms": late_dispatched_e1}
        if self.over:
            metrics["episode"] = self.sim.metrics().as_dict()
            metrics["episode"]["decisions"] = self.decisions
        return metrics

    def _counter_array(self) -> np.ndarray:
        c = self.sim.counters()
        return np.array([c["on_time"], c["late"], c["timed_out"], c["on_time_e1_ms"], c["late_e1_ms"],
                         c["timed_out_e1_ms"]], dtype=float)

    @property
    def stats(self) -> dict[str, float]:
        return {"decisions": float(self._calls)}


_EMPTY_STEP = (False, -1, 0.0, 0.0, 0, 0, 0.0)

