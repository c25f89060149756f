"""``wield demonstrate indexing``: the indexing case study's demonstration hook.

Builds the same task a run builds (collection, schema, converter, SQLite system for tracking the index
configuration), then either labels a query trace with the chosen rules or imports a person's (query,
index) pairs. The trace is ``--trace FILE`` or, without it, generated workloads: with ``--episodes 1`` the
very workload ``wield run indexing --seed S`` trains on in blackbox mode (same seed derivation), with more
episodes a new workload per episode (``--exclude-held-out`` leaves out the query templates that C5/C6 test
on). ``--rewards measured`` records the environment's reward (measured on
the engine) instead of the constant expert reward.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from case_studies.indexing.candidate_design import ACTIONS
from case_studies.indexing.demonstrations import (DEFAULT_RULES, RULES, check_rules_fit_design, default_rules,
                                                  load_human_demonstrations, load_query_trace, rule_factories)
from wield.demonstrations import REWARD_SOURCES
from wield.plugins import DemonstrationHook
from workloads.files import NULL_POLICIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from case_studies.indexing.run import IndexingRunConfig

    d = IndexingRunConfig()
    group = parser.add_argument_group("indexing data and trace")
    group.add_argument("--documents", type=int, default=d.documents,
                       help="size of the generated IMDB-like collection (ignored with --collection); the schema "
                            "only depends on the fields, so demonstrations serve runs on any size")
    group.add_argument("--collection", metavar="FILE|NAME", default=None,
                       help="your own collection (CSV / JSON / JSON lines) or a built-in one (flights), as for "
                            "'wield run indexing'")
    group.add_argument("--nulls", choices=NULL_POLICIES, default=d.nulls,
                       help="what a NULL in --collection does: 'refuse' (an error naming every field holding "
                            "NULLs) or 'drop' (drop those rows); default: refuse for a file, drop for flights, "
                            "as for 'wield run indexing'")
    group.add_argument("--rows", type=int, default=d.rows, metavar="N",
                       help="read only the first N records of --collection (default: all)")
    group.add_argument("--queries", type=int, default=d.queries, help="queries per generated workload episode")
    group.add_argument("--k", type=int, default=d.k, help="maximum compound index width (action heads)")
    group.add_argument("--actions", choices=ACTIONS, default=d.actions,
                       help="the task design the demonstrations are for, as the run that loads them "
                            "('wield run indexing --actions'; default: shortlist, which only the rules noop, "
                            "advisor and advisor-search label for)")
    group.add_argument("--seed", type=int, default=d.seed,
                       help="base seed of the collection and the generated workloads (as in 'wield run')")
    group.add_argument("--trace", metavar="FILE", default=None,
                       help="label this query log instead of generated workloads: a JSON array of queries, an "
                            "array of such arrays (episodes) or JSON lines of queries")
    group.add_argument("--human", metavar="FILE", default=None,
                       help="import a person's demonstrations instead: JSON (lines) objects "
                            '{"query": {...}, "index": [["field", "asc"], ...] or null, "episode": 0}')
    group.add_argument("--exclude-held-out", action="store_true",
                       help="generate workloads without the query templates that classes C5/C6 hold out for "
                            "testing, so demonstrations for out-of-distribution experiments show no test "
                            "structures (as a generalisation run's own training workload)")
    group.add_argument("--rewards", choices=REWARD_SOURCES, default="expert",
                       help="'expert': the constant expert reward (+0.5, -0.5 for negative labels); "
                            "'measured': the run's reward measured on the engine after each action")
    group.add_argument("--metric", choices=("work", "latency"), default=d.metric,
                       help="cost metric of measured rewards")
    group.add_argument("--size-weight", type=float, default=d.size_weight, help="w_m of measured rewards")
    group.add_argument("--runtime-weight", type=float, default=d.runtime_weight, help="w_t of measured rewards")
    group.add_argument("--cache-dir", metavar="DIR", default=None,
                       help="where parsed collection files and loaded base databases are cached")


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build(args: argparse.Namespace):
    from case_studies.indexing.build import build_indexing_task
    from case_studies.indexing.build import held_out_templates, load_run_collection
    from case_studies.indexing.run import IndexingRunConfig
    from wield.demonstrations import DemonstrationWorkflow, select_rules
    from wield.errors import ConfigError
    from workloads import QueryWorkloadConfig, make_query_schedule

    if args.human and (args.rules is not None or args.trace):
        raise ConfigError("human", args.human, reason="--human imports a person's demonstrations as they are; "
                                                      "--rules / --trace label a trace: run them separately")
    config = IndexingRunConfig(documents=args.documents, queries=args.queries, k=args.k, actions=args.actions,
                               seed=args.seed, collection=args.collection, nulls=args.nulls, rows=args.rows,
                               metric=args.metric, size_weight=args.size_weight,
                               runtime_weight=args.runtime_weight, cache_dir=args.cache_dir).validate()
    check_rules_fit_design(config.actions, args.rules or ())  # before anything is loaded or written
    seeds = config.single_run_seeds()
    collection = load_run_collection(config, seeds)
    metadata = {"case_study": "indexing", "command": list(sys.argv), "seed": args.seed, "k": args.k,
                "collection": {"name": collection.name, "documents": len(collection),
                               "fingerprint": collection.fingerprint()}}
    task = build_indexing_task(collection, k=config.k, actions=config.actions, metric=config.metric, repetitions=1,
                               size_weight=config.size_weight, runtime_weight=config.runtime_weight,
                               cache_dir=config.cache_dir)
    try:
        workflow = DemonstrationWorkflow(task.system, task.converter, rewards=args.rewards)
        if args.human:
            trace = load_human_demonstrations(args.human, collection)
            metadata["human"] = {"path": str(Path(args.human).resolve()), "sha256": _sha256(args.human)}
            return workflow.import_state_action_trace(trace, source="human", metadata=metadata)
        if args.trace:
            episodes = load_query_trace(args.trace, collection)
            metadata["trace"] = {"path": str(Path(args.trace).resolve()), "sha256": _sha256(args.trace)}
        else:
            held_out = held_out_templates(collection) if args.exclude_held_out else ()
            workload = QueryWorkloadConfig(n_queries=config.queries, exclude_templates=held_out)
            schedule = make_query_schedule(collection, workload, seeds.train_workload_seed, args.episodes,
                                           per_episode=args.episodes > 1)
            episodes = [schedule.task_for_episode(e) for e in range(schedule.n_episodes)]
            metadata["workload"] = {"seed": schedule.seed, "episodes": args.episodes, "queries": config.queries,
                                    "excluded_templates": list(held_out),
                                    "schedule_sha256": schedule.fingerprint()}
        rules = select_rules(args.rules or default_rules(config.actions),
                             rule_factories(config.k, system=task.system, converter=task.converter))
        return workflow.label_trace(episodes, rules, progress=not args.quiet, metadata=metadata)
    finally:
        task.system.close()


HOOK = DemonstrationHook(rules=tuple(RULES), default_rules=DEFAULT_RULES, add_arguments=add_arguments,
                         build=build, default_rules_for=lambda args: default_rules(args.actions),
                         default_rules_help=f"{','.join(default_rules('shortlist'))} for --actions shortlist, "
                                            f"{','.join(DEFAULT_RULES)} for the other designs")
