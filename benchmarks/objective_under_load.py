"""Does the indexing objective's outcome survive machine load? Seeds side by side, idle and busy, in one run.

For every seed, one ``wield run indexing --seed S`` at the defaults (through ``wield.workflows.run_trial``;
``--episodes`` makes it quicker) trains once; then the index sets that run evaluated (no index, the full
index, the random policy's, the greedy policy's and the best set seen in training) are evaluated again on
the run's test workload, twice, by the run's own evaluation (``evaluate_methods``: every configuration side
by side in interleaved rounds until the objective can tell, at most ``MAX_ROUNDS``):

- **idle**: nothing added by this script (the machine may be busy with other work: the load average is
  printed beside every column);
- **busy**: with two CPU-bound busy-loop processes running beside it (started before, stopped after).

Training once and re-evaluating the same sets keeps it affordable and isolates the measurement: what differs
between the two columns is the load, nothing else. Each column gives, per row, the objective's outcome
(``met``, ``not met``, ``inconclusive``), the mean latency improvement with its 95% bootstrap interval and
the rounds measured; beside them the deterministic work improvement and index size (no interval: exact), and
what the former protocol (configurations measured one after another, each query the median of 5
executions, no interval) measured and decided under the same load. The goal: never ``met`` in one column
and ``not met`` in the other (``inconclusive`` is allowed); the last lines count such contradictions for the
new protocol and for the former one.

    python benchmarks/objective_under_load.py                      # seeds 0-2, defaults (200 episodes)
    python benchmarks/objective_under_load.py --episodes 20        # quicker: smaller training, same check

Run records go to a temporary directory (``--out DIR`` keeps them). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BUSY_LOOPS = 2
ROWS = ("random-policy", "dqn-greedy", "dqn")  # the rows the objective is applied to (none/full: by size)
FORMER_REPETITIONS = 5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=None, help="training episodes (default: the run's, 200)")
    parser.add_argument("--out", default=None, help="keep the run records under this directory")
    return parser.parse_args(argv)


def _busy_loop() -> None:
    while True:
        pass


class BusyLoops:
    """``count`` CPU-bound processes spinning while the block runs (stopped by their own handles after)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.processes: list[Any] = []

    def __enter__(self) -> "BusyLoops":
        context = multiprocessing.get_context("spawn")
        self.processes = [context.Process(target=_busy_loop, daemon=True) for _ in range(self.count)]
        for process in self.processes:
            process.start()
        time.sleep(1.0)  # let them reach the scheduler
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.join(timeout=10)


def load_average() -> float:
    return os.getloadavg()[0]


def evaluate_record(run_dir: Path) -> dict[str, Any]:
    """What is needed to re-measure a finished run's sets: its system, test workload and configurations."""
    from case_studies.indexing.build import build_indexing_task, load_run_collection
    from case_studies.indexing.index_spec import IndexSpec
    from case_studies.indexing.run import IndexingRunConfig
    from wield.io import read_json
    from wield.protocols import TrialSeeds
    from workloads.schedule import WorkloadSchedule

    config = IndexingRunConfig.from_dict(read_json(run_dir / "config.json"))
    seeds = TrialSeeds.from_dict(read_json(run_dir / "seeds.json"))
    recorded = read_json(run_dir / "evaluation.json")["methods"]
    workload = WorkloadSchedule.load(run_dir / "schedule-test.json").task_for_episode(0)
    task = build_indexing_task(load_run_collection(config, seeds), k=config.k, metric="work",
                               aggregate=config.aggregate, size_weight=config.size_weight,
                               runtime_weight=config.runtime_weight, cache_dir=config.cache_dir)
    configurations = {row: [IndexSpec.parse(text) for text in recorded[row]["indexes"]] for row in ROWS}
    return {"config": config, "task": task, "workload": workload, "configurations": configurations}


def measure(setup: dict[str, Any]) -> dict[str, Any]:
    """One column: the new protocol's metrics per row and the former protocol's, under the load as it is."""
    from case_studies.indexing.evaluation import (evaluate_methods, full_index_configuration, measure_configuration,
                                                  study_metrics)
    from case_studies.indexing.run import objective_decides

    system, workload = setup["task"].system, setup["workload"]
    started, load_before = time.perf_counter(), load_average()
    new = evaluate_methods(system, workload, setup["configurations"], repetitions=setup["config"].repetitions,
                           decide=objective_decides)
    seconds = time.perf_counter() - started
    # the former protocol: one configuration after another, each query the median of 5 executions
    none = measure_configuration(system, workload, [], FORMER_REPETITIONS)
    full = measure_configuration(system, workload, full_index_configuration(workload), FORMER_REPETITIONS)
    former = {row: study_metrics(row, measure_configuration(system, workload, configuration, FORMER_REPETITIONS),
                                 none, full, intervals=False)
              for row, configuration in setup["configurations"].items()}
    return {"new": {row: m.as_dict() for row, m in new.items()}, "former": {row: m.as_dict() for row, m in former.items()},
            "seconds": seconds, "load": (load_before + load_average()) / 2}


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _with_ci(metrics: dict[str, Any]) -> str:
    low, high = metrics["mean_latency_improvement_ci"]
    return f"{_pct(metrics['mean_latency_improvement'])} [{low * 100:.1f}, {high * 100:.1f}]"


def contradicts(first: str, second: str) -> bool:
    return {first, second} == {"met", "not met"}


def print_table(columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from case_studies.indexing.defaults import OBJECTIVE
    from case_studies.indexing.evaluation import MAX_ROUNDS
    from case_studies.indexing.run import IndexingRunConfig
    from wield.workflows import run_trial

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="wield-objective-load-"))
    rows, new_contradictions, former_contradictions, compared = [], 0, 0, 0
    loads: dict[str, list[float]] = {"idle": [], "busy": []}
    seconds: dict[str, list[float]] = {"idle": [], "busy": []}
    for seed in args.seeds:
        overrides = {} if args.episodes is None else {"episodes": args.episodes}
        config = IndexingRunConfig(seed=seed, **overrides).validate()
        run_dir = out / f"indexing-{seed}"
        started = time.perf_counter()
        run_trial("indexing", asdict(config), config.single_run_seeds(), str(run_dir), progress=False)
        print(f"seed {seed}: trained ({config.episodes} episodes) in {time.perf_counter() - started:.0f} s",
              flush=True)
        setup = evaluate_record(run_dir)
        try:
            idle = measure(setup)
            with BusyLoops(BUSY_LOOPS):
                busy = measure(setup)
        finally:
            setup["task"].close()
        for name, column in (("idle", idle), ("busy", busy)):
            loads[name].append(column["load"])
            seconds[name].append(column["seconds"])
        for row in ROWS:
            metrics = {name: column["new"][row] for name, column in (("idle", idle), ("busy", busy))}
            former = {name: column["former"][row] for name, column in (("idle", idle), ("busy", busy))}
            outcome = {name: OBJECTIVE.decide(m) for name, m in metrics.items()}
            former_outcome = {name: OBJECTIVE.decide(m) for name, m in former.items()}
            compared += 1
            new_contradictions += contradicts(outcome["idle"], outcome["busy"])
            former_contradictions += contradicts(former_outcome["idle"], former_outcome["busy"])
            idle_row = metrics["idle"]
            rows.append([str(seed), row, _pct(idle_row["mean_work_improvement"]), _pct(idle_row["relative_index_size"]),
                         outcome["idle"], _with_ci(metrics["idle"]), str(metrics["idle"]["latency_rounds"]),
                         outcome["busy"], _with_ci(metrics["busy"]), str(metrics["busy"]["latency_rounds"]),
                         "CONTRADICTS" if contradicts(outcome["idle"], outcome["busy"]) else "ok",
                         f"{_pct(former['idle']['mean_latency_improvement'])} {former_outcome['idle']}",
                         f"{_pct(former['busy']['mean_latency_improvement'])} {former_outcome['busy']}"])
    print(f"\nobjective: {OBJECTIVE.describe()}; latency side by side in rounds (at most {MAX_ROUNDS}), "
          f"mean latency improvement with its 95% bootstrap interval; idle = nothing added (load average "
          f"{_mean(loads['idle']):.1f}), busy = {BUSY_LOOPS} busy loops beside it (load average "
          f"{_mean(loads['busy']):.1f}); {os.cpu_count()} CPUs")
    print_table(["seed", "row", "work impr.", "size", "idle outcome", "idle latency impr. [95% CI]", "rounds",
                 "busy outcome", "busy latency impr. [95% CI]", "rounds", "idle vs busy",
                 "former idle", "former busy"], rows)
    print(f"\nnew protocol: {new_contradictions} of {compared} rows met in one column and not met in the other; "
          f"former protocol (one after another, median of {FORMER_REPETITIONS}, no interval): "
          f"{former_contradictions} of {compared}")
    print(f"evaluation seconds per seed (new protocol, all five configurations): idle "
          f"{', '.join(f'{s:.1f}' for s in seconds['idle'])}; busy {', '.join(f'{s:.1f}' for s in seconds['busy'])}")
    print(f"run records: {out}")
    return 0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


if __name__ == "__main__":
    sys.exit(main())
