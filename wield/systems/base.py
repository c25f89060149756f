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
"""

from __future__ import annotations

import abc
from typing import Any, Sequence


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
