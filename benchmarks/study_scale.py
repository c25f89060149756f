"""Benchmark: the study's method comparison at the study's budget, and where its time goes.

Runs exactly what a user runs::

    wield compare indexing --class C2 --trials 5 --episodes 100 --methods dqn,dqfd,opentuner,random,full,none

(n = episodes x queries = 2,000 system evaluations per learner and per optimiser trial, 100,000 generated
documents, 2 worker processes) in a fresh comparison directory and a fresh cache directory (so the
measurement store starts empty, as on a first run), and prints:

1. the wall time of the whole command, the load of the machine before and after (it may be shared) and
   the CPU time of the command's processes (what the wall time would be at best on idle cores);
2. per method (the methods' trials run interleaved on the workers): the seconds its trials took, summed,
   system evaluations per trial, index builds per evaluation and rebuilds (an index dropped to keep within
   the budget and needed again), programs whose work was counted instead of executed and how many of
   those were checked by an execution (``sqlite_work_model.py``), slice runs (executions measured on a
   slice of the table instead of on a built index, ``sqlite_slice.py``), query executions against answers
   from the caches (relevant-index, program, equivalent-program and store hits), what-if plans and plan
   fallbacks, the wall and CPU seconds of every phase of the trials (build, training, a learner's verdict by
   rung, the final evaluation: copies built, latency rounds, deciding) and the study's Table 6.2 split
   (system, agent acting and updating, Wield's own code);
3. a check on a small instance (``--check-documents``, ``--check-budget``, ``--check-trials``): the same
   comparison run through the fast path and through the slow path (``--no-cost-cache``: every
   configuration built exactly and every query executed, no measurement store, so no advice shared between
   trials), with every trial's deterministic results (work improvements, index sizes and usage, the index
   sets, the training rewards, a learner's verdict: every rung's outcome and scores) side by side and
   whether they are identical. The exit status is 1 if any differ.

Usage: python benchmarks/study_scale.py [--documents 100000] [--trials 5] [--budget 2000] [--workers 2]
           [--methods dqn,dqfd,opentuner,random,full,none] [--queries 20] [--size-weight W]
           [--runtime-weight W] [--out DIR] [--cache-dir DIR] [--no-check]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUDY_METHODS = "dqn,dqfd,opentuner,random,full,none"
# every rung's figures of a learner's learning verdict that the deterministic work metric fixes (not its times)
VERDICT_FIGURES = ("name", "kind", "outcome", "instances", "learner_mean", "comparator_mean", "mean_difference",
                   "wins")
DETERMINISTIC = ("mean_work_improvement", "p99_work_improvement", "relative_index_size", "index_bytes",
                 "indexes_created", "uses_per_index", "unused_indexes", "unused_index_bytes", "indexes")


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def compare(out: Path, cache: Path, args, documents: int, trials: int, budget: int, methods: str,
            extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """Run ``wield compare indexing`` in a child process; (wall seconds, CPU seconds of the child and its
    worker processes)."""
    if budget % args.queries:
        raise SystemExit(f"--budget {budget} must be a multiple of --queries {args.queries} (n = episodes x Q)")
    command = [sys.executable, "-m", "wield.cli", "compare", "indexing", "--class", "C2",
               "--trials", str(trials), "--episodes", str(budget // args.queries), "--queries", str(args.queries),
               "--documents", str(documents), "--methods", methods, "--workers", str(args.workers),
               "--repetitions", str(args.repetitions), "--out", str(out), "--cache-dir", str(cache), "--quiet"]
    if args.size_weight is not None:
        command += ["--size-weight", str(args.size_weight)]
    if args.runtime_weight is not None:
        command += ["--runtime-weight", str(args.runtime_weight)]
    command += list(extra)
    env = {**os.environ, "WIELD_TORCH_THREADS": os.environ.get("WIELD_TORCH_THREADS", "1")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        raise SystemExit(f"wield compare failed (exit {done.returncode})")
    return wall, cpu


def trial_records(out: Path, method: str) -> list[Path]:
    return sorted((out / method / "trials").glob("trial-*"))


def summarise(out: Path, methods: list[str]) -> list[dict]:
    from wield.workflows.timing import total_phases

    rows = []
    for method in methods:
        records = trial_records(out, method)
        evaluations = [json.loads((r / "evaluation.json").read_text()) for r in records]
        counters = {}
        for evaluation in evaluations:
            for name, value in evaluation.get("engine_counters", {}).items():
                counters[name] = counters.get(name, 0) + value
        summaries = [json.loads((r / "summary.json").read_text()) for r in records]
        timing = {}
        for summary in summaries:  # the core records the split as the trial summary's timing
            for name, value in (summary.get("timing") or {}).items():
                timing[name] = timing.get(name, 0.0) + value
        n = sum(int(e.get("evaluations", e.get("transitions", 0))) for e in evaluations)
        seconds = sum(summary["seconds"] for summary in summaries)
        phases = total_phases(summary.get("phases") or {} for summary in summaries)
        rows.append({"method": method, "trials": len(records), "seconds": seconds,
                     "evaluations": n, "counters": counters, "timing": timing, "phases": phases})
    return rows


def print_summary(rows: list[dict]) -> None:
    from wield.workflows.timing import phase_rows, time_split_rows, total_phases

    print(f"\n  {'method':9s} {'trials':>6s} {'trial s':>8s} {'evals/trial':>11s} {'builds/eval':>11s} "
          f"{'rebuilds':>8s} {'counted':>7s} {'(checked)':>9s} {'slice runs':>10s} {'executions':>10s} {'cache hits':>10s} {'(relevant':>9s} {'plan':>7s} {'equiv.':>7s} {'store)':>7s} "
          f"{'plans':>7s} {'fallbacks':>9s} {'disagree':>8s} {'sizes from store':>16s} {'computed':>8s} {'checked':>7s}")
    for row in rows:
        c, n = row["counters"], row["evaluations"]
        per_eval = f"{c.get('index_builds', 0) / n:.2f}" if n else "-"
        print(f"  {row['method']:9s} {row['trials']:6d} {row['seconds']:8.1f} {n / max(1, row['trials']):11.0f} "
              f"{per_eval:>11s} {int(c.get('index_rebuilds', 0)):8d} {int(c.get('works_counted', 0)):7d} "
              f"{int(c.get('work_checks', 0)):9d} {int(c.get('slice_runs', 0)):10d} {int(c.get('query_executions', 0)):10d} {int(c.get('cache_hits', 0)):10d} "
              f"{int(c.get('relevant_hits', 0)):9d} {int(c.get('plan_hits', 0)):7d} {int(c.get('equivalent_hits', 0)):7d} "
              f"{int(c.get('store_hits', 0)):7d} "
              f"{int(c.get('plans', 0)):7d} {int(c.get('plan_fallbacks', 0)):9d} "
              f"{int(c.get('planner_disagreements', 0)):8d} {int(c.get('sizes_from_store', 0)):16d} "
              f"{int(c.get('sizes_computed', 0)):8d} {int(c.get('size_checks', 0)):7d}")
    print("\n  Index builds on the whole table by purpose (sizes: a computed size checked; programs: no count,"
          " slice or store answered; representatives: an equivalence class; configurations: fallbacks and the"
          " final evaluation), new programs the work model declined, counted programs a due check passed"
          " over because only a build on the whole table would measure them, and the evaluation's copies (full"
          " index, random policy) loaded as an earlier trial kept them instead of built:")
    for row in rows:
        c = row["counters"]
        print(f"  {row['method']:9s} builds {int(c.get('index_builds', 0)):6d}: "
              + ", ".join(f"{purpose} {int(c.get('builds_for_' + purpose, 0))}"
                          for purpose in ("sizes", "programs", "representatives", "configurations"))
              + f"; build seconds {c.get('build_seconds', 0):.1f}; declined {int(c.get('works_declined', 0))}"
              + f"; checks deferred {int(c.get('work_checks_deferred', 0))}"
              + f"; copies loaded {int(c.get('copies_loaded', 0))}")
    print("\n  Where the time went by phase, wall and CPU seconds summed over each method's trials (a phase's parts "
          "indented under it; 'verdict' is a learner's learning verdict, 'evaluation' the final measurement of "
          "every method's set side by side, its blocks: copies built, latency rounds, deciding whether to stop):")
    for row in rows:
        print(f"  {row['method']}:")
        for line in phase_rows(row["phases"]):
            print("    " + line)
    every = total_phases(row["phases"] for row in rows)
    print("  every method, by phase:")
    for line in phase_rows({name: figures for name, figures in every.items() if ": " not in name}):
        print("    " + line)
    print("\n  Where the time went (the study's Table 6.2), seconds summed over each method's trials:")
    for line in time_split_rows({row["method"]: row["timing"] for row in rows if row["timing"]}):
        print("  " + "  ".join(f"{key}: {value}" if key != "what" else f"{value:9s}" for key, value in line.items()))


def verdict_outcomes(evaluation: dict) -> dict:
    """A learner's verdict as the work metric fixes it: learned or not, and every rung's outcome and scores
    (``VERDICT_FIGURES``); empty for a method without a verdict."""
    verdict = evaluation.get("verdict") or {}
    if not verdict:
        return {}
    return {"learned": verdict.get("learned"), "status": verdict.get("status"),
            "rungs": [{k: rung.get(k) for k in VERDICT_FIGURES} for rung in verdict.get("rungs", [])],
            "budget_0": (verdict.get("budgets") or {}).get("learned")}


def deterministic_results(out: Path, methods: list[str]) -> dict[tuple[str, int], dict]:
    """Per (method, trial): the deterministic metrics of every evaluated method, the training rewards and a
    learner's verdict outcomes (``verdict_outcomes``)."""
    import pandas as pd

    found = {}
    for method in methods:
        for record in trial_records(out, method):
            evaluation = json.loads((record / "evaluation.json").read_text())
            rewards = []
            if (record / "episodes.csv").exists():
                table = pd.read_csv(record / "episodes.csv")
                rewards = table["total_reward" if "total_reward" in table else "reward"].tolist()
            found[(method, int(record.name.split("-")[1]))] = {
                "methods": {m: {k: v.get(k) for k in DETERMINISTIC} for m, v in evaluation["methods"].items()},
                "rewards": rewards, "verdict": verdict_outcomes(evaluation)}
    return found


def rungs(result: dict) -> str:
    """A learner's verdict in a few characters: each rung's outcome (random, trivial, heuristic)."""
    verdict = result.get("verdict") or {}
    return "/".join(str(rung["outcome"]) for rung in verdict.get("rungs", [])) or "-"


def check(args, scratch: Path) -> bool:
    methods = args.methods
    print(f"\nCheck on a small instance: {args.check_documents:,} documents, {args.check_trials} trials, "
          f"n = {args.check_budget} per trial, methods {methods}; fast path vs slow path (--no-cost-cache)")
    results, walls = {}, {}
    for name, extra in (("fast", ()), ("slow", ("--no-cost-cache",))):
        out = scratch / f"check-{name}"
        walls[name], _ = compare(out, scratch / f"check-cache-{name}", args, args.check_documents, args.check_trials,
                              args.check_budget, methods, extra)
        results[name] = deterministic_results(out, methods.split(","))
    print(f"  wall: fast {walls['fast']:.1f} s, slow {walls['slow']:.1f} s")
    print(f"  {'method':9s} {'trial':>5s} {'work improvement (fast)':>24s} {'(slow)':>10s} "
          f"{'index MB (fast)':>16s} {'(slow)':>8s} {'rewards':>8s} {'verdict (fast)':>24s} {'(slow)':>24s} "
          f"{'identical':>9s}")
    identical = results["fast"].keys() == results["slow"].keys()
    for key in sorted(results["fast"]):
        fast, slow = results["fast"][key], results["slow"].get(key, {})
        same = fast == slow
        identical &= same
        own = fast["methods"].get(key[0]) or fast["methods"].get("dqn") or {}
        other = (slow.get("methods", {}).get(key[0]) or slow.get("methods", {}).get("dqn") or {})
        print(f"  {key[0]:9s} {key[1]:5d} {own.get('mean_work_improvement', 0):24.4%} "
              f"{other.get('mean_work_improvement', 0):10.4%} {own.get('index_bytes', 0) / 1e6:16.3f} "
              f"{other.get('index_bytes', 0) / 1e6:8.3f} {len(fast['rewards']):8d} {rungs(fast):>24s} "
              f"{rungs(slow):>24s} {str(same):>9s}")
    print(f"  every trial's deterministic results, training rewards and verdict outcomes identical: {identical}")
    return identical


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--budget", type=int, default=2_000, help="n: system evaluations per learner/optimiser trial")
    parser.add_argument("--methods", default=STUDY_METHODS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=5, help="executions per query in the evaluation")
    parser.add_argument("--size-weight", type=float, default=None, help="w_m (default: the run configuration's)")
    parser.add_argument("--runtime-weight", type=float, default=None, help="w_t (default: the run configuration's)")
    parser.add_argument("--out", default=None, help="keep the comparison here (default: a temporary directory)")
    parser.add_argument("--cache-dir", default=None,
                        help="base databases and measurement store (default: a fresh one, as on a first run)")
    parser.add_argument("--check-documents", type=int, default=5_000)
    parser.add_argument("--check-trials", type=int, default=2)
    parser.add_argument("--check-budget", type=int, default=60)
    parser.add_argument("--no-check", dest="check", action="store_false")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wield-study-scale-") as scratch:
        scratch = Path(scratch)
        out = Path(args.out) if args.out else scratch / "comparison"
        cache = Path(args.cache_dir) if args.cache_dir else scratch / "cache"
        print(f"wield compare indexing --class C2 --trials {args.trials} --episodes {args.budget // args.queries} "
              f"--methods {args.methods} --documents {args.documents} --workers {args.workers}")
        print(f"  n = {args.budget} system evaluations per learner and optimiser trial; load before: {load()}")
        wall, cpu = compare(out, cache, args, args.documents, args.trials, args.budget, args.methods)
        print(f"  wall time of the whole comparison: {wall:.1f} s ({wall / 60:.1f} min); load after: {load()}")
        print(f"  CPU time of the comparison's processes: {cpu:.1f} s ({cpu / 60:.1f} min), i.e. at least "
              f"{cpu / max(1, args.workers) / 60:.1f} min of wall time on {args.workers} otherwise idle cores")
        print_summary(summarise(out, args.methods.split(",")))
        identical = check(args, scratch) if args.check else True
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
