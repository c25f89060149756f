"""The same indexing task on SQLite and PostgreSQL, side by side: one schema, one converter, two planners.

Either give finished run records (``--runs DIR DIR ...``, e.g. one ``wield run indexing`` and one
``wield run indexing --engine postgres --uri URI`` with the same seed), or let the script run the task on
both engines itself with the same settings and seeds (without ``--uri`` it starts a throwaway PostgreSQL
server with the project's command and removes it afterwards).

For every method (no index, full index, random policy, the trained agent's greedy and best index sets) it
prints, per engine: mean latency and work improvement over no index, index size (MB and share of the
full index), indexes created, uses per index and unused indexes, then the trained agent's index sets and
how it was trained. With ``--cross``, each run's trained model is also evaluated on the other engine
(``--evaluate-checkpoint``): the agent's view does not depend on the engine, so it builds the same index set.

Usage:
  python benchmarks/engines_side_by_side.py --runs runs/sqlite-run runs/postgres-run [--cross --uri URI]
  python benchmarks/engines_side_by_side.py --documents 20000 --episodes 30 [--uri URI] [--cross]
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import asdict
from pathlib import Path

from case_studies.indexing.engines.postgres_server import throwaway_server
from case_studies.indexing.run import IndexingRunConfig
from wield.workflows import RunRecord, run_trial

METHOD_ORDER = ("none", "full", "random", "dqn-greedy", "dqn")
ROWS = [("mean_latency_improvement", "mean latency improvement", "{:.1%}"),
        ("mean_work_improvement", "mean work improvement", "{:.1%}"),
        ("index_bytes", "index MB", "{:.2f}"),
        ("relative_index_size", "size vs full index", "{:.1%}"),
        ("indexes_created", "indexes created", "{:d}"),
        ("uses_per_index", "uses per index", "{:.2f}"),
        ("unused_indexes", "unused indexes", "{:d}"),
        ("mean_latency_ms", "mean latency ms", "{:.2f}")]


def load_run(directory: str | Path) -> dict:
    record = RunRecord(directory)
    if record.status != "complete":
        raise SystemExit(f"{directory} is not a finished run record (status: {record.status})")
    config = record.read_json("config.json")
    evaluation = record.read_json("evaluation.json")
    return {"path": str(directory), "engine": config.get("engine", "sqlite"), "config": config,
            "evaluation": evaluation}


def side_by_side(runs: list[dict]) -> str:
    engines = [run["engine"] for run in runs]
    width = max(12, *(len(e) for e in engines))
    lines = [f"{'method':11s} {'metric':26s} " + " ".join(f"{e:>{width}s}" for e in engines)]
    lines.append("-" * len(lines[0]))
    methods = list(dict.fromkeys([*METHOD_ORDER, *(m for run in runs for m in run["evaluation"]["methods"])]))
    methods = [m for m in methods if any(m in run["evaluation"]["methods"] for run in runs)]
    for method in methods:
        for key, label, fmt in ROWS:
            cells = []
            for run in runs:
                metrics = run["evaluation"]["methods"].get(method)
                if metrics is None:
                    cells.append("-")
                    continue
                value = metrics[key] / 1e6 if key == "index_bytes" else metrics[key]
                cells.append(fmt.format(value))
            lines.append(f"{method:11s} {label:26s} " + " ".join(f"{c:>{width}s}" for c in cells))
        lines.append("")
    return "\n".join(lines)


def describe(run: dict) -> str:
    c, e = run["config"], run["evaluation"]
    dqn = e["methods"]["dqn"]
    return (f"{run['engine']}: {run['path']}\n"
            f"  {c['documents']:,} documents, {c['queries']} queries, {c['episodes']} episodes, seed {c['seed']}, "
            f"metric {c['metric']}{' (hypopg what-if)' if c.get('whatif') else ''}; work = {e['work_unit']}\n"
            f"  success: {'yes' if e['success'] else 'no'}; "
            f"dqn index set: {', '.join(dqn['indexes']) or '(none)'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", metavar="DIR", help="finished run records to compare")
    parser.add_argument("--uri", default=None, help="PostgreSQL URI (default: start a throwaway server)")
    parser.add_argument("--documents", type=int, default=IndexingRunConfig.documents)
    parser.add_argument("--queries", type=int, default=IndexingRunConfig.queries)
    parser.add_argument("--episodes", type=int, default=IndexingRunConfig.episodes)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="where to keep the two run records (default: a temp dir)")
    parser.add_argument("--cross", action="store_true",
                        help="also evaluate each run's trained model on the other engine")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    with throwaway_server(args.uri if (args.uri or not args.runs or args.cross) else "unused",
                          prefix="wield-bench-pg-") as uri:
        with tempfile.TemporaryDirectory(prefix="wield-engines-") as scratch:
            if args.runs:
                runs = [load_run(d) for d in args.runs]
            else:
                out = Path(args.out or scratch)
                runs = []
                for engine in ("sqlite", "postgres"):
                    config = IndexingRunConfig(documents=args.documents, queries=args.queries,
                                               episodes=args.episodes, seed=args.seed, engine=engine,
                                               uri=uri if engine == "postgres" else None)
                    print(f"training on {engine} ...", flush=True)
                    run_trial("indexing", asdict(config), config.single_run_seeds(), str(out / engine))
                    runs.append(load_run(out / engine))
            print()
            print(side_by_side(runs))
            for run in runs:
                print(describe(run))
            if args.cross:
                from case_studies.indexing.report import results_table
                from case_studies.indexing.transfer import evaluate_checkpoint

                for run in runs:
                    other = "postgres" if run["engine"] != "postgres" else "sqlite"
                    result = evaluate_checkpoint(run["path"], other, uri if other == "postgres" else None)
                    print(f"\nmodel trained on {run['engine']} evaluated on {other} "
                          f"(greedy index set identical: {'yes' if result['greedy_same_as_source'] else 'no'}):")
                    print(results_table(result["methods"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
