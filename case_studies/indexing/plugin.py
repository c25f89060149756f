"""The indexing case study's entry in the ``wield`` command: its options and what ``wield run`` does."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from case_studies.indexing.agents import AGENTS
from case_studies.indexing.build import ENGINES
from case_studies.indexing.demonstrate_cli import HOOK as DEMONSTRATION_HOOK
from case_studies.indexing.engines.contract import METRICS
from case_studies.indexing.methods import available_methods
from case_studies.indexing.system import AGGREGATES
from case_studies.indexing.trials import run_indexing_trial
from wield.plugins import CaseStudy



def add_arguments(parser: argparse.ArgumentParser) -> None:
    from case_studies.indexing.run import IndexingRunConfig

    d = IndexingRunConfig()
    data = parser.add_argument_group("data and workload")
    data.add_argument("--documents", type=int, default=d.documents,
                      help="size of the generated IMDB-like collection (ignored with --collection)")
    data.add_argument("--collection", metavar="FILE", default=None,
                      help="load your own collection from a CSV (header row) or JSON / JSON-lines file")
    data.add_argument("--queries", type=int, default=d.queries, help="queries per workload task")
    task = parser.add_argument_group("task design")
    task.add_argument("--k", type=int, default=d.k, help="maximum compound index width (action heads)")
    task.add_argument("--metric", choices=METRICS, default=d.metric,
                      help="training cost: 'work' = deterministic engine work (SQLite VM steps; PostgreSQL "
                           "shared buffers + rows examined; MongoDB keys + documents examined), "
                           "'latency' = median wall time of repetitions")
    task.add_argument("--aggregate", choices=AGGREGATES, default=d.aggregate,
                      help="how the reward aggregates query costs")
    task.add_argument("--size-weight", type=float, default=d.size_weight,
                      help="w_m: weight of index memory, measured as a share of the full-index baseline's bytes "
                           "(see case_studies/indexing/converter.py for why the default is 0.5)")
    task.add_argument("--runtime-weight", type=float, default=d.runtime_weight,
                      help="w_t: weight of workload cost (as a share of the no-index cost)")
    task.add_argument("--engine", choices=ENGINES, default=d.engine,
                      help="database engine: sqlite (embedded), postgres or mongodb (need --uri)")
    task.add_argument("--uri", default=d.uri,
                      help="server URI for --engine postgres (from 'wield db start postgres --dir DIR') or "
                           "mongodb (e.g. mongodb://127.0.0.1:27017/wield)")
    task.add_argument("--whatif", action="store_true",
                      help="PostgreSQL only: train on hypothetical indexes (hypopg) and planner cost estimates "
                           "without building indexes; the evaluation still builds and measures for real")
    task.add_argument("--evaluate-checkpoint", metavar="RUN_DIR", default=None,
                      help="do not train: evaluate the model.pt of a finished run record (its data, workload "
                           "and seeds) on --engine / --uri, e.g. a model trained on SQLite on PostgreSQL")
    training = parser.add_argument_group("training and evaluation")
    training.add_argument("--episodes", type=int, default=d.episodes,
                          help="training episodes (transitions n = episodes x queries)")
    training.add_argument("--seed", type=int, default=d.seed, help="base seed of data, workload and agent")
    training.add_argument("--repetitions", type=int, default=d.repetitions,
                          help="executions per query when measuring latency (median)")
    training.add_argument("--agent", choices=AGENTS, default=d.agent,
                          help="learner: 'dqn' trains online; 'dqfd' pretrains on demonstrations (the "
                               "--demonstrations dataset, else rules applied to the run's own training "
                               "workload) and then trains online (--episodes 0: pretraining only)")
    training.add_argument("--demonstrations", metavar="DIR", default=None,
                          help="demonstration dataset for --agent dqfd (made by 'wield demonstrate indexing')")
    training.add_argument("--pretrain-steps", type=int, default=d.pretrain_steps,
                          help="DQfD gradient steps on the demonstrations before online training")
    training.add_argument("--no-cost-cache", dest="cost_cache", action="store_false",
                          help="the slow path: make the indexes exactly each configuration and execute every "
                               "query, with no cache (gives the same results under --metric work; for checks)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", metavar="DIR", default=None,
                        help="run record directory (default: runs/indexing-seed<SEED>-<TIME>)")
    output.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="where loaded base databases are cached (default: $WIELD_CACHE_DIR "
                             "or ~/.cache/wield)")
    output.add_argument("--quiet", action="store_true", help="no progress bars")
    output.add_argument("--json", action="store_true", help="print the evaluation as JSON instead of a table")


def config_from_args(args: argparse.Namespace) -> dict:
    """The run configuration named by the options (JSON-serialisable; ``out`` left to the caller)."""
    from dataclasses import asdict

    from case_studies.indexing.run import IndexingRunConfig

    config = IndexingRunConfig(
        documents=args.documents, queries=args.queries, k=args.k, episodes=args.episodes, seed=args.seed,
        metric=args.metric, aggregate=args.aggregate, size_weight=args.size_weight,
        runtime_weight=args.runtime_weight, repetitions=args.repetitions, collection=args.collection,
        engine=args.engine, cache_dir=args.cache_dir, uri=args.uri, whatif=args.whatif, agent=args.agent,
        demonstrations=str(Path(args.demonstrations).resolve()) if args.demonstrations else None,
        pretrain_steps=args.pretrain_steps, cost_cache=args.cost_cache).validate()
    data = asdict(config)
    data.pop("out")
    return data


def run(args: argparse.Namespace) -> int:
    from case_studies.indexing.run import IndexingRunConfig, run_indexing
    from case_studies.indexing.report import METHOD_NOTES, results_table

    if args.evaluate_checkpoint:
        from case_studies.indexing.transfer import evaluate_checkpoint_command

        return evaluate_checkpoint_command(args)
    config = IndexingRunConfig.from_dict({**config_from_args(args), "out": args.out})
    quiet = args.quiet or args.json
    result = run_indexing(config, progress=not quiet, echo=(lambda _: None) if quiet else print)
    evaluation = result.record.read_json("evaluation.json")
    if args.json:
        print(json.dumps(evaluation, indent=2))
        return 0
    print()
    print(results_table(result.metrics))
    print()
    for name in result.metrics:
        print(f"  {name:11s} {METHOD_NOTES.get(name, '')}")
    dqn = result.metrics["dqn"]
    print(f"\nsuccess (>= 50% mean latency improvement over no index, less memory than the full index): "
          f"{'yes' if evaluation['success'] else 'no'}  (dqn: {dqn['mean_latency_improvement']:.1%}, "
          f"{dqn['relative_index_size']:.1%} of full-index size)")
    counters = evaluation["engine_counters"]
    print(f"n = {result.transitions} transitions; {counters['query_executions']} query executions, "
          f"{counters['cache_hits']} cache hits, {counters['index_builds']} index builds; "
          f"{result.seconds:.0f} s")
    if result.record.exists("demonstrations.json"):  # DQfD: what it was pretrained on
        used = result.record.read_json("demonstrations.json")
        print(f"DQfD (rows 'dqn' above): pretrained {int(used['pretrain']['pretrain_steps'])} steps on "
              f"{used['count']} demonstrations ({', '.join(used['rules'])}; {used['source']}, "
              f"sha256 {used['sha256'][:16]})")
    print(f"run record: {result.record.path}  (figure: {result.record.file('results.png')})")
    return 0


CASE_STUDY = CaseStudy(
    name="indexing",
    description="compound index selection on an IMDB-like collection (SQLite embedded by default)",
    add_arguments=add_arguments,
    run=run,
    config_from_args=config_from_args,
    trial_function=run_indexing_trial,
    objective={"metric": "mean_latency_improvement", "threshold": 0.5},
    reproduce=lambda run_dir: _reproduce(run_dir),
    demonstrations=DEMONSTRATION_HOOK,
    metrics=("mean_latency_improvement", "p99_latency_improvement", "mean_work_improvement",
             "p99_work_improvement", "relative_index_size", "index_bytes", "indexes_created", "uses_per_index",
             "unused_indexes", "unused_index_bytes", "mean_latency_ms"),
    methods=available_methods(),  # wield compare indexing --methods ... (see methods.py)
    compare_metrics=("mean_latency_improvement", "p99_latency_improvement", "mean_work_improvement",
                     "relative_index_size", "indexes_created", "uses_per_index", "unused_indexes",
                     "unused_index_bytes"),
    metric_labels={"mean_latency_improvement": "mean latency improvement over no index (%)",
                   "p99_latency_improvement": "p99 latency improvement over no index (%)",
                   "mean_work_improvement": "mean work improvement over no index (%)",
                   "p99_work_improvement": "p99 work improvement over no index (%)",
                   "relative_index_size": "index size relative to the full index (%)"},
)


def _reproduce(run_dir: str) -> dict:
    from case_studies.indexing.reproduce import reproduce_indexing_run

    return reproduce_indexing_run(run_dir)
