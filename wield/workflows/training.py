"""The online training loop (docs/design.md section 3, step 4) and greedy rollouts, for any Wield environment.

system state -> converter -> agent state -> task graph -> agent action -> converter -> system action ->
system executes -> metrics -> converter -> reward -> task graph observes and updates on each task's own
schedule. The environment does the conversions; this loop wires it to a TaskGraph.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import gymnasium as gym

from wield.agents.base import Agent, EnvironmentLearner
from wield.tasks import TaskGraph
from wield.workflows.run_record import RunRecord
from wield.workflows.timing import AGENT_ACTING, AGENT_UPDATING, Stopwatch


# Who hears of every training episode that ends in this context (an experiment's progress line): see
# ``watching_episodes``.
_EPISODE_WATCHER: contextvars.ContextVar[Callable[["EpisodeResult"], None] | None] = contextvars.ContextVar(
    "wield_episode_watcher", default=None)


@contextlib.contextmanager
def watching_episodes(watcher: Callable[["EpisodeResult"], None]) -> Iterator[None]:
    """Call ``watcher(result)`` as each episode of ``train_online`` ends in this context (trials run in
    this process, e.g. an experiment's progress shows the running trial's episode)."""
    token = _EPISODE_WATCHER.set(watcher)
    try:
        yield
    finally:
        _EPISODE_WATCHER.reset(token)


@dataclass
class StepRecord:
    """What happened at one step: the system action, the state it led to, the reward and raw metrics."""

    step: int
    reward: float
    system_action: Any
    system_state: Any
    metrics: dict[str, Any]


@dataclass
class EpisodeResult:
    """One episode: its return (every step's reward, skipped steps included), its decisions' steps and what
    the learners reported."""

    episode: int
    total_reward: float
    steps: list[StepRecord]
    seconds: float
    update_stats: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def final_metrics(self) -> dict[str, Any]:
        return self.steps[-1].metrics if self.steps else {}

    @property
    def best_step(self) -> StepRecord:
        return max(self.steps, key=lambda s: s.reward)


def environment_action(graph: TaskGraph, outputs: dict[str, Any]) -> Any:
    """The action sent to the environment: the output of the graph's only sink task, else all outputs."""
    sinks = graph.sinks
    return outputs[sinks[0]] if len(sinks) == 1 else outputs


def run_episode(env: gym.Env, graph: TaskGraph, *, explore: bool, learn: bool,
                options: dict[str, Any] | None = None, stopwatch: Stopwatch | None = None) -> EpisodeResult:
    """Play one episode; with ``learn`` the graph observes every transition and updates on schedule.
    A ``stopwatch`` receives the time the graph spends acting and learning (observing and updating)."""
    timed = stopwatch if stopwatch is not None else (lambda _: contextlib.nullcontext())
    started = time.perf_counter()
    observation, info = env.reset(options=options)
    graph.reset()
    sinks = graph.sinks
    steps: list[StepRecord] = []
    update_stats: dict[str, dict[str, float]] = {}
    # steps before the first decision belong to no transition, but to the episode's return
    total, done = float(info.get("skipped_reward", 0.0)), False
    while not done:
        masks = {name: info.get("action_mask") for name in sinks}
        learned = graph.learning_seconds
        with timed(AGENT_ACTING):
            outputs = graph.act(observation, explore=explore, masks=masks)
        learned_in_act = graph.learning_seconds - learned
        observation, reward, terminated, truncated, info = env.step(environment_action(graph, outputs))
        done = terminated or truncated
        if learn:
            stats = graph.observe(float(reward), observation, terminated, truncated, info=info,
                                  next_masks={name: info.get("action_mask") for name in sinks})
            update_stats.update(stats or {})
        if stopwatch is not None:  # updates run inside act (lazily completed transitions) and observe
            stopwatch.add(AGENT_ACTING, -learned_in_act)
            stopwatch.add(AGENT_UPDATING, graph.learning_seconds - learned)
        steps.append(StepRecord(len(steps), float(reward), info.get("system_action"), info.get("system_state"),
                                info.get("metrics", {})))
        total += float(reward)
    episode = info.get("episode_index", options.get("episode") if options else None)
    return EpisodeResult(int(episode if episode is not None else len(steps)), total, steps, time.perf_counter() - started, update_stats)


def train_online(env: gym.Env, graph: TaskGraph | Agent, episodes: int, *, start_episode: int = 0,
                 on_episode: Callable[[EpisodeResult], None] | None = None, record: RunRecord | None = None,
                 progress: bool | None = None, description: str = "training",
                 stopwatch: Stopwatch | None = None) -> list[EpisodeResult]:
    """Train ``graph`` (or one agent) on ``env`` for ``episodes`` episodes with exploration (an
    ``EnvironmentLearner`` alone runs its own loop over the same episodes). With ``record``,
    every episode's return, decisions and seconds go to its ``episodes.csv``; ``progress`` shows a progress
    bar (default: when the running trial may, ``wield.workflows.progress_wanted()``); a ``stopwatch``
    receives the agent's acting and updating time (see ``run_episode``). Torch computes with one thread
    unless the user chose otherwise (``wield.workflows.threads``)."""
    from tqdm.auto import tqdm

    from wield.workflows.threads import apply_torch_threads
    from wield.workflows.trial import progress_wanted

    apply_torch_threads()

    if not isinstance(graph, TaskGraph):
        graph = TaskGraph.single(graph)
    progress = progress_wanted() if progress is None else progress
    watcher = _EPISODE_WATCHER.get()
    results: list[EpisodeResult] = []
    with tqdm(total=episodes, desc=description, unit="episode", disable=not progress, leave=False) as bar:
        def finished(result: EpisodeResult) -> None:
            results.append(result)
            if record is not None:
                record.append_episode({"episode": result.episode, "total_reward": result.total_reward,
                                       "decisions": len(result.steps), "seconds": result.seconds})
            if on_episode is not None:
                on_episode(result)
            if watcher is not None:
                watcher(result)
            bar.set_postfix(reward=f"{result.total_reward:.3f}")
            bar.update(1)

        learner = environment_learner(graph)
        if learner is not None:  # the agent's library runs the loop (e.g. Stable-Baselines3)
            learner.learn_episodes(env, episodes, start_episode=start_episode, on_episode=finished,
                                   reward_fn=graph.tasks[graph.order[0]].reward_fn)
            return results
        for index in range(start_episode, start_episode + episodes):
            finished(run_episode(env, graph, explore=True, learn=True, options={"episode": index},
                                 stopwatch=stopwatch))
    return results


def environment_learner(graph: TaskGraph) -> EnvironmentLearner | None:
    """The graph's agent when the graph is that one agent and it runs its own training loop, else None."""
    if len(graph.order) != 1:
        return None
    agent = graph.agent(graph.order[0])
    return agent if isinstance(agent, EnvironmentLearner) else None
