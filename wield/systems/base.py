"""The system adapter contract: what a user implements to put a new system under Wield's control.

An adapter wraps one live system (a database, a cluster) or a simulator. Wield drives it through five
calls and never looks inside:

- ``reset()`` returns the system to its initial configuration (e.g. no secondary indexes);
- ``state()`` returns the current configuration in system terms (whatever the converter understands);
- ``apply(action)`` executes a system action (create an index, place a graph);
- ``measure(workload)`` runs or evaluates the workload items under the current configuration and returns
  raw metrics (a JSON-serialisable dict);
- ``close()`` releases connections and temporary files.

Adapters count their own work in ``stats`` (executions, time spent in the system) so the overhead of the
workbench itself can be measured.

Stateful systems and decision points (optional; the defaults give one decision per workload item):

- ``start_episode(workload)`` is called after ``reset()`` with the episode's workload (a simulator loads
  its request trace here);
- ``context()`` returns extra entries for the step context that the converter, the schema's mask, the
  reward and labelling rules see (``wield.envs.StepContext``); they are added last, so a system-driven
  adapter may replace ``item`` (e.g. with the GPU it asks about);
- ``needs_decision(context)`` says whether the agent must decide at this step (default: always); when it
  says no, the environment calls ``skip(context)`` (default: ``apply(None)``), measures, and adds that
  step's reward to the reward of the preceding decision (semi-MDP);
- ``episode_over(context)`` says whether the episode has ended (default: after the last workload item);
  a time-driven simulator ends it when its trace is drained;
- ``episode_cut(context)``, asked once ``episode_over`` says yes, says whether the episode was cut short
  by a limit (a decision, step or time budget) with the task unfinished rather than reaching its true end
  (default: never). The environment then reports ``truncated`` instead of ``terminated`` (gymnasium's
  semantics), and learners bootstrap from the value of the last observation instead of taking it as 0.
"""

from __future__ import annotations

import abc
from typing import Any, Mapping, Sequence


class SystemAdapter(abc.ABC):
    """Base class of every system adapter."""

    name: str = "system"

    @abc.abstractmethod
    def reset(self) -> None:
        """Return to the initial configuration."""

    @abc.abstractmethod
    def state(self) -> Any:
        """The current configuration in system terms."""

    @abc.abstractmethod
    def apply(self, action: Any) -> None:
        """Execute one system action; ``None`` means do nothing."""

    @abc.abstractmethod
    def measure(self, workload: Sequence[Any]) -> dict[str, Any]:
        """Raw metrics of ``workload`` under the current configuration."""

    # -- optional: episodes, context and decision points (see the module docstring) ------------------
    def start_episode(self, workload: Sequence[Any]) -> None:
        """Begin an episode on ``workload`` (called after ``reset``). Default: nothing."""

    def context(self) -> Mapping[str, Any]:
        """Extra entries of the step context (default: none)."""
        return {}

    def needs_decision(self, context: Mapping[str, Any]) -> bool:
        """Whether the agent must decide at the step of ``context`` (default: always)."""
        return True

    def skip(self, context: Mapping[str, Any]) -> None:
        """Advance through a step that needs no decision (default: ``apply(None)``). It may advance the
        system as far as it likes (a simulator may jump to its next decision point): one call is one step."""
        self.apply(None)

    def episode_over(self, context: Mapping[str, Any]) -> bool:
        """Whether the episode has ended before the step of ``context`` (default: every item was handled)."""
        return context["step"] >= len(context["workload"])

    def episode_cut(self, context: Mapping[str, Any]) -> bool:
        """Once ``episode_over``: whether a limit cut the episode short with the task unfinished (reported as
        ``truncated``) rather than the task ending (``terminated``). Default: never (the workload's end is
        the task's end)."""
        return False

    def close(self) -> None:
        """Release resources. Safe to call twice."""

    @property
    def stats(self) -> dict[str, float]:
        """Counters of work done in the system (executions, seconds inside the system...)."""
        return {}

    def __enter__(self) -> "SystemAdapter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
