"""Configuration search: a budget of system evaluations spent by a configuration-search agent.

``run_configuration_search(agent, evaluate, budget)`` asks the agent for a configuration, has the case
study evaluate it (``evaluate(t, configuration) -> reward``; ``t`` lets the case study choose the workload
of evaluation ``t``, e.g. a new training workload every few evaluations in generalisation mode) and feeds
the result back as one terminal transition. Every evaluation is charged: transitions n = system
evaluations = ``budget``, the same units a learner is charged in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from wield.agents.base import Transition
from wield.agents.search import NO_OBSERVATION, ConfigurationSearchAgent
from wield.errors import ConfigError


@dataclass
class SearchEvaluation:
    """One evaluation: its index, the configuration, its reward and whether it was the best so far."""

    evaluation: int
    configuration: dict[str, Any]
    reward: float
    best_reward: float
    improved: bool


@dataclass
class SearchResult:
    best_configuration: dict[str, Any]
    best_reward: float
    evaluations: int
    history: list[SearchEvaluation] = field(default_factory=list)

    @property
    def first_reward(self) -> float:
        return self.history[0].reward


def run_configuration_search(agent: ConfigurationSearchAgent, evaluate: Callable[[int, dict[str, Any]], float],
                             budget: int, on_evaluation: Callable[[SearchEvaluation], None] | None = None,
                             progress: bool = False, description: str = "search") -> SearchResult:
    """Spend ``budget`` evaluations; returns the best configuration and every evaluation in order."""
    from tqdm.auto import tqdm

    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ConfigError("budget", budget, reason="must be an integer >= 1 (system evaluations)")
    history = []
    for t in tqdm(range(budget), desc=description, unit="eval", disable=not progress):
        configuration = agent.act(NO_OBSERVATION, explore=True)
        reward = float(evaluate(t, configuration))
        before = agent.best_reward
        agent.observe(Transition(NO_OBSERVATION, configuration, reward, NO_OBSERVATION, terminated=True))
        entry = SearchEvaluation(t, configuration, reward, agent.best_reward, agent.best_reward > before)
        history.append(entry)
        if on_evaluation:
            on_evaluation(entry)
    assert agent.best_configuration is not None  # budget >= 1 evaluations were observed
    return SearchResult(dict(agent.best_configuration), agent.best_reward, budget, history)
