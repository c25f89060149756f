"""The experiment side of the ``wield`` command: ``run NAME --class Ci --trials N`` and ``classify``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wield.analysis import format_table
from wield.errors import ConfigError
from wield.plugins import CaseStudy
from wield.protocols import CLASSES, Objective, TrialPlan
from wield.workflows.executors import EXECUTORS, make_executor
from wield.workflows.experiment import (ExperimentDirectory, ExperimentSpec, classify_experiment,
                                        run_trials)


def add_experiment_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("experiments (progressive randomisation)")
    group.add_argument("--class", dest="class_name", metavar="CLASS", default=None,
                       help=f"run a trial plan under a randomisation class ({', '.join(CLASSES)}) and "
                            "classify the model as C_i(n, s, f); without it, one blackbox run")
    group.add_argument("--trials", type=int, default=5, help="trials (seeds s) of the plan")
    group.add_argument("--workers", type=int, default=1, help="trials run in parallel (local processes)")
    group.add_argument("--executor", choices=EXECUTORS, default="local",
                       help="where trials run: in this process (or a process pool with --workers > 1), "
                            "a process pool, or Ray (pip install 'wield[ray]')")
    group.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
    group.add_argument("--objective-metric", default=None,
                       help="evaluation metric of the objective (default: the case study's, e.g. "
                            "mean_latency_improvement for indexing)")
    group.add_argument("--objective-threshold", type=float, default=None,
                       help="success threshold of the objective metric (default: the case study's)")


def objective_from_args(study: CaseStudy, args: argparse.Namespace) -> dict:
    """The case study's objective with ``--objective-metric`` / ``--objective-threshold`` applied, validated
    against the metrics the case study evaluates before anything is written."""
    objective = dict(study.objective or {})
    if args.objective_metric is not None:
        objective["metric"] = args.objective_metric
    if args.objective_threshold is not None:
        objective["threshold"] = args.objective_threshold
    if study.metrics:
        Objective(**objective).validate(study.metrics)
    return objective


def run_experiment(study: CaseStudy, args: argparse.Namespace, echo: bool = True,
                   pinned_task: dict | None = None) -> int:
    if study.trial_function is None or study.config_from_args is None:
        raise ConfigError("case study", study.name, reason="does not support --class experiments")
    config = study.config_from_args(args)
    objective = objective_from_args(study, args)
    spec = ExperimentSpec(study.name, str(args.class_name).upper(), args.trials, int(config.get("seed", 0)),
                          config, objective, pinned_task)
    plan = spec.plan()  # validates class and trials before anything is written
    out = Path(args.out) if args.out else Path("runs") / f"{study.name}-{spec.class_name}-seed{spec.base_seed}"
    executor = make_executor(args.executor, args.workers, args.address)
    quiet = args.quiet or args.json or not echo
    try:
        directory = ExperimentDirectory.open(out, spec, volatile=study.volatile_config)
        try:
            if not quiet:
                print(plan.describe())
                print(f"experiment directory: {out}")
            summaries = run_trials(directory, spec, study.trial_function, executor, progress=not quiet)
            classification = classify_experiment(directory, summaries=summaries)
            from wield.io import atomic_write_json

            atomic_write_json(out / "classification.json", classification.as_dict())
        finally:
            directory.close()
    finally:
        executor.close()
    if not echo:
        return 0
    if args.json:
        print(json.dumps({"classification": classification.as_dict(), "trials": summaries}, indent=2, default=str))
    else:
        print()
        print(trial_table(summaries, classification, Objective(**spec.objective), spec.plan()))
        print()
        print(classification.label())
    return 0


def trial_table(summaries, classification, objective: Objective, plan: TrialPlan | None = None) -> str:
    """One row per finished trial: its seeds (from the trial plan when given, else from the summary), n, the
    objective's metric and outcome; index size and train/test similarity only where the trials report them."""
    outcome = {o.trial: o.outcome for o in classification.trials}
    planned = {t.trial: t for t in plan.trials} if plan is not None else {}
    rows = []
    for s in summaries:
        seeds = s.get("seeds", {})
        trial = planned.get(s["trial"])
        if trial is not None:
            seeds = {"train_workload": trial.train_workload_seed, "test_workload": trial.test_workload_seed,
                     "agent": trial.optimisation_seed}
        rows.append({"trial": s["trial"], "train": str(seeds.get("train_workload", "-"))[:8],
                     "test": str(seeds.get("test_workload", "-"))[:8], "opt": str(seeds.get("agent", "-"))[:8],
                     "n": s["transitions"], "value": s["metrics"][objective.metric],
                     "size": s["metrics"].get("relative_index_size"),
                     "similarity": s.get("train_test_similarity"), "outcome": outcome.get(s["trial"])})
    columns = [("trial", "trial", "d"), ("train", "train seed", None), ("test", "test seed", None),
               ("opt", "opt. seed", None), ("n", "n", "d"), ("value", objective.metric, ".1%")]
    optional = [("size", "size vs full", ".1%"), ("similarity", "train/test similarity", ".0%")]
    columns += [column for column in optional if any(row[column[0]] is not None for row in rows)]
    return format_table(rows, columns + [("outcome", "outcome", None)])


def add_classify_command(commands) -> None:
    parser = commands.add_parser("classify", help="classify finished experiments as C_i(n, s, f)",
                                 description="Print the classification of one or more experiment directories.")
    parser.add_argument("experiments", nargs="+", metavar="EXPERIMENT_DIR")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(handler=classify_command)


def classify_command(args: argparse.Namespace) -> int:
    results = []
    for path in args.experiments:
        if not (Path(path) / "experiment.json").exists():
            raise ConfigError("EXPERIMENT_DIR", path, reason="not an experiment directory (no experiment.json)")
        directory = ExperimentDirectory(path)
        spec = directory.spec()
        summaries = [s for s in directory.summaries() if s["trial"] < spec.trials]
        if not summaries:
            raise ConfigError("EXPERIMENT_DIR", path, reason="no finished trial yet"
                              + experiment_state_note(directory, 0, spec.trials))
        classification = classify_experiment(directory, summaries=summaries)
        results.append((path, spec, summaries, classification))
    if args.json:
        print(json.dumps([{"experiment": p, "classification": c.as_dict()} for p, _, _, c in results], indent=2))
        return 0
    for path, spec, summaries, classification in results:
        print(f"{path}: {spec.case_study}, {len(summaries)}/{spec.trials} trials finished"
              + experiment_state_note(ExperimentDirectory(path), len(summaries), spec.trials))
        print(trial_table(summaries, classification, Objective(**spec.objective), spec.plan()))
        print(classification.label())
        print()
    return 0


def experiment_state_note(directory: ExperimentDirectory, finished: int, planned: int) -> str:
    """"" for a complete experiment; otherwise whether it is running, or unfinished with nobody running it
    (and which trials say "running" although their process is gone)."""
    state = directory.state
    if state == "complete" and finished >= planned:
        return ""
    if state == "running":
        return " (running now)"
    stale = directory.stale_trials()
    note = f"; trial {', '.join(map(str, stale))} says running but its process is gone" if stale else ""
    return f" (unfinished, no process is running it{note}: stale; rerun the same command to resume)"


def add_reproduce_command(commands) -> None:
    parser = commands.add_parser("reproduce", help="rerun a run from its record and compare the results",
                                 description="Rerun one run (or one trial of an experiment) from its run record "
                                             "alone and report whether the results match (exactly, under the "
                                             "deterministic work metric).")
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=reproduce_command)


def reproduce_command(args: argparse.Namespace) -> int:
    from wield.io import read_json
    from wield.plugins import get_case_study
    from wield.workflows.run_record import check_finished

    record = check_finished(args.run_dir)  # finished, its process done, no file damaged since
    run = read_json(record.file("run.json"))
    if not isinstance(run, dict) or not isinstance(run.get("case_study"), str):
        raise ConfigError("RUN_DIR", args.run_dir, reason="run.json does not name its case study")
    study = get_case_study(run["case_study"])
    if study.reproduce is None:
        raise ConfigError("case study", study.name, reason="cannot reproduce runs")
    report = study.reproduce(args.run_dir)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        verdict = "match" if report["match"] else "MISMATCH"
        kind = "exactly (work metric)" if report.get("deterministic") else "(latency metric: wall time varies)"
        print(f"{args.run_dir}: {verdict} {kind}")
        for line in report["differences"]:
            print(f"  {line}")
    return 0 if report["match"] else 1
