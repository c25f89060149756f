"""Converter: translates between the system view and the agent view using a schema's layout.

Four conversions, each taking an optional context for mappings that depend on it (the current query, the
parent task's decision):

- ``system_to_agent_state``: a system state (configuration plus the workload item) -> an observation;
- ``agent_to_system_action``: an agent action -> a system action (e.g. a compound index);
- ``system_to_agent_action``: a system action -> the agent action that produces it (demonstrations);
- ``system_to_agent_reward``: measured system metrics -> a scalar reward.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeVar

from wield.schemas.base import Schema

SchemaT = TypeVar("SchemaT", bound=Schema)


class Converter(abc.ABC, Generic[SchemaT]):
    """Base class of every converter; holds the schema whose layout it implements."""

    def __init__(self, schema: SchemaT) -> None:
        self.schema = schema

    @abc.abstractmethod
    def system_to_agent_state(self, system_state: Any, context: Any = None) -> Any:
        """Observation (an element of ``schema.state_space``) for a system state."""

    @abc.abstractmethod
    def agent_to_system_action(self, agent_action: Any, context: Any = None) -> Any:
        """System action for an agent action (an element of ``schema.action_space``)."""

    @abc.abstractmethod
    def system_to_agent_action(self, system_action: Any, context: Any = None) -> Any:
        """Agent action that ``agent_to_system_action`` maps to ``system_action`` in ``context``."""

    @abc.abstractmethod
    def system_to_agent_reward(self, metrics: Any, context: Any = None) -> float:
        """Scalar reward for measured system metrics."""
