"""Loading results for analysis: run records, experiments and comparisons as tidy pandas DataFrames.

Case-study agnostic: everything is read from the files the core writes (``experiment.json``,
``trials/trial-NNN/summary.json``, ``episodes.csv``, ``evaluation.json``) and from the trial plan that
``experiment.json`` regenerates. Three kinds of directory are understood:

- an **experiment** (``wield run CASE --class Ci``): ``experiment.json`` + ``trials/trial-NNN/``;
- a **comparison** (``wield compare CASE``): one experiment per method under ``<dir>/<method>/``;
- a **run record** (``wield run CASE`` without ``--class``): ``run.json`` + ``evaluation.json``; it loads as
  an experiment of one trial of class ``-``.

``load_results(path)`` returns ``Results`` with three frames, and a fourth, ``timing``, with one row per
(experiment, method, trial, category) of where the trial's time went (``category``, ``seconds``; see
``wield.workflows.timing``) for trials that recorded it.

``Results.trials`` — one row per (experiment, trial, method):

==================== ==========================================================================
column               meaning
==================== ==========================================================================
experiment           the experiment's name: the method directory in a comparison, else the
                     directory name
case_study           the case study that ran it (``experiment.json`` / ``run.json``)
class_name           randomisation class C0-C6 (``-`` for a single run record)
method               the method measured in this row (a learner or a baseline)
learner              True for the method the experiment ran and classified (the summary's
                     ``metrics``); False for baselines measured beside it in the same trial on
                     the same test workload (the summary's ``methods``)
trial                trial index in the plan
transitions          n: transitions the experiment's learner observed in this trial
evaluations          system evaluations charged to the experiment's method (``wield compare``'s budget;
                     equal to ``transitions`` when the case study does not record it)
outcome              success / straggler / failure of this row under the experiment's objective
objective_value      the objective metric's value in this row
train_workload_seed, test_workload_seed, optimisation_seed, mode, test_distribution
                     the trial's seeds from the plan (``wield.protocols.TrialSeeds``)
train_test_similarity  share of test items whose shape occurred in training, when recorded
seconds              the trial's wall time, when recorded
learned              the learning verdict of the learner's row (``TrialSummary.verdict``): True when
                     its greedy policy beat the random policy and every trivial policy on the
                     evaluation instances and the training curve rose; None in baseline rows and
                     where no verdict was computed
greedy_return, random_mean, random_sd, effect_size, verdict_p
                     the verdict's random rung: the greedy policy's and the random policy's mean
                     score over the instances, d_z (mean paired difference / its sd) and the paired
                     t-test's p; ``random_sd`` only in verdicts recorded before the ladder
verdict_status       yes / no / too little evidence (None where no verdict was computed)
verdict_reasons      why the status is not yes, the verdict's reasons joined by ``; `` (empty for yes)
verdict_rungs        the verdict's rungs, a list of dicts (``name``, ``kind``, ``outcome``,
                     ``mean_difference``, ``ci_low``, ``ci_high``, ``effect_size``, ``p``, ``instances``,
                     ``wins``, ...; ``wield.protocols.verdict.Rung.as_dict``), None without a verdict
<metric>             one column per scalar evaluation metric of the method (e.g.
                     ``mean_latency_improvement``); lists and nested values are left out
==================== ==========================================================================

``Results.episodes`` — one row per (experiment, trial, training episode): ``experiment``, ``method``,
``trial`` and every column of the trial's ``episodes.csv`` (``episode`` and, from Wield's training loop,
``total_reward``, the episode return; the case study may add more, e.g. ``loss`` or ``epsilon``; a learner
trained outside Wield's loop may record ``curve_return`` instead, which the report draws where ``total_reward``
is absent).

``Results.classification`` — one row per experiment: ``experiment``, ``method``, ``case_study``,
``class_name``, ``n``, ``s``, ``f``, ``ci_low``, ``ci_high`` (exact 95% interval for f), ``met``, ``label``
(``C2(n=.., s=.., f=..) [95% CI ..]``), ``objective`` (e.g. ``mean_latency_improvement >= 0.5 and
relative_index_size <= 0.5``), ``base_seed``, ``trials_planned``, ``learned_trials`` / ``verdict_trials``
(trials whose verdict says learned / trials with a verdict), ``greedy_policy_f`` (the f of the learned greedy policy's
row, ``CaseStudy.greedy_policy``, on the same trials; None without one) and ``random_policy_f`` (the f the case study's
random-policy row reaches under the same objective on the same trials; None without such a row).

Per-trial files other than these (a case study's extra CSV or JSON, e.g. placement's evaluations) are
reached through ``Results.trial_directories``: ``(experiment, method, trial) -> Path``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from wield.errors import ConfigError, DataError, shown
from wield.io import read_json, read_record_bytes
from wield.protocols.summary import MAX_METHODS, MAX_NAME_CHARS

MAX_CSV_COLUMNS = 1_000  # columns of a record's episodes.csv (checked on its header before parsing)

SEED_COLUMNS = ("train_workload_seed", "test_workload_seed", "optimisation_seed", "mode", "test_distribution")
VERDICT_COLUMNS = ("learned", "greedy_return", "random_mean", "random_sd", "effect_size", "verdict_p",
                   "verdict_status", "verdict_reasons", "verdict_rungs")
TRIAL_COLUMNS = ("experiment", "case_study", "class_name", "method", "learner", "trial", "transitions", "evaluations",
                 "outcome",
                 "objective_value", *SEED_COLUMNS, "train_test_similarity", "seconds", *VERDICT_COLUMNS)


def read_csv(path: Path) -> pd.DataFrame:
    """A record's CSV file (``episodes.csv``) as a frame: a regular file read whole, never through a link (a
    FIFO or ``/dev/zero`` planted in a record is refused unread), a damaged one a ``DataError`` naming it."""
    import io

    data = read_record_bytes(path)
    columns = _header_columns(data)
    if columns > MAX_CSV_COLUMNS:
        raise DataError(f"{path}: {columns:,} columns in its header; at most {MAX_CSV_COLUMNS:,} (a record Wield "
                        "wrote has a few dozen)")
    try:
        return pd.read_csv(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        raise DataError(f"{path}: damaged ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r})") from None


def _header_columns(data: bytes) -> int:
    """How many columns the first line of a CSV file names (its separators counted, quotes respected)."""
    import csv
    import io

    end = data.find(b"\n")
    first = data[: end if end >= 0 else len(data)].decode("utf-8", "replace")
    try:
        return max(1, len(next(csv.reader(io.StringIO(first)), [])))
    except csv.Error:
        return first.count(",") + 1


def verdict_columns(verdict: Mapping[str, Any] | None) -> dict[str, Any]:
    """A learning verdict dict (``TrialSummary.verdict``) as the trial table's ``VERDICT_COLUMNS``."""
    verdict = verdict or {}
    status = verdict.get("status") or (("yes" if verdict["learned"] else "no") if "learned" in verdict else None)
    return {"learned": bool(verdict["learned"]) if "learned" in verdict else None,
            **{k: verdict.get(k) for k in ("greedy_return", "random_mean", "random_sd", "effect_size")},
            "verdict_p": verdict.get("p_value"), "verdict_status": status,
            "verdict_reasons": "; ".join(str(r) for r in verdict.get("reasons") or []) if status != "yes" else "",
            "verdict_rungs": list(verdict.get("rungs") or []) or None}


@dataclass
class Results:
    """Everything loaded from one directory; see the module docstring for the columns."""

    path: Path
    kind: str  # "experiment" | "comparison" | "run"
    trials: pd.DataFrame
    episodes: pd.DataFrame
    classification: pd.DataFrame
    objective: dict[str, Any] = field(default_factory=dict)
    trial_directories: dict[tuple[str, str, int], Path] = field(default_factory=dict)
    timing: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["experiment", "method", "trial", "category", "seconds"]))

    @property
    def case_study(self) -> str:
        return str(self.classification["case_study"].iloc[0]) if len(self.classification) else "-"

    @property
    def learners(self) -> list[str]:
        """Methods an experiment ran, in the order found."""
        return list(dict.fromkeys(self.trials.loc[self.trials["learner"], "method"]))

    @property
    def methods(self) -> list[str]:
        """Every method measured: the learners first, then the baselines measured beside them."""
        return list(dict.fromkeys([*self.learners, *self.trials["method"]]))

    def metric_columns(self) -> list[str]:
        """Numeric evaluation-metric columns of ``trials`` (everything not in the fixed columns)."""
        return [c for c in self.trials.columns if c not in TRIAL_COLUMNS
                and pd.api.types.is_numeric_dtype(self.trials[c]) and not pd.api.types.is_bool_dtype(self.trials[c])]

    def per_method(self) -> pd.DataFrame:
        """One row per (method, trial), each method taken once: the learner's own rows, and a baseline's rows
        from the first experiment that measured it (in a comparison every method's experiment measures the
        same baselines on the same trial workloads)."""
        rows = self.trials.sort_values(["learner", "experiment"], ascending=[False, True], kind="stable")
        return rows.drop_duplicates(["method", "trial"]).reset_index(drop=True)


def _scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics that fit in one cell (numbers, strings, booleans); ``method`` is the row's own column."""
    return {k: v for k, v in metrics.items()
            if k not in TRIAL_COLUMNS and (isinstance(v, (int, float, str, bool)) or v is None)}


def _outcome(objective: Mapping[str, Any], metrics: Mapping[str, Any]) -> tuple[str | None, float | None]:
    from wield.protocols import Objective

    if not objective:
        return None, None
    parsed = Objective.from_dict(objective)
    if not parsed.readable(metrics):
        return None, None
    return parsed.outcome(metrics), float(metrics[parsed.metric])


def _timing_rows(name: str, method: str, trial: int, timing: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"experiment": name, "method": method, "trial": trial, "category": category, "seconds": float(seconds)}
            for category, seconds in (timing or {}).items() if isinstance(seconds, (int, float))]


def _run_objective(run: Mapping[str, Any]) -> dict[str, Any]:
    """The objective a single run's ``run.json`` says it judged by (``--objective``'s, or its case study's);
    empty for a record from before runs recorded it."""
    objective = run.get("objective") if isinstance(run, Mapping) else None
    return dict(objective) if isinstance(objective, Mapping) else {}


def _declared_objective(case_study: str | None) -> dict[str, Any]:
    """The objective of an installed case study (for older single runs, whose record does not name one)."""
    from wield.plugins import get_case_study

    try:
        return get_case_study(str(case_study)).objective.as_dict()
    except ConfigError:
        return {}


def _experiment_rows(path: Path, name: str, method_hint: str | None) -> tuple[list, list, dict, dict, dict, list]:
    """Rows of one experiment directory: (trial rows, episode rows, classification row, objective, dirs,
    timing rows)."""
    from wield.workflows.experiment import ExperimentDirectory, classify_experiment

    directory = ExperimentDirectory(path)
    spec = directory.spec()
    plan = {seeds.trial: seeds.as_dict() for seeds in spec.plan().trials}
    summaries = directory.summaries()
    recorded = summaries[0].method if summaries else None
    method = str(spec.config.get("method") or method_hint or recorded or "learner")
    trial_rows, episode_rows, dirs, timing_rows = [], [], {}, []
    for summary in summaries:
        trial = summary.trial
        timing_rows += _timing_rows(name, method, trial, summary.timing)
        base = {"experiment": name, "case_study": spec.case_study, "class_name": spec.class_name, "trial": trial,
                "transitions": summary.transitions, "evaluations": summary.evaluations,
                **{k: plan.get(trial, {}).get(k) for k in SEED_COLUMNS},
                "train_test_similarity": summary.extras.get("train_test_similarity"), "seconds": summary.seconds}
        measured = {method: (summary.metrics, True)}
        for other, metrics in summary.methods.items():
            if other not in (method, summary.metrics.get("method"), summary.method):
                measured.setdefault(other, (metrics, False))
        for row_method, (metrics, learner) in measured.items():
            outcome, value = _outcome(spec.objective, metrics)
            trial_rows.append({**base, "method": row_method, "learner": learner, "outcome": outcome,
                               "objective_value": value,
                               **verdict_columns(summary.verdict if learner else None), **_scalar_metrics(metrics)})
        trial_dir = directory.trial_path(trial)
        dirs[(name, method, trial)] = trial_dir
        if (trial_dir / "episodes.csv").exists():
            frame = read_csv(trial_dir / "episodes.csv")
            frame.insert(0, "trial", trial)
            frame.insert(0, "method", method)
            frame.insert(0, "experiment", name)
            episode_rows.append(frame)
    classification = {}
    if summaries:
        c = classify_experiment(directory, summaries=summaries).as_dict()
        from wield.plugins import installed
        from wield.protocols import Objective
        from wield.protocols.references import references_of

        study = installed(spec.case_study)
        references = references_of(spec.class_name, summaries, Objective.from_dict(spec.objective),
                                   study.random_policy if study else None,
                                   study.greedy_policy if study else None)
        learned = references.get("learned") or {}
        classification = {"experiment": name, "method": method, "case_study": spec.case_study,
                          **{k: c[k] for k in ("class_name", "n", "s", "f", "ci_low", "ci_high", "met", "label")},
                          "objective": Objective(**spec.objective).describe(), "base_seed": spec.base_seed,
                          "trials_planned": spec.trials, "learned_trials": learned.get("learned"),
                          "verdict_trials": learned.get("trials"),
                          "random_policy_f": (references.get("random_policy") or {}).get("f"),
                          "greedy_policy_f": (references.get("greedy") or {}).get("f")}
    return trial_rows, episode_rows, classification, dict(spec.objective), dirs, timing_rows


def _run_rows(path: Path) -> tuple[list, list, dict, dict, dict, list]:
    """A single run record as an experiment of one trial of class ``-`` (no classification): its
    ``summary.json`` when the core wrote one, else its ``evaluation.json``."""
    from wield.protocols import TrialSummary

    run = read_json(path / "run.json")
    evaluation = read_json(path / "evaluation.json") if (path / "evaluation.json").exists() else {}
    seeds = read_json(path / "seeds.json") if (path / "seeds.json").exists() else {}
    methods = evaluation.get("methods") or {"learner": _scalar_metrics(evaluation)}
    objective = dict(evaluation.get("objective") or {})
    learner = next(iter(methods)) if "dqn" not in methods else "dqn"
    verdict = evaluation.get("verdict")
    if (path / "summary.json").exists():
        summary = TrialSummary.from_dict(read_json(path / "summary.json"))
        methods, learner = summary.methods or {summary.method: summary.metrics}, summary.method
        verdict = summary.verdict or verdict
        evaluation = {"transitions": summary.transitions, "seconds": summary.seconds, **summary.extras,
                      "timing": summary.timing or evaluation.get("timing")}
        objective = objective or _run_objective(run) or _declared_objective(run.get("case_study"))
    rows = []
    for method, metrics in methods.items():
        outcome, value = _outcome(objective, metrics)
        rows.append({"experiment": path.name, "case_study": run.get("case_study"), "class_name": "-",
                     "method": method, "learner": method == learner, "trial": 0,
                     "transitions": evaluation.get("transitions"), "outcome": outcome, "objective_value": value,
                     **{k: seeds.get(k) for k in SEED_COLUMNS},
                     "train_test_similarity": evaluation.get("train_test_similarity"),
                     "seconds": evaluation.get("seconds"),
                     **verdict_columns(verdict if method == learner else None), **_scalar_metrics(metrics)})
    episodes = []
    if (path / "episodes.csv").exists():
        frame = read_csv(path / "episodes.csv")
        frame.insert(0, "trial", 0)
        frame.insert(0, "method", learner)
        frame.insert(0, "experiment", path.name)
        episodes.append(frame)
    timing = _timing_rows(path.name, learner, 0, evaluation.get("timing"))
    return rows, episodes, {}, objective, {(path.name, learner, 0): path}, timing


def _is_experiment(manifest: Path) -> bool:
    """Whether ``manifest`` is an ``experiment.json`` written by ``wield.workflows.experiment``."""
    try:
        data = read_json(manifest)
    except (OSError, ValueError):  # DataError is a ValueError
        return False
    return isinstance(data, dict) and {"case_study", "class_name", "trials", "base_seed"} <= set(data)


def experiment_directories(path: str | Path) -> list[tuple[str, Path]]:
    """``[(name, directory)]`` of the experiments under ``path``: itself, or one per method of a comparison."""
    path = Path(path)
    if (path / "experiment.json").exists():
        read_json(path / "experiment.json")  # a damaged manifest is an error naming it
        if not _is_experiment(path / "experiment.json"):
            raise ConfigError("EXPERIMENT_DIR", str(path), reason="its experiment.json is not a Wield experiment")
        return [(path.name, path)]
    found = {p.parent.name: p.parent for p in sorted(path.glob("*/experiment.json")) if _is_experiment(p)}
    order = []
    if len(found) > MAX_METHODS:
        raise DataError(f"{path}: {len(found):,} experiments in one comparison; at most {MAX_METHODS}")
    if (path / "comparison.json").exists():  # the order the methods were compared in
        order = _comparison_order(path / "comparison.json")
    names = [name for name in order if name in found] + [name for name in found if name not in order]
    return [(name, found[name]) for name in names]


def _comparison_order(file: Path) -> list[str]:
    """The methods ``comparison.json`` lists, in order; too many, a name too long or a row that is not an
    object naming a method is a ``DataError`` naming the file and the field (checked before any is used)."""
    data = read_json(file)
    rows = data.get("methods", []) if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise DataError(f"{file}: 'methods' must be a list of objects naming a method")
    if len(rows) > MAX_METHODS:
        raise DataError(f"{file}: 'methods' lists {len(rows):,} methods; at most {MAX_METHODS}")
    order = []
    for row in rows:
        method = row.get("method") if isinstance(row, dict) else None
        if not isinstance(method, str) or not 0 < len(method) <= MAX_NAME_CHARS:
            raise DataError(f"{file}: 'methods[].method' {shown(method)} is not a method name of 1 to "
                            f"{MAX_NAME_CHARS} characters")
        order.append(method)
    return order


def _one_case_study(path: Path, entries: list[Mapping[str, Any]]) -> None:
    """Refuse a directory whose experiments (manifests or trial rows: ``case_study``) span case studies,
    checked on the manifests before any trial is read."""
    studies = sorted({str(entry.get("case_study")) for entry in entries if isinstance(entry, Mapping)})
    if len(studies) > 1:
        raise ConfigError("EXPERIMENT_DIR", str(path), reason=(
            f"holds experiments of several case studies ({', '.join(studies)}); give one experiment or one "
            "comparison directory"))


def load_results(path: str | Path) -> Results:
    """Load an experiment, a comparison of experiments or a single run record (see the module docstring)."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError("EXPERIMENT_DIR", str(path), reason="no such directory")
    experiments = experiment_directories(path)
    if experiments:
        kind = "experiment" if experiments[0][1] == path else "comparison"
        _one_case_study(path, [read_json(directory / "experiment.json") for _, directory in experiments])
        parts = [_experiment_rows(directory, name, name if kind == "comparison" else None)
                 for name, directory in experiments]
    elif (path / "run.json").exists():
        kind, parts = "run", [_run_rows(path)]
    else:
        raise ConfigError("EXPERIMENT_DIR", str(path), reason=(
            "holds no experiment.json, no */experiment.json (a comparison) and no run.json (a run record)"))
    _one_case_study(path, [row for part in parts for row in part[0]])
    trial_rows = [row for part in parts for row in part[0]]
    if not trial_rows:
        raise ConfigError("EXPERIMENT_DIR", str(path), reason="no finished trial yet (no trials/*/summary.json)")
    trials = pd.DataFrame(trial_rows)
    leading = [c for c in TRIAL_COLUMNS if c in trials.columns]
    trials = trials[leading + [c for c in trials.columns if c not in leading]]
    frames = [frame for part in parts for frame in part[1]]
    episodes = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["experiment", "method", "trial", "episode", "total_reward"])
    classification = pd.DataFrame([part[2] for part in parts if part[2]])
    if classification.empty and kind == "run":
        classification = pd.DataFrame([{"experiment": path.name, "method": trials.loc[trials["learner"], "method"].iloc[0],
                                        "case_study": trials["case_study"].iloc[0], "class_name": "-"}])
    directories = {key: value for part in parts for key, value in part[4].items()}
    timing_rows = [row for part in parts for row in part[5]]
    timing = pd.DataFrame(timing_rows, columns=["experiment", "method", "trial", "category", "seconds"])
    return Results(path, kind, trials, episodes, classification, parts[0][3], directories, timing)


def state_notes(path: str | Path) -> list[str]:
    """Sentences for a report about results that are not final: an experiment still running, or unfinished
    with no process running it, trials or a run whose status says "running" while their process is gone
    (stale). Empty for finished results."""
    from wield.workflows.experiment import ExperimentDirectory
    from wield.workflows.run_record import RunRecord

    path = Path(path)
    notes = []
    for name, directory in experiment_directories(path):
        experiment = ExperimentDirectory(directory)
        state = experiment.state
        if state == "running":
            notes.append(f"{name}: the experiment is still running; this report shows the trials finished so far.")
        elif state == "unfinished":
            stale = experiment.stale_trials()
            which = f" (trial {', '.join(map(str, stale))} says running but its process is gone: stale)" if stale else ""
            notes.append(f"{name}: the experiment is unfinished and no process is running it{which}; this report "
                         "shows the trials finished so far; rerun its command to resume it.")
    if not notes and (path / "run.json").exists() and not experiment_directories(path):
        run_state = RunRecord(path).state
        if run_state == "stale":
            notes.append(f"{path.name}: the run says running but its process is gone (stale): it was killed "
                         "before it finished; this report shows what it recorded until then.")
        elif run_state != "complete":
            notes.append(f"{path.name}: the run's status is {run_state}; this report shows what it recorded.")
    return notes


def load_trials(path: str | Path) -> pd.DataFrame:
    """``load_results(path).trials``: one row per (experiment, trial, method)."""
    return load_results(path).trials


def load_episodes(path: str | Path) -> pd.DataFrame:
    """``load_results(path).episodes``: one row per (experiment, trial, training episode)."""
    return load_results(path).episodes


def summarise(trials: pd.DataFrame, metrics: Iterable[str], by: str = "method") -> pd.DataFrame:
    """Mean, standard deviation, median, min, max and count of ``metrics`` across trials, per ``by``."""
    metrics = [m for m in metrics if m in trials.columns]
    if not metrics:
        raise ConfigError("metrics", list(metrics), sorted(trials.columns))
    grouped = trials.groupby(by, sort=False)[metrics]
    table = grouped.agg(["mean", "std", "median", "min", "max", "count"])
    return table
