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

A case study that can draw more instances from the same held-out stream passes ``more=(first, count) ->
InstanceBatch`` (the environment, instances and comparators of instances ``first .. first + count - 1``):
a rung whose interval straddles 0 is then decided on further batches, up to ``cap`` instances (default:
``verdict_cap()``, the run's ``verdict_cap`` setting, 50 unless set), under the group-sequential bound of
``wield.protocols.sequential``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np

from wield.agents.base import Action, ActionMask, Agent, Observation
from wield.agents.random_agent import RandomAgent
from wield.demonstrations.rules import LabellingRule
from wield.errors import ConfigError
from wield.protocols.verdict import (RANDOM_EPISODES, ComparatorScores, EvaluationInstances, InstanceScores,
                                     LadderVerdict, ladder_verdict)
from wield.seeding import derive_seed
from wield.tasks import TaskGraph
from wield.workflows.verdict_settings import verdict_cap
from wield.workflows.trial import trial_stopwatch
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
    the environment, or a ``scorer`` that measures those scores when called: it is called only when the rung
    is played on the instances, so a costly heuristic is not run on a further batch (``InstanceBatch``) once
    its rung is decided. ``cost`` says what the comparator spent (printed beside its rung)."""

    name: str
    kind: str
    policy: Policy | None = None
    scores: Sequence[Sequence[float]] | None = None
    description: str = ""
    cost: str = ""
    scorer: Callable[[], Sequence[Sequence[float]]] | None = None

    def __post_init__(self) -> None:
        if sum(given is not None for given in (self.policy, self.scores, self.scorer)) != 1:
            raise ConfigError("comparator", self.name, reason="give exactly one of policy, scores and scorer")


def random_episodes_per_instance(instances: EvaluationInstances) -> int:
    """Random-policy episodes per instance: enough for a spread on a single instance, a few averaged on
    each of several."""
    return 20 if instances.count == 1 else RANDOM_EPISODES


# A case study's own way of playing the learner and the random policy on the instances, when it has a faster
# path than the environment one decision at a time: (explore, episodes, seed) -> per instance, the scores of
# its episodes (greedy when explore is False; the masked uniform random policy, seeded, when it is True).
PlayedScores = Callable[[bool, int, int], list[list[float]]]


@dataclass(frozen=True)
class InstanceBatch:
    """Further evaluation instances for a sequential verdict, from the same held-out stream as the first
    ones: the environment whose episodes hold them, their ``EvaluationInstances``, the comparators on them
    (the same names and kinds as the first instances'; a comparator given by ``scores`` or ``scorer`` scores these
    instances) and, optionally, the case study's ``played`` hook for them."""

    env: gym.Env
    instances: EvaluationInstances
    comparators: Sequence[Comparator] = ()
    played: PlayedScores | None = None


# A case study's source of further instances: (first, count) -> the batch of instances first .. first + count - 1
# of its held-out stream (e.g. ``TrialSeeds.evaluation_seeds(first + count)[first:]``).
MoreInstances = Callable[[int, int], InstanceBatch]

def _scores(env: gym.Env, policy: Policy, instances: EvaluationInstances, played: PlayedScores | None,
            explore: bool, episodes: int, seed: int, score: Score) -> list[list[float]]:
    """The learner's (greedy) or the random policy's (``explore``) scores on ``instances``, timed as the
    trial's phase ``verdict: greedy policy`` or ``verdict: random policy``."""
    with trial_stopwatch().phase("verdict: random policy" if explore else "verdict: greedy policy"):
        if played is not None:
            return played(explore, episodes, seed)
        if explore:
            policy = RandomAgent(env.action_space, seed=seed)
        return instance_scores(env, policy, instances, episodes=episodes, explore=explore, score=score)


def _comparator_scores(env: gym.Env, comparators: Sequence[Comparator], instances: EvaluationInstances,
                       score: Score, wanted: frozenset[str] | None = None) -> list[ComparatorScores]:
    scored = []
    for comparator in comparators:
        if wanted is not None and comparator.name not in wanted:
            continue
        if comparator.scores is not None:
            scores = comparator.scores
        elif comparator.scorer is not None:
            scores = comparator.scorer()
        else:
            with trial_stopwatch().phase(f"verdict: {comparator.name}"[:64]):
                scores = instance_scores(env, comparator.policy, instances, score=score)  # type: ignore[arg-type]
        scored.append(ComparatorScores(comparator.name, comparator.kind, scores, comparator.description,
                                       comparator.cost))
    return scored


def assess_learning(env: gym.Env, policy: Policy, instances: EvaluationInstances,
                    comparators: Sequence[Comparator] = (), training_returns: Sequence[float] = (), *,
                    seed: int, score: Score = "return", score_label: str | None = None,
                    random_episodes: int | None = None, training_seeds: Sequence[int] = (),
                    selection_seeds: Sequence[int] = (), notes: Sequence[str] = (),
                    played: PlayedScores | None = None, more: MoreInstances | None = None,
                    cap: int | None = None, batch: int | None = None) -> LadderVerdict:
    """The learning verdict of ``policy`` on the evaluation ``instances`` of ``env``: its greedy scores
    against the masked uniform random policy (``random_episodes`` per instance, seeded by ``seed``) and
    every comparator, paired per instance, and the training curve ``training_returns``. Instances drawn
    with ``selection_seeds`` (or ``training_seeds``, unless the instances are declared blackbox) are refused
    before anything is played. ``played`` plays the learner and the random policy instead of ``env`` (the
    same instances, decisions and scores by another path, e.g. many instances at once). ``more`` draws
    further instances while a rung is undecided, in batches of ``batch`` (default: the first instances'
    count) up to ``cap`` (default ``verdict_cap()``); only the learner and the undecided rungs' comparators
    are played on them."""
    instances.check_unused(training_seeds, selection_seeds)
    episodes = random_episodes or random_episodes_per_instance(instances)
    learner = _scores(env, policy, instances, played, False, 1, seed, score)
    random = _scores(env, policy, instances, played, True, episodes, seed, score)
    description = f"uniformly random valid actions, {episodes} episode(s) per instance averaged"
    rungs = [ComparatorScores("random-policy", "random", random, description),
             *_comparator_scores(env, comparators, instances, score)]
    source = None
    if more is not None:
        draw = more

        def source(first: int, count: int, wanted: frozenset[str]) -> InstanceScores:
            batch_ = draw(first, count)
            batch_.instances.check_unused(training_seeds, selection_seeds)
            random_seed = derive_seed(seed, "verdict instances from", first)
            ours = _scores(batch_.env, policy, batch_.instances, batch_.played, False, 1, random_seed, score)
            scored = [ComparatorScores("random-policy", "random", _scores(
                batch_.env, policy, batch_.instances, batch_.played, True, episodes, random_seed, score),
                description)] if "random-policy" in wanted else []
            scored += _comparator_scores(batch_.env, batch_.comparators, batch_.instances, score, wanted)
            return InstanceScores(batch_.instances, ours, scored)

    label = score_label or (score if isinstance(score, str) else "score")
    return ladder_verdict(learner, rungs, instances, training_returns, score=label, notes=notes, more=source,
                          cap=verdict_cap() if cap is None else cap, batch=batch)


def training_curve(record: "RunRecord", column: str = "total_reward") -> list[float]:
    """The per-episode returns a run record's ``episodes.csv`` holds (``column``), in order."""
    return [float(row[column]) for row in record.episodes if column in row and row[column] == row[column]]


DEPRECATED = {"greedy_episodes": "instances=EvaluationInstances(seeds, description, episodes=...)",
              "trivial": "comparators=[Comparator(name, 'trivial', policy)]"}


def trial_verdict(env: gym.Env, policy: Policy, record: "RunRecord | None" = None, *, seed: int,
                  instances: EvaluationInstances | None = None, comparators: Sequence[Comparator] = (),
                  training_returns: Sequence[float] | None = None, score: Score = "return",
                  score_label: str | None = None, training_seeds: Sequence[int] = (),
                  selection_seeds: Sequence[int] = (), notes: Sequence[str] = (), random_episodes: int | None = None,
                  search_outcome: Mapping[str, Any] | None = None, played: PlayedScores | None = None,
                  more: MoreInstances | None = None, cap: int | None = None, batch: int | None = None,
                  **deprecated: Any) -> dict[str, Any]:
    """A trained policy's learning verdict as ``TrialSummary.verdict`` holds it: ``assess_learning`` on the
    evaluation ``instances`` of ``env``, with the training curve of ``record`` (its ``episodes.csv`` column
    ``total_reward``) unless ``training_returns`` are given. ``search_outcome`` (``{"line": ..., ...}``) is
    what a blackbox run found during training, reported beside the verdict and labelled a search outcome,
    not a learned policy. ``played``, ``more``, ``cap`` and ``batch``: see ``assess_learning``.

    Deprecated (0.1.0's keywords, accepted until the next release with a ``DeprecationWarning``):
    ``greedy_episodes=`` (the environment's episodes to play; use ``instances=``, which then default to
    those episodes declared blackbox, since nothing says they were held out) and ``trivial=(name, policy)``
    (use ``comparators=[Comparator(name, "trivial", policy)]``)."""
    instances, comparators = _migrated(instances, comparators, deprecated)
    curve = list(training_returns) if training_returns is not None else (training_curve(record) if record else [])
    verdict = assess_learning(env, policy, instances, comparators, curve, seed=seed, score=score,
                              score_label=score_label, training_seeds=training_seeds,
                              selection_seeds=selection_seeds, notes=notes,
                              random_episodes=random_episodes, played=played, more=more, cap=cap,
                              batch=batch).as_dict()
    if search_outcome is not None:
        verdict["search_outcome"] = dict(search_outcome)
    return verdict


def _migrated(instances: EvaluationInstances | None, comparators: Sequence[Comparator],
              deprecated: Mapping[str, Any]) -> tuple[EvaluationInstances, list[Comparator]]:
    """``trial_verdict``'s arguments with 0.1.0's keywords (``DEPRECATED``) translated, each with a warning."""
    unknown = sorted(set(deprecated) - set(DEPRECATED))
    if unknown:
        raise TypeError(f"trial_verdict() got an unexpected keyword argument {unknown[0]!r}")
    for name in deprecated:
        warnings.warn(f"trial_verdict({name}=...) is deprecated and will be removed in the next release; use "
                      f"{DEPRECATED[name]} (CHANGELOG.md)", DeprecationWarning, stacklevel=3)
    chosen = list(comparators)
    trivial = deprecated.get("trivial")
    if trivial is not None:
        name, rule = trivial
        chosen.append(Comparator(str(name), "trivial", rule))
    if instances is None:
        if "greedy_episodes" not in deprecated:
            raise TypeError("trial_verdict() missing the keyword argument 'instances' (an EvaluationInstances)")
        given = deprecated["greedy_episodes"]
        episodes = tuple(range(given)) if isinstance(given, int) else tuple(int(e) for e in given)
        instances = EvaluationInstances(episodes, "the environment's episodes " + ", ".join(map(str, episodes)),
                                        held_out=False, episodes=episodes)
    return instances, chosen
