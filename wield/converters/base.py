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
import itertools
import math
from typing import Any, Generic, Sequence, TypeVar

import numpy as np

from wield.errors import ConfigError
from wield.schemas.base import Schema

SchemaT = TypeVar("SchemaT", bound=Schema)
SEARCH_LIMIT = 10_000


def _equal(a: Any, b: Any) -> bool:
    """Equality that also compares numpy arrays (inside tuples) element-wise."""
    try:
        return bool(np.all(a == b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a == b)
    except (TypeError, ValueError):
        return False


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

    def system_to_agent_action(self, system_action: Any, context: Any = None) -> Any:
        """Agent action that ``agent_to_system_action`` maps to ``system_action`` in ``context`` (rules and
        demonstrations act in system terms). Default: the first allowed action (``schema.action_mask``) that
        maps to it, searched over the action space; override it where the space is large (over
        ``SEARCH_LIMIT`` actions) or the mapping is cheap to invert."""
        from wield.agents.heads import ActionHeads

        heads = ActionHeads.from_space(self.schema.action_space)
        sizes = list(heads.sizes.values())
        if math.prod(sizes) > SEARCH_LIMIT:
            raise NotImplementedError(f"{type(self).__name__}.system_to_agent_action: the action space has "
                                      f"{math.prod(sizes)} actions; implement the inverse mapping")
        masks = heads.split_mask(self.schema.action_mask(context))
        allowed: list[Sequence[int]] = []
        for name, size in heads.sizes.items():
            mask = masks[name]
            allowed.append(range(size) if mask is None else [int(i) for i in np.flatnonzero(mask)])
        for values in itertools.product(*allowed):
            action = heads.join_action(dict(zip(heads.names, values, strict=True)))
            if _equal(self.agent_to_system_action(action, context), system_action):
                return action
        raise ConfigError("system action", system_action, reason="no allowed agent action maps to it here")

    @abc.abstractmethod
    def system_to_agent_reward(self, metrics: Any, context: Any = None) -> float:
        """Scalar reward for measured system metrics."""
