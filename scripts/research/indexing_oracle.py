"""What the indexing reward asks for: a forward-selection search over index sets, per reward weight.

For one seed's collection and workload (built as ``wield run indexing`` builds them) the candidates are,
for every query, the index its k heads can build in query order (its first k attributes, sort directions)
and every prefix of it. Forward selection adds, one at a time, the candidate that most improves the final
step reward ``-(w_m * size + w_t * runtime)`` until no candidate improves it. It is a heuristic, not an exact
optimum, but it shows where the reward's optimum lies for each ``w_m``: its work improvement, its index size
as a share of the full index, and its reward, beside no index and the full index. Nothing is learned and no
latency is measured (the deterministic work measure only). Example:

    python scripts/research/indexing_oracle.py --seeds 0 1 --documents 20000 --weights 0.5 1 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from case_studies.indexing.demonstrations import addressable_full_index  # noqa: E402
from case_studies.indexing.evaluation import full_index_configuration  # noqa: E402
from case_studies.indexing.experiment import IndexingRunConfig, build_run_task  # noqa: E402
from case_studies.indexing.index_spec import IndexSpec  # noqa: E402
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule  # noqa: E402


def candidates(workload, k: int) -> list[IndexSpec]:
    found: dict[IndexSpec, None] = {}
    for query in workload:
        spec = addressable_full_index(query, k)
        for length in range(1, len(spec.keys) + 1):
            found[IndexSpec(spec.keys[:length]).canonical()] = None
    return list(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--difficulty", type=float, default=0.3)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    args = parser.parse_args(argv)
    for seed in args.seeds:
        config = IndexingRunConfig(documents=args.documents, queries=args.queries, k=args.k, seed=seed)
        seeds = config.seeds()
        collection = generate_imdb_collection(config.documents, seeds["collection"])
        task = build_run_task(config, collection)
        try:
            schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=args.queries,
                                                                           difficulty=args.difficulty),
                                           seeds["train_workload"], 1, per_episode=False)
            workload = schedule.task_for_episode(0)
            pool = candidates(workload, args.k)

            def shares(configuration):
                task.system.configure(configuration)
                return task.converter.normalised_costs(task.system.measure(workload))

            full_size, full_runtime = shares(full_index_configuration(workload))
            print(f"seed {seed}: {len(pool)} candidates; full index: work {1 - full_runtime:.1%} size "
                  f"{full_size:.2f}", flush=True)
            for weight in args.weights:
                def reward(configuration):
                    size, runtime = shares(configuration)
                    return -(weight * size + runtime)

                chosen: list[IndexSpec] = []
                best = reward(chosen)
                while True:
                    scored = [(reward(chosen + [c]), c) for c in pool if c not in chosen]
                    if not scored:
                        break
                    value, candidate = max(scored, key=lambda pair: pair[0])
                    if value <= best:
                        break
                    chosen.append(candidate)
                    best = value
                size, runtime = shares(chosen)
                print(f"  w_m={weight}: forward selection reward {best:.3f} (no index {-1:.3f}, full index "
                      f"{-(weight * full_size + full_runtime):.3f}); work {1 - runtime:.1%}, size {size:.2f}, "
                      f"{len(chosen)} indexes: {', '.join(map(str, chosen))}", flush=True)
        finally:
            task.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
