"""Labelling rules: domain knowledge that maps a system state, in the context of earlier decisions, to an action.

A rule sees the current configuration in system terms (e.g. the indexes built so far) and a
``DecisionContext`` (the step context: the current workload item, the whole workload, the step, the episode,
the system state and the adapter's entries; and the history of earlier decisions in this trajectory) and returns a ``Label``: a system action and a signed expert margin.
A positive margin says "do this" (the action should beat every other by the margin), a negative one says
"never this" (every other action should beat it by the margin's magnitude). A margin may be given per
action head (a mapping ``head -> margin``); heads left out carry no expert loss. A rule may abstain by
returning ``None``: that step is not recorded and nothing is applied.

``select_rules`` turns user-given names into rule objects and rejects unknown names, listing the allowed
ones. Rules are case-study code; the core only knows this contract.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from wield.envs.episode import StepContext
from wield.errors import ConfigError

Margin = float | Mapping[str, float]


class DecisionContext(StepContext):
    """What a rule and the converter see at one decision: the step context (``item``, ``workload``,
    ``step``, ``episode``, ``state`` and the adapter's entries) and ``history`` (a tuple of
    ``(item, system_action)`` for the earlier decisions of the trajectory)."""


@dataclass(frozen=True)
class Label:
    """A rule's decision: the system ``action``, its signed expert ``margin`` and, optionally, the
    ``reward`` to record (``None``: the workflow's reward source decides)."""

    action: Any
    margin: Margin
    reward: float | None = None

    def __post_init__(self) -> None:
        values = self.margin.values() if isinstance(self.margin, Mapping) else (self.margin,)
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError("label.margin", self.margin, reason="margins are finite numbers")
        if self.reward is not None and not math.isfinite(float(self.reward)):
            raise ConfigError("label.reward", self.reward, reason="rewards are finite numbers")


class LabellingRule(abc.ABC):
    """Maps (configuration, context) to a ``Label`` or ``None`` (abstain). Subclasses set ``name``."""

    name: str = "rule"

    @abc.abstractmethod
    def label(self, configuration: Any, context: DecisionContext) -> Label | None:
        """The expert's decision for the current item given the configuration built so far."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class FunctionRule(LabellingRule):
    """A rule from a plain function ``(configuration, context) -> Label | None``."""

    def __init__(self, name: str, function: Callable[[Any, DecisionContext], Label | None]) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("rule.name", name, reason="a rule needs a non-empty name")
        self.name = name
        self._function = function

    def label(self, configuration: Any, context: DecisionContext) -> Label | None:
        return self._function(configuration, context)


def parse_rule_names(names: str | Sequence[str]) -> list[str]:
    """``"noop,reverse"`` or ``["noop", "reverse"]`` -> ``["noop", "reverse"]`` (blanks dropped)."""
    items = names.split(",") if isinstance(names, str) else list(names)
    return [str(item).strip() for item in items if str(item).strip()]


def select_rules(names: str | Sequence[str],
                 available: Mapping[str, Callable[[], LabellingRule]]) -> list[LabellingRule]:
    """Build the named rules; an unknown or repeated name is a ConfigError listing the allowed names."""
    chosen = parse_rule_names(names)
    if not chosen:
        raise ConfigError("rules", names, list(available), "name at least one labelling rule")
    seen: set[str] = set()
    rules = []
    for name in chosen:
        if name not in available:
            raise ConfigError("rules", name, list(available), "no labelling rule has this name")
        if name in seen:
            raise ConfigError("rules", name, list(available), "a rule is named twice")
        seen.add(name)
        rules.append(available[name]())
    return rules
