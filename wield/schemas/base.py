"""Schema: deployment parameters -> the agent's state and action layouts as gymnasium spaces.

A schema is built from what describes a deployment (the fields of a collection, the number of devices, the
maximum index width...). It owns the layout only: which positions of the state mean what, which action
heads exist and which of their values are valid in a context. Converters use that layout to translate.
"""

from __future__ import annotations

import abc
import hashlib
import json
from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from wield.io import to_jsonable


class Schema(abc.ABC):
    """Base class of every task schema.

    Subclasses set ``name``, ``state_space`` (the agent's observation space) and ``action_space``
    (``Discrete`` or a ``Dict`` of named ``Discrete`` heads) as attributes or properties, and describe
    ``layout``; where some actions are invalid in a context (which may depend on the system's state,
    ``context["state"]``) they override ``action_mask``.
    """

    name: str = "schema"
    state_space: gym.spaces.Space
    action_space: gym.spaces.Space

    def layout(self) -> Mapping[str, Any]:
        """A JSON-serialisable description of the layout (vocabularies, sizes, head names); the fingerprint
        hashes it. Default: the two spaces as gymnasium prints them; override it when positions carry
        meanings the spaces do not show (a vocabulary, field names)."""
        return {"state": str(self.state_space), "action": str(self.action_space)}

    def action_mask(self, context: Any = None) -> Any:
        """Valid actions in ``context`` (a ``StepContext``): a bool array per head (True = allowed), a plain
        array for a ``Discrete`` space. Default: all valid."""
        return full_mask(self.action_space)

    def fingerprint(self) -> str:
        """A stable hash of the layout: models and demonstrations are only valid for the same fingerprint."""
        canonical = json.dumps({"schema": self.name, "layout": to_jsonable(dict(self.layout()))},
                               sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def full_mask(space: gym.spaces.Space) -> Any:
    """An all-True mask shaped like ``space`` (Discrete or Dict of Discrete)."""
    if isinstance(space, gym.spaces.Dict):
        return {name: full_mask(sub) for name, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Discrete):
        return np.ones(space.n, dtype=bool)
    raise TypeError(f"masks are defined for Discrete and Dict-of-Discrete spaces, not {space}")
