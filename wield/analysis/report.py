"""Reports: one self-contained Markdown or HTML document (with PNG figures beside it) per results directory.

``write_report(path, out, fmt)`` loads an experiment, a comparison or a run record with
``wield.analysis.records.load_results`` and writes:

1. the classification C_i(n, s, f) with its exact 95% confidence interval, per method;
2. the trials: seeds, n, the objective metric, the conditions a straggler or failure did not meet and the
   verdict of every trial, with the definition of ``learned`` written from the code that decides it
   (``wield.protocols.verdict.learned_definition``); then the verdict's ladder: every rung of every trial
   (outcome, mean difference and interval, d, p, instances, wins), the trials per rung
   better/worse/indistinguishable and the reason behind every status that is not yes;
3. per-method bars of the compared metrics across trials (mean, one standard deviation, every trial);
4. the training curves (episode return, or a case study's ``curve_return``) of every trial, one panel per
   method that recorded one;
5. the other recorded metrics per method (for indexing: index usage statistics);
6. where the time went per method (the study's Table 6.2): the system, the agent acting and updating, and
   Wield's own code, in seconds summed over trials and as shares of the total;
7. extra figures from per-trial files that follow the conventions of ``wield.analysis.extras`` (for
   placement: step time over evaluations and the cross-graph matrix).

Each figure's caption is written once, under it in the report (the PNGs carry none): what the figure is, the
key of what it draws, composed from the artists it drew (``wield.analysis.captions``), so a caption never
describes a band or a line that is not there, then s, n and the base seed (each trial's seeds, in full, are in
the Trials table). Booleans read yes / no.

HTML reports embed their figures (base64) so the one file can be mailed; the PNGs are written as well.
"""

from __future__ import annotations

import base64
import html
import re
import time
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from wield.analysis import REPORT_FORMATS, figures
from wield.analysis.captions import caption as compose
from wield.analysis.extras import extra_sections
from wield.analysis.records import Results, load_results
from wield.analysis.section import Section
from wield.errors import ConfigError
from wield.io import atomic_write_bytes, atomic_write_text
from wield.metrics import Metric, MetricTable, metric_table
from wield.protocols.verdict import learned_definition

FORMATS = REPORT_FORMATS


def _declared_wording(case_study: str | None) -> tuple[str, str]:
    """What an installed case study declares for the report's wording (``CaseStudy.system_work`` and
    ``other_metrics_note``), with neutral phrases for one that declares none or is not installed here."""
    from wield.plugins import installed

    study = installed(case_study)
    system = (study.system_work if study is not None else "") or "the system the case study measures"
    note = study.other_metrics_note if study is not None else ""
    return system, f" ({note})" if note else ""


#: a trial seed that was not drawn: a run of a fixed task records no workload seed (null)
NOT_DRAWN = "not drawn"


def seed_text(seed) -> str:
    """A recorded seed in full (a truncated seed reproduces nothing), ``not drawn`` when none was recorded."""
    if seed is None or (isinstance(seed, float) and pd.isna(seed)):
        return NOT_DRAWN
    return str(int(seed))


def cell_text(value) -> str:
    """A table cell: booleans as yes / no, missing values as ``-``, anything else as itself."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    return str(value)


def seeds_caption(results: Results) -> str:
    """s, n and the base seed of the trials, for captions; each trial's seeds are in the Trials table."""
    rows = results.trials[results.trials["learner"]].drop_duplicates("trial")
    c = results.classification
    n = ", ".join(f"{r['method']}: n={r['n']}" for _, r in c.iterrows() if "n" in c and pd.notna(r.get("n")))
    base = ", ".join(sorted({str(int(s)) for s in c.get("base_seed", pd.Series(dtype=float)).dropna()}))
    count = f"s = {len(rows)} trial" + ("" if len(rows) == 1 else "s")
    return (count + (f" ({n} transitions per trial)" if n else "") + (f"; base seed {base}" if base else "")
            + (f"; {'the trial' if len(rows) == 1 else 'each trial'}'s seeds: the Trials table" if len(rows) else ""))


def _status(row: pd.Series) -> str:
    """A learner row's verdict status (yes / no / too little evidence; ``-`` without a verdict)."""
    status = row.get("verdict_status")
    if isinstance(status, str) and status:
        return status
    learned = row.get("learned")
    return "-" if learned is None or pd.isna(learned) else "yes" if learned else "no"


def _figure(value) -> str:
    """A rung's figure with its sign (``+0.41``, ``-inf``), ``-`` when missing."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    return f"{float(value):+.3g}"


def ladder_section(learner_rows: pd.DataFrame) -> Section | None:
    """The verdict's ladder of every learner trial: one row per (method, trial, rung) with the outcome, the mean
    paired difference and its interval, d, p, the instances and the learner's wins; per rung, how many trials
    were better / worse / indistinguishable; and the reasons behind every status that is not yes."""
    from wield.protocols.references import rung_counts, rung_counts_text

    if "verdict_rungs" not in learner_rows:
        return None
    rows, reasons, verdicts = [], [], []
    for _, trial in learner_rows.iterrows():
        rungs = trial.get("verdict_rungs")
        if not isinstance(rungs, list) or not rungs:
            continue
        verdicts.append({"rungs": rungs})
        for rung in rungs:
            label = "random" if rung.get("kind") == "random" else f"{rung.get('kind')} {rung.get('name')}"
            instances, wins = rung.get("instances"), rung.get("wins")
            rows.append({"method": trial["method"], "trial": trial["trial"], "rung": label,
                         "outcome": rung.get("outcome") + (f" (at the cap of {rung.get('cap')})"
                                                           if rung.get("at_cap") else ""),
                         "mean difference": _figure(rung.get("mean_difference")),
                         "CI": f"[{_figure(rung.get('ci_low'))}, {_figure(rung.get('ci_high'))}]",
                         "d": _figure(rung.get("effect_size")),
                         "p": "-" if rung.get("p") is None else ("< 0.001" if rung["p"] < 0.001 else f"{rung['p']:.3f}"),
                         "instances": instances,
                         "learner better on": "-" if wins is None else f"{wins}/{instances}"})
        if _status(trial) != "yes":
            reasons.append(f"{trial['method']}, trial {trial['trial']}: {_status(trial)} - "
                           f"{trial.get('verdict_reasons') or 'no reason recorded'}")
    if not rows:
        return None
    text = ["Each rung compares the learner's greedy policy with one comparator on the same held-out instances "
            "(the learner's score minus the comparator's per instance; `better` when the interval lies above 0, "
            "`worse` below, else `indistinguishable`). Trials per rung better/worse/indistinguishable: "
            + rung_counts_text(rung_counts(verdicts)) + "."]
    if reasons:
        text.append("Why not `learned: yes`: " + " | ".join(reasons) + ".")
    return Section("Learning verdict: the ladder", text, [pd.DataFrame(rows)])


def _save(figure, directory: Path, name: str) -> str:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(directory / name, buffer.getvalue())
    return name


def _metrics_table(per_method: pd.DataFrame, metrics: Sequence[str], methods: Sequence[str],
                   declared: MetricTable, median: bool = True) -> pd.DataFrame:
    """Rows: metrics; columns: methods; cells: mean ± standard deviation (and median, over several trials)
    across trials, with the metric's unit."""
    rows = []
    for name in metrics:
        metric = declared[name]
        row = {"metric": metric.axis_label()}
        for method in methods:
            values = per_method.loc[per_method["method"] == method, name].dropna().astype(float)
            if values.empty:
                row[method] = "-"
                continue
            several = len(values) > 1
            spread = f" ± {metric.format(values.std(ddof=1), unit=False)}" if several else ""
            middle = f" (median {metric.format(values.median())})" if median and several else ""
            row[method] = metric.format(values.mean()) + spread + middle
        rows.append(row)
    trials = {"metric": "trials", **{m: str(int((per_method["method"] == m).sum())) for m in methods}}
    return pd.DataFrame([trials, *rows])


def failed_conditions(rows: pd.DataFrame, objective: Mapping) -> pd.Series:
    """Per row, the objective's conditions the row did not meet (``metric >= threshold (was value)`` joined by
    ``; ``) for stragglers and failures; empty for every other row and for results without an objective."""
    from wield.protocols import Objective

    empty = pd.Series("", index=rows.index, dtype=object)
    if not objective or rows.empty:
        return empty
    try:
        parsed = Objective.from_dict(dict(objective))
    except (TypeError, ValueError, KeyError):
        return empty
    names = list(parsed.metrics)
    for index, row in rows.iterrows():
        if row.get("outcome") not in ("straggler", "failure"):
            continue
        metrics = {name: float(row[name]) for name in names if name in row and pd.notna(row[name])}
        if not parsed.readable(metrics):
            continue
        empty[index] = "; ".join(f"{condition.describe()} (was {metrics[condition.metric]:.3g})"
                                 for condition in parsed.failed_conditions(metrics))
    return empty


def build_sections(results: Results, directory: Path, metrics: Sequence[str] | None = None,
                   declared: Mapping[str, Metric] | None = None, strict: bool = True) -> list[Section]:
    """Compute every table and write every figure of the report into ``directory``; with ``strict`` a
    requested metric the results lack is an error, else it is left out. ``declared``: the case study's metric
    declarations (units and labels; inferred from the names when missing)."""
    declared = metric_table((declared or {}).values())
    caption = seeds_caption(results)
    sections = []
    per_method = results.per_method()
    methods = results.methods
    objective = results.objective
    c = results.classification
    if "f" in c and c["f"].notna().any():
        table = c[["method", "class_name", "n", "s", "f", "ci_low", "ci_high", "met", "objective"]].round(3)
        table.columns = ["method", "class", "n (transitions)", "s (trials)", "f", "95% CI low", "95% CI high",
                         "class met (f >= 0.5)", "objective"]
        figure = figures.classification_figure(c)
        name = _save(figure, directory, "classification.png")
        sections.append(Section("Classification", [", ".join(c["label"])], [table],
                                [(name, compose(figure, "Share f of trials meeting the objective, per method",
                                                caption))]))
    learner_rows = results.trials[results.trials["learner"]]
    trial_table = pd.DataFrame({
        "method": learner_rows["method"], "trial": learner_rows["trial"],
        "train seed": learner_rows.get("train_workload_seed", pd.Series(dtype=float)).map(seed_text),
        "test seed": learner_rows.get("test_workload_seed", pd.Series(dtype=float)).map(seed_text),
        "opt. seed": learner_rows.get("optimisation_seed", pd.Series(dtype=float)).map(seed_text),
        "n": learner_rows["transitions"],
        declared[objective.get("metric", "objective")].label:
            learner_rows["objective_value"].map(declared[objective.get("metric", "objective")].format),
        "outcome": learner_rows["outcome"]})
    failed = failed_conditions(learner_rows, objective)
    if failed.ne("").any():
        trial_table["failed on"] = failed.replace("", "-")
    judged = learner_rows[learner_rows["learned"].notna()] if "learned" in learner_rows else learner_rows.iloc[:0]
    if len(judged):
        trial_table["learned"] = [_status(r) for _, r in learner_rows.iterrows()]
        trial_table["greedy vs random (d)"] = [
            "-" if pd.isna(r["random_mean"]) else f"{r['greedy_return']:.4g} vs {r['random_mean']:.4g} "
            f"({r['effect_size']:.2f})" for _, r in learner_rows.iterrows()]
    if "train_test_similarity" in learner_rows and learner_rows["train_test_similarity"].notna().any():
        trial_table[declared["train_test_similarity"].label] = learner_rows["train_test_similarity"].map(
            declared["train_test_similarity"].format)
    verdict_text = ""
    if len(judged):
        verdict_text = (f" Learning verdict: learned in {int(judged['learned'].astype(bool).sum())} of {len(judged)} "
                        f"trials ({learned_definition().rstrip('.')}).")
    if "random_policy_f" in c and c["random_policy_f"].notna().any():
        verdict_text += " The random policy on the same trials reaches " + ", ".join(
            f"f = {row['random_policy_f']:.2f} ({row['method']})" for _, row in c.iterrows()
            if pd.notna(row["random_policy_f"])) + "."
    sections.append(Section("Trials", [(f"Objective: {c['objective'].iloc[0]}. " if "objective" in c else "")
                                       + "Terms (n, s, f, success, straggler, failure): docs/design.md section 10."
                                       + verdict_text],
                            [trial_table.reset_index(drop=True)]))
    ladder = ladder_section(learner_rows)
    if ladder is not None:
        sections.append(ladder)
    available = results.metric_columns()
    objective_metrics = [str(objective.get("metric")), *[str(part.get("metric")) for part in objective.get("also", [])]]
    chosen = [m for m in (metrics or objective_metrics) if m in available]
    if metrics and strict:
        missing = [m for m in metrics if m not in available]
        if missing:
            raise ConfigError("metrics", missing[0], available)
    if chosen:
        figure = figures.metric_bars_figure(per_method, chosen, methods, declared,
                                            title=f"{results.case_study}: evaluation per method across trials")
        name = _save(figure, directory, "metrics.png")
        sections.append(Section("Metrics per method", [
            "Learners and the baselines measured beside them on the same test workloads, across trials: "
            "mean ± one standard deviation (median)."],
            [_metrics_table(per_method, chosen, methods, declared)],
            [(name, compose(figure, "The compared metrics per method", caption))]))
    curved = figures.curve_methods(results.episodes)
    if curved:  # only methods with a training curve get a panel; none, no figure
        columns = {figures.curve_column(results.episodes[results.episodes["method"] == m]) for m in curved}
        what = ("Episode return over training" if columns == {"total_reward"} else
                "The greedy policy's return on the training-shape workload after each training episode"
                if columns == {"curve_return"} else
                "Episode return over training (the greedy policy's return after each training episode where "
                "the panel's axis says so)")
        figure = figures.reward_curves_figure(results.episodes, verdicts=learner_rows)
        name = _save(figure, directory, "training.png")
        sections.append(Section("Training curves", [], [], [(name, compose(figure, what, caption))]))
    others = [m for m in available if m not in chosen]
    if others:
        sections.append(Section("Other recorded metrics per method", [
            "Mean ± one standard deviation (median) across trials of every other scalar metric the case study "
            "recorded" + _declared_wording(results.case_study)[1] + "."],
            [_metrics_table(per_method, others, methods, declared, median=False)]))
    split = time_split_section(results)
    if split is not None:
        sections.append(split)
    sections.extend(extra_sections(results, directory, caption, _save, declared))
    return sections


def time_split_section(results: Results) -> Section | None:
    """The study's Table 6.2 per method, from the trials' recorded ``timing`` (None if none recorded it)."""
    from wield.workflows.timing import time_split_rows

    timing = results.timing
    if timing.empty:
        return None
    per_method = {method: frame.groupby("category", sort=False)["seconds"].sum().to_dict()
                  for method, frame in timing.groupby("method", sort=False)}
    table = pd.DataFrame(time_split_rows(per_method)).rename(columns={"what": "method"})
    return Section("Where the time went (Table 6.2)", [
        "Wall time of each method's trials, summed over trials: inside the system ("
        + _declared_wording(results.case_study)[0] + "), in the agent (acting: choosing actions or proposing "
        "configurations; updating: learning from transitions, pretraining), and in Wield's own code (the "
        "rest: data and workload generation, conversions, caches, records). Shares are of the total."],
        [table])


def _markdown_table(frame: pd.DataFrame) -> str:
    cells = [[cell_text(v).replace("|", "\\|").replace("\n", " ") for v in row]
             for row in frame.itertuples(index=False)]
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    return "\n".join([header, rule, *("| " + " | ".join(row) + " |" for row in cells)])


def _title(results: Results) -> tuple[str, str]:
    c = results.classification
    names = c["class_name"].dropna().astype(str) if "class_name" in c else []
    classes = ", ".join(dict.fromkeys(n for n in names if n not in ("-", "")))
    kind = "single run" if results.kind == "run" else results.kind
    title = f"Wield report: {results.case_study} ({kind}, {classes})" if classes else \
        f"Wield report: {results.case_study} ({kind})"
    from wield import __version__

    meta = (f"Directory `{results.path}`; methods: {', '.join(results.methods)}; "
            f"generated {time.strftime('%Y-%m-%d %H:%M:%S %Z')} by wield {__version__}.")
    return title, meta


def render_markdown(results: Results, sections: Sequence[Section]) -> str:
    title, meta = _title(results)
    lines = [f"# {title}", "", meta, ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        lines += [p + "\n" for p in section.text if p]
        for table in section.tables:
            lines += [_markdown_table(table), ""]
        for name, caption in section.figures:
            lines += [f"![{section.title}]({name})", "", f"*{caption}*", ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """``text`` escaped for HTML, with Markdown `code` spans as <code> elements."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(text))


def render_html(results: Results, sections: Sequence[Section], directory: Path) -> str:
    title, meta = _title(results)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
             "table{border-collapse:collapse;margin:1em 0;font-size:90%;display:block;max-width:100%;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 8px}"
             "figcaption{font-size:90%;color:#333}img{max-width:100%}code{background:#f3f3f3;padding:0 2px}</style></head><body>",
             f"<h1>{html.escape(title)}</h1><p>{_inline(meta)}</p>"]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        parts += [f"<p>{_inline(p)}</p>" for p in section.text if p]
        parts += [table.map(cell_text).to_html(index=False, border=0) for table in section.tables]
        for name, caption in section.figures:
            data = base64.b64encode((directory / name).read_bytes()).decode("ascii")
            parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(name)}'>"
                         f"<figcaption>{_inline(caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path: str | Path, out: str | Path | None = None, fmt: str = "md",
                 metrics: Sequence[str] | None = None, declared: Mapping[str, Metric] | None = None,
                 strict: bool = True) -> Path:
    """Write the report of the results under ``path`` into ``out`` (default ``path/report``); returns the
    report file (``report.md`` or ``report.html``). ``metrics`` are drawn as per-method bars (default: the
    objective metric); ``declared`` are the case study's metric declarations (units, labels; see
    ``wield.metrics``); ``strict`` see ``build_sections``."""
    if fmt not in FORMATS:
        raise ConfigError("format", fmt, FORMATS)
    from wield.analysis.records import state_notes
    from wield.workflows.ownership import ensure_directory

    results = load_results(path)
    if declared is None:  # the installed case study's declarations (inferred from names when not installed)
        from wield.plugins import declared_metrics

        declared = dict(declared_metrics(results.case_study))
    # no planted link followed, and a directory of another user refused (it could swap our files for links)
    directory = ensure_directory(Path(out) if out else Path(path) / "report", "out", owned=True)
    sections = build_sections(results, directory, metrics, declared, strict)
    notes = state_notes(path)
    if notes:
        sections.insert(0, Section("Status", notes, [], []))
    if fmt == "md":
        target = directory / "report.md"
        atomic_write_text(target, render_markdown(results, sections))
    else:
        target = directory / "report.html"
        atomic_write_text(target, render_html(results, sections, directory))
    return target
