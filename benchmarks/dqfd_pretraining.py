"""Benchmark: online-only DQN vs pretrain-only DQfD vs pretrain+online DQfD on the same C2 trial plan.

Every trial of the plan (a new blackbox workload and optimisation seed per trial) is run three ways with the
same seeds: ``online`` (DQN, --episodes E), ``pretrain`` (DQfD pretrained on demonstrations that the
default rules (prefix, reverse) label on the trial's own training workload, no online training, the greedy
policy's index set evaluated) and ``pretrain+online`` (the same pretrained agent, then E episodes online).
Prints side by side, per method: median across trials (and every trial) of mean and p99 latency
improvement over no index, mean work improvement (deterministic), index size relative to the full index,
indexes created and unused, the objective (>= 50% mean latency improvement and less memory than the full
index), wall time, and the seeds and failures. Latency is wall-clock (median of --repetitions runs per
query); the work columns are exact.

Usage: python benchmarks/dqfd_pretraining.py [--trials 3] [--documents 20000] [--queries 20] [--episodes 25]
                                             [--pretrain-steps 1000] [--repetitions 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from case_studies.indexing.run import SUCCESS_LATENCY_IMPROVEMENT, IndexingRunConfig
from wield.workflows import run_trial
from wield.protocols import TrialPlan

METHODS = {"online": {"agent": "dqn"}, "pretrain": {"agent": "dqfd", "episodes": 0},
           "pretrain+online": {"agent": "dqfd"}}
COLUMNS = (("mean_latency_improvement", "mean lat.", "{:7.1%}"), ("p99_latency_improvement", "p99 lat.", "{:7.1%}"),
           ("mean_work_improvement", "mean work", "{:7.1%}"), ("relative_index_size", "size/full", "{:7.1%}"),
           ("indexes_created", "created", "{:7.1f}"), ("unused_indexes", "unused", "{:7.1f}"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3, help="trials of the C2 plan (>= 3 for the comparison)")
    parser.add_argument("--documents", type=int, default=20_000, help="generated collection size")
    parser.add_argument("--queries", type=int, default=20, help="queries per workload")
    parser.add_argument("--episodes", type=int, default=25, help="online episodes (online, pretrain+online)")
    parser.add_argument("--pretrain-steps", type=int, default=1000, help="DQfD pretraining gradient steps")
    parser.add_argument("--repetitions", type=int, default=3, help="latency measurements per query (median)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the plan and the collection")
    parser.add_argument("--out", default=None, help="keep the run records here (default: a temporary directory)")
    args = parser.parse_args(argv)
    plan = TrialPlan.make("C2", args.trials, args.seed)
    base = dict(documents=args.documents, queries=args.queries, episodes=args.episodes, seed=args.seed,
                repetitions=args.repetitions, pretrain_steps=args.pretrain_steps)
    results: dict[str, dict[int, dict]] = {m: {} for m in METHODS}
    failures: list[str] = []
    seconds: dict[str, float] = {m: 0.0 for m in METHODS}
    with tempfile.TemporaryDirectory(prefix="wield-dqfd-bench-") as scratch:
        root = Path(args.out or scratch)
        from tqdm.auto import tqdm

        with tqdm(total=len(plan.trials) * len(METHODS), desc="runs", unit="run", leave=False) as bar:
            for trial in plan.trials:
                for method, overrides in METHODS.items():
                    config = IndexingRunConfig(**{**base, **overrides})
                    started = time.perf_counter()
                    try:
                        summary = run_trial("indexing", asdict(config), trial,
                                            str(root / method / f"trial-{trial.trial:03d}"))
                        results[method][trial.trial] = {**summary.methods["dqn"], "full": summary.methods["full"],
                                                        "transitions": summary.transitions}
                    except Exception as exc:  # a failed run is reported, not hidden
                        failures.append(f"{method} trial {trial.trial}: {type(exc).__name__}: {exc}")
                        traceback.print_exc()
                    seconds[method] += time.perf_counter() - started
                    bar.update(1)
    report(args, plan, results, seconds, failures)
    return 1 if failures else 0


def _median(rows, key):
    values = [row[key] for row in rows]
    return statistics.median(values) if values else float("nan")


def report(args, plan, results, seconds, failures) -> None:
    print(f"C2 plan, {len(plan.trials)} trials from base seed {args.seed}: {args.documents:,} documents, "
          f"{args.queries} queries; online {args.episodes} episodes ({args.episodes * args.queries} transitions); "
          f"pretraining {args.pretrain_steps} steps on prefix+reverse demonstrations of each trial's workload; "
          f"latency median of {args.repetitions} runs, work = SQLite VM steps")
    print()
    header = f"{'method':16s} " + " ".join(f"{title:>9s}" for _, title, _ in COLUMNS) + \
        f" {'success':>8s} {'n':>5s} {'wall s':>7s}"
    print("median across trials")
    print(header)
    for method in METHODS:
        rows = list(results[method].values())
        cells = " ".join(f"{fmt.format(_median(rows, key)):>9s}" for key, _, fmt in COLUMNS)
        success = sum(_success(r) for r in rows)
        n = int(_median(rows, "transitions")) if rows else 0
        print(f"{method:16s} {cells} {success:>4d}/{len(rows):<3d} {n:5d} {seconds[method]:7.0f}")
    full_rows = [r["full"] for rows in results.values() for r in rows.values()]
    if full_rows:
        cells = " ".join(f"{fmt.format(_median(full_rows, key)):>9s}" for key, _, fmt in COLUMNS)
        print(f"{'(full index)':16s} {cells}")
    print()
    print("per trial")
    print(f"{'trial':>5s} {'train seed':>12s} {'opt. seed':>12s} {'method':16s} "
          + " ".join(f"{title:>9s}" for _, title, _ in COLUMNS))
    for trial in plan.trials:
        for method in METHODS:
            row = results[method].get(trial.trial)
            cells = " ".join(f"{fmt.format(row[key]):>9s}" for key, _, fmt in COLUMNS) if row else "FAILED"
            print(f"{trial.trial:5d} {str(trial.train_workload_seed)[:12]:>12s} "
                  f"{str(trial.optimisation_seed)[:12]:>12s} {method:16s} {cells}")
    print()
    print(f"failures: {len(failures)}" + "".join(f"\n  {line}" for line in failures))


def _success(row) -> bool:
    return row["mean_latency_improvement"] >= SUCCESS_LATENCY_IMPROVEMENT and row["relative_index_size"] < 1.0


if __name__ == "__main__":
    raise SystemExit(main())
