"""The estimated advisor against the advisor, side by side on the same workloads (issue 42, docs/design.md 5.15).

For each collection, ``--workloads`` new 10-query workloads of the training templates (the distribution a C4
trial trains on), drawn from a named seed stream that no verdict draws from (``derive_seed(--stream-seed,
--stream, i)``; the defaults are the development stream the cost model was shaped on, so pass another
``--stream`` to see it on workloads it never saw). On each: the advisor (``advisor.advise``, its workload
evaluations on the engine) and the estimated advisor (``estimated_advisor.estimated_advice``, none), each set
scored by the engine with the task's reward. Prints, per collection, both mean rewards, the paired difference
with its 95% t interval, the gap as a share of the advisor's reward, wins/ties/losses, and the decision time
of each (median per workload) with their ratio, measured in this one run.

    python benchmarks/estimated_advisor.py                                   # generated, 30 workloads
    python benchmarks/estimated_advisor.py --collection generated,flights --workloads 12 --stream fresh
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from case_studies.indexing.advisor import advise, set_reward  # noqa: E402
from case_studies.indexing.build import build_indexing_task, held_out_templates  # noqa: E402
from case_studies.indexing.cost_estimate import StatisticsCostModel  # noqa: E402
from case_studies.indexing.decision_cost import t_interval  # noqa: E402
from case_studies.indexing.estimated_advisor import estimated_advice  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule  # noqa: E402
from workloads.files import load_collection  # noqa: E402


def collection_named(name: str, documents: int):
    """``generated`` (the IMDB-like default of ``wield run indexing --seed 0``) or a built-in or file
    collection (``flights``), its rows with NULLs dropped."""
    if name == "generated":
        return generate_imdb_collection(documents, derive_seed(0, "collection"))
    return load_collection(name, nulls="drop")


def side_by_side(name: str, documents: int, workloads: int, stream: str, stream_seed: int) -> list[str]:
    collection = collection_named(name, documents)
    task = build_indexing_task(collection)
    try:
        system, converter = task.system, task.converter
        model = StatisticsCostModel(converter.statistics)
        config = QueryWorkloadConfig(n_queries=10, exclude_templates=held_out_templates(collection))
        mine, theirs, my_seconds, their_seconds, evaluations = [], [], [], [], []
        for i in range(workloads):
            schedule = make_query_schedule(collection, config, derive_seed(stream_seed, stream, i), 1,
                                           per_episode=False)
            workload = list(schedule.task_for_episode(0))
            chosen = estimated_advice(model, converter, workload, task.schema.k, aggregate=system.aggregate)
            references = system.references(workload)
            system.configure(chosen.configuration)
            costs = [float(c) for c in system.measure(workload)["costs"]]
            size = sum(system.index_size(spec) for spec in chosen.configuration)
            mine.append(set_reward(system, converter, references, size, costs))
            advised = advise(system, converter, workload)
            theirs.append(advised.reward)
            my_seconds.append(chosen.seconds)
            their_seconds.append(advised.seconds)
            evaluations.append(advised.evaluations)
    finally:
        task.close()
    differences = [a - b for a, b in zip(mine, theirs)]
    mean, low, high = t_interval(differences)
    advisor_mean = statistics.fmean(theirs)
    wins = sum(d > 1e-12 for d in differences)
    ties = sum(abs(d) <= 1e-12 for d in differences)
    mine_time, their_time = statistics.median(my_seconds), statistics.median(their_seconds)
    return [f"{name} ({len(collection):,} rows; {workloads} workloads of stream '{stream}', seed {stream_seed}):",
            f"  reward: estimated advisor {statistics.fmean(mine):.3f}, advisor {advisor_mean:.3f}; estimated - advisor "
            f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] (paired 95% t CI), a gap of {-100 * mean / abs(advisor_mean):.1f}% "
            f"of the advisor's reward; better/tied/worse on {wins}/{ties}/{len(differences) - wins - ties}",
            f"  decision time per workload (median): estimated advisor {mine_time * 1e3:.1f} ms (no engine "
            f"evaluation), advisor {their_time:.3f} s ({statistics.fmean(evaluations):.0f} evaluations): "
            f"{their_time / max(mine_time, 1e-12):.0f}x"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", default="generated",
                        help="comma-separated: generated (IMDB-like, --documents rows), flights, or a file")
    parser.add_argument("--documents", type=int, default=20_000, help="rows of the generated collection")
    parser.add_argument("--workloads", type=int, default=30, help="workloads per collection")
    parser.add_argument("--stream", default="eval", help="the seed stream's name (default: the development one)")
    parser.add_argument("--stream-seed", type=int, default=11, help="the seed stream's root")
    args = parser.parse_args(argv)
    if args.workloads < 2:
        parser.error("--workloads must be at least 2 (a paired interval needs two)")
    for name in args.collection.split(","):
        for line in side_by_side(name.strip(), args.documents, args.workloads, args.stream, args.stream_seed):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
