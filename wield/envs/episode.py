"""Episodes decision point by decision point: the stepping rule shared by the environment, the demonstration
workflow and every policy evaluation.

At each step the system is shown in a ``StepContext``: the current workload ``item``, the whole
``workload``, the ``step`` index, the ``episode`` index, the system's current ``state`` and whatever the
adapter adds through ``SystemAdapter.context()``. By default step t handles item t and every step is a
decision; the episode ends after the last item. An adapter may say that a step needs no decision
(``needs_decision``): the system then advances on its own (``skip``), the step is measured and its reward
is added to the reward of the preceding decision (semi-MDP accounting). Steps before the first decision of
an episode belong to no decision: their reward is reported apart (``Episode.start`` returns it). An
adapter may also end the episode on its own terms (``episode_over``), e.g. when a request trace is drained,
and say that an end was a cut by a limit rather than the task's end (``episode_cut``): ``truncated`` is then
True (gymnasium's ``truncated`` rather than ``terminated``).
"""

from __future__ import annotations

from typing import Any, Sequence

from wield.converters.base import Converter
from wield.errors import DataError
from wield.systems.base import SystemAdapter


class StepContext(dict):
    """What the converter, the schema's mask, the reward and labelling rules see at one step: ``item``,
    ``workload``, ``step``, ``episode``, ``state`` and the adapter's extra entries. Keys read as attributes
    too (``context.item``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Episode:
    """One episode of ``system`` over ``workload``: ``start()``, then ``decide(system_action)`` at each
    decision point until ``over``. ``context`` is the current decision's context (after the last decision:
    the final context, whose ``item`` is the last one). With ``measure=False`` nothing is measured and every
    reward is 0 (demonstrations with expert rewards). Once ``over``, ``truncated`` says whether a limit cut
    the episode (``terminated`` is ``over and not truncated``)."""

    def __init__(self, system: SystemAdapter, converter: Converter, workload: Sequence[Any], index: int = 0, *,
                 measure: bool = True) -> None:
        self.system = system
        self.converter = converter
        self.workload = workload
        self.index = index
        self.measure = measure
        self.step = 0
        self.over = False
        self.truncated = False
        self.skipped = 0
        self.metrics: dict[str, Any] = {}
        self.context = StepContext()

    def make_context(self, step: int) -> StepContext:
        """The context of ``step`` with the system as it is now."""
        item = self.workload[min(step, len(self.workload) - 1)] if len(self.workload) else None
        context = StepContext(item=item, workload=self.workload, step=step, episode=self.index,
                              state=self.system.state())
        context.update(self.system.context())  # the adapter's entries last: they may replace ``item``
        return context

    def start(self) -> float:
        """Reset the system, begin the episode and advance to its first decision; returns the reward of the
        steps before it."""
        self.system.reset()
        self.system.start_episode(self.workload)
        self.step, self.over, self.truncated = 0, False, False
        reward = self._advance()
        if self.over:
            raise DataError(f"episode {self.index} of the workload ended before any decision was needed")
        return reward

    @property
    def terminated(self) -> bool:
        """The episode reached its true end (over and not cut by a limit)."""
        return self.over and not self.truncated

    def decide(self, system_action: Any) -> float:
        """Apply ``system_action`` at the current decision, measure, then advance to the next decision; returns
        the decision's reward plus that of the steps skipped after it."""
        if self.over:
            raise RuntimeError("the episode is over: start another one")
        context = self.context
        self.system.apply(system_action)
        reward = self._reward(context)
        self.step += 1
        return reward + self._advance()

    def _reward(self, context: StepContext) -> float:
        if not self.measure:
            return 0.0
        self.metrics = self.system.measure(self.workload)
        return float(self.converter.system_to_agent_reward(self.metrics, context))

    def _advance(self) -> float:
        """Skip the steps that need no decision; the reward of those steps."""
        reward, self.skipped = 0.0, 0
        while True:
            context = self.make_context(self.step)
            if self.system.episode_over(context):
                self.over, self.context = True, context
                self.truncated = bool(self.system.episode_cut(context))
                return reward
            if self.system.needs_decision(context):
                self.context = context
                return reward
            self.system.skip(context)
            reward += self._reward(context)
            self.step += 1
            self.skipped += 1
