"""TaskGraph: a DAG of tasks that act together on one observation and learn each on its own schedule.

Edges ``(parent, child)`` route a parent's output into the child's input. ``act`` visits tasks in a
deterministic topological order and returns every task's output. ``observe`` turns the step's reward into
one transition per task. A child's next input depends on its parents' next outputs, so a transition is
completed lazily at the next ``act`` (with the task's new input and mask), or at once when the episode
ends (from the final observation and the parents' last outputs). Each task's agent updates after every
``update_every`` transitions it observes: its own time scale.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from wield.agents.base import Action, ActionMask, Agent, Transition
from wield.errors import ConfigError
from wield.tasks.task import Task


@dataclass
class _Step:
    """What a task saw and did at its last ``act``."""

    observation: Any
    action: Action
    mask: ActionMask
    parent_outputs: dict[str, Any]


@dataclass
class _Open:
    """A transition waiting for the task's next input."""

    step: _Step
    reward: float
    info: Mapping[str, Any] = field(default_factory=dict)


def _topological_order(names: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Kahn's algorithm, ties broken by the order the tasks were given; raises on a cycle."""
    position = {name: i for i, name in enumerate(names)}
    children: dict[str, list[str]] = {name: [] for name in names}
    indegree = {name: 0 for name in names}
    for parent, child in edges:
        children[parent].append(child)
        indegree[child] += 1
    ready = [position[n] for n in names if indegree[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(name)
        for child in children[name]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, position[child])
    if len(order) < len(names):
        raise ConfigError("edges", " -> ".join(_find_cycle(names, edges, set(order))),
                          reason="the task graph has a cycle")
    return order


def _find_cycle(names: list[str], edges: list[tuple[str, str]], acyclic: set[str]) -> list[str]:
    """A cycle among the tasks Kahn's algorithm could not order, as ``[a, b, ..., a]``."""
    parents: dict[str, list[str]] = {n: [] for n in names}
    for parent, child in edges:
        if parent not in acyclic and child not in acyclic:
            parents[child].append(parent)
    node = next(n for n in names if n not in acyclic)
    path: list[str] = []
    seen: dict[str, int] = {}
    while node not in seen:  # every remaining task has a remaining parent: walk up until a repeat
        seen[node] = len(path)
        path.append(node)
        node = parents[node][0]
    cycle = path[seen[node]:] + [node]
    return cycle[::-1]


class TaskGraph:
    """A directed acyclic graph of ``Task`` nodes; ``TaskGraph.single(agent)`` for one agent."""

    def __init__(self, tasks: Iterable[Task], edges: Iterable[tuple[str, str]] = ()) -> None:
        tasks = list(tasks)
        if not tasks:
            raise ConfigError("tasks", tasks, reason="a task graph needs at least one task")
        names: list[str] = []
        for task in tasks:
            if not isinstance(task, Task):
                raise ConfigError("tasks", type(task).__name__, reason="every entry must be a Task")
            if task.name in names:
                raise ConfigError("tasks", task.name, reason="duplicate task name")
            names.append(task.name)
        edge_list: list[tuple[str, str]] = []
        for edge in edges:
            if not (isinstance(edge, (tuple, list)) and len(edge) == 2):
                raise ConfigError("edges", edge, reason="an edge is a (parent, child) pair of task names")
            parent, child = edge
            for end in (parent, child):
                if end not in names:
                    raise ConfigError("edges", tuple(edge), names, f"unknown task {end!r}")
            if (parent, child) not in edge_list:
                edge_list.append((parent, child))
        self._tasks = {task.name: task for task in tasks}
        self._edges = edge_list
        self._order = _topological_order(names, edge_list)
        self._parents = {name: [p for p, c in edge_list if c == name] for name in names}
        self._children = {name: [c for p, c in edge_list if p == name] for name in names}
        self._last: dict[str, _Step] = {}
        self._open: dict[str, _Open] = {}
        self._since_update = {name: 0 for name in names}
        self._stats: dict[str, dict[str, float]] = {}
        self.update_counts = {name: 0 for name in names}
        # Seconds the agents spent observing transitions and updating, wherever that happened: a transition
        # completes lazily, so most updates run inside ``act`` (see ``observe``).
        self.learning_seconds = 0.0

    @classmethod
    def single(cls, agent: Agent, name: str = "agent", **task_options: Any) -> "TaskGraph":
        """A graph of one task wrapping ``agent`` (options as for ``Task``)."""
        return cls([Task(name, agent, **task_options)])

    # ------------------------------------------------------------------------------------- structure
    @property
    def tasks(self) -> dict[str, Task]:
        return dict(self._tasks)

    @property
    def order(self) -> tuple[str, ...]:
        """Task names in the (deterministic) topological order in which they act."""
        return tuple(self._order)

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._edges)

    @property
    def sinks(self) -> tuple[str, ...]:
        """Tasks without children, in topological order."""
        return tuple(name for name in self._order if not self._children[name])

    def parents(self, name: str) -> tuple[str, ...]:
        return tuple(self._parents[name])

    def agent(self, name: str) -> Agent:
        return self._tasks[name].agent

    # ------------------------------------------------------------------------------------- interaction
    def act(self, observation: Any, explore: bool = True,
            masks: Mapping[str, ActionMask] | None = None) -> dict[str, Any]:
        """Every task acts, parents first; returns each task's output by name.

        A task's mask is ``masks[name]`` when given and not ``None``, else its ``mask_fn``.
        """
        outputs: dict[str, Any] = {}
        for name in self._order:
            task = self._tasks[name]
            parent_outputs = {p: outputs[p] for p in self._parents[name]}
            agent_observation = task.agent_observation(observation, parent_outputs)
            mask = masks.get(name) if masks is not None else None
            if mask is None:
                mask = task.mask(observation, parent_outputs)
            pending = self._open.pop(name, None)
            if pending is not None:
                self._deliver(name, pending, agent_observation, mask, terminated=False, truncated=False)
            action = task.agent.act(agent_observation, explore=explore, mask=mask)
            outputs[name] = task.output(action, agent_observation, parent_outputs)
            self._last[name] = _Step(agent_observation, action, mask, parent_outputs)
        return outputs

    def observe(self, reward: float, next_observation: Any, terminated: bool, truncated: bool = False,
                info: Mapping[str, Any] | None = None, next_masks: Mapping[str, ActionMask] | None = None,
                rewards: Mapping[str, float] | None = None) -> dict[str, dict[str, float]]:
        """Record the step for every task that acted.

        A task's reward is ``rewards[name]`` when given, else its ``reward_fn(reward, info)``. A task's
        agent updates as soon as it has observed ``update_every`` transitions since its last update (for a
        transition completed lazily, that is during the next ``act``, before the agent acts). Returns, for
        each task that updated since the previous ``observe``, the statistics of its latest update.
        """
        info = dict(info or {})
        for name in self._order:
            step = self._last.pop(name, None)
            if step is None:
                continue
            task = self._tasks[name]
            task_reward = float(rewards[name]) if rewards is not None and name in rewards \
                else task.reward(reward, info)
            pending = _Open(step, task_reward, info)
            if terminated or truncated:
                next_input = task.agent_observation(next_observation, step.parent_outputs)
                next_mask = next_masks.get(name) if next_masks is not None else None
                if next_mask is None:
                    next_mask = task.mask(next_observation, step.parent_outputs)
                self._deliver(name, pending, next_input, next_mask, bool(terminated), bool(truncated))
            else:
                self._open[name] = pending
        stats, self._stats = self._stats, {}
        return stats

    def _deliver(self, name: str, pending: _Open, next_observation: Any, next_mask: ActionMask,
                 terminated: bool, truncated: bool) -> None:
        started = time.perf_counter()
        step = pending.step
        self._tasks[name].agent.observe(Transition(
            observation=step.observation, action=step.action, reward=pending.reward,
            next_observation=next_observation, terminated=terminated, truncated=truncated,
            mask=step.mask, next_mask=next_mask, info=pending.info))
        self._since_update[name] += 1
        if self._since_update[name] >= self._tasks[name].update_every:
            self._since_update[name] = 0
            self.update_counts[name] += 1
            self._stats[name] = self._tasks[name].agent.update()
        self.learning_seconds += time.perf_counter() - started

    def reset(self) -> None:
        """Drop unfinished transitions (call at an episode boundary that ``observe`` did not see)."""
        self._last.clear()
        self._open.clear()

    # ------------------------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        return {name: {"agent": task.agent.state_dict(), "since_update": self._since_update[name],
                       "update_count": self.update_counts[name]} for name, task in self._tasks.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if set(state) != set(self._tasks):
            raise ConfigError("state", sorted(state), sorted(self._tasks), "saved task names differ from the graph's")
        for name, task in self._tasks.items():
            task.agent.load_state_dict(state[name]["agent"])
            self._since_update[name] = int(state[name]["since_update"])
            self.update_counts[name] = int(state[name]["update_count"])
        self.reset()
