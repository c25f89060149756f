"""Policy evaluation: play a policy on an environment for some episodes, without learning.

``evaluate_policy(env, policy, episodes)`` plays greedily (``explore=False``) and returns every episode's
return and final metrics. A policy is an ``Agent`` (a learner, ``RandomAgent``), a ``TaskGraph``, or a
``LabellingRule``, which acts in system terms: ``RulePolicy`` labels the environment's current context and
the converter turns the label's system action into the agent action, so heuristics (LRU, earliest finish,
the full index) are evaluated through exactly the same environment, steps and rewards as learners.

``assess_learning(env, policy, instances, comparators, training_returns, seed=...)`` plays the trained
policy greedily, the masked uniform random policy (several episodes per instance) and every comparator (a
trivial policy, a heuristic; ``Comparator``) on the same evaluation instances (``EvaluationInstances``: the
environment's episodes that hold them, and the seeds they were drawn with), and returns the learning verdict
(``wield.protocols.verdict``: the ladder of paired comparisons) that every run reports. It refuses instances
drawn with seeds that selected the model. ``trial_verdict(env, policy, record, seed=..., instances=...)`` is
the one call a trial function makes: the same, with the training curve read from the run record's
``episodes.csv``, as the dict ``TrialSummary.verdict`` holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np

from wield.agents.base import Action, ActionMask, Agent, Observation
from wield.agents.random_agent import RandomAgent
from wield.demonstrations.rules import LabellingRule
from wield.errors import ConfigError
from wield.protocols.verdict import (RANDOM_EPISODES, ComparatorScores, EvaluationInstances, LadderVerdict,
                                     ladder_verdict)
from wield.tasks import TaskGraph
from wield.workflows.training import run_episode

if TYPE_CHECKING:
    from wield.workflows.run_record import RunRecord

Policy = Agent | TaskGraph | LabellingRule


class RulePolicy(Agent):
    """A labelling rule playing ``env``: the rule's action for the current context, in agent terms."""

    def __init__(self, rule: LabellingRule, env: gym.Env) -> None:
        self.rule = rule
        self.env = env.unwrapped

    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        env: Any = self.env  # a WieldEnv: it has the current context and the converter
        context = env.context
        label = self.rule.label(context["state"], context)
        if label is None:
            raise ConfigError("rule", self.rule.name, reason="labelled no action for this context")
        return env.converter.system_to_agent_action(label.action, context)


@dataclass
class PolicyEvaluation:
    """Per evaluated episode: its index, its return and the metrics measured at its end."""

    episodes: list[int]
    returns: list[float]
    metrics: list[dict[str, Any]]
    final_rewards: list[float] = field(default_factory=list)  # each episode's last step reward

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns))


def evaluate_policy(env: gym.Env, policy: Agent | TaskGraph | LabellingRule, episodes: int | Sequence[int] = 1,
                    *, explore: bool = False) -> PolicyEvaluation:
    """Play ``policy`` on ``env`` for ``episodes`` (a count from episode 0, or the episode indices) without
    learning; greedy unless ``explore``."""
    if isinstance(policy, LabellingRule):
        policy = RulePolicy(policy, env)
    graph = policy if isinstance(policy, TaskGraph) else TaskGraph.single(policy)
    indices = list(range(episodes)) if isinstance(episodes, int) else list(episodes)
    results = [run_episode(env, graph, explore=explore, learn=False, options={"episode": index})
               for index in indices]
    return PolicyEvaluation(indices, [r.total_reward for r in results], [r.final_metrics for r in results],
                            [r.steps[-1].reward if r.steps else 0.0 for r in results])


Score = str | Callable[[Mapping[str, Any]], float]
SCORES = ("return", "final_reward")


def episode_score(score: Score, total_return: float, final_reward: float, metrics: Mapping[str, Any]) -> float:
    """One episode's score for the verdict: ``"return"`` (the episode's return), ``"final_reward"`` (the
    reward of its last step, e.g. the index set an episode ends with), or a callable given
    ``{"return", "final_reward", "metrics"}``."""
    if callable(score):
        return float(score({"return": total_return, "final_reward": final_reward, "metrics": metrics}))
    if score == "return":
        return float(total_return)
    if score == "final_reward":
        return float(final_reward)
    raise ConfigError("score", score, SCORES)


def instance_scores(env: gym.Env, policy: Policy, instances: EvaluationInstances, *, episodes: int = 1,
                    explore: bool = False, score: Score = "return") -> list[list[float]]:
    """Per instance, the scores of ``episodes`` episodes of ``policy`` on ``env`` (instance i is the
    environment's episode ``instances.episodes[i]``); greedy unless ``explore``."""
    scores = []
    for index in instances.episodes:
        played = evaluate_policy(env, policy, [index] * episodes, explore=explore)
        scores.append([episode_score(score, total, final, metrics) for total, final, metrics
                       in zip(played.returns, played.final_rewards, played.metrics)])
    return scores


@dataclass(frozen=True)
class Comparator:
    """One rung of the verdict's ladder: ``kind`` random / trivial / heuristic (``wield.protocols.verdict``),
    either a ``policy`` played greedily on every instance through the environment, or ``scores`` already
    measured on the same instances (per instance, its episodes' scores), e.g. a heuristic that runs outside
    the environment. ``cost`` says what the comparator spent (printed beside its rung)."""

    name: str
    kind: str
    policy: Policy | None = None
    scores: Sequence[Sequence[float]] | None = None
    description: str = ""
    cost: str = ""

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.scores is None):
            raise ConfigError("comparator", self.name, reason="give exactly one of policy and scores")


def random_episodes_per_instance(instances: EvaluationInstances) -> int:
    """Random-policy episodes per instance: enough for a spread on a single instance, a few averaged on
    each of several."""
    return 20 if instances.count == 1 else RANDOM_EPISODES


# A case study's own way of playing the learner and the random policy on the instances, when it has a faster
# path than the environment one decision at a time: (explore, episodes, seed) -> per instance, the scores of
# its episodes (greedy when explore is False; the masked uniform random policy, seeded, when it is True).
PlayedScores = Callable[[bool, int, int], list[list[float]]]


def assess_learning(env: gym.Env, policy: Policy, instances: EvaluationInstances,
                    comparators: Sequence[Comparator] = (), training_returns: Sequence[float] = (), *,
                    seed: int, score: Score = "return", score_label: str | None = None,
                    random_episodes: int | None = None, training_seeds: Sequence[int] = (),
                    selection_seeds: Sequence[int] = (), notes: Sequence[str] = (),
                    played: PlayedScores | None = None) -> LadderVerdict:
    """The learning verdict of ``policy`` on the evaluation ``instances`` of ``env``: its greedy scores
    against the masked uniform random policy (``random_episodes`` per instance, seeded by ``seed``) and
    every comparator, paired per instance, and the training curve ``training_returns``. Instances drawn
    with ``selection_seeds`` (or ``training_seeds``, unless the instances are declared blackbox) are refused
    before anything is played. ``played`` plays the learner and the random policy instead of ``env`` (the
    same instances, decisions and scores by another path, e.g. many instances at once)."""
    instances.check_unused(training_seeds, selection_seeds)
    episodes = random_episodes or random_episodes_per_instance(instances)
    if played is not None:
        learner, random = played(False, 1, seed), played(True, episodes, seed)
    else:
        learner = instance_scores(env, policy, instances, score=score)
        random = instance_scores(env, RandomAgent(env.action_space, seed=seed), instances, episodes=episodes,
                                 explore=True, score=score)
    rungs = [ComparatorScores("random-policy", "random", random,
                              f"uniformly random valid actions, {episodes} episode(s) per instance averaged")]
    for comparator in comparators:
        scores = comparator.scores if comparator.scores is not None else instance_scores(
            env, comparator.policy, instances, score=score)  # type: ignore[arg-type]  # one of the two is set
        rungs.append(ComparatorScores(comparator.name, comparator.kind, scores, comparator.description,
                                      comparator.cost))
    label = score_label or (score if isinstance(score, str) else "score")
    return ladder_verdict(learner, rungs, instances, training_returns, score=label, notes=notes)


def training_curve(record: "RunRecord", column: str = "total_reward") -> list[float]:
    """The per-episode returns a run record's ``episodes.csv`` holds (``column``), in order."""
    return [float(row[column]) for row in record.episodes if column in row and row[column] == row[column]]


def trial_verdict(env: gym.Env, policy: Policy, record: "RunRecord | None" = None, *, seed: int,
                  instances: EvaluationInstances, comparators: Sequence[Comparator] = (),
                  training_returns: Sequence[float] | None = None, score: Score = "return",
                  score_label: str | None = None, training_seeds: Sequence[int] = (),
                  selection_seeds: Sequence[int] = (), notes: Sequence[str] = (), random_episodes: int | None = None,
                  search_outcome: Mapping[str, Any] | None = None, played: PlayedScores | None = None) -> dict[str, Any]:
    """A trained policy's learning verdict as ``TrialSummary.verdict`` holds it: ``assess_learning`` on the
    evaluation ``instances`` of ``env``, with the training curve of ``record`` (its ``episodes.csv`` column
    ``total_reward``) unless ``training_returns`` are given. ``search_outcome`` (``{"line": ..., ...}``) is
    what a blackbox run found during training, reported beside the verdict and labelled a search outcome,
    not a learned policy. ``played``: see ``assess_learning``."""
    curve = list(training_returns) if training_returns is not None else (training_curve(record) if record else [])
    verdict = assess_learning(env, policy, instances, comparators, curve, seed=seed, score=score,
                              score_label=score_label, training_seeds=training_seeds,
                              selection_seeds=selection_seeds, notes=notes,
                              random_episodes=random_episodes, played=played).as_dict()
    if search_outcome is not None:
        verdict["search_outcome"] = dict(search_outcome)
    return verdict
