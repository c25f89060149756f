"""``wield progress CASE_STUDY``: the instructive protocol of progressive randomisation.

Walk the classes C0, C1, C2, ... and stop at the first whose objective is not met (f below the required
frequency). For that class, take a failing trial's task and rerun it one class lower with more seeds (only
the optimisation seed varies; a failing C1 is rerun in C1, since C0 fixes the optimisation seed): if most of those seeds succeed, the failure belonged to the seeds (the task
is learnable, some initialisations are bad); if most fail, it belongs to the task (it is hard for this
design). docs/design.md section 4; terms: section 10.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

from wield.errors import ConfigError
from wield.cli.formatting import DefaultsFormatter
from wield.cli.output import print_json
from wield.cli.studies import case_study_commands
from wield.cli.experiment import GLOSSARY, add_common_options, add_experiment_arguments, run_experiment
from wield.io import atomic_write_json, read_json
from wield.plugins import CaseStudy
from wield.protocols import CLASSES
from wield.workflows.experiment import ExperimentDirectory


def add_progress_command(commands) -> None:
    parser = commands.add_parser("progress", help="walk C0, C1, ... until a class fails, then diagnose it",
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)

    def configure(study: CaseStudy, sub: argparse.ArgumentParser) -> None:
        study.add_options(sub)
        add_common_options(sub)
        add_experiment_arguments(sub)
        sub.add_argument("--start", default="C0", help="the first class to try")
        sub.add_argument("--highest", default="C6", help="the last class to try")
        sub.add_argument("--rerun-factor", type=int, default=2,
                         help="the failing task is rerun one class lower with this many times the trials")
        sub.set_defaults(handler=lambda args: progress(study, args))

    case_study_commands(parser).add_case_studies(configure, epilog=GLOSSARY,
                                                 formatter_class=DefaultsFormatter)


def progress(study: CaseStudy, args: argparse.Namespace) -> int:
    highest, start = str(args.highest).upper(), str(args.start).upper()
    for option, value in (("highest", highest), ("start", start)):
        if value not in CLASSES:
            raise ConfigError(option, value, list(CLASSES))
    if args.rerun_factor < 1:
        raise ConfigError("rerun-factor", args.rerun_factor, reason="must be >= 1")
    root = Path(args.out) if args.out else Path("runs") / f"{study.name}-progress-seed{args.seed}"
    quiet = bool(args.quiet or args.json)  # --json: the one JSON document is all that is printed
    reached: str | None = None
    report: dict[str, Any] = {"classes": {}}
    for name in [c for c in CLASSES if CLASSES[start].level <= CLASSES[c].level]:
        sub = copy.copy(args)
        sub.class_name, sub.out, sub.json, sub.quiet = name, str(root / name), False, quiet
        if not quiet:
            print(f"{name}: {args.trials} trials into {sub.out}", flush=True)
        run_experiment(study, sub, echo=False)  # per-trial lines unless --quiet
        classification = read_json(root / name / "classification.json")
        report["classes"][name] = classification["label"]
        if not args.json:
            print(f"{classification['label']}  {'met' if classification['met'] else 'NOT met'}")
        if not classification["met"]:
            report["failed"] = name
            report["diagnosis"] = _diagnose(study, args, root, name, classification)
            break
        reached = name
        if name == highest:
            break
    report["highest_class_reached"] = reached
    atomic_write_json(root / "progress.json", report)
    if args.json:
        print_json("progress", {"directory": str(root), **report})
        return 0
    print(f"\nhighest class reached: {reached or 'none'}")
    if "diagnosis" in report:
        print(report["diagnosis"]["verdict"])
    return 0


def _diagnose(study, args, root: Path, failed: str, classification: dict) -> dict:
    level = CLASSES[failed].level
    unsuccessful = [t for t in classification["trials"] if t["outcome"] != "success"]
    # a trial decided 'not met' says more about the task than one its measurement could not decide
    failing = sorted(unsuccessful, key=lambda t: t["outcome"] == "inconclusive")
    if level == 0 or not failing:
        return {"verdict": f"{failed} failed at the lowest class: the representation or the task design needs "
                           "work before randomising further."}
    lower = f"C{max(1, level - 1)}"  # C0 fixes the optimisation seed: more seeds need at least C1
    seeds = ExperimentDirectory(root / failed).spec().plan().trials[failing[0]["trial"]]
    task = {"train_workload_seed": seeds.train_workload_seed, "test_workload_seed": seeds.test_workload_seed,
            "test_distribution": seeds.test_distribution}
    sub = copy.copy(args)
    sub.class_name, sub.out, sub.json = lower, str(root / f"{failed}-task-in-{lower}"), False
    sub.quiet = bool(args.quiet or args.json)
    sub.trials = args.trials * args.rerun_factor
    if not sub.quiet:
        print(f"diagnosis: the task of {failed} trial {failing[0]['trial']} rerun in {lower} with {sub.trials} "
              f"seeds into {sub.out}", flush=True)
    run_experiment(study, sub, echo=False, pinned_task=task)
    rerun = read_json(Path(sub.out) / "classification.json")
    belongs = "the seeds" if rerun["met"] else "the task"
    verdict = (f"{failed} failed (trial {failing[0]['trial']}); its task rerun in {lower} with {sub.trials} seeds: "
               f"{rerun['label']} -> the failure belongs to {belongs}.")
    return {"failing_trial": failing[0]["trial"], "rerun_class": lower, "rerun": rerun["label"],
            "belongs_to": belongs, "verdict": verdict}
