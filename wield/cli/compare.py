"""``wield compare CASE_STUDY --class Ci --trials N --methods a,b,c``: methods side by side on one trial plan.

Every method runs as its own experiment (wield/workflows/experiment.py) under ``OUT/<method>/`` with the
same class, trials and base seed, hence the same trial plan: the same workload seeds and optimisation
seeds in every method's trial i. The trials of all methods share one executor, the costliest methods'
trials first (the case study's ``method_costs``) and methods of equal cost interleaved (trial 0 of each,
then trial 1, ...), so parallel workers end together instead of waiting on one long trial at the end. The
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
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from wield.analysis import format_table
from wield.configs import parse_name_list
from wield.io import atomic_write_json, atomic_write_text
from wield.logs import get_logger, record_log
from wield.metrics import Metric, MetricTable
from wield.plugins import CaseStudy
from wield.cli.studies import case_study_commands
from wield.cli.experiment import (GLOSSARY, add_common_options, add_objective_arguments, classification_notes,
                                  classification_record, objective_from_args)
from wield.protocols import CLASSES, Objective, TrialSummary
from wield.protocols.references import rung_counts
from wield.workflows.executors import EXECUTORS, make_executor
from wield.errors import ConfigError
from wield.workflows.experiment import (COMPARISON, MANIFEST, ExperimentDirectory, ExperimentSpec, classify_experiment,
                                        run_experiments)
from wield.workflows.ownership import DirectoryLock
from wield.tracking import EXPERIMENT_ARTIFACTS, experiment_session
from wield.workflows.timing import time_split_rows, total_timing
from wield.cli.output import print_json

log = get_logger(__name__)


def add_compare_command(commands, formatter=argparse.HelpFormatter) -> None:
    parser = commands.add_parser(
        "compare", help="run several methods on the same trial plan and compare them",
        description="Run several methods (learners, optimisers, fixed baselines) on the same trial plan of a "
                    "randomisation class, each charged in the same units (transitions n = system "
                    "evaluations), and print their metrics side by side (median and range across trials) "
                    "with each method's classification C_i(n, s, f).", formatter_class=formatter)

    def configure(study: CaseStudy, sub: argparse.ArgumentParser) -> None:
        sub.description = (f"Compare methods on {study.name}: {study.description}. Methods: "
                           f"{', '.join(study.methods)}. --out names the comparison directory "
                           "(default runs/compare-NAME-CLASS-seedSEED), one experiment per "
                           "method inside; rerunning the same command resumes. " + GLOSSARY)
        study.add_options(sub)
        add_common_options(sub)
        add_compare_arguments(sub, study)
        sub.set_defaults(handler=lambda args: compare_command(study, args))

    case_study_commands(parser).add_case_studies(configure, offers=lambda study: bool(study.methods),
                                                 why_not="declares no methods to compare", formatter_class=formatter)


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
    add_objective_arguments(group)


def parse_methods(text: str, study: CaseStudy) -> list[str]:
    """``a,b,c`` -> ["a", "b", "c"]; an unknown or repeated name is an error listing the known ones."""
    return parse_name_list(str(text), "methods", study.methods, what="method")


def compare_command(study: CaseStudy, args: argparse.Namespace) -> int:
    from wield.command_config import pending_command_config

    command_config = pending_command_config()  # config.toml: the comparison's, taken before any trial record
    methods = parse_methods(args.methods, study)
    quiet = bool(getattr(args, "quiet", False) or getattr(args, "json", False))
    objective = objective_from_args(study, args)
    base = study.config(args)
    specs = {m: ExperimentSpec(study.name, str(args.class_name).upper(), args.trials, int(args.seed),
                               {**base, "method": m}, objective) for m in methods}
    plan = specs[methods[0]].plan()  # validates class and trials before anything is written
    class_name = specs[methods[0]].class_name
    out = Path(getattr(args, "out", None) or
               Path("runs") / f"compare-{study.name}-{class_name}-seed{specs[methods[0]].base_seed}")
    if not quiet:
        print(plan.describe())
        print(f"comparison directory: {out}  (one experiment per method)")
        print(f"methods: {', '.join(methods)} (their trials on one executor, the costliest first)")
    lock = claim_comparison(out)  # one writer per directory: a second comparison or a run is refused
    try:
        if command_config is not None:  # every option of the comparison, to rerun or resume it
            atomic_write_text(out / command_config[0], command_config[1])
        with record_log(out, trial=False):  # out/wield.log: what this process logs (each trial: its own)
            log.info("comparison %s: %s, methods %s, class %s, %d trials per method", out, study.name,
                     ", ".join(methods), class_name, args.trials)
            return _run_comparison(study, args, methods, specs, objective, out, quiet)
    finally:
        lock.release()


def claim_comparison(out: Path) -> DirectoryLock:
    """The comparison directory ``out``, claimed for this process (``wield.workflows.ownership``); one
    that holds an experiment (its own ``experiment.json``) is refused, so a run and a comparison never mix."""
    if (out / MANIFEST).exists():
        raise ConfigError("out", str(out), reason=f"holds an experiment ({MANIFEST}), not a comparison; "
                                                  "choose another --out")
    lock = DirectoryLock.acquire(out, "out", what="comparison directory")
    if (out / MANIFEST).exists():  # again, now that it is ours
        lock.release()
        raise ConfigError("out", str(out), reason=f"holds an experiment ({MANIFEST}), not a comparison; "
                                                  "choose another --out")
    return lock


def _run_comparison(study: CaseStudy, args: argparse.Namespace, methods: list[str],
                    specs: dict[str, ExperimentSpec], objective: dict, out: Path, quiet: bool) -> int:
    """The comparison itself, run while this process holds ``out``."""
    class_name = specs[methods[0]].class_name
    compared = study.compare_metrics or study.metric_names
    # the class is 'class_name', as in experiment.json and every classification; 'class', its old key here, is
    # kept with the same value for one release (0.2) and then goes (wield.cli.output: JSON is public API)
    named = {"class_name": class_name, "class": class_name}
    with experiment_session("comparison", study=study, directory=out, class_name=class_name, methods=methods,
                            config={key: value for key, value in specs[methods[0]].config.items() if key != "method"},
                            facts={"trials": args.trials, "base_seed": specs[methods[0]].base_seed}) as parent:
        records, results = _compare_methods(study, methods, specs, out, quiet, args)  # trials nested in parent
        comparison = comparison_rows(results, compared)
        atomic_write_json(out / COMPARISON, {**named, "trials": args.trials, "base_seed": specs[methods[0]].base_seed,
                                             "objective": objective, "methods": comparison})
        if parent is not None:  # --log: the parent run gets every method's C_i and the comparison's files
            parent.log_classification(records)
            parent.log_artifacts(out, EXPERIMENT_ARTIFACTS)
    if getattr(args, "json", False):
        print_json("comparison", {**named, "objective": objective, "methods": comparison})
        return 0
    print()
    print(comparison_table(comparison, compared, study.declared_metrics()))
    print()
    print(f"{class_name}, {args.trials} trials per method on one trial plan; budget per trial: n transitions and "
          f"the system evaluations charged for them; cells: median (min..max) over trials.")
    print(f"Objective (f, C_i): {Objective(**objective).describe()}")
    for row in comparison:
        print(f"  {row['method']:10s} {row['classification']}")
    for line in reference_notes(study, specs, records):
        print(line)
    split = time_split_table(comparison)
    if split:
        print()
        print("Where the time went (the study's Table 6.2), seconds summed over each method's trials:")
        print(split)
    print(GLOSSARY)
    return 0


def _compare_methods(study: CaseStudy, methods: list[str], specs: dict[str, ExperimentSpec], out: Path, quiet: bool,
                     args: argparse.Namespace) -> tuple[dict[str, dict], dict[str, tuple]]:
    """Every method's experiment, their trials on one executor; each one classified (``classification.json``):
    the classification records and ``(summaries, classification)`` by method."""
    results, records = {}, {}
    directories: dict[str, ExperimentDirectory] = {}
    executor = make_executor(args.executor, args.workers, args.address)
    try:
        for method in methods:
            directories[method] = ExperimentDirectory.open(out / method, specs[method],
                                                           volatile=study.volatile_config)
        experiments = [(directories[method], specs[method]) for method in methods]
        found = run_experiments(experiments, executor, progress=not quiet,
                                costs=[study.method_costs.get(method, 1.0) for method in methods])
        for method, summaries in zip(methods, found):
            classification = classify_experiment(directories[method], summaries=summaries)
            recorded = classification_record(study, specs[method], summaries, classification)
            atomic_write_json(out / method / "classification.json", recorded)
            results[method] = (summaries, classification)
            records[method] = recorded
    finally:
        executor.close()
        for directory in directories.values():
            directory.close()
    return records, results


def reference_notes(study: CaseStudy, specs: dict[str, ExperimentSpec], records: dict[str, dict]) -> list[str]:
    """Under the classifications: for every method with learning verdicts, its verdict count and what the
    random policy and random search (when compared here, at equal budget on the same plan) reach."""
    search = records.get(study.random_search) if study.random_search else None
    lines = []
    for method, recorded in records.items():
        if method == study.random_search or not (recorded.get("references") or {}).get("learned"):
            continue
        lines.append(f"{method}:")
        lines += classification_notes(study, specs[method], recorded, search)
    return lines


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


def comparison_rows(results: dict[str, tuple[list[TrialSummary], Any]],
                    metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Per method: budget, median/min/max of every metric across trials, classification, per-trial values."""
    rows = []
    for method, (summaries, classification) in results.items():
        rows.append({
            "method": method,
            "trials": len(summaries),
            "transitions": _spread([s.transitions for s in summaries]),
            "evaluations": _spread([s.evaluations for s in summaries]),
            "demonstrations": _spread([s.extras.get("demonstrations", 0) for s in summaries]),
            "metrics": {name: _spread([s.metrics[name] for s in summaries]) for name in metrics},
            "per_trial": {name: [s.metrics[name] for s in summaries] for name in metrics},
            "classification": classification.label(),
            "f": classification.f,
            "learned": learned_trials(summaries),
            "rungs": rung_counts(s.verdict for s in summaries),
            "timing": total_timing(s.timing for s in summaries if s.timing),
        })
    return rows


def learned_trials(summaries: Sequence[TrialSummary]) -> dict[str, int] | None:
    """``{"learned": trials whose verdict says learned, "trials": trials with a verdict}``; None without any."""
    from wield.protocols.references import learned_count

    learned, judged = learned_count(s.verdict for s in summaries)
    return {"learned": learned, "trials": judged} if judged else None


def _cell(cell: dict[str, float], metric: Metric) -> str:
    """median (min..max), each formatted with the metric's unit (the unit once, after the range)."""
    median = metric.format(cell["median"])
    low, high = metric.format(cell["min"], unit=False), metric.format(cell["max"], unit=False)
    if cell["min"] == cell["max"]:
        return median
    return f"{median} ({low}..{high})"


def comparison_table(rows: Sequence[dict[str, Any]], metrics: Sequence[str], declared: MetricTable) -> str:
    """Methods as columns; the budget, each metric (median (min..max) across trials) and f as rows."""
    def line(what: str, cells) -> dict[str, str]:
        return {"what": what, **{r["method"]: cells(r) for r in rows}}

    count = Metric("count", "count", "count")
    lines = [line("trials s", lambda r: str(r["trials"])),
             line("budget n (transitions)", lambda r: _cell(r["transitions"], count)),
             line("system evaluations", lambda r: _cell(r["evaluations"], count))]
    if any(r["demonstrations"]["max"] > 0 for r in rows):
        lines.append(line("offline demonstrations", lambda r: _cell(r["demonstrations"], count)))
    for name in metrics:
        lines.append(line(declared[name].label, lambda r, name=name: _cell(r["metrics"][name], declared[name])))
    lines.append({"what": "f (objective met)", **{r["method"]: f"{r['f']:.2f}" for r in rows}})
    if any(r.get("learned") for r in rows):
        lines.append(line("learned (verdict)", lambda r: f"{r['learned']['learned']}/{r['learned']['trials']}"
                          if r.get("learned") else "-"))
    labels = list(dict.fromkeys(c["rung"] for r in rows for c in r.get("rungs") or []))
    for label in labels:  # per rung: trials better/worse/indistinguishable
        lines.append(line(f"vs {label} (better/worse/indist.)", lambda r, label=label: next(
            (f"{c['better']}/{c['worse']}/{c['indistinguishable']}" for c in r.get("rungs") or []
             if c["rung"] == label), "-")))
    columns = [("what", "", None)] + [(r["method"], r["method"], None) for r in rows]
    return format_table(lines, columns)
