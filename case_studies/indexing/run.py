"""One indexing run end to end (docs/design.md section 3), one straight path:

    build the task (build.py) -> train the method (training.py for learners, methods.py for optimisers)
    -> evaluate every method on the test workload (evaluation.py) -> record (here)

``run_indexing(config, method, seeds, record)`` serves every trial (``trials.py``) and ``wield run indexing``
(``plugin.py``); the core has started the run record and finishes it. ``IndexingRunConfig`` is everything
that defines a run (``config.json``). The objective the evaluation measures for and ``evaluation.json`` judges
by is the run's (``wield.workflows.run_objective``: ``--objective``'s, or the experiment's, else
``defaults.OBJECTIVE``); the advisor's memory cap stays the case study's (``advisor.MEMORY_CAP``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from case_studies.indexing.advisor import METHOD as ADVISOR
from case_studies.indexing.decision_cost import ESTIMATED, heuristic_rung
from case_studies.indexing.agents import AGENTS, SB3_AGENTS, check_sb3_agent
from case_studies.indexing.budgeted import parse_budgets
from case_studies.indexing.build import RunTask, build_run, check_engine_choice
from case_studies.indexing.candidate_design import ACTIONS
from case_studies.indexing.converter import STEP_REWARDS
from case_studies.indexing.demonstrations import RULES, check_rules_fit_design, default_rules
from case_studies.indexing.defaults import (ACTION_DESIGN, DOCUMENTS, EPISODES, K, OBJECTIVE, QUERIES, RUNTIME_WEIGHT,
                                            SIZE_WEIGHT, STEP_REWARD)
from case_studies.indexing.engines.contract import METRICS
from case_studies.indexing.evaluation import MAX_ROUNDS, MIN_ROUNDS, evaluate_methods
from case_studies.indexing.system import AGGREGATES
from case_studies.indexing.train_on import REDRAWS, WORKLOAD, check_train_on
from wield.configs import dataclass_from_dict, parse_name_list, require_integers
from wield.errors import ConfigError
from wield.io import input_file_problem
from wield.protocols import Objective, TrialSeeds, TrialSummary
from wield.protocols.objective import INCONCLUSIVE
from wield.seeding import derive_seed
from wield.workflows import RunRecord, run_objective, trial_stopwatch
from wield.workflows.timing import SYSTEM
from workloads.files import check_load_options, default_nulls, describe_source, is_builtin_collection
from workloads.imdb import FIELDS as IMDB_FIELDS

# Upper bounds checked before anything is generated or written, so a typo cannot exhaust memory:
MAX_DOCUMENTS = 10_000_000  # a generated collection holds ~320 bytes per document in memory (~3 GB here)
MAX_QUERIES = 10_000  # queries per workload
MAX_EPISODES = 1_000_000  # the schedule keeps one entry per episode
# Generalisation classes generate one workload per training episode up front, ~1.7 KB per query in memory:
# at most this many queries (episodes x queries, about 0.85 GB and a minute or two to generate).
MAX_SCHEDULED_QUERIES = 500_000
MAX_REPETITIONS = 1_000
MAX_SEED = 2**63 - 1
VOLATILE_CONFIG = ("uri", "server_dir")  # where the server is, not what the run is
# Non-learning methods that --agent also names (wield run indexing --agent advisor): the index advisor
RUN_HEURISTICS = (ADVISOR, ESTIMATED)
# DQfD's rules in a config.json written before they were configurable (then always these two)
RULES_OF_OLDER_RECORDS = ("prefix", "reverse")
# the task design of a config.json written before it was a choice: the study's heads and level reward
DESIGN_OF_OLDER_RECORDS = {"actions": "positional", "reward": "level"}


@dataclass
class IndexingRunConfig:
    """Everything that defines an indexing run; saved as config.json and enough to rerun it."""

    documents: int = DOCUMENTS
    queries: int = QUERIES
    k: int = K
    actions: str = ACTION_DESIGN  # the task design the agent sees: candidates, or positional (the study's)
    reward: str = STEP_REWARD  # what the learner is rewarded with: the change of the level, or the level (study)
    episodes: int = EPISODES
    seed: int = 0
    metric: str = "work"
    aggregate: str = "mean"
    size_weight: float = SIZE_WEIGHT
    runtime_weight: float = RUNTIME_WEIGHT
    repetitions: int = 5
    collection: str | None = None
    # the fingerprint of ``collection``'s data when the run was configured: part of an experiment's identity
    # (a resume on an edited file is refused) and checked whenever the file is loaded again
    collection_fingerprint: str | None = None
    # what a NULL in ``collection`` does: refuse (an error naming every field) or drop its row; None: the
    # collection's default (refuse for a file, drop for the built-in flights), set by validate()
    nulls: str | None = None
    rows: int | None = None  # read only the first ``rows`` records of ``collection`` (None: all)
    engine: str = "sqlite"
    uri: str | None = None  # server of --engine postgres / mongodb; never with a password
    server_dir: str | None = None  # a 'wield db start' directory: its current URI is looked up at run time
    whatif: bool = False  # PostgreSQL only: train on hypopg estimates, evaluate for real
    cache_dir: str | None = None
    agent: str = "dqn"
    demonstrations: str | None = None
    pretrain_steps: int = 1000
    # DQfD without a demonstration dataset labels its training workload with these rules (see agents.py;
    # None: the design's default, ``demonstrations.default_rules``)
    rules: list[str] | None = None
    cost_cache: bool = True  # False: the slow path, every configuration measured from scratch (for checks)
    # the learner's hyperparameters (the config file's [agent] block, --set agent.KEY=VALUE; None: the defaults),
    # wield.agents.hyperparameters; a method that is not a learner ignores them
    hyperparameters: dict[str, Any] | None = None
    # decision budgets (workload evaluations) at which the verdict also scores the learned policy's
    # policy-guided search against the advisor stopped at the budget (budgeted.py; None: budget 0 only)
    budgets: list[int] | None = None
    # what a blackbox learner's training episodes play (train_on.py): the training workload itself, or its
    # redraws (predicate values drawn anew per episode from a seed stream disjoint from the verdict's)
    train_on: str = WORKLOAD

    def validate(self) -> "IndexingRunConfig":
        if self.agent not in AGENTS + RUN_HEURISTICS:
            raise ConfigError("agent", self.agent, AGENTS + RUN_HEURISTICS)
        if self.actions not in ACTIONS:
            raise ConfigError("actions", self.actions, ACTIONS)
        self.rules = parse_name_list(list(default_rules(self.actions)) if self.rules is None else self.rules,
                                     "rules", tuple(RULES), what="labelling rule")
        if self.agent in SB3_AGENTS:  # a missing extra or an unfit space fails before anything is written
            check_sb3_agent(self.agent, self.k)
        self.check_hyperparameters((self.agent,))
        # DQfD may skip online training (episodes = 0): the pretrain-only policy is then evaluated.
        positive = {"documents": 100, "queries": 1, "k": 1, "episodes": 0 if self.agent == "dqfd" else 1,
                    "repetitions": 1, "pretrain_steps": 0, "seed": 0}
        require_integers(self, positive)
        for name, maximum, why in (
                ("documents", MAX_DOCUMENTS, "a generated collection holds about 320 bytes per document in memory"),
                ("queries", MAX_QUERIES, "queries per workload"),
                ("episodes", MAX_EPISODES, "the training schedule keeps an entry per episode"),
                ("repetitions", MAX_REPETITIONS, "executions per query and measurement"),
                ("pretrain_steps", 100_000_000, "gradient steps"),
                ("seed", MAX_SEED, "seeds are 63-bit integers")):
            if getattr(self, name) > maximum:
                raise ConfigError(name, getattr(self, name), reason=f"must be <= {maximum:,} ({why})")
        if self.collection is None and self.k > len(IMDB_FIELDS):
            raise ConfigError("k", self.k, reason=f"must be <= {len(IMDB_FIELDS)}, the number of fields of the "
                                                  "generated collection (an index has at most one key per field)")
        self.check_rules_fit(self.agent)
        if self.reward not in STEP_REWARDS:
            raise ConfigError("reward", self.reward, STEP_REWARDS)
        if self.metric not in METRICS:
            raise ConfigError("metric", self.metric, METRICS)
        if self.aggregate not in AGGREGATES:
            raise ConfigError("aggregate", self.aggregate, AGGREGATES)
        check_engine_choice(self.engine, self.uri, self.whatif)
        if not isinstance(self.cost_cache, bool):
            raise ConfigError("cost_cache", self.cost_cache, (True, False))
        if self.server_dir is not None and self.engine != "postgres":
            raise ConfigError("server-dir", self.server_dir, reason="names a PostgreSQL server of 'wield db start': "
                                                                    "give --engine postgres")
        if self.whatif and self.metric != "work":
            raise ConfigError("metric", self.metric, ("work",), reason="the what-if mode trains on the "
                              "planner's estimated cost, a work measure")
        for name in ("size_weight", "runtime_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(name, value, reason="must be finite and >= 0")
        if self.nulls is None:
            self.nulls = default_nulls(self.collection)
        check_load_options(self.nulls, self.rows)
        if self.collection is None and (self.nulls != "refuse" or self.rows is not None):
            name, value = ("rows", self.rows) if self.rows is not None else ("nulls", self.nulls)
            raise ConfigError(name, value, reason="applies to a --collection (the generated collection has no "
                                                  "NULLs; its size is --documents)")
        problem = (input_file_problem(self.collection)
                   if self.collection is not None and not is_builtin_collection(self.collection) else None)
        if problem:
            raise ConfigError("collection", self.collection, reason=problem)
        if self.collection_fingerprint is not None and (self.collection is None
                                                        or not isinstance(self.collection_fingerprint, str)):
            raise ConfigError("collection_fingerprint", self.collection_fingerprint,
                              reason="is the fingerprint of a --collection's data: a string, with 'collection'")
        if self.cache_dir is not None and Path(self.cache_dir).exists() and not Path(self.cache_dir).is_dir():
            raise ConfigError("cache-dir", self.cache_dir, reason="is a file, not a directory")
        if self.budgets is not None:
            self.budgets = parse_budgets(self.budgets)
        check_train_on(self.train_on)
        if self.demonstrations is not None:
            if self.agent != "dqfd":
                raise ConfigError("demonstrations", self.demonstrations,
                                  reason="demonstrations are for agent 'dqfd' (give --agent dqfd)")
            if not (Path(self.demonstrations) / "manifest.json").is_file():
                raise ConfigError("demonstrations", self.demonstrations,
                                  reason="not a demonstration dataset directory (no manifest.json); make one "
                                         "with 'wield demonstrate indexing --out DIR'")
        return self

    def check_rules_fit(self, method: str) -> None:
        """Refuse labelling rules the task design cannot label with, for ``method`` DQfD labelling its own
        training workload (the shortlist design: ``SHORTLIST_RULES`` only)."""
        if method == "dqfd" and self.demonstrations is None:
            check_rules_fit_design(self.actions, self.rules or ())

    def check_hyperparameters(self, methods: Sequence[str]) -> None:
        """Refuse hyperparameters that do not fit one of ``methods``' learners (naming the key and the allowed
        keys); methods that are not learners take none."""
        from wield.agents import hyperparameters

        if self.hyperparameters is None:
            return
        if not isinstance(self.hyperparameters, dict):
            raise ConfigError("hyperparameters", self.hyperparameters, reason="must be a table (the [agent] block)")
        for method in methods:
            if method in AGENTS:
                hyperparameters.check(method, self.hyperparameters)

    def check_schedule_size(self, generalisation: bool) -> None:
        """Refuse a schedule of one workload per episode, generated up front (a generalisation class, or
        ``train_on`` redraws), too big for memory."""
        per_episode = generalisation or self.train_on == REDRAWS
        if per_episode and self.episodes * self.queries > MAX_SCHEDULED_QUERIES:
            what = "a generalisation run" if generalisation else "a run with --train-on redraws"
            raise ConfigError("episodes", self.episodes, reason=(
                f"with {self.queries} queries per workload {what} generates "
                f"{self.episodes * self.queries:,} queries up front (one workload per episode, about 1.7 KB "
                f"each in memory); at most {MAX_SCHEDULED_QUERIES:,}: give fewer --episodes or --queries"))

    def single_run_seeds(self) -> TrialSeeds:
        """The seeds of ``wield run indexing --seed SEED`` without ``--class`` (a blackbox run; ``seed`` is
        the base seed, so the collection is the one every trial of an experiment with that seed shares)."""
        workload = derive_seed(self.seed, "workload")
        return TrialSeeds(trial=0, mode="blackbox", train_workload_seed=workload, test_workload_seed=workload,
                          test_distribution="in", optimisation_seed=derive_seed(self.seed, "agent"),
                          base_seed=self.seed)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "IndexingRunConfig":
        data = {"rules": list(RULES_OF_OLDER_RECORDS), **DESIGN_OF_OLDER_RECORDS, **data}
        return dataclass_from_dict(cls, data)


def objective_decides(metrics: Mapping[str, Any], objective: Objective = OBJECTIVE) -> bool:
    """Whether ``objective`` (the case study's unless given) can tell for one method's metrics (met or not
    met): evaluation measures more rounds until it can for every method, or reaches its cap."""
    return objective.decide(metrics) != INCONCLUSIVE


def shape_similarity(training: Sequence, test: Sequence) -> float:
    """Fraction of test queries whose shape (structure, predicate values stripped) occurs in training."""
    seen = {query.shape() for query in training}
    return sum(query.shape() in seen for query in test) / len(test) if test else 0.0


def run_indexing(config: IndexingRunConfig, method: str, seeds: TrialSeeds, record: RunRecord, *,
                 progress: bool = False, echo: Callable[[str], None] = print) -> TrialSummary:
    """Build the task, train ``method``, evaluate every method on the test workload and record (see the module
    docstring); returns the trial's summary."""
    from case_studies.indexing.fixed_rows import rows_source_line, shared_rows
    from case_studies.indexing.methods import (FIXED, LEARNERS, OPTIMISERS, advise_index_set, estimate_index_set,
                                               search_index_sets)
    from case_studies.indexing.training import Trained, train_learner

    if method in LEARNERS:  # the method names the agent; a dataset given for dqfd is not the others' input
        config = replace(config, agent=method, demonstrations=config.demonstrations if method == "dqfd" else None)
    config.validate()
    check_train_on(config.train_on, generalisation=not seeds.blackbox)
    redraws = config.train_on == REDRAWS and method in LEARNERS  # the advisor and search methods: the workload
    config.check_schedule_size(not seeds.blackbox)
    if not config.collection:
        echo(f"collection: {config.documents:,} generated IMDB-like documents")
    phase = trial_stopwatch().phase  # where the trial's time goes, by phase (the summary's "phases")
    with phase("build"):
        run = build_run(config, seeds, record, redraws=redraws)
    if config.collection:
        echo(f"collection: {describe_source(run.task.collection)}")
    try:
        if method in LEARNERS:  # its own phases: training, learned sets, verdict
            trained = train_learner(config, run, seeds, record, progress=progress, echo=echo)
        elif method in OPTIMISERS:
            with phase("training"):
                trained = search_index_sets(config, method, run, seeds, record, progress=progress, echo=echo)
        elif method == ADVISOR:
            with phase("training"):
                trained = advise_index_set(config, run, record, echo=echo)
        elif method == ESTIMATED:
            with phase("training"):
                trained = estimate_index_set(config, run, record, echo=echo)
        else:
            trained = Trained({})
        echo(f"evaluating on the engine (every configuration side by side in rounds: at least "
             f"{max(config.repetitions, MIN_ROUNDS)}, at most {MAX_ROUNDS}, until the objective can tell)")
        # With --whatif training ran on PostgreSQL's estimates; evaluation always measures for real.
        evaluation_system = run.task.evaluation_system()
        objective = run_objective(OBJECTIVE)  # --objective's in a single run, the experiment's in a trial
        measured = shared_rows(record, method, objective.as_dict()) if method in FIXED else None
        if measured is not None:  # the other fixed baseline's trial measured these two rows (fixed_rows.py)
            rows, source = measured
            echo(rows_source_line(source))
            trained.details["rows_from"] = source
            return record_run(config, method, seeds, record, run, trained, rows, objective)
        with phase("evaluation"):
            metrics = evaluate_methods(evaluation_system, run.test_workload, trained.configurations,
                                       repetitions=config.repetitions,
                                       decide=lambda row: objective_decides(row, objective),
                                       shared=trained.shared)
        return record_run(config, method, seeds, record, run, trained, {n: m.as_dict() for n, m in metrics.items()},
                          objective)
    finally:
        # the study's Table 6.2: everything the engine did for this trial is the system's time
        trial_stopwatch().add(SYSTEM, run.task.engine_seconds())
        run.close()


def record_run(config: IndexingRunConfig, method: str, seeds: TrialSeeds, record: RunRecord, run: RunTask,
               trained, methods: dict[str, dict[str, Any]], objective: Objective = OBJECTIVE) -> TrialSummary:
    """Write ``evaluation.json`` (and a learner's figure); the trial's summary. ``success`` is the run's
    ``objective`` (the case study's, ``defaults.OBJECTIVE``, unless the command or experiment gave another)
    on the method's row, as the classification reads it."""
    from case_studies.indexing.methods import LEARNERS

    similarity = shape_similarity(run.schedule.all_queries(), run.test_workload)
    demonstrations = record.read_json("demonstrations.json")["count"] if record.exists("demonstrations.json") else 0
    evaluation = {
        "mode": seeds.mode, "test_distribution": seeds.test_distribution, "method": method, "methods": methods,
        "objective": objective.as_dict(), "success": objective.met(methods[method]),
        "objective_outcome": objective.decide(methods[method]),
        # what a learner trained on (train_on.py); the advisor and search methods: the workload itself
        "verdict": trained.verdict, "train_on": WORKLOAD, **trained.details, "train_test_similarity": similarity, "transitions": trained.transitions,
        "evaluations": trained.transitions, "engine_counters": run.task.system.stats,
        "work_unit": run.task.evaluation_system().engine.work_unit, "engine": config.engine,
    }
    record.write_json("evaluation.json", evaluation)
    if method in LEARNERS:
        from case_studies.indexing.report import save_run_figure

        save_run_figure(record, methods, config, method, trained.verdict, seeds.blackbox,
                        trained.details.get("train_on", WORKLOAD))
    return TrialSummary(trial=seeds.trial, method=method, transitions=trained.transitions,
                        evaluations=trained.transitions, metrics={**methods[method], "method": method},
                        methods=methods, verdict=trained.verdict,
                        extras={"train_test_similarity": similarity, "demonstrations": int(demonstrations),
                                **verdict_extras(trained.verdict)})


def verdict_extras(verdict: dict[str, Any] | None) -> dict[str, float]:
    """A learner's greedy policy against the advisor and the estimated advisor on the verdict's instances, for
    the trial table (``CaseStudy.extras``): the mean reward differences greedy - advisor and greedy - estimated
    advisor and each one's decision time per instance (``verdict.py``); empty without a verdict."""
    if not verdict:
        return {}
    found: dict[str, float] = {}
    for name, extra in (("advisor", "greedy_minus_advisor"), (ESTIMATED, "greedy_minus_estimated")):
        rung = heuristic_rung(verdict, name)
        if rung is not None and rung.get("mean_difference") is not None:
            found[extra] = float(rung["mean_difference"])
    decision = verdict.get("decision_time") or {}
    if decision:
        found["greedy_decision_seconds"] = float(decision["greedy_seconds"])
        found["advisor_decision_seconds"] = float(decision["advisor_seconds"])
        if "estimated_seconds" in decision:
            found["estimated_decision_seconds"] = float(decision["estimated_seconds"])
    return found
