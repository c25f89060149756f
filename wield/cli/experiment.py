"""The run side of the ``wield`` command: the options every case study gets, ``run NAME`` (one run, or an
experiment with ``--class``), ``classify`` and ``reproduce``."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from wield.analysis import format_table
from wield.tables import methods_table as format_methods
from wield.errors import ConfigError
from wield.io import atomic_write_json, atomic_write_text
from wield.metrics import MetricTable
from wield.plugins import CaseStudy, declared_extras, declared_metrics, installed
from wield.protocols import CLASSES, Objective, TrialPlan, TrialSeeds, TrialSummary, parse_objective, verdict_lines
from wield.protocols.references import reference_lines, references_of
from wield.workflows.executors import EXECUTORS, make_executor
from wield.workflows.experiment import ExperimentDirectory, ExperimentSpec, classify_experiment, run_trials
from wield.tracking import EXPERIMENT_ARTIFACTS, experiment_session
from wield.cli.output import print_json

GLOSSARY = "Terms (n, s, f, success, straggler, failure, ...): docs/design.md section 10."


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--out``, ``--seed``, ``--quiet`` and ``--json``: the core reads them for every case study."""
    group = parser.add_argument_group("common options")
    group.add_argument("--out", metavar="DIR", default=None,
                       help="run record directory (one run) or experiment directory (--class); "
                            "default: under runs/")
    group.add_argument("--seed", type=int, default=0, help="base seed: every seed of the run derives from it")
    group.add_argument("--quiet", action="store_true", help="no progress bars or plan")
    group.add_argument("--json", action="store_true", help="print the results as JSON")
    group.add_argument("--log", metavar="TRACKERS", default=None,
                       help="mirror every trial's training curve, verdict and final metrics to experiment trackers: "
                            "tensorboard (<out>/tensorboard), mlflow (<out>/mlruns), comma-separated "
                            "(pip install 'wield[tracking]'; docs/design.md section 2.12)")
    group.add_argument("--verdict-cap", type=int, default=None, metavar="N",
                       help="the most held-out instances a rung of the learning verdict is decided on: while its "
                            "95%% interval straddles 0, batches of fresh instances are added up to N (default 50; "
                            "Pocock's group-sequential bound keeps the error rate at 5%%; docs/design.md section 2.8)")


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
    add_objective_arguments(group)


def add_objective_arguments(group) -> None:
    """``--objective`` (the whole objective) or ``--objective-metric`` / ``--objective-threshold`` (its
    primary condition)."""
    group.add_argument("--objective", default=None, metavar="TEXT",
                       help="the objective a run judges its results by, and the one behind f and C_i(n, s, f) "
                            "with --class: clauses 'METRIC >= X' or 'METRIC <= X' joined by 'and', over the case "
                            "study's declared metrics (default: the case study's)")
    group.add_argument("--objective-metric", default=None,
                       help="metric of the objective's primary condition (default: the case study's; one of its "
                            "declared metrics); another metric than the case study's drops its other conditions")
    group.add_argument("--objective-threshold", type=float, default=None,
                       help="threshold of the objective's primary condition (default: the case study's)")


def objective_from_args(study: CaseStudy, args: argparse.Namespace) -> dict:
    """The case study's objective, or ``--objective``, or the case study's with ``--objective-metric`` /
    ``--objective-threshold`` applied to its primary condition, validated against the case study's
    declared metrics before anything is written (a metric's direction comes from its declaration)."""
    text = getattr(args, "objective", None)
    given_metric, given_threshold = getattr(args, "objective_metric", None), getattr(args, "objective_threshold", None)
    if text is not None:
        if given_metric is not None or given_threshold is not None:
            raise ConfigError("objective", text, reason="give --objective, or --objective-metric / "
                                                        "--objective-threshold, not both")
        return parse_objective(text).validate(study.metric_names).as_dict()
    metric = given_metric if given_metric is not None else study.objective.metric
    if metric not in study.metric_names:
        raise ConfigError("objective.metric", metric, sorted(study.metric_names))
    threshold = given_threshold if given_threshold is not None else study.objective.threshold
    if metric == study.objective.metric:
        objective = replace(study.objective, threshold=threshold)
    else:
        objective = Objective(metric, threshold, study.declared_metrics()[metric].higher_is_better)
    return objective.validate(study.metric_names).as_dict()


def run_command(study: CaseStudy, args: argparse.Namespace) -> int:
    """``wield run NAME``: an experiment with ``--class``; else the case study's own run, or one trial, judged
    by the objective of ``--objective`` / ``--objective-metric`` / ``--objective-threshold`` (the case study's
    by default; checked first, ``objective_from_args``) as an experiment's trials are. The cache root the run
    would use is checked first, under the ownership policy (``wield.cache.cache_root``)."""
    from wield.cache import cache_root
    from wield.workflows.objective_settings import objective_settings

    cache_root(getattr(args, "cache_dir", None))
    if args.class_name is not None:
        return run_experiment(study, args)
    objective = objective_from_args(study, args)  # a bad objective is refused before anything runs
    with objective_settings(objective):  # the run's trial judges by it and records it (run_trial)
        if study.run is not None:
            return study.run(args)
        return run_single(study, args)


def run_single(study: CaseStudy, args: argparse.Namespace) -> int:
    """One blackbox run (``TrialSeeds.single_run(--seed)``) into ``--out``; prints every method's metrics and
    the run's objective (``run_objective``: ``--objective``'s, else the case study's) on them."""
    from wield.workflows import run_objective, run_trial

    config = study.config(args)
    out = args.out or str(Path("runs") / f"{study.name}-seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    summary = run_trial(study.name, config, TrialSeeds.single_run(args.seed), out,
                        progress=not (args.quiet or args.json))
    if args.json:
        print_json("trial-summary", summary.as_dict())
        return 0
    print()
    print(methods_table(summary, study))
    print()
    for line in verdict_lines(summary.verdict):
        print(line)
    for line in objective_lines(run_objective(study.objective), summary, study.greedy_policy):
        print(line)
    print(GLOSSARY)
    print(f"run record: {out} ({summary.seconds:.0f} s)")
    return 0


def objective_line(objective: Objective, summary: TrialSummary, *, row: str | None = None,
                   label: str | None = None) -> str:
    """``objective (LABEL) A >= x and B <= y: success (ROW); n = N transitions`` for the method's row (or
    ``row`` of ``summary.methods``), naming the conditions it missed: the one objective a run's success line
    and the classification share. ``label`` names the set judged (``learned policy``, ``best seen,
    search``)."""
    name = row or summary.method
    metrics = summary.methods.get(name, summary.metrics) if row else summary.metrics
    outcome = objective.outcome(metrics)
    missed = objective.failed_conditions(metrics)
    undecided = objective.undecided_conditions(metrics) if not missed else []
    why = (f", missed {' and '.join(c.describe() for c in missed)}" if missed else
           f", cannot tell {' and '.join(c.describe() for c in undecided)}: its confidence interval straddles "
           "the threshold" if undecided else "")
    judged = f" ({label})" if label else ""
    return (f"objective{judged} {objective.describe()}: {outcome} ({name}{why}); "
            f"n = {summary.transitions} transitions")


def objective_lines(objective: Objective, summary: TrialSummary, greedy_policy: str | None) -> list[str]:
    """The objective applied to what was learned and, where the method's row is a search outcome (the
    case study's ``greedy_policy`` row differs from it: indexing's ``dqn-greedy`` beside ``dqn``), to that too:
    ``objective (learned policy) ...`` and ``objective (best seen, search) ...``. A case study that declares no
    greedy row gets the method's line unlabelled."""
    from wield.protocols.references import greedy_row

    if not greedy_policy:
        return [objective_line(objective, summary)]
    greedy = greedy_row(greedy_policy, summary.method)
    if greedy == summary.method:  # the method's row is its greedy policy: learned when the trial has a verdict
        return [objective_line(objective, summary, label="learned policy" if summary.verdict else None)]
    if greedy not in summary.methods:  # a method that learns nothing (a heuristic, a baseline)
        return [objective_line(objective, summary)]
    return [objective_line(objective, summary, row=greedy, label="learned policy"),
            objective_line(objective, summary, label="best seen, search")]


def methods_table(summary: TrialSummary, study: CaseStudy) -> str:
    """Every evaluated method (rows) by the case study's compared metrics (columns), with units."""
    declared = study.declared_metrics()
    metrics = [declared[name] for name in study.compare_metrics or study.metric_names]
    return format_methods(summary.methods or {summary.method: summary.metrics}, metrics)


def run_experiment(study: CaseStudy, args: argparse.Namespace, echo: bool = True,
                   pinned_task: dict | None = None) -> int:
    from wield.command_config import pending_command_config

    command_config = pending_command_config()  # config.toml: the experiment's, taken before any trial record
    config = study.config(args)
    objective = objective_from_args(study, args)
    spec = ExperimentSpec(study.name, str(args.class_name).upper(), args.trials, int(args.seed), config, objective,
                          pinned_task)
    plan = spec.plan()  # validates class and trials before anything is written
    out = Path(args.out) if args.out else Path("runs") / f"{study.name}-{spec.class_name}-seed{spec.base_seed}"
    executor = make_executor(args.executor, args.workers, args.address)
    progress = not (args.quiet or args.json)  # the trials bar and a line per finished trial
    quiet = not progress or not echo  # the plan and the results
    try:
        directory = ExperimentDirectory.open(out, spec, volatile=study.volatile_config)
        try:
            if command_config is not None:  # wield run NAME --class Ci: every option, to rerun or resume it
                atomic_write_text(out / command_config[0], command_config[1])
            if not quiet:
                print(plan.describe())
                print(f"experiment directory: {out}")
            method = str(spec.config.get("method") or spec.config.get("agent") or "")
            with experiment_session("experiment", study=study, directory=out, class_name=spec.class_name,
                                    methods=[method] if method else [], config=spec.config,
                                    facts={"trials": spec.trials, "base_seed": spec.base_seed}) as parent:
                summaries = run_trials(directory, spec, executor, progress=progress)  # trials nested in parent
                classification = classify_experiment(directory, summaries=summaries)
                recorded = classification_record(study, spec, summaries, classification)
                atomic_write_json(out / "classification.json", recorded)
                if parent is not None:  # --log: the parent run gets C_i and the experiment's files
                    parent.log_classification({recorded["method"]: recorded})
                    parent.log_tags({"method": recorded["method"]})  # known from the trials where not configured
                    parent.log_artifacts(out, EXPERIMENT_ARTIFACTS)
        finally:
            directory.close()
    finally:
        executor.close()
    if not echo:
        return 0
    if args.json:
        print_json("experiment", {"classification": recorded, "trials": [s.as_dict() for s in summaries]})
    else:
        print()
        print(trial_table(summaries, classification, Objective(**spec.objective), spec.plan(),
                          study.declared_metrics(), tuple(m.name for m in study.extras)))
        print()
        print(classification.label())
        for line in classification_notes(study, spec, recorded):
            print(line)
        for line in (study.experiment_lines(summaries) if study and study.experiment_lines else []):
            print(line)
        print(GLOSSARY)
    return 0


def experiment_method(spec: ExperimentSpec, summaries: list[TrialSummary]) -> str:
    """The method an experiment ran (its configuration's ``method``, else its trials')."""
    return str(spec.config.get("method") or (summaries[0].method if summaries else "learner"))


def classification_record(study: CaseStudy | None, spec: ExperimentSpec, summaries: list[TrialSummary],
                          classification) -> dict:
    """``classification.json``: C_i(n, s, f) with the learners' verdict count, the learned greedy policy's
    and the random policy's f on the same trials (``wield.protocols.references``)."""
    references = references_of(spec.class_name, summaries, Objective(**spec.objective),
                               study.random_policy if study else None, study.greedy_policy if study else None)
    return {**classification.as_dict(), "method": experiment_method(spec, summaries), "references": references}


def random_search_hint(study: CaseStudy | None, spec: ExperimentSpec, method: str) -> str | None:
    """How to get random search's f at equal budget on the same trial plan (None when the case study has
    no random search, or the method is random search)."""
    if study is None or study.random_search is None or method == study.random_search:
        return None
    return (f"'wield compare {study.name} --class {spec.class_name} --trials {spec.trials} --seed {spec.base_seed} "
            f"--methods {method},{study.random_search}' runs it on the same trial plan")


def classification_notes(study: CaseStudy | None, spec: ExperimentSpec, recorded: dict,
                         random_search: dict | None = None) -> list[str]:
    """The lines under a classification: verdict count, random references, discrimination warning."""
    method = str(recorded.get("method") or "learner")
    spends = recorded.get("n", 1) != 0  # a method of no evaluation (a fixed baseline) has no equal budget
    hint = random_search_hint(study, spec, method) if not random_search and spends else None
    return reference_lines(method, recorded, recorded.get("references") or {}, random_search, hint)


def trial_table(summaries: list[TrialSummary], classification, objective: Objective, plan: TrialPlan,
                declared: MetricTable, extras: tuple[str, ...] = ()) -> str:
    """One row per finished trial: its seeds (from the plan), n, the objective's metric and outcome, and the
    case study's declared ``extras`` that its trials report (e.g. indexing's train/test similarity)."""
    outcome = {o.trial: o.outcome for o in classification.trials}
    planned = {t.trial: t for t in plan.trials}
    extras = tuple(name for name in extras if all(isinstance(s.extras.get(name), (int, float)) for s in summaries))
    names = objective.metrics
    rows = []
    for s in summaries:
        seeds = planned[s.trial]
        rows.append({"trial": s.trial, "train": _short(seeds.train_workload_seed),
                     "test": _short(seeds.test_workload_seed), "opt": _short(seeds.optimisation_seed),
                     "n": s.transitions, **{name: declared[name].format(s.metrics.get(name)) for name in names},
                     **{name: declared[name].format(s.extras[name]) for name in extras},
                     **verdict_cells(s), "outcome": outcome.get(s.trial)})
    columns = [("trial", "trial", "d"), ("train", "train seed", None), ("test", "test seed", None),
               ("opt", "opt. seed", None), ("n", "n", "d")]
    columns += [(name, declared[name].label, None) for name in names]
    columns += [(name, declared[name].label, None) for name in extras]
    columns += VERDICT_COLUMNS if any(s.verdict for s in summaries) else []
    return format_table(rows, columns + [("outcome", "outcome", None)])


VERDICT_COLUMNS = [("learned", "learned", None), ("effect", "d (greedy vs random)", None)]


def verdict_cells(summary: TrialSummary) -> dict[str, str]:
    """A trial's learning verdict in the trial table: its status (yes / no / too little evidence) and the random
    rung's effect size d."""
    verdict = summary.verdict or {}
    if not verdict:
        return {"learned": "-", "effect": "-"}
    effect = float(verdict.get("effect_size", float("nan")))
    return {"learned": str(verdict.get("status") or ("yes" if verdict.get("learned") else "no")),
            "effect": "inf" if effect == float("inf") else "-inf" if effect == float("-inf") else f"{effect:.2f}"}


def _short(seed: int | None) -> str:
    return "-" if seed is None else str(seed)[:8]


def add_classify_command(commands) -> None:
    parser = commands.add_parser("classify", help="classify finished experiments as C_i(n, s, f)",
                                 description="Print the classification of one or more experiment directories. "
                                             + GLOSSARY)
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
        summaries = [s for s in directory.summaries() if s.trial < spec.trials]
        if not summaries:
            raise ConfigError("EXPERIMENT_DIR", path, reason="no finished trial yet"
                              + experiment_state_note(directory, 0, spec.trials))
        classification = classify_experiment(directory, summaries=summaries)
        recorded = classification_record(installed(spec.case_study), spec, summaries, classification)
        results.append((path, spec, summaries, classification, recorded))
    if args.json:
        print_json("classifications", {"experiments": [{"experiment": p, "classification": r}
                                                       for p, _, _, _, r in results]})
        return 0
    for path, spec, summaries, classification, recorded in results:
        print(f"{path}: {spec.case_study}, {len(summaries)}/{spec.trials} trials finished"
              + experiment_state_note(ExperimentDirectory(path), len(summaries), spec.trials))
        print(trial_table(summaries, classification, Objective(**spec.objective), spec.plan(),
                          declared_metrics(spec.case_study), declared_extras(spec.case_study)))
        print(classification.label())
        for line in classification_notes(installed(spec.case_study), spec, recorded):
            print(line)
        print()
    print(GLOSSARY)
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
                                             "alone and report whether the results match (exactly, where the "
                                             "case study's run is a pure function of its configuration and "
                                             "seeds, e.g. indexing under the deterministic work metric).")
    parser.add_argument("run_dir", metavar="RUN_DIR")
    server = parser.add_mutually_exclusive_group()
    server.add_argument("--server-dir", metavar="DIR", default=None,
                        help="rerun a run made on a database server on the server of this 'wield db start' "
                             "directory (reproduce never connects to a server the record names)")
    server.add_argument("--uri", default=None,
                        help="rerun a run made on a database server on the server of this URI (without a "
                             "password)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=reproduce_command)


def reproduce_command(args: argparse.Namespace) -> int:
    from wield.io import read_json
    from wield.plugins import get_case_study
    from wield.workflows import reproduce_run
    from wield.workflows.run_record import check_finished
    from wield.workflows.trial import showing_progress

    def step(text: str) -> None:  # what is happening, on stderr (stdout keeps the result, or the JSON)
        print(f"reproduce: {text}", file=sys.stderr, flush=True)

    step(f"checking {args.run_dir} (finished, its process done, every file as its checksums say)")
    record = check_finished(args.run_dir)  # finished, its process done, no file damaged since
    _require_checksums(record, args.run_dir)  # before the rerun: a record nothing can check is not reproduced
    run = read_json(record.file("run.json"))
    if not isinstance(run, dict) or not isinstance(run.get("case_study"), str):
        raise ConfigError("RUN_DIR", args.run_dir, reason="run.json does not name its case study")
    study = get_case_study(run["case_study"])
    server = {key: value for key, value in (("uri", args.uri), ("server_dir", args.server_dir)) if value}
    if study.reproduce is not None:
        hook: Callable[..., dict[str, Any]] = study.reproduce
        if server and not _takes_server(hook):
            option = "--uri" if args.uri else "--server-dir"
            raise ConfigError(option.lstrip("-"), args.server_dir or "(the URI)",
                              reason=f"runs of {study.name} use no database server: reproduce without {option}")
    elif study.reproducible:
        if server:
            option = "--uri" if args.uri else "--server-dir"
            raise ConfigError(option.lstrip("-"), args.server_dir or "(the URI)",
                              reason=f"runs of {study.name} use no database server: reproduce without {option}")
        hook = reproduce_run
    else:
        raise ConfigError("case study", study.name, reason="cannot reproduce runs (its CaseStudy declares "
                                                           "neither reproducible=True nor a reproduce hook)")
    status = read_json(record.file("status.json")) if record.exists("status.json") else {}
    took = status.get("seconds") if isinstance(status, dict) else None
    step(f"rerunning the {study.name} run from its config.json and seeds.json in a scratch directory"
         + (f" (the recorded run took {took:.0f} s)" if isinstance(took, (int, float)) else ""))
    started = time.monotonic()
    with showing_progress(not args.json):  # the rerun's own progress bars (never into --json's output)
        report = hook(args.run_dir, **server)
    report["arithmetic"] = _arithmetic_then_and_now(record)
    step(f"rerun finished in {time.monotonic() - started:.0f} s; {len(report.get('differences', []))} "
         "difference(s) from the record")
    if args.json:
        print_json("reproduction", report)
    else:
        verdict = "match" if report["match"] else "MISMATCH"
        kind = "exactly" if report.get("deterministic") else "(latency metric: wall time varies)"
        print(f"{args.run_dir}: {verdict} {kind}")
        for line in report["differences"]:
            print(f"  {line}")
        for line in report.get("outcome_notes", ()):  # an outcome decided in one run only (not a mismatch)
            print(f"  note: {line}")
        other = report["arithmetic"]["differences"]
        if other and not report["match"]:
            print("  other machine or arithmetic: figures a trained network decides may differ, the work counters,"
                  " the random policy and the baselines may not (" + "; ".join(other) + ")")
        elif other:
            print("  note: recorded with other arithmetic (" + "; ".join(other) + "), and still the same results")
    return 0 if report["match"] else 1


def _require_checksums(record, run_dir: str) -> None:
    """Refuse a record without ``checksums.json``: none of its files can be shown to be the ones its run
    wrote, so a rerun could not be compared with anything trustworthy (``DataError`` naming the file)."""
    from wield.errors import DataError
    from wield.workflows.run_record import CHECKSUMS

    if record.exists(CHECKSUMS):
        return
    names = sorted(p.name for p in record.path.iterdir() if not p.name.startswith("."))
    listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    raise DataError(f"{run_dir}: the record has no {CHECKSUMS}, so none of its files ({listed}) can be checked "
                    "against what its run wrote; nothing was rerun (every run Wield finishes writes one: reproduce "
                    "such a record)")


def _arithmetic_then_and_now(record) -> dict[str, Any]:
    """The arithmetic the record's run used (its versions.json) and this rerun's, and how they differ in
    ways that can change a trained network's decisions (wield.numerics)."""
    from wield.io import read_json
    from wield.numerics import arithmetic_differences, numerics_state

    versions = read_json(record.file("versions.json")) if record.exists("versions.json") else {}
    recorded = versions.get("numerics") if isinstance(versions, dict) else None
    now = numerics_state()
    return {"recorded": recorded, "now": now,
            "differences": arithmetic_differences(recorded if isinstance(recorded, dict) else None, now)}


def _takes_server(hook: Callable[..., Any]) -> bool:
    """Whether a case study's reproduce hook takes the server options (``uri=``, ``server_dir=``)."""
    import inspect

    try:
        parameters = inspect.signature(hook).parameters
    except (TypeError, ValueError):
        return False
    return {"uri", "server_dir"} <= set(parameters) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
