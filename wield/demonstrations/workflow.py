"""The demonstration workflow (docs/design.md section 6): traces + rules -> trajectories of labelled transitions.

A states-only trace (e.g. a query log: the items of one or more episodes) becomes one trajectory per
(rule, episode): start from the system's initial configuration c0; build s0 from the item w0 and c0 with
the converter; label a0 (and r0) with the rule; apply a0 to get c1; build s1 from w1 and c1; and so on over
all items. Steps at which the system needs no decision (``SystemAdapter.needs_decision``) are advanced by the
system and not recorded, exactly as in the environment (``wield.envs.episode``). Every rule gives its own trajectories, so many rules give many trajectories.

Two more importers use the same procedure with the actions already given: ``import_state_action_trace``
(items with the system action a person or another tool chose, e.g. (query, index) pairs) and
``import_trajectories`` (items, actions and rewards).

The configuration is tracked by a ``SystemAdapter`` (``reset`` / ``state`` / ``apply``): the same adapter
the environment drives, so a demonstration's state is exactly the state an agent would see online.
Rewards: ``"expert"`` records ``expert_reward`` for a positive label and ``-expert_reward`` for a label
whose margins are all negative (the DQfD study's constant expert reward, 0.5 by default); ``"measured"``
measures the workload after each action on the system and converts it with the converter, like the
environment's reward (skipped steps' rewards included). A label's own ``reward`` always wins.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from wield.agents.base import Transition
from wield.agents.heads import ActionHeads
from wield.converters.base import Converter
from wield.demonstrations.dataset import Demonstration, DemonstrationDataset, describe
from wield.demonstrations.rules import DecisionContext, Label, LabellingRule
from wield.envs.episode import Episode
from wield.errors import ConfigError, DataError, WieldError
from wield.systems.base import SystemAdapter

REWARD_SOURCES = ("expert", "measured")
DEFAULT_EXPERT_MARGIN = 0.5
DEFAULT_EXPERT_REWARD = 0.5

Decide = Callable[[Any, DecisionContext], Label | None]


class DemonstrationWorkflow:
    """Builds demonstrations for one schema / converter / system triple."""

    def __init__(self, system: SystemAdapter, converter: Converter, *, rewards: str = "expert",
                 expert_reward: float = DEFAULT_EXPERT_REWARD) -> None:
        if rewards not in REWARD_SOURCES:
            raise ConfigError("rewards", rewards, REWARD_SOURCES)
        if not (isinstance(expert_reward, (int, float)) and math.isfinite(expert_reward)):
            raise ConfigError("expert_reward", expert_reward, reason="must be a finite number")
        self.system = system
        self.converter = converter
        self.schema = converter.schema
        self.heads = ActionHeads.from_space(self.schema.action_space)
        self.rewards = rewards
        self.expert_reward = float(expert_reward)

    # ----------------------------------------------------------------------------------- public API
    def label_trace(self, trace: Sequence[Sequence[Any]], rules: Sequence[LabellingRule], *,
                    progress: bool = False, metadata: Mapping[str, Any] | None = None) -> DemonstrationDataset:
        """One trajectory per (rule, episode of ``trace``), rules outermost."""
        if not rules:
            raise ConfigError("rules", [], reason="name at least one labelling rule")
        episodes = _episodes(trace, "trace")
        dataset = self._dataset(metadata, rules=[rule.name for rule in rules])
        with _bar(len(rules) * len(episodes), progress) as bar:
            for rule in rules:
                for episode, items in enumerate(episodes):
                    self._rollout(dataset, items, rule.label, rule.name, episode, "trace")
                    bar.update(1)
        return dataset

    def import_state_action_trace(self, trace: Sequence[Sequence[tuple[Any, Any]]], *,
                                  margin: float = DEFAULT_EXPERT_MARGIN, source: str = "human",
                                  metadata: Mapping[str, Any] | None = None) -> DemonstrationDataset:
        """Episodes of ``(item, system_action)`` pairs -> demonstrations with the given (signed) margin."""
        dataset = self._dataset(metadata, rules=[source])
        for episode, steps in enumerate(_episodes(trace, source)):
            items, actions = _columns(steps, 2, source, episode)
            self._rollout(dataset, items, _given(actions, margin, None), source, episode, source)
        return dataset

    def import_trajectories(self, trace: Sequence[Sequence[tuple[Any, Any, float]]], *,
                            margin: float = DEFAULT_EXPERT_MARGIN, source: str = "trajectories",
                            metadata: Mapping[str, Any] | None = None) -> DemonstrationDataset:
        """Episodes of ``(item, system_action, reward)`` triples -> demonstrations with their own rewards."""
        dataset = self._dataset(metadata, rules=[source])
        for episode, steps in enumerate(_episodes(trace, source)):
            items, actions, rewards = _columns(steps, 3, source, episode)
            self._rollout(dataset, items, _given(actions, margin, rewards), source, episode, source)
        return dataset

    # ------------------------------------------------------------------------------------- internals
    def _dataset(self, metadata: Mapping[str, Any] | None, rules: list[str]) -> DemonstrationDataset:
        meta = {"rules": rules, "rewards": self.rewards, "expert_reward": self.expert_reward, **(metadata or {})}
        return DemonstrationDataset.for_schema(self.schema, metadata=meta)

    def _margins(self, label: Label) -> dict[str, float]:
        if isinstance(label.margin, Mapping):
            unknown = sorted(set(label.margin) - set(self.heads.names))
            if unknown:
                raise ConfigError("label.margin", unknown, self.heads.names, "margins name unknown action heads")
            return {head: float(label.margin[head]) for head in self.heads.names if head in label.margin}
        return {head: float(label.margin) for head in self.heads.names}

    def _reward(self, label: Label, margins: Mapping[str, float], measured: float) -> float:
        """The label's own reward, else the measured one (the environment's), else the expert reward."""
        if label.reward is not None:
            return float(label.reward)
        if self.rewards == "measured":
            return measured
        negative = bool(margins) and all(m < 0 for m in margins.values())
        return -self.expert_reward if negative else self.expert_reward

    def _check_allowed(self, agent_action: Any, mask: Any, system_action: Any) -> None:
        per_head_mask = self.heads.split_mask(mask)
        for head, value in self.heads.split_action(agent_action).items():
            head_mask = per_head_mask[head]
            if not 0 <= value < self.heads.sizes[head] or (head_mask is not None and not head_mask[value]):
                raise ConfigError("label.action", describe(system_action),
                                  reason=f"head {head!r} value {value} is not a valid action in this state")

    def _rollout(self, dataset: DemonstrationDataset, items: Sequence[Any], decide: Decide, rule: str,
                 episode: int, source: str) -> None:
        """c0 -> s0 -> label a0 (r0) -> apply a0 -> c1 -> ... over the decision points of ``items`` (steps that
        need no decision are advanced by the system, as in the environment); appends to ``dataset``."""
        trajectory = max((d.trajectory for d in dataset.demonstrations), default=-1) + 1
        walk = Episode(self.system, self.converter, items, episode, measure=self.rewards == "measured")
        walk.start()
        history: list[tuple[Any, Any]] = []
        while not walk.over:
            step, item = walk.context["step"], walk.context["item"]
            context = DecisionContext(walk.context, history=tuple(history))
            try:
                configuration = context["state"]
                observation = self.converter.system_to_agent_state(configuration, context)
                label = decide(configuration, context)
                if label is None:  # the rule abstains: nothing recorded, nothing applied
                    history.append((item, None))
                    walk.decide(None)
                    continue
                mask = self.schema.action_mask(context)
                agent_action = self.converter.system_to_agent_action(label.action, context)
                self._check_allowed(agent_action, mask, label.action)
                margins = self._margins(label)
                measured = walk.decide(label.action)
                reward = self._reward(label, margins, measured)
            except WieldError as exc:
                raise DataError(f"{source}: episode {episode}, row {step} ({rule}): {exc}") from exc
            next_context = DecisionContext(walk.context, history=tuple(history) + ((item, label.action),))
            try:
                next_observation = self.converter.system_to_agent_state(next_context["state"], next_context)
                next_mask = self.schema.action_mask(next_context)
            except WieldError as exc:
                raise DataError(f"{source}: episode {episode}, row {next_context['step']} ({rule}): {exc}") from exc
            history.append((item, label.action))
            transition = Transition(observation, agent_action, reward, next_observation, walk.terminated,
                                    walk.truncated, mask=mask, next_mask=next_mask)
            dataset.demonstrations.append(Demonstration(transition, margins, trajectory, step, rule,
                                                        describe(item), describe(label.action)))


def _episodes(trace: Any, source: str) -> list[list[Any]]:
    if isinstance(trace, (str, bytes)) or not isinstance(trace, Iterable):
        raise DataError(f"{source}: expected a list of episodes, each a list of items")
    episodes = [list(episode) for episode in trace]
    if not episodes or any(not episode for episode in episodes):
        raise DataError(f"{source}: every episode needs at least one item (found {len(episodes)} episodes)")
    return episodes


def _columns(steps: Sequence[Any], width: int, source: str, episode: int) -> tuple[list[Any], ...]:
    for row, step in enumerate(steps):
        if not isinstance(step, (tuple, list)) or len(step) != width:
            raise DataError(f"{source}: episode {episode}, row {row}: expected {width} values "
                            f"({'item, action' if width == 2 else 'item, action, reward'}), found {step!r}")
    return tuple(list(column) for column in zip(*steps))


def _given(actions: Sequence[Any], margin: float, rewards: Sequence[float] | None) -> Decide:
    """A decision function that replays given actions (and rewards) step by step."""
    def decide(configuration: Any, context: DecisionContext) -> Label:
        step = context["step"]
        reward = None if rewards is None else float(rewards[step])
        return Label(actions[step], margin, reward)
    return decide


class _bar:
    """A tqdm progress bar (or nothing)."""

    def __init__(self, total: int, enabled: bool) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, desc="demonstrations", unit="trajectory", disable=not enabled,
                         leave=False)

    def __enter__(self):
        return self._bar

    def __exit__(self, *exc: object) -> None:
        self._bar.close()
