"""Index sets chosen within a decision budget of engine evaluations (issue 42; docs/design.md section 5.13):
the trained policy's policy-guided search beside the advisor stopped at the same budget.

The greedy play's wall time (``SearchResult.greedy_seconds``, the decision time the verdict reports) is a new
workload's: the search plays a copy of the workload's queries with the converter's per-query estimates
forgotten (``forget_workload``), keeping only what holds for the collection (index bytes, seek plans per
query structure); the estimates an earlier play of the same instance left would otherwise be read for free.

One **evaluation** is what the advisor counts (``advisor.py``, 3): the engine's cost of the whole workload
under one index set (``IndexingSystem.configure`` + ``measure``). A budget B allows at most B of them.

**The learned method** (``policy_search``). The trained policy plays the workload without the engine: the
candidate design's state (and the positional one's) is computed from the index set built so far and the
collection's statistics, never from a measurement, so a rollout costs one forward pass per query. With B = 0
the answer is the greedy policy's set (the verdict's greedy policy, no evaluation). With B > 0 the policy
proposes sets in order of its own preference and the engine checks them, the greedy set first; the best set
checked (by the task's reward) is kept. Every proposal carries a *regret*, the Q values the policy gives up
to reach it (0 for the greedy set), and proposals are checked lowest regret first:

- **deviate**: at a step t after the proposal's last forced step, another allowed action a' instead of the
  policy's choice a (regret + Q(a) - Q(a')), then the policy's greedy continuation from t + 1 (a new
  rollout: the later decisions see the changed set, so they may differ too);
- **drop**: one index of the proposal's set left out (regret + Q(built) - Q(no-op) at the step that built
  it: the indexes the policy was least sure of go first).

Both kinds are generated from every set checked, each set is checked once (a proposal that gives a set
already checked costs no evaluation). A learner without Q values (a policy-gradient learner) gives every
alternative the same regret 1, so its proposals follow step order.

**The advisor at a budget** is ``advise(..., budget=B)``: its best set known within B evaluations, no index
at B = 0 (it decides nothing without evaluating); ``AdvisorResult.reward_at_budget`` reads every budget off
one unrestricted advice.

**Score**: the task's reward of the set on the instance's workload, -(w_m * size share + w_t * runtime
share), the verdict's score. ``budget_sweep`` scores both methods at every budget on the same instances.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import time
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from case_studies.indexing.advisor import AdvisorResult, check_budget
from case_studies.indexing.index_spec import IndexSpec
from wield.envs.episode import StepContext
from wield.errors import ConfigError

BUDGETS = (0, 5, 10, 20, 40)  # issue 42's decision budgets, in workload evaluations
ROLLOUTS_PER_EVALUATION = 20  # a search ends when its proposals keep repeating checked sets (bounded work)


def parse_budgets(text: str | Sequence[int], name: str = "budgets") -> list[int]:
    """``"0,5,10"`` or a list of integers -> sorted distinct budgets, each >= 0."""
    items = [part.strip() for part in text.split(",")] if isinstance(text, str) else list(text)
    budgets: list[int] = []
    for item in items:
        text_item = str(item).strip()
        if isinstance(item, bool) or not (isinstance(item, (int, np.integer)) or text_item.isdigit()):
            raise ConfigError(name, item, reason="budgets are whole numbers of workload evaluations, >= 0, "
                                                 "comma-separated (e.g. 0,5,10,20,40)")
        budgets.append(check_budget(int(item)))
    if not budgets:
        raise ConfigError(name, text, reason="give at least one budget (e.g. 0,5,10,20,40)")
    return sorted(set(budgets))


@dataclass
class Decision:
    """One step of a rollout: the per-head preferences (masked values -inf), the choice (per head, from 0)
    and the index it added to the set (None: no-op or already built). What the search reads of the other
    choices is derived from them when it asks (the greedy play alone never does). ``network`` gives the
    network's own preferences where ``preferences`` came from the NumPy pass: the search weighs the other
    choices on those, so it proposes what the network's arithmetic proposes."""

    preferences: dict[str, np.ndarray]
    choice: dict[str, int]
    built: IndexSpec | None
    network: Callable[[], dict[str, np.ndarray]] | None = None

    @cached_property
    def weighed(self) -> dict[str, np.ndarray]:
        """The preferences the search weighs the other choices on (the network's own)."""
        return self.network() if self.network is not None else self.preferences

    @cached_property
    def alternatives(self) -> list[tuple[dict[str, int], float]]:
        """Every other allowed choice at this step (one head changed) and the preference it gives up, >= 0."""
        found = []
        for head, values in self.weighed.items():
            for value in np.flatnonzero(np.isfinite(values)):
                if int(value) != self.choice[head]:
                    other = {**self.choice, head: int(value)}
                    found.append((other, _given_up(self.weighed, self.choice, other)))
        return found

    @cached_property
    def drop_gap(self) -> float:
        """The preference given up by not building ``built`` (no-op instead; 1.0 where no-op is not allowed)."""
        noop = {head: 0 for head in self.choice}
        if all(np.isfinite(self.weighed[head][0]) for head in noop):
            return _given_up(self.weighed, self.choice, noop)
        return 1.0


@dataclass
class Rollout:
    """The policy's play of a workload with some steps forced: its decisions and the set it ends with."""

    forced: dict[int, dict[str, int]]
    decisions: list[Decision]
    configuration: tuple[IndexSpec, ...]
    # where the play's wall time went: ``state`` (state features and masks: for the shortlist design the
    # statistics-only estimates of every candidate), ``forward`` (the policy's forward passes), ``rest``
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class SearchResult:
    """What ``policy_search`` chose and what it cost: the best set checked and its reward, the greedy set,
    ``trace[b]`` the best reward after b evaluations (``trace[0]``: the greedy set's, scored not counted),
    the evaluations made, the rollouts (forward passes = rollouts x queries) and the wall time of the decision
    (rollouts and evaluations; the greedy set's scoring at B = 0 excluded)."""

    configuration: list[IndexSpec]
    reward: float
    greedy: list[IndexSpec]
    trace: list[float]
    evaluations: int
    rollouts: int
    seconds: float
    kinds: list[str] = field(default_factory=list)
    greedy_seconds: float = 0.0  # the greedy policy's rollout alone (the decision at budget 0)

    def reward_at_budget(self, budget: int) -> float:
        """The reward of the best set checked within ``budget`` evaluations (the greedy set's at 0)."""
        budget = check_budget(budget)
        return self.trace[min(budget, len(self.trace) - 1)]


class PolicyPlayer:
    """Plays a trained agent's greedy policy on a workload without the engine (``rollout``)."""

    def __init__(self, agent: Any, schema: Any, converter: Any, numpy_forward: bool = True) -> None:
        heads = getattr(agent, "heads", None)
        if heads is None:
            raise ConfigError("agent", type(agent).__name__, reason="a policy-guided search needs an agent with "
                                                                    "action heads (Wield's DQN or DQfD)")
        self.agent, self.schema, self.converter, self.heads = agent, schema, converter, heads
        self.forward_passes = 0
        # the network's forward pass in NumPy (``wield.agents.numpy_forward``), its weights as they are now
        # (the player is made after training); a step whose best two allowed values are closer than its
        # margin is decided by the network itself (``network_checks`` counts them)
        from wield.agents.numpy_forward import decided_by_margin, numpy_q_function  # torch: not for --help

        online = getattr(agent, "online", None)
        self.numpy_forward = (numpy_q_function(online) if numpy_forward and online is not None
                              and hasattr(agent, "greedy_q_values") else None)
        self._decided = decided_by_margin
        self.network_checks = 0

    def preferences(self, observation: Any, mask: Any) -> tuple[dict[str, np.ndarray], bool]:
        """Per head, the policy's preference of each value (Q values; masked -inf), and whether they came
        from the NumPy pass (the greedy choice is the network's all the same: a near tie asks the network)."""
        self.forward_passes += 1
        if self.numpy_forward is not None:
            found = self.numpy_forward(observation)
            for name, head_mask in self.heads.split_mask(mask).items():
                if head_mask is not None:
                    found[name][~np.asarray(head_mask, dtype=bool)] = -np.inf
            if all(self._decided(values) for values in found.values()):
                return found, True
            self.network_checks += 1
        return self.network_preferences(observation, mask), False

    def network_preferences(self, observation: Any, mask: Any) -> dict[str, np.ndarray]:
        """``preferences`` by the agent itself (its network's forward pass)."""
        if hasattr(self.agent, "greedy_q_values"):
            return {name: np.asarray(values, dtype=float)
                    for name, values in self.agent.greedy_q_values(observation, mask).items()}
        action = self.heads.split_action(self.agent.act(observation, explore=False, mask=mask))
        masks = self.heads.split_mask(mask)
        found = {}
        for name, size in self.heads.sizes.items():
            values = np.zeros(size) if masks[name] is None else np.where(masks[name], 0.0, -np.inf)
            values[action[name]] = 1.0
            found[name] = values
        return found

    def rollout(self, workload: Sequence[Any], forced: Mapping[int, dict[str, int]] | None = None) -> Rollout:
        """The policy's play of ``workload`` (one decision per query, as ``Episode``), ``forced`` steps taking
        the given per-head choices."""
        forced = dict(forced or {})
        state: list[IndexSpec] = []
        decisions = []
        clock = time.perf_counter
        started = clock()
        features = forward = 0.0
        for step, query in enumerate(workload):
            context = StepContext(item=query, workload=workload, step=step, episode=0, state=tuple(state))
            begun = clock()
            observation = self.converter.system_to_agent_state(context["state"], context)
            mask = self.schema.action_mask(context)
            computed = clock()
            preferences, by_numpy = self.preferences(observation, mask)
            features, forward = features + computed - begun, forward + clock() - computed
            choice = forced.get(step) or {name: int(np.argmax(values)) for name, values in preferences.items()}
            spec = self.converter.agent_to_system_action(self.heads.join_action(choice), context)
            built = None
            if spec is not None and spec.canonical() not in state:
                built = spec.canonical()
                state.append(built)
            network = partial(self.network_preferences, observation, mask) if by_numpy else None
            decisions.append(Decision(preferences, dict(choice), built, network))
        total = clock() - started
        return Rollout(forced, decisions, tuple(state),
                       {"state": features, "forward": forward, "rest": max(0.0, total - features - forward)})


def _given_up(preferences: dict[str, np.ndarray], choice: dict[str, int], other: dict[str, int]) -> float:
    """The preference (sum over heads) the policy gives up by taking ``other`` instead of ``choice``, >= 0."""
    return max(0.0, float(sum(preferences[h][choice[h]] - preferences[h][other[h]] for h in choice)))


@dataclass(frozen=True)
class Proposal:
    """A set the policy proposes: its rollout's forced steps and the indexes left out of the rollout's set."""

    forced: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()
    dropped: frozenset[IndexSpec] = frozenset()

    def forced_choices(self) -> dict[int, dict[str, int]]:
        return {step: dict(choice) for step, choice in self.forced}

    def configuration(self, rollout: Rollout) -> list[IndexSpec]:
        return [spec for spec in rollout.configuration if spec not in self.dropped]


def _children(proposal: Proposal, rollout: Rollout) -> list[tuple[float, Proposal]]:
    """(preference given up, proposal) of every neighbour of a checked set (module docstring): another choice
    at a step after the last forced one, then the policy's continuation (deviate); or one more index of the
    set left out (drop)."""
    last = max((step for step, _ in proposal.forced), default=-1)
    found = []
    for step, decision in enumerate(rollout.decisions):
        if decision.built is not None and decision.built not in proposal.dropped:
            found.append((decision.drop_gap, Proposal(proposal.forced, proposal.dropped | {decision.built})))
        if step > last:
            for other, gap in decision.alternatives:
                forced = (*proposal.forced, (step, tuple(sorted(other.items()))))
                found.append((gap, Proposal(forced, proposal.dropped)))
    return found


def policy_search(player: PolicyPlayer, workload: Sequence[Any], budget: int,
                  evaluate: Callable[[Sequence[IndexSpec]], float]) -> SearchResult:
    """The learned method at ``budget`` evaluations (module docstring): the greedy set at 0, else the best of
    at most ``budget`` policy-proposed sets checked with ``evaluate`` (one engine evaluation each)."""
    budget = check_budget(budget)
    # timed as a new workload's decision: new query objects (nothing cached on them) and a converter that
    # remembers nothing of this workload's queries (an earlier play of the same instance, the verdict's, would
    # otherwise leave its estimates behind and halve the time measured)
    workload = copy.deepcopy(list(workload))
    player.converter.forget_workload()
    started = time.perf_counter()
    root = player.rollout(workload)
    rollouts = 1
    greedy = list(root.configuration)
    greedy_seconds = time.perf_counter() - started
    if budget == 0:
        reward = evaluate(greedy)  # the greedy set's score, not part of the decision
        return SearchResult(greedy, reward, greedy, [reward], 0, rollouts, greedy_seconds, [], greedy_seconds)
    order = itertools.count()
    queue: list[tuple[float, int, Proposal]] = [(0.0, next(order), Proposal())]  # lowest regret first
    cached: dict[tuple, Rollout] = {(): root}
    checked: set[frozenset[IndexSpec]] = set()
    best: tuple[float, list[IndexSpec]] | None = None
    trace: list[float] = []
    kinds: list[str] = []
    while queue and len(trace) < budget and rollouts <= ROLLOUTS_PER_EVALUATION * budget:
        regret, _, proposal = heapq.heappop(queue)
        rollout = cached.get(proposal.forced)
        if rollout is None:
            rollout = player.rollout(workload, proposal.forced_choices())
            cached[proposal.forced] = rollout
            rollouts += 1
        configuration = proposal.configuration(rollout)
        if frozenset(configuration) in checked:
            continue
        checked.add(frozenset(configuration))
        reward = evaluate(configuration)
        kinds.append("greedy" if not proposal.forced and not proposal.dropped else
                     "drop" if not proposal.forced else "deviate" if not proposal.dropped else "deviate+drop")
        if best is None or reward > best[0]:
            best = (reward, configuration)
        trace.append(best[0])
        for gap, child in _children(proposal, rollout):
            heapq.heappush(queue, (regret + gap, next(order), child))
    assert best is not None  # the greedy set is always checked first
    seconds = time.perf_counter() - started
    return SearchResult(best[1], best[0], greedy, [trace[0], *trace], len(trace), rollouts, seconds, kinds,
                        greedy_seconds)


def workload_evaluator(system: Any, converter: Any, workload: Sequence[Any]) -> Callable[[Sequence[IndexSpec]], float]:
    """One engine evaluation as the advisor counts it: the task's reward of a set on ``workload``
    (``configure`` + ``measure``, then the converter's reward). The caller restores the system's set."""
    workload = list(workload)

    def evaluate(configuration: Sequence[IndexSpec]) -> float:
        system.configure(list(configuration))
        return float(converter.system_to_agent_reward(system.measure(workload)))

    return evaluate


def budget_sweep(task: Any, agent: Any, workloads: Sequence[Sequence[Any]], advice: Sequence[AdvisorResult],
                 budgets: Sequence[int], reference: Callable[[Sequence[Any]], float] | None = None,
                 searched: Callable[[Sequence[Any], Sequence[int]], list[float]] | None = None) -> dict[str, Any]:
    """Both methods at every budget on every workload (the verdict's instances, paired by index): per
    instance the learned method's and the advisor's reward at each budget, and what the search cost.
    ``advice`` is the unrestricted advisor on each workload (its budgets are read off its trace);
    ``reference``, a method that needs no engine evaluation to decide (the estimated advisor), gives each
    workload's reward for ``estimated``; ``searched``, a non-learning method stopped at each budget (the
    estimated advisor improved by engine-checked moves, ``estimated_search.py``), its rewards at the budgets for
    ``estimated_search``."""
    budgets = parse_budgets(list(budgets))
    if len(advice) != len(workloads):
        raise ConfigError("advice", len(advice), reason=f"needs one advice per workload ({len(workloads)})")
    player = PolicyPlayer(agent, task.schema, task.converter)
    system = task.system
    previous = list(system.state())
    learned, advisor, evaluations, seconds, rollouts, greedy_seconds = [], [], [], [], [], []
    try:
        for workload, advised in zip(workloads, advice):
            result = policy_search(player, workload, max(budgets),
                                   workload_evaluator(system, task.converter, workload))
            learned.append([result.reward_at_budget(b) for b in budgets])
            advisor.append([advised.reward_at_budget(b) for b in budgets])
            evaluations.append(result.evaluations)
            seconds.append(result.seconds)
            rollouts.append(result.rollouts)
            greedy_seconds.append(result.greedy_seconds)
    finally:
        system.configure(previous)
    return {"budgets": budgets, "learned": learned, "advisor": advisor,
            "learned_evaluations": evaluations, "learned_seconds": seconds, "learned_rollouts": rollouts,
            "greedy_seconds": greedy_seconds,
            # forward passes (NumPy, ``PolicyPlayer``) and the near ties among them the network itself decided
            "forward_passes": player.forward_passes, "network_checks": player.network_checks,
            "advisor_evaluations": [a.evaluations for a in advice], "advisor_seconds": [a.seconds for a in advice],
            "advisor_at_zero": "no index (the advisor decides nothing without evaluating)",
            **({"estimated": [reference(workload) for workload in workloads]} if reference is not None else {}),
            **({"estimated_search": [searched(workload, budgets) for workload in workloads]}
               if searched is not None and len(budgets) > 1 else {})}


def evaluations_to_match(advised: AdvisorResult, target: float) -> int | None:
    """The fewest evaluations after which the advisor's best set reaches ``target`` (None: never)."""
    for budget, value in enumerate(advised.trace):
        if value >= target:
            return budget
    return advised.evaluations if advised.reward >= target else None
