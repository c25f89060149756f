"""Benchmark: does PostgreSQL's what-if mode (hypopg) rank index sets like real runs do, and how much faster?

On one generated collection and one 20-query workload, a fixed, seeded list of index sets (no index, the
full index, and random subsets of the per-query full indexes and single-key indexes) is measured twice on
the same PostgreSQL data:

1. what-if: hypothetical indexes, the planner's estimated cost of every query (nothing is built);
2. real: the indexes are built, every query runs (work = shared buffers + rows examined from EXPLAIN
   ANALYZE; latency = median of --repetitions executions), the indexes are dropped.

It prints each index set's estimated cost beside its real work and latency, the rank agreement of the
estimates with the real measurements (Spearman's rho and Kendall's tau, over the index sets), and the
wall-time speed-up of the what-if mode, all measured side by side in one run.

Without --uri it starts a throwaway server with the project's own command and removes it afterwards.

Usage: python benchmarks/hypopg_whatif.py [--uri URI] [--documents N] [--sets S] [--seed SEED]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.engines.postgres import PostgresEngine
from wield.seeding import derive_seed
from case_studies.indexing.engines.postgres_server import throwaway_server
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def candidate_sets(workload, n_sets: int, seed: int) -> list[list[IndexSpec]]:
    """No index, the full index, then seeded random subsets of full-index and single-key candidates."""
    full = list(dict.fromkeys(full_index(q).canonical() for q in workload))
    singles = list(dict.fromkeys(IndexSpec.of([(q.attributes()[0], "asc")]) for q in workload))
    pool = list(dict.fromkeys(full + singles))
    rng = np.random.default_rng(seed)
    sets = [[], full]
    while len(sets) < n_sets:
        size = int(rng.integers(1, min(8, len(pool)) + 1))
        chosen = sorted(pool[i] for i in rng.choice(len(pool), size=size, replace=False))
        if chosen not in sets:
            sets.append(chosen)
    return sets


def measure(engine: PostgresEngine, workload, configuration, repetitions: int) -> dict:
    for spec in configuration:
        engine.create_index(spec)
    results = [engine.run_query(q, repetitions=repetitions) for q in workload]
    size = sum(engine.index_size(spec) for spec in configuration)
    for spec in configuration:
        engine.drop_index(spec)
    return {"cost": float(np.mean([r.work for r in results])),
            "latency": float(np.mean([r.latency_s for r in results])),
            "bytes": size}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uri", default=None, help="PostgreSQL URI (default: start a throwaway server)")
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--sets", type=int, default=16, help="index sets to rank")
    parser.add_argument("--repetitions", type=int, default=3, help="executions per query (median)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    collection = generate_imdb_collection(args.documents, derive_seed(args.seed, "collection"))
    workload = make_query_schedule(collection, QueryWorkloadConfig(n_queries=args.queries),
                                   derive_seed(args.seed, "workload"), 1, per_episode=False).task_for_episode(0)
    sets = candidate_sets(workload, args.sets, derive_seed(args.seed, "index_sets"))
    with throwaway_server(args.uri, prefix="wield-bench-pg-") as uri:
        engine = PostgresEngine.for_collection(collection, uri, whatif=True)
        try:
            started = time.perf_counter()
            whatif = [measure(engine, workload, s, 0) for s in sets]
            whatif_seconds = time.perf_counter() - started
            engine.leave_whatif()
            started = time.perf_counter()
            real = [measure(engine, workload, s, args.repetitions) for s in sets]
            real_seconds = time.perf_counter() - started
        finally:
            engine.close()

    print(f"PostgreSQL what-if (hypopg) vs real: {args.documents:,} documents, {len(workload)} queries, "
          f"{len(sets)} index sets, seed {args.seed}, {args.repetitions} repetitions per query")
    print(f"{'set':>3}  {'indexes':>7}  {'est. cost':>10}  {'real work':>10}  {'latency ms':>10}  "
          f"{'est. MB':>8}  {'real MB':>8}")
    for number, (s, w, r) in enumerate(zip(sets, whatif, real)):
        print(f"{number:>3}  {len(s):>7}  {w['cost']:>10.1f}  {r['cost']:>10.0f}  {r['latency'] * 1000:>10.2f}  "
              f"{w['bytes'] / 1e6:>8.2f}  {r['bytes'] / 1e6:>8.2f}")
    estimated = [w["cost"] for w in whatif]
    measured = (("real work", [r["cost"] for r in real]), ("real latency", [r["latency"] for r in real]))
    for label, values in measured:
        rho = stats.spearmanr(estimated, values).statistic
        tau = stats.kendalltau(estimated, values).statistic
        print(f"rank agreement of estimated cost with {label:12s}: "
              f"Spearman rho = {rho:.3f}, Kendall tau = {tau:.3f}")
    rho = stats.spearmanr([w["bytes"] for w in whatif], [r["bytes"] for r in real]).statistic
    print(f"rank agreement of estimated with real index size: Spearman rho = {rho:.3f}")
    best_whatif = int(np.argmin(estimated))
    best_real = int(np.argmin([r["latency"] for r in real]))
    print(f"best set by estimate: {best_whatif}; by real latency: {best_real}; real latency of the estimate's "
          f"choice vs the best: {real[best_whatif]['latency'] / real[best_real]['latency']:.2f}x")
    print(f"wall time: what-if {whatif_seconds:.2f} s, real {real_seconds:.2f} s (index builds + executions); "
          f"speed-up {real_seconds / whatif_seconds:.1f}x")
    executions = len(sets) * len(workload)
    print(f"  per query and index set: what-if {whatif_seconds / executions * 1000:.2f} ms, "
          f"real {real_seconds / executions * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
