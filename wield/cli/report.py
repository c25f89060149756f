"""``wield report RESULTS_DIR``: write a self-contained Markdown or HTML report of an experiment,
a comparison (``wield compare``) or a single run record, with PNG figures beside it."""

from __future__ import annotations

import argparse

from wield.analysis import REPORT_FORMATS
from wield.configs import parse_name_list
from wield.io import read_json


def add_report_command(commands) -> None:
    parser = commands.add_parser(
        "report", help="write a Markdown or HTML report with figures of an experiment or comparison",
        description="Write a self-contained report of EXPERIMENT_DIR (an experiment from 'wield run CASE "
                    "--class Ci', a comparison from 'wield compare', or one run record): the classification "
                    "C_i(n, s, f) with confidence intervals, per-trial seeds and outcomes, per-method bars of "
                    "the case study's compared metrics across trials, training curves, the other recorded "
                    "metrics, and case-study figures such as placement's cross-graph matrix. Terms (n, s, f, "
                    "straggler, ...): docs/design.md section 10.",
        formatter_class=argparse.HelpFormatter)
    parser.add_argument("experiment", metavar="EXPERIMENT_DIR")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="where the report and its figures go (default: EXPERIMENT_DIR/report)")
    parser.add_argument("--format", dest="fmt", choices=REPORT_FORMATS, default="md",
                        help="md: report.md beside PNG files; html: report.html with the figures embedded")
    parser.add_argument("--metrics", default=None,
                        help="comma-separated metrics to draw as per-method bars (default: the case study's "
                             "compare metrics, else its objective metric)")
    parser.add_argument("--log", choices=("mlflow",), default=None,
                        help="also add the report and its figures to the MLflow run that tracked EXPERIMENT_DIR "
                             "(artifacts under report/; the store MLFLOW_TRACKING_URI names, else "
                             "EXPERIMENT_DIR/mlruns)")
    parser.set_defaults(handler=report_command)


def case_study_defaults(experiment: str) -> tuple[list[str] | None, dict | None]:
    """The installed case study's compared metrics (``compare_metrics``) and its metric declarations."""
    from pathlib import Path

    from wield.analysis.records import experiment_directories
    from wield.errors import ConfigError
    from wield.plugins import get_case_study

    found = experiment_directories(experiment)
    manifest = found[0][1] / "experiment.json" if found else Path(experiment) / "run.json"
    if not manifest.exists():
        return None, None
    try:
        study = get_case_study(str(read_json(manifest).get("case_study")))
    except (ConfigError, AttributeError, ValueError):  # not installed here, or not a Wield manifest
        return None, None
    return list(study.compare_metrics) or None, dict(study.declared_metrics())


def report_command(args: argparse.Namespace) -> int:
    from wield.analysis.report import write_report

    metrics = parse_name_list(args.metrics, "metrics", what="metric") if args.metrics else None
    default_metrics, declared = case_study_defaults(args.experiment)
    target = write_report(args.experiment, args.out, args.fmt, metrics or default_metrics, declared,
                          strict=metrics is not None)
    from wield.analysis.records import state_notes

    for note in state_notes(args.experiment):
        print(f"warning: {note}")
    print(f"report: {target}")
    figures = sorted(target.parent.glob("*.png"))
    for figure in figures:
        print(f"  figure: {figure}")
    if args.log == "mlflow":
        from wield.report_tracking import log_report_to_mlflow

        run_id = log_report_to_mlflow(args.experiment, [target, *figures])
        print(f"report: added to MLflow run {run_id} (artifacts report/)")
    return 0
