"""The learning verdict of an indexing learner: its evaluation instances and its ladder of comparators.

Instances (``VERDICT_INSTANCES`` workloads, drawn with the trial's evaluation seeds, never used in training;
more from the same stream, in batches of as many, while a rung is undecided, up to the verdict's cap; inside
``wield.workflows.verdict_settings.instance_stream("selection")``, the selection seeds instead, for a
benchmark that chooses between variants):

- blackbox classes (C0-C2): the training workload's queries with their predicate values drawn anew from the
  data (``QueryWorkloadGenerator.redraw``: the same fields, operators, logic, sort and limits), as a
  recurring workload's parameters change between executions. The test workload is the training workload's
  shape by definition; these are fresh draws of it, not a generalisation claim. Under ``--train-on
  redraws`` the training episodes are redraws too, from another seed stream (``train_on.py``); their seeds
  are ``training_seeds``, so an instance drawn with one of them is refused (``check_unused``);
- generalisation classes (C3-C6): new workloads of the test distribution (in or out of distribution).

The score of an episode is the task's reward of the index set it ends with, ``-(w_m * size share + w_t *
runtime share)`` on that instance's workload (the learner's own reward). The ladder: the masked random
policy (random), the policy that builds no index (trivial: reward -w_t) and the index advisor (heuristic,
``advisor.py``: greedy by cost saved per byte within the objective's memory cap), each on every instance
while its rung is undecided. The advisor advises the first instances, and further ones only while its rung
needs them (a ``Comparator`` scorer): at 1,000,000 rows an advice takes seconds, and a learner that builds
no index leaves the trivial rung undecided up to the cap while the advisor's was decided on the first 10
(issue 48). With ``budgets`` it advises every instance, for the budget sweep. Last, the estimated advisor
(heuristic, ``estimated_advisor.py``: the advisor's algorithm on statistics-only estimates, no engine
evaluation, the non-learning method that decides as cheaply as the greedy policy), its set scored on the
engine only while its rung is undecided; the budget sweep pairs it with the greedy policy on every instance
the advisor advised (``verdict["budgets"]["estimated"]``, the budget-0 note).

Equal decision budgets (``budgeted.py``, issue 42): the greedy policy decides with no engine evaluation, the
advisor with none decides nothing (no index); a note under the ladder says so with the evaluations the
advisor needed to reach the greedy set's reward. With ``budgets`` the learned policy's policy-guided search
and the advisor stopped at each budget are scored on every instance too (``verdict["budgets"]``, one note).

Decision time per instance (``verdict["decision_time"]``, a note under the ladder, and the trial's extras):
the greedy policy's is the wall time of its whole play of the instance's workload in the budget sweep (state
features, masks and one forward pass per query: ``budgeted.policy_search``'s ``greedy_seconds``, timed as a new
workload's: fresh query objects and a converter that has forgotten the estimates of the policy's earlier play
of the same instance, which had made the play measured 1.2-1.7x faster than a new workload's) for a learner
the sweep plays, else of its ``act`` calls alone (the engine's measurements of the reward are not a
decision's cost), the advisor's is its whole
``advise`` (its workload evaluations on the engine included; an advice read from the measurement store,
``advisor.shared_advice``, keeps the time measured when it was computed, and the note says how many were),
the estimated advisor's is its whole choice on estimates:
what each needs to choose an index set for a new workload, the comparison a learned advisor can win at C4
(new query sets at test time, no retraining). Each is the mean over the instances; with the sweep the greedy
policy's and the advisor's medians are kept beside them (a stall of the machine moves a mean, not a median).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Mapping, Sequence

import numpy as np

from case_studies.indexing.advisor import AdvisorResult, shared_advice
from case_studies.indexing.budgeted import budget_sweep, evaluations_to_match
from case_studies.indexing.build import RunTask, workload_configs
from case_studies.indexing.demonstrations import NoOpRule
from case_studies.indexing.estimated_advisor import METHOD as ESTIMATED_METHOD, EstimatedScores
from case_studies.indexing.estimated_search import searched_rewards
from case_studies.indexing.train_on import REDRAWS, WORKLOAD, protocol_line
from wield.envs import EpisodeList
from wield.protocols import EvaluationInstances, TrialSeeds
from wield.seeding import derive_seed
from wield.agents.base import Agent
from wield.workflows import Comparator, InstanceBatch, RunRecord, trial_stopwatch, trial_verdict
from wield.workflows.verdict_settings import verdict_stream
from workloads import QueryWorkloadGenerator, redraw_seeds

VERDICT_INSTANCES = 10
SCORE = "reward of the index set built, -(w_m * size share + w_t * runtime share)"


def verdict_workloads(run: RunTask, queries: int, seeds: TrialSeeds, first: int = 0,
                      count: int = VERDICT_INSTANCES) -> tuple[list[list], EvaluationInstances]:
    """The verdict's workloads ``first .. first + count - 1`` of the held-out stream and their
    ``EvaluationInstances`` (module docstring)."""
    collection = run.task.collection
    selection = verdict_stream() == "selection"  # a benchmark choosing between variants (verdict_settings)
    chosen = (seeds.selection_seeds if selection else seeds.evaluation_seeds)(first + count)[first:]
    if seeds.blackbox:
        generator = QueryWorkloadGenerator(collection)
        workloads = [generator.redraw(run.test_workload, seed) for seed in chosen]
        what = (f"the training workload's {len(run.test_workload)} queries with predicate values drawn anew "
                "(blackbox class: fresh draws of the training workload)")
    else:
        test_config = workload_configs(collection, queries, seeds)[1]
        generator = QueryWorkloadGenerator(collection, test_config)
        workloads = [generator.generate(seed) for seed in chosen]
        what = f"new {queries}-query workloads of the test distribution ({seeds.test_distribution})"
    if selection:
        what += "; seeds of the selection stream, for choosing between variants: not the verdict's instances"
    return workloads, EvaluationInstances(chosen, what)


def training_seeds(seeds: TrialSeeds, episodes: int, redraws: bool = False) -> list[int]:
    """The seeds the trial's training workloads were drawn with (``make_query_schedule``'s): under
    ``redraws`` (``--train-on redraws``) the training workload's and every episode's redraw seed, which the
    verdict's ``check_unused`` then keeps out of its held-out instances."""
    if seeds.train_workload_seed is None:
        return []
    root = int(seeds.train_workload_seed)
    if redraws:
        return [root, *redraw_seeds(root, max(1, episodes))]
    return [root] if seeds.blackbox else [root] + [derive_seed(root, "episode", i) for i in range(episodes)]


class TimedPolicy(Agent):
    """The trained agent's greedy policy with the wall time and count of its ``act`` calls."""

    def __init__(self, agent) -> None:
        self.agent = agent
        self.seconds = 0.0
        self.decisions = 0

    def act(self, observation, explore: bool = True, mask=None):
        started = time.perf_counter()
        try:
            return self.agent.act(observation, explore=explore, mask=mask)
        finally:
            self.seconds += time.perf_counter() - started
            self.decisions += 1

    def learn_episodes(self, env, episodes: int, *, start_episode: int = 0, on_episode=None,
                       reward_fn=None) -> None:
        raise NotImplementedError("a timed greedy policy is only played, never trained")


def decision_time_note(decision: Mapping[str, Any]) -> str:
    """The note of decision time per instance; it says on how many of the instances drawn the advisor ran
    where its rung was decided before the verdict's last look (module docstring)."""
    reused = int(decision.get("advisor_reused", 0))
    advised, drawn = int(decision["instances"]), int(decision.get("drawn", decision["instances"]))
    shared = (f"; {reused} of {advised} advices read from the measurement store, timed when "
              "they were computed" if reused else "")
    where = (f"; the advisor ran on the first {advised} of the {drawn} instances: its rung was decided there"
             if advised < drawn else "")
    estimated = (f"; estimated advisor {decision['estimated_seconds'] * 1e3:.1f} ms (no engine evaluation)"
                 if "estimated_seconds" in decision else "")
    what = ("its whole play as of a new workload: state features, masks and "
            if decision.get("greedy_timed") == "rollout" else "")
    return (f"decision time per instance: greedy policy {decision['greedy_seconds'] * 1e3:.2f} ms "
            f"({what}{decision['greedy_decisions']:.0f} forward passes, no engine evaluation); advisor "
            f"{decision['advisor_seconds']:.2f} s ({decision['advisor_evaluations']:.0f} workload evaluations "
            f"on the engine{shared}){where}{estimated}")


def budget_notes(sweep: Mapping[str, Any], advice: Sequence[AdvisorResult]) -> list[str]:
    """The notes of equal decision budgets (module docstring): budget 0 always, every budget of the sweep when
    it has more than budget 0."""
    at = {budget: i for i, budget in enumerate(sweep["budgets"])}
    greedy = [scores[at[0]] for scores in sweep["learned"]]
    nothing = [scores[at[0]] for scores in sweep["advisor"]]
    needed = [evaluations_to_match(a, g) for a, g in zip(advice, greedy)]
    reached = [n for n in needed if n is not None]
    reach = (f"the advisor reaches the greedy set's reward after a median {np.median(reached):.0f} of its "
             f"{np.mean([a.evaluations for a in advice]):.0f} evaluations on {len(reached)} of {len(needed)} "
             f"instances" if reached else f"the advisor never reaches the greedy set's reward "
                                          f"(0 of {len(needed)} instances)")
    notes = [f"equal decision budget 0 (no engine evaluation): greedy policy {np.mean(greedy):.3f}, advisor "
             f"{np.mean(nothing):.3f} (no index: it decides nothing without evaluating); {reach}"]
    if "estimated" in sweep:  # the non-learning method that decides without the engine too
        difference = [g - e for g, e in zip(greedy, sweep["estimated"])]
        notes[0] += (f"; the estimated advisor, which decides without the engine too, {np.mean(sweep['estimated']):.3f}"
                     f" (greedy - estimated {np.mean(difference):+.3f}, greedy better on "
                     f"{sum(d > 1e-12 for d in difference)}/{len(difference)})")
    others = [b for b in sweep["budgets"] if b > 0]
    if others:
        cells = []
        for budget in others:
            difference = [s[at[budget]] - a[at[budget]] for s, a in zip(sweep["learned"], sweep["advisor"])]
            cells.append(f"{budget}: {np.mean(difference):+.3f} ({sum(d > 0 for d in difference)}/{len(difference)} "
                         "wins)")
        notes.append("equal decision budgets, policy-guided search - advisor stopped at the budget (mean reward "
                     "difference per instance): " + ", ".join(cells))
    return notes


def indexing_verdict(run: RunTask, queries: int, episodes: int, seeds: TrialSeeds, agent, record: RunRecord, *,
                     random_seed: int, search_outcome: Mapping[str, Any] | None = None,
                     budgets: Sequence[int] | None = None, method: str = "the learner") -> dict[str, Any]:
    """The trained ``agent``'s verdict on the instances above (more of them while a rung is undecided), with
    the advisor's cost per instance and the learned method against the advisor at equal decision budgets
    (budget 0, and ``budgets`` when given). A blackbox verdict records what ``method`` trained on
    (``verdict["train_on"]``; under redraws a note says what it means, ``train_on.py``)."""
    task = run.task
    redraws = bool(run.schedule.params.get("redraws", False))
    advice: list[AdvisorResult] = []
    advised_workloads: list = []  # the instances the advisor ran on, in the order of ``advice``
    what = "greedy by cost saved per byte within the objective's memory cap"
    estimated = EstimatedScores(task) if getattr(task.converter, "statistics", None) is not None else None

    def advise(workloads: list) -> list[AdvisorResult]:
        with trial_stopwatch().phase("verdict: advisor"):
            advised = [shared_advice(task.system, task.converter, workload) for workload in workloads]
        advice.extend(advised)
        advised_workloads.extend(workloads)
        return advised

    def batch(first: int, count: int) -> InstanceBatch:
        with trial_stopwatch().phase("verdict: instances drawn"):
            workloads, instances = verdict_workloads(run, queries, seeds, first, count)
        if first == 0 or budgets:  # the first look prints the advisor's cost; a budget sweep scores every instance
            advised = advise(workloads)
            cost = (f"advisor: {np.mean([a.evaluations for a in advised]):.0f} workload evaluations and "
                    f"{np.mean([a.seconds for a in advised]):.1f} s per instance")
            advisor = Comparator("advisor", "heuristic", scores=[[a.reward] for a in advised], cost=cost,
                                 description=what)
        else:  # advised only while its rung is undecided: at 1,000,000 rows an advice takes seconds (issue 48)
            advisor = Comparator("advisor", "heuristic", scorer=lambda: [[a.reward] for a in advise(workloads)],
                                 description=what)
        comparators = [Comparator("no-index", "trivial", NoOpRule(task.schema.k), description="builds no index"),
                       advisor]
        if estimated is not None:  # cheap to advise, but its set is scored on the engine: only while undecided
            comparators.append(Comparator(ESTIMATED_METHOD, "heuristic", scorer=partial(estimated.scores, workloads),
                                          description="the advisor's greedy choice on statistics-only cost "
                                                      "estimates, no engine evaluation"))
        return InstanceBatch(task.environment(EpisodeList(workloads)), instances, comparators)

    timed = TimedPolicy(agent)
    first = batch(0, VERDICT_INSTANCES)
    verdict = trial_verdict(first.env, timed, record, seed=random_seed, instances=first.instances,
                            comparators=first.comparators, score="final_reward", score_label=SCORE,
                            training_seeds=training_seeds(seeds, episodes, redraws), search_outcome=search_outcome,
                            more=batch)
    count = max(1, int(verdict["instances"]["count"]))  # the greedy policy played every instance drawn
    decision = {"greedy_seconds": timed.seconds / count, "greedy_decisions": timed.decisions / count,
                "advisor_seconds": float(np.mean([a.seconds for a in advice])),
                "advisor_evaluations": float(np.mean([a.evaluations for a in advice])),
                "advisor_reused": sum(a.reused for a in advice), "instances": len(advice), "drawn": count}
    verdict["decision_time"] = decision
    notes = []
    if seeds.blackbox:
        verdict["train_on"] = REDRAWS if redraws else WORKLOAD
    if redraws:  # the default protocol's lines stay as they were
        notes.append(protocol_line(REDRAWS, episodes, method))
    if hasattr(agent, "heads"):  # a learner a policy-guided search can play (Wield's DQN, DQfD)
        with trial_stopwatch().phase("verdict: budgets"):
            sweep = budget_sweep(task, agent, advised_workloads, advice, sorted({0, *(budgets or ())}),
                                 reference=None if estimated is None else estimated.reward,
                                 searched=None if estimated is None else partial(searched_rewards, estimated))
        verdict["budgets"] = sweep
        notes += budget_notes(sweep, advice)
        # the decision a new workload needs: the whole play, its state features and masks included (a design
        # whose features are cost estimates spends most of its decision there, not in the forward passes)
        decision["greedy_act_seconds"] = decision["greedy_seconds"]
        decision["greedy_seconds"] = float(np.mean(sweep["greedy_seconds"]))
        decision["greedy_timed"] = "rollout"
        # the medians beside the means: one stall of the machine during a play of a few milliseconds moves a
        # trial's mean and leaves its median (``decision_cost.median_lines``)
        decision["greedy_median_seconds"] = float(np.median(sweep["greedy_seconds"]))
        decision["advisor_median_seconds"] = float(np.median([a.seconds for a in advice]))
    if estimated is not None and estimated.advice:  # after the sweep, which may advise further instances
        decision["estimated_seconds"] = float(np.mean([e.seconds for e in estimated.advice]))
        decision["estimated_instances"] = len(estimated.advice)
    notes.insert(0, decision_time_note(decision))
    verdict["notes"] = [*verdict.get("notes", []), *notes]
    lines = list(verdict.get("lines", []))
    verdict["lines"] = [*lines[:-1], *(f"  note: {note}" for note in notes), *lines[-1:]]  # before 'learned:'
    return verdict
