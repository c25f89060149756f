"""``wield compare CASE_STUDY --class Ci --trials N --methods a,b,c``: methods side by side on one trial plan.

Every method runs as its own experiment (wield/workflows/experiment.py) under ``OUT/<method>/`` with the
same class, trials and base seed, hence the same trial plan: the same workload seeds and optimisation
seeds in every method's trial i. The trials of all methods share one executor, interleaved (trial 0 of
every method, then trial 1, ...), so parallel workers are not left idle at the end of each method. The
run configuration carries ``"method"`` and the case study's trial function runs exactly that method,
charging it in the same units as every other (transitions n and system evaluations). Rerunning the
command resumes: finished trials of every method are kept. Below the table, where each method's time went
(the study's Table 6.2), from the trials' recorded ``timing``.

The table gives, per method, the budget, the median and the range (min..max) across trials of each of the
case study's ``compare_metrics``, and the classification C_i(n, s, f) under the objective. The core knows
no case study: methods and metrics come from the ``CaseStudy`` plugin.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from wield.analysis import format_table
from wield.errors import ConfigError
from wield.io import atomic_write_json
from wield.plugins import CaseStudy
from wield.cli.experiment import objective_from_args
from wield.protocols import CLASSES
from wield.workflows.executors import EXECUTORS, make_executor
from wield.workflows.experiment import ExperimentDirectory, ExperimentSpec, classify_experiment, run_experiments
from wield.workflows.timing import time_split_rows, total_timing


def add_compare_command(commands, studies: dict[str, CaseStudy], formatter=argparse.HelpFormatter) -> None:
    comparable = {name: s for name, s in studies.items() if s.methods and s.trial_function is not None}
    parser = commands.add_parser(
        "compare", help="run several methods on the same trial plan and compare them",
        description="Run several methods (learners, optimisers, fixed baselines) on the same trial plan of a "
                    "randomisation class, each charged in the same units (transitions n = system "
                    "evaluations), and print their metrics side by side (median and range across trials) "
                    "with each method's classification C_i(n, s, f).", formatter_class=formatter)
    subs = parser.add_subparsers(dest="case_study", metavar="CASE_STUDY", required=True)
    for study in comparable.values():
        sub = subs.add_parser(study.name, help=study.description, formatter_class=formatter,
                              description=f"Compare methods on {study.name}: {study.description}. Methods: "
                                          f"{', '.join(study.methods)}. --out names the comparison directory "
                                          "(default runs/compare-NAME-CLASS-seedSEED), one experiment per "
                                          "method inside; rerunning the same command resumes.")
        study.add_arguments(sub)
        add_compare_arguments(sub, study)
        sub.set_defaults(handler=lambda args, study=study: compare_command(study, args))


def add_compare_arguments(parser: argparse.ArgumentParser, study: CaseStudy) -> None:
    group = parser.add_argument_group("comparison")
    group.add_argument("--class", dest="class_name", metavar="CLASS", default="C2",
                       help=f"randomisation class of the shared trial plan ({', '.join(CLASSES)})")
    group.add_argument("--trials", type=int, default=5, help="trials (seeds s) per method")
    group.add_argument("--methods", default=",".join(study.methods),
                       help=f"comma-separated methods to compare (known: {', '.join(study.methods)})")
    group.add_argument("--workers", type=int, default=1, help="trials run in parallel (local processes)")
    group.add_argument("--executor", choices=EXECUTORS, default="local", help="where trials run")
    group.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
    group.add_argument("--objective-metric", default=None,
                       help="metric of the objective behind C_i(n, s, f) (default: the case study's)")
    group.add_argument("--objective-threshold", type=float, default=None,
                       help="success threshold of the objective metric (default: the case study's)")


def parse_methods(text: str, study: CaseStudy) -> list[str]:
    """``a,b,c`` -> ["a", "b", "c"]; an unknown or repeated name is an error listing the known ones."""
    methods = [m.strip() for m in str(text).split(",") if m.strip()]
    if not methods:
        raise ConfigError("methods", text, study.methods)
    for method in methods:
        if method not in study.methods:
            raise ConfigError("methods", method, study.methods, reason="unknown method")
    if len(set(methods)) != len(methods):
        raise ConfigError("methods", text, reason="a method is named twice")
    return methods


def compare_command(study: CaseStudy, args: argparse.Namespace) -> int:
    methods = parse_methods(args.methods, study)
    quiet = bool(getattr(args, "quiet", False) or getattr(args, "json", False))
    objective = objective_from_args(study, args)
    base = study.config_from_args(args)
    specs = {m: ExperimentSpec(study.name, str(args.class_name).upper(), args.trials, int(base.get("seed", 0)),
                               {**base, "method": m}, objective) for m in methods}
    plan = specs[methods[0]].plan()  # validates class and trials before anything is written
    class_name = specs[methods[0]].class_name
    out = Path(getattr(args, "out", None) or
               Path("runs") / f"compare-{study.name}-{class_name}-seed{specs[methods[0]].base_seed}")
    if not quiet:
        print(plan.describe())
        print(f"comparison directory: {out}  (one experiment per method)")
    results = {}
    directories = {method: ExperimentDirectory.open(out / method, specs[method]) for method in methods}
    if not quiet:
        print(f"methods: {', '.join(methods)} (their trials interleaved on one executor)")
    executor = make_executor(args.executor, args.workers, args.address)
    try:
        experiments = [(directories[method], specs[method]) for method in methods]
        found = run_experiments(experiments, study.trial_function, executor, progress=not quiet)
    finally:
        executor.close()
    for method, summaries in zip(methods, found):
        classification = classify_experiment(directories[method], summaries=summaries)
        atomic_write_json(out / method / "classification.json", classification.as_dict())
        results[method] = (summaries, classification)
    comparison = comparison_rows(results, study.compare_metrics or study.metrics)
    atomic_write_json(out / "comparison.json", {"class": class_name, "trials": args.trials,
                                                "base_seed": specs[methods[0]].base_seed,
                                                "objective": objective, "methods": comparison})
    if getattr(args, "json", False):
        print(json.dumps({"class": class_name, "objective": objective, "methods": comparison}, indent=2))
        return 0
    print()
    print(comparison_table(comparison, study.compare_metrics or study.metrics))
    print()
    print(f"{class_name}, {args.trials} trials per method on one trial plan; budget per trial: n transitions and "
          f"the system evaluations charged for them; cells: median (min..max) over trials.")
    print(f"Objective (f, C_i): {objective.get('metric')} >= {objective.get('threshold')}")
    for row in comparison:
        print(f"  {row['method']:10s} {row['classification']}")
    split = time_split_table(comparison)
    if split:
        print()
        print("Where the time went (the study's Table 6.2), seconds summed over each method's trials:")
        print(split)
    return 0


def time_split_table(rows: Sequence[dict[str, Any]]) -> str:
    """The time split of every method that recorded one (trial summaries' ``timing``), as a table."""
    timings = {row["method"]: row["timing"] for row in rows if row.get("timing")}
    if not timings:
        return ""
    lines = time_split_rows(timings)
    columns = [(key, "method" if key == "what" else key, None) for key in lines[0]]
    return format_table(lines, columns)


def _spread(values: Sequence[float]) -> dict[str, float]:
    array = np.asarray([float(v) for v in values], dtype=float)
    return {"median": float(np.median(array)), "min": float(array.min()), "max": float(array.max())}


def comparison_rows(results: dict[str, tuple[list[dict[str, Any]], Any]],
                    metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Per method: budget, median/min/max of every metric across trials, classification, per-trial values."""
    rows = []
    for method, (summaries, classification) in results.items():
        rows.append({
            "method": method,
            "trials": len(summaries),
            "transitions": _spread([s["transitions"] for s in summaries]),
            "evaluations": _spread([s.get("evaluations", s["transitions"]) for s in summaries]),
            "demonstrations": _spread([s.get("demonstrations", 0) for s in summaries]),
            "metrics": {name: _spread([s["metrics"][name] for s in summaries]) for name in metrics},
            "per_trial": {name: [s["metrics"][name] for s in summaries] for name in metrics},
            "classification": classification.label(),
            "f": classification.f,
            "timing": total_timing(s["timing"] for s in summaries if s.get("timing")),
        })
    return rows


def _metric_format(name: str) -> tuple[float, str]:
    """(scale, format) of a metric's cells: shares as percentages, bytes in MB, counts with one decimal."""
    if name in ("transitions", "evaluations"):
        return 1.0, ".0f"
    if "improvement" in name or name.startswith("relative") or name.endswith(("_share", "_ratio")):
        return 1.0, ".1%"
    if name.endswith("bytes"):
        return 1e-6, ".2f"
    return 1.0, ".2f"


def _cell(cell: dict[str, float], name: str) -> str:
    scale, fmt = _metric_format(name)
    median, low, high = (format(cell[k] * scale, fmt) for k in ("median", "min", "max"))
    if low == high:
        return median
    return f"{median} ({low.rstrip('%')}..{high.rstrip('%')})"


def comparison_table(rows: Sequence[dict[str, Any]], metrics: Sequence[str]) -> str:
    """Methods as columns; the budget, each metric (median (min..max) across trials) and f as rows."""
    def line(what: str, cells) -> dict[str, str]:
        return {"what": what, **{r["method"]: cells(r) for r in rows}}

    lines = [line("trials s", lambda r: str(r["trials"])),
             line("budget n (transitions)", lambda r: _cell(r["transitions"], "transitions")),
             line("system evaluations", lambda r: _cell(r["evaluations"], "evaluations"))]
    if any(r["demonstrations"]["max"] > 0 for r in rows):
        lines.append(line("offline demonstrations", lambda r: _cell(r["demonstrations"], "transitions")))
    for name in metrics:
        scale, _ = _metric_format(name)
        label = (name.replace("_bytes", " MB") if scale != 1.0 else name).replace("_", " ")
        lines.append(line(label, lambda r, name=name: _cell(r["metrics"][name], name)))
    lines.append({"what": "f (objective met)", **{r["method"]: f"{r['f']:.2f}" for r in rows}})
    columns = [("what", "", None)] + [(r["method"], r["method"], None) for r in rows]
    return format_table(lines, columns)
