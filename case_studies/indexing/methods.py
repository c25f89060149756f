"""The methods ``wield compare indexing`` runs on one trial: learners, optimisers and fixed baselines.

- ``dqn`` and ``dqfd``: trained online, one step per query (training.py); ``sb3-ppo``, ``sb3-maskable-ppo``
  and ``sb3-a2c`` (Stable-Baselines3 reference learners, the optional extra ``wield[sb3]``) the same way, with
  the same budget of n = E x Q transitions.
- ``opentuner`` and ``random``: search the index-set space (search_space.py) with OpenTuner or uniformly at
  random. Budget parity with the learner: a learner run of E episodes of Q queries makes n = E x Q
  transitions, each measuring the workload under the current index set once (one system evaluation); an
  optimiser gets the same n = E x Q evaluations, each measuring the workload under one whole index set.
  Blackbox mode tunes for the trial's one workload; generalisation mode tunes one index set across the
  training distribution (evaluation t measures workload t // Q of the training schedule, the workload the
  learner sees at step t) and evaluates it on the unseen test workload. The best index set found (highest
  reward, the learner's reward function) is rebuilt and evaluated, as the learner's is.
- ``advisor``: a classical index advisor (advisor.py), a non-learning heuristic: candidate indexes from
  the test workload's predicates and sort keys, added greedily by workload cost saved per byte within the
  objective's memory cap while the reward improves. It is charged the workload evaluations it makes (tens,
  against the learner's n = E x Q); like any advisor it is given the workload it advises on, the test workload
  (in generalisation classes too: a tool run per workload, not a policy trained beforehand).
- ``estimated-advisor``: the same greedy selection on statistics-only cost and size estimates
  (estimated_advisor.py), a non-learning heuristic that makes no engine evaluation (n = 0): the method that,
  like a trained policy, decides from statistics alone.
- ``full`` and ``none``: the fixed baselines, no search (n = 0).

Every method is evaluated by ``evaluate_methods`` on the same test workload with the study's metrics
(run.py walks the path: build -> train -> evaluate -> record).
"""

from __future__ import annotations

from typing import Any, Callable

from case_studies.indexing.advisor import METHOD as ADVISOR
from case_studies.indexing.advisor import MEMORY_CAP, shared_advice
from case_studies.indexing.agents import AGENTS
from case_studies.indexing.build import RunTask
from case_studies.indexing.cost_estimate import StatisticsCostModel
from case_studies.indexing.estimated_advisor import METHOD as ESTIMATED
from case_studies.indexing.estimated_advisor import estimated_advice
from case_studies.indexing.search_space import IndexSetSpace
from case_studies.indexing.training import Trained
from wield.errors import ConfigError
from wield.protocols import TrialSeeds
from wield.workflows import RunRecord, trial_stopwatch
from wield.workflows.search import SearchEvaluation, run_configuration_search

# dqn, dqfd and the Stable-Baselines3 reference learners that fit the k action heads (not sb3-dqn, which
# --agent still names, to say why it does not fit)
LEARNERS = tuple(agent for agent in AGENTS if agent != "sb3-dqn")
OPTIMISERS = ("opentuner", "random")
HEURISTICS = (ADVISOR, ESTIMATED)  # non-learning methods: the index advisor, and the same on estimates
FIXED = ("full", "none")


def learner_methods() -> tuple[str, ...]:
    """The learners the run configuration can train: DQN, DQfD and the Stable-Baselines3 agents."""
    return LEARNERS


# Relative time of one trial, measured at the study's budget (100,000 documents, n = 2,000, C2, 5 trials:
# seconds per trial, mean): random search 710, OpenTuner 482, DQN 80, DQfD 67, full and none 4. Each
# optimiser evaluation configures a whole index set (new indexes to build and size); a learner changes one
# index per step. The advisor makes 30-90 evaluations of index sets that differ in one index (measured at
# 20,000 documents, seeds 0-4, cold caches: 3-16 s per trial against DQN's 35-50 s). wield compare only orders
# trials by it (the costliest first, to pack parallel workers). ``none`` after ``full``: a none trial takes
# both rows from the full trial on its workload (fixed_rows.py), so it costs almost nothing once that ran.
METHOD_COSTS = {"random": 10.0, "opentuner": 7.0, "dqn": 1.2, "dqfd": 1.0, ADVISOR: 0.2, ESTIMATED: 0.06,
                "full": 0.05, "none": 0.01}


def available_methods() -> tuple[str, ...]:
    """Every method name ``config["method"]`` accepts; the first is the default learner."""
    return LEARNERS + OPTIMISERS + HEURISTICS + FIXED


def make_optimiser(method: str, space: IndexSetSpace, seed: int):
    from wield.agents import OpenTunerAgent, RandomSearchAgent

    if method == "opentuner":
        return OpenTunerAgent(space.space, seed=seed)  # results database in memory
    if method == "random":
        return RandomSearchAgent(space.space, seed=seed)
    raise ConfigError("method", method, OPTIMISERS)


def search_index_sets(config, method: str, run: RunTask, seeds: TrialSeeds, record: RunRecord, *,
                      progress: bool = False, echo: Callable[[str], None] = print) -> Trained:
    """The optimisers' "train" step: spend n = episodes x queries evaluations searching index sets; the best
    one found (highest reward, the learner's reward function) is the method's result."""
    task, schedule = run.task, run.schedule
    space = IndexSetSpace(run.task.collection.field_names, slots=config.queries, k=config.k)
    record.write_json("search_space.json", {"slots": space.slots, "k": space.k, "fields": list(space.fields),
                                            "log10_size": space.space.log10_size(),
                                            "parameters": space.space.describe()})
    budget = config.episodes * config.queries
    agent = make_optimiser(method, space, seeds.optimisation_seed)

    def evaluate(t: int, configuration: dict[str, Any]) -> float:
        items = schedule.task_for_episode((t // config.queries) % schedule.n_episodes)
        task.system.configure(space.decode(configuration))
        metrics = task.system.measure(items)
        return task.converter.system_to_agent_reward(metrics)

    rows: list[dict[str, Any]] = []

    def on_evaluation(entry: SearchEvaluation) -> None:
        indexes = space.decode(entry.configuration)
        rows.append({"evaluation": entry.evaluation, "reward": entry.reward,
                     "best_reward": entry.best_reward, "indexes": len(indexes),
                     "index_set": "; ".join(map(str, indexes)),
                     "query_executions": task.system.counters.query_executions,
                     "cache_hits": task.system.counters.cache_hits})
        # episodes.csv is rewritten whole on every append: once per Q evaluations (a learner's episode),
        # not once per evaluation, keeps 2,000 evaluations from rewriting it 2,000 times
        if len(rows) == config.queries or entry.evaluation == budget - 1:
            record.append_episodes(rows)
            rows.clear()

    echo(f"{method}: {budget} evaluations ({config.episodes} episodes x {config.queries} queries) over "
         f"10^{space.space.log10_size():.0f} index sets -> {record.path}")
    try:
        result = run_configuration_search(agent, evaluate, budget, on_evaluation, progress=progress,
                                          description=method, stopwatch=trial_stopwatch())
    finally:
        agent.close()
        if rows:  # a search that ended early
            record.append_episodes(rows)
    return Trained({method: space.decode(result.best_configuration)}, budget,
                   {"best_training_reward": result.best_reward, "first_reward": result.first_reward,
                    "best_configuration": result.best_configuration})


def advise_index_set(config, run: RunTask, record: RunRecord, *, echo: Callable[[str], None] = print) -> Trained:
    """The advisor's "train" step: advise an index set for the test workload (advisor.py); charged its workload
    evaluations (transitions = evaluations, as an optimiser's), with its steps written to ``advisor.json``."""
    task = run.task
    echo(f"{ADVISOR}: greedy index advice for {len(run.test_workload)} queries ({config.metric} metric) -> "
         f"{record.path}")
    result = shared_advice(task.system, task.converter, run.test_workload)
    record.write_json("advisor.json", {"memory_cap": MEMORY_CAP, "candidates": result.candidates,
                                       "evaluations": result.evaluations, "seconds": result.seconds,
                                       "read_from_store": result.reused,
                                       "reward": result.reward, "configuration": [str(s) for s in result.configuration],
                                       "steps": result.steps})
    echo(f"{ADVISOR}: {len(result.configuration)} indexes from {result.candidates} candidates, reward "
         f"{result.reward:.3f}, {result.evaluations} evaluations, {result.seconds:.1f} s")
    return Trained({ADVISOR: result.configuration}, result.evaluations,
                   {"advisor_candidates": result.candidates, "advisor_seconds": result.seconds,
                    "advisor_reward": result.reward})


def estimate_index_set(config, run: RunTask, record: RunRecord, *, echo: Callable[[str], None] = print) -> Trained:
    """The estimated advisor's "train" step: choose an index set for the test workload on statistics-only
    estimates (estimated_advisor.py); no engine evaluation (n = 0); what it chose is written to
    ``estimated-advisor.json``."""
    task = run.task
    if task.converter.statistics is None:
        raise ConfigError("method", ESTIMATED, reason="needs the task's column statistics")
    result = estimated_advice(StatisticsCostModel(task.converter.statistics), task.converter, run.test_workload,
                              config.k, memory_cap=MEMORY_CAP, aggregate=task.system.aggregate)
    record.write_json(f"{ESTIMATED}.json", {"memory_cap": MEMORY_CAP, "candidates": result.candidates,
                                            "evaluations": 0, "seconds": result.seconds,
                                            "estimated_reward": result.estimated_reward,
                                            "configuration": [str(s) for s in result.configuration]})
    echo(f"{ESTIMATED}: {len(result.configuration)} indexes from {result.candidates} candidates on statistics-only "
         f"estimates (estimated reward {result.estimated_reward:.3f}), no engine evaluation, "
         f"{result.seconds * 1e3:.1f} ms")
    return Trained({ESTIMATED: result.configuration}, 0,
                   {"estimated_candidates": result.candidates, "estimated_seconds": result.seconds,
                    "estimated_reward": result.estimated_reward})
