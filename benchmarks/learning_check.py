"""Does the learner learn on the default tasks, and does it beat what needs no learning? Seeds side by side.

For every case study asked for (``--case``: indexing, placement, scheduling, caching, or all) and every
seed, the default single run (``wield run CASE --seed S`` at the case's defaults, through the same trial
function: ``wield.workflows.run_trial`` with the case's single-run seeds), then one row per seed of its
learning verdict (``TrialSummary.verdict``; the ladder of wield/protocols/verdict.py: the greedy policy
against each comparator, paired on the same evaluation instances):

- seed: the run's ``--seed``;
- learned: the verdict's status, ``yes`` (beats the random rung and every trivial rung, with a training
  curve that rose), ``no`` or ``too little evidence`` (fewer than 5 instances, or a curve too short for its
  trend test);
- one column per rung, ``vs random``, ``vs trivial NAME``, ``vs heuristic NAME``: the rung's outcome
  (``better`` when the 95% CI of the mean per-instance difference greedy - comparator lies above 0,
  ``worse`` below, else ``indistinguishable``), the mean difference and its CI, in the verdict's score
  (named in the table's title; higher is better). ``(exact)`` marks a deterministic comparison on one
  instance, ``(no CI)`` one with too few samples for an interval. Heuristic rungs are reported, never
  required for ``learned``;
- objective columns: ``objective.outcome(metrics)`` of the case's default objective (``success``,
  ``straggler``, ``failure``, ``inconclusive``, whatever the objective returns) on a row of the run's
  methods table: the learned (greedy) policy's row, measured on the run's test workload (indexing
  ``dqn-greedy``, scheduling ``ppo``, caching ``dqn``), and the uniformly random policy's row beside it
  (indexing ``random-policy``, scheduling and caching ``random``: does the objective tell them apart?).
  Placement has no greedy row (its ``wield`` row is the best placement measured within the budget, a search
  outcome): its learned column is the greedy placement's speed-up over the single-device placement on the
  run's one graph, read from the verdict (single-device rung's score / greedy score, both -step time over
  the same reference), and the outcome of the objective on it; then the placer's best placement and random
  search's best at the same budget (search outcomes), as the run measures them;
- s: wall seconds of the trial.

After each table a summary line: how many seeds said learned yes / no / too little evidence, and per rung
how many seeds were better / worse / indistinguishable.

Indexing also prints, per seed, the learned greedy policy against the index advisor and against the search
outcome (issue 34): ``greedy``, the greedy policy's mean score (reward of the index set it builds) over the
verdict's instances (fresh draws of the training workload's predicate values); ``advisor``, the advisor's
mean on the same instances; ``greedy - advisor``, the advisor rung (outcome, difference, CI); ``best seen
(search)``, the reward of the best index set seen in training (``verdict["search_outcome"]["reward"]``) and
``greedy final set``, the greedy policy's set's reward on the training workload itself, the like-for-like
comparison of the two.

``--learners dqn,sb3-maskable-ppo`` tables each indexing learner in turn through the same trial
(``wield run indexing --agent L``: same collection, workload, reward and n = E x Q transitions; the
Stable-Baselines3 learners need ``pip install -e '.[sb3]'``) and then the paired difference over the seeds
of each learner's greedy score (the verdict's mean over its instances) against the first, with a 95% t
interval and the paired t test's p (scipy): "within noise" when the interval contains 0. The other case
studies table their default learner. ``--actions positional --reward level`` runs indexing with the study's
task design (the defaults are the shortlist design rewarded by improvement; docs/design.md sections 5.12, 5.16
and 5.18; ``--actions candidates`` is the design that was the default before).

    python benchmarks/learning_check.py                       # all four cases, seeds 0-4, defaults (about an hour)
    python benchmarks/learning_check.py --quick --seeds 0 1   # small settings, minutes
    python benchmarks/learning_check.py --case indexing --learners dqn,sb3-maskable-ppo   # + the reference
    python benchmarks/learning_check.py --case indexing --actions positional --reward level   # the study's design

Equal decision budgets (issue 42; ``--budgets 0,5,10,20,40``, indexing): every run also scores, on its
verdict's held-out instances, the learned method (the greedy policy's set at budget 0; above 0, the policy-
guided search of case_studies/indexing/budgeted.py: at most B sets the policy proposes, checked on the engine,
the best kept) against the advisor stopped at the same budget (its best set within B workload evaluations;
no index at 0). Per collection (``--collection generated,flights``; ``--rows N`` reads only the first N
records of a real one) a table follows the learner's tables: per budget each method's mean reward with its 95%
interval, the paired difference learned - advisor with its 95% interval over every seed's instances, the
instance wins/ties/losses, the seeds ahead and whether issue 42's goal holds there (ahead, the interval above
0, at every budget <= 20; not worse, the interval not below 0, above); then the decision time per workload
and a closing line per budget. The figure (``--figure PNG``, default budgets.png under ``--out`` or here)
draws reward against budget, one line per method with its interval as a band (budget_table.py).

    python benchmarks/learning_check.py --case indexing --budgets 0,5,10,20,40 --collection generated,flights

``--quick`` settings (indexing: ``QUICK_INDEXING``, placement: ``QUICK_PLACEMENT``, scheduling:
``QUICK_SCHEDULING``, caching: ``QUICK_CACHING``) only try the script; the defaults are what the verdict is
about. Run records go to a temporary directory (``--out DIR`` keeps them). Wall times are whatever the
machine gives; nothing here asserts a time. The arithmetic is the ``wield`` command's (``WIELD_NUMERICS``,
reproducible by default: wield/numerics.py), so each row is the run ``wield run CASE --seed S`` gives.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "benchmarks"):  # the repository, and budget_table beside this script
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from case_studies.indexing.candidate_design import ACTIONS  # noqa: E402  (after the path is set)

CASES = ("indexing", "placement", "scheduling", "caching")
QUICK_INDEXING = dict(documents=4000, queries=8, episodes=30, repetitions=1)
QUICK_PLACEMENT = dict(budget=60)
QUICK_SCHEDULING = dict(episodes=6, first_decisions=200, max_decisions=400, train_s=0.5, test_s=0.25, curve_s=0.1)
QUICK_CACHING = dict(episodes=8)
PLACEMENT_BASELINES = ["random", "heft", "single"]  # beside the placer: random search, HEFT, the reference
STATUSES = ("yes", "no", "too little evidence")
RUNG_OUTCOMES = ("better", "worse", "indistinguishable")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Columns: see the module docstring (python -c \"import "
                                            "benchmarks.learning_check as m; help(m)\").")
    parser.add_argument("--case", choices=(*CASES, "all"), default="all", help="the case study to check (default all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="run seeds (default 0-4)")
    parser.add_argument("--learners", default="dqn",
                        help="indexing learners, comma-separated, each tabled in turn (any 'wield run indexing "
                             "--agent' name: dqn, dqfd, sb3-maskable-ppo, sb3-ppo, sb3-a2c); with more than "
                             "one, the paired difference of greedy scores of each against the first")
    parser.add_argument("--quick", action="store_true",
                        help=f"small settings to try the script (indexing {QUICK_INDEXING}, placement "
                             f"{QUICK_PLACEMENT}, scheduling {QUICK_SCHEDULING}, caching {QUICK_CACHING}); "
                             "the defaults are what the verdict is about")
    parser.add_argument("--actions", choices=ACTIONS, default=None,
                        help="indexing's task design (as 'wield run indexing --actions'; default the run's): the "
                             "study's positional key heads, one head over the query's candidate indexes, or one "
                             "head over the workload's shortlist of candidates ranked by cost estimates")
    parser.add_argument("--reward", choices=("level", "improvement"), default=None,
                        help="indexing's step reward (as 'wield run indexing --reward'; default the run's)")
    parser.add_argument("--rules", default=None,
                        help="indexing --agent dqfd: the labelling rules of its demonstrations (as 'wield run "
                             "indexing --rules', e.g. advisor; default the run's: advisor on the shortlist design, "
                             "noop,reverse on the others)")
    parser.add_argument("--out", default=None, help="keep the run records under this directory")
    parser.add_argument("--budgets", default=None, metavar="B,B,...",
                        help="indexing: decision budgets in workload evaluations (e.g. 0,5,10,20,40): per "
                             "collection a table of the learned method (greedy policy at 0, policy-guided "
                             "search above) against the advisor stopped at each budget, paired on the "
                             "verdict's instances, and a figure (budget_table.py; issue 42)")
    parser.add_argument("--collection", default="generated", metavar="NAME,...",
                        help="indexing collections, comma-separated, each tabled in turn: generated (the "
                             "IMDB-like default), flights (the built-in real table) or a file")
    parser.add_argument("--rows", type=int, default=None, metavar="N",
                        help="indexing: read only the first N records of a --collection that is not generated")
    parser.add_argument("--figure", default=None, metavar="PNG",
                        help="where --budgets writes its figure (default: budgets.png under --out, else in the "
                             "current directory)")
    args = parser.parse_args(argv)
    from case_studies.indexing.methods import learner_methods
    from wield.configs import parse_name_list
    from wield.errors import ConfigError

    from case_studies.indexing.budgeted import parse_budgets

    try:
        args.learners = parse_name_list(args.learners, "--learners", learner_methods(), what="learner")
        args.budgets = None if args.budgets is None else parse_budgets(args.budgets, "--budgets")
    except ConfigError as exc:
        parser.error(str(exc))
    args.collection = [name.strip() for name in args.collection.split(",") if name.strip()] or ["generated"]
    return args


# ---------------------------------------------------------------------------------------- formatting
def _signed(value: float | None) -> str:
    """A difference with its sign and three significant digits, as the verdict's lines print it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.3g}"


def _number(value: float | None, spec: str = ".3g") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def rung_label(rung: Mapping[str, Any]) -> str:
    """``vs random``, ``vs trivial no-index``, ``vs heuristic advisor``."""
    return "vs random" if rung["kind"] == "random" else f"vs {rung['kind']} {rung['name']}"


def rung_cell(rung: Mapping[str, Any] | None) -> str:
    """E.g. ``better +0.37 [+0.31, +0.42]``; ``(exact)`` for a deterministic single-instance comparison."""
    if rung is None:
        return "-"
    text = f"{rung['outcome']} {_signed(rung['mean_difference'])}"
    low, high = rung.get("ci_low"), rung.get("ci_high")
    if low is None or high is None:
        return text + " (no CI)"
    if rung.get("samples") == 0:
        return text + " (exact)"
    return text + f" [{_signed(low)}, {_signed(high)}]"


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    print(f"\n{title}")
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


# ---------------------------------------------------------------------------------------- one seed's row
@dataclass
class SeedResult:
    """One seed's run: its verdict, its objective columns and extra columns (already formatted), seconds."""

    seed: int
    verdict: dict[str, Any]
    objective: list[str]
    seconds: float
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return str(self.verdict.get("status", "-")) if self.verdict else "no verdict"

    def rungs(self) -> dict[str, dict[str, Any]]:
        return {rung_label(r): r for r in (self.verdict or {}).get("rungs", [])}

    def rung(self, kind: str, name: str | None = None) -> dict[str, Any] | None:
        for r in (self.verdict or {}).get("rungs", []):
            if r["kind"] == kind and (name is None or r["name"] == name):
                return r
        return None


def timed_trial(case: str, config: Mapping[str, Any], seeds, directory: Path):
    from wield.workflows import run_trial

    started = time.perf_counter()
    summary = run_trial(case, dict(config), seeds, str(directory), progress=False)
    return summary, time.perf_counter() - started


def outcome_of(objective, methods: Mapping[str, Mapping[str, Any]], row: str) -> str:
    return objective.outcome(methods[row]) if row in methods else "-"


def ladder_table(title: str, results: list[SeedResult], objective_columns: list[str]) -> None:
    """The table of the module docstring and its summary line."""
    labels: list[str] = []
    for result in results:
        labels += [label for label in result.rungs() if label not in labels]
    rows = [[str(r.seed), r.status, *(rung_cell(r.rungs().get(label)) for label in labels), *r.objective,
             f"{r.seconds:.0f}"] for r in results]
    first = next((r.verdict for r in results if r.verdict), None)
    if first:
        instances = first.get("instances", {})
        held = "held-out " if instances.get("held_out") else "training-workload "
        title += (f"\n  verdict on {instances.get('count')} {held}instance(s) ({instances.get('description')}); "
                  f"score: {first.get('score')}")
    print_table(title, ["seed", "learned", *labels, *objective_columns, "s"], rows)
    statuses = Counter(r.status for r in results)
    line = "learned: " + ", ".join(f"{s} {statuses.get(s, 0)}" for s in STATUSES) + f" of {len(results)} seeds"
    counts = []
    for label in labels:
        outcomes = Counter(r.rungs()[label]["outcome"] for r in results if label in r.rungs())
        counts.append(f"{label} " + "/".join(str(outcomes.get(o, 0)) for o in RUNG_OUTCOMES))
    if counts:
        line += f"; seeds {'/'.join(RUNG_OUTCOMES)}: " + ", ".join(counts)
    print(line)


# ---------------------------------------------------------------------------------------- indexing
def indexing_config(seed: int, quick: bool, learner: str = "dqn", rules: str | None = None,
                    design: dict[str, str] | None = None, data: dict[str, Any] | None = None):
    from case_studies.indexing.run import IndexingRunConfig

    more = {"rules": rules} if rules and learner == "dqfd" else {}
    return IndexingRunConfig(seed=seed, agent=learner, **(design or {}), **more, **(data or {}),
                             **(QUICK_INDEXING if quick else {})).validate()


def collection_data(collection: str, rows: int | None, budgets: list[int] | None) -> dict[str, Any]:
    """The run options of one ``--collection`` entry (generated: the default collection) and ``--budgets``."""
    data: dict[str, Any] = {} if collection == "generated" else {"collection": collection, "rows": rows}
    return {**data, **({"budgets": budgets} if budgets else {})}


def indexing_learner(learner: str, seeds: list[int], quick: bool, out: Path,
                     rules: str | None = None, design: dict[str, str] | None = None,
                     data: dict[str, Any] | None = None, budgets: Any = None) -> dict[int, float]:
    """One table for ``learner`` and its comparison with the advisor; returns its greedy score per seed.
    ``data``: the collection's run options; ``budgets`` (a ``budget_table.BudgetRuns``) collects each seed's
    budget sweep and decision times."""
    from wield.plugins import get_case_study

    objective = get_case_study("indexing").objective
    results, greedy = [], {}
    config = indexing_config(seeds[0], quick, learner, rules, design, data)
    name = "" if not data or not data.get("collection") else "-" + Path(str(data["collection"])).stem
    for seed in seeds:
        config = indexing_config(seed, quick, learner, rules, design, data)
        summary, seconds = timed_trial("indexing", asdict(config), config.single_run_seeds(),
                                       out / f"indexing-{learner}{name}-{seed}")
        verdict = summary.verdict or {}
        if budgets is not None and verdict.get("budgets"):
            budgets.sweeps[seed] = verdict["budgets"]
            budgets.decision[seed] = verdict.get("decision_time") or {}
        result = SeedResult(seed, verdict, [outcome_of(objective, summary.methods, f"{learner}-greedy"),
                                            outcome_of(objective, summary.methods, "random-policy")], seconds)
        random_rung = result.rung("random")
        if random_rung is not None and random_rung.get("learner_mean") is not None:
            greedy[seed] = float(random_rung["learner_mean"])
        results.append(result)
    what = (f"collection {config.collection}" + (f" (first {config.rows:,} rows)" if config.rows else "")
            if config.collection else f"{config.documents:,} documents")
    ladder_table(f"indexing, {learner}: {what}, {config.queries} queries, k = {config.k}, "
                 f"actions {config.actions}, reward {config.reward}, "
                 f"{config.episodes} episodes (n = {config.episodes * config.queries:,}), w_m = "
                 f"{config.size_weight:g}, w_t = {config.runtime_weight:g}; objective: {objective.describe()}",
                 results, [f"objective ({learner}-greedy)", "objective (random-policy)"])
    rows, gaps = [], []
    for r in results:
        advisor = r.rung("heuristic", "advisor")
        random_rung = r.rung("random")
        search = r.verdict.get("search_outcome") or {}
        # the greedy policy on the advisor rung's own instances (a sequential verdict may have drawn more of
        # them than the first look that decided the random rung), so the two means are paired
        mine = greedy.get(r.seed)
        if advisor is not None and advisor.get("learner_mean") is not None:
            mine = float(advisor["learner_mean"])
        if advisor is not None and mine is not None and advisor.get("comparator_mean") is not None:
            gaps.append(mine - float(advisor["comparator_mean"]))
        rows.append([str(r.seed), _number(mine),
                     _number(None if advisor is None else advisor.get("comparator_mean")), rung_cell(advisor),
                     _number(search.get("reward")), _number(search.get("greedy_reward")),
                     _number(None if random_rung is None else random_rung.get("comparator_mean"))])
    label = learner + (f" (rules {rules})" if rules and learner == "dqfd" else "")
    print_table(f"indexing, {label}: the learned greedy policy against the advisor (mean score on the advisor "
                "rung's instances of the verdict) and against the search outcome (rewards on the training workload)",
                ["seed", "greedy", "advisor", "greedy - advisor", "best seen (search)", "greedy final set",
                 "random"], rows)
    if gaps:
        at_least = sum(gap >= 0 for gap in gaps)
        line = (f"greedy - advisor over seeds: mean {statistics.fmean(gaps):+.3g}; greedy at least as good as the "
                f"advisor on {at_least} of {len(gaps)} seeds")
        if len(gaps) > 1 and statistics.stdev(gaps) > 0:
            from scipy import stats

            low, high = stats.ttest_1samp(gaps, 0.0).confidence_interval(0.95)
            line += f", 95% t CI [{low:+.3g}, {high:+.3g}]"
        print(line)
    return greedy


def paired_difference(first: str, other: str, greedy: dict[str, dict[int, float]], seeds: list[int]) -> None:
    """The paired difference of greedy scores (first - other) over the seeds, with a 95% t interval."""
    seeds = [s for s in seeds if s in greedy[first] and s in greedy[other]]
    if not seeds:
        print(f"greedy score: no seed with a verdict for both {first} and {other}")
        return
    differences = [greedy[first][s] - greedy[other][s] for s in seeds]
    mean = statistics.fmean(differences)
    line = (f"greedy score, mean over seeds: {first} {statistics.fmean(greedy[first][s] for s in seeds):.3g}, "
            f"{other} {statistics.fmean(greedy[other][s] for s in seeds):.3g}; paired difference {first} - "
            f"{other} = {mean:+.3g}")
    if len(differences) > 1 and statistics.stdev(differences) > 0:
        from scipy import stats

        test = stats.ttest_rel([greedy[first][s] for s in seeds], [greedy[other][s] for s in seeds])
        low, high = test.confidence_interval(0.95)
        line += (f", 95% CI [{low:+.3g}, {high:+.3g}], paired t p = {test.pvalue:.2f}: "
                 f"{'within noise' if low <= 0 <= high else 'different'}")
    print(line)


# ---------------------------------------------------------------------------------------- placement
def placement(seeds: list[int], quick: bool, out: Path) -> None:
    from case_studies.placement.run import PlacementRunConfig
    from wield.plugins import get_case_study

    objective = get_case_study("placement").objective
    results = []
    config = PlacementRunConfig()
    for seed in seeds:
        config = PlacementRunConfig(seed=seed, baselines=list(PLACEMENT_BASELINES),
                                    **(QUICK_PLACEMENT if quick else {})).validate()
        summary, seconds = timed_trial("placement", asdict(config), config.single_run_seeds(),
                                       out / f"placement-{seed}")
        verdict, methods = summary.verdict or {}, summary.methods
        result = SeedResult(seed, verdict, [], seconds)
        single = result.rung("trivial", "single-device")
        speedup = None
        if single and (verdict.get("instances") or {}).get("count") == 1 \
                and single["learner_mean"] < 0 and single["comparator_mean"] < 0:
            speedup = single["comparator_mean"] / single["learner_mean"]  # t_single / t_greedy
        greedy = "-" if speedup is None else \
            f"{speedup:.2f}x {objective.outcome({'speedup_vs_single_device': speedup})}"
        result.objective = [greedy]
        for row in ("wield", "random"):
            result.objective.append(f"{methods[row]['speedup_vs_single_device']:.2f}x "
                                    f"{objective.outcome(methods[row])}" if row in methods else "-")
        results.append(result)
    ladder_table(f"placement, Wield placer: {config.family} default graph, {config.topology}, budget "
                 f"{config.budget} graph evaluations; objective: {objective.describe()}", results,
                 ["objective (greedy placement)", "objective (placer best, search)", "objective (random search best)"])


# ---------------------------------------------------------------------------------------- scheduling, caching
def default_config(case: str, quick: bool) -> dict[str, Any]:
    """The configuration ``wield run CASE`` builds from the case study's options at their defaults."""
    from wield.plugins import get_case_study

    study = get_case_study(case)
    config = {option.name: option.default for option in study.options}
    config.update({"scheduling": QUICK_SCHEDULING, "caching": QUICK_CACHING}.get(case, {}) if quick else {})
    return config


def options_case(case: str, seeds: list[int], quick: bool, out: Path) -> None:
    """Scheduling or caching: ``wield run CASE --seed S`` (one trial with ``TrialSeeds.single_run(S)``)."""
    from wield.plugins import get_case_study
    from wield.protocols import TrialSeeds

    study = get_case_study(case)
    config = default_config(case, quick)
    learner = str(config.get("method", study.methods[0]))
    random_row = study.random_policy or "random"
    results = []
    for seed in seeds:
        summary, seconds = timed_trial(case, config, TrialSeeds.single_run(seed), out / f"{case}-{seed}")
        results.append(SeedResult(seed, summary.verdict or {}, [outcome_of(study.objective, summary.methods, learner),
                                                                outcome_of(study.objective, summary.methods,
                                                                           random_row)], seconds))
    defaults = {option.name: option.default for option in study.options}
    changed = ", ".join(f"{k} = {v}" for k, v in config.items() if defaults.get(k) != v) or "defaults"
    ladder_table(f"{case}, {learner}: {changed}; objective: {study.objective.describe()}", results,
                 [f"objective ({learner})", f"objective ({random_row})"])


def indexing(args: argparse.Namespace, out: Path) -> None:
    """Every ``--collection`` in turn: each learner's tables, then (``--budgets``) the budget table of the
    first learner and, after the last collection, the figure."""
    import budget_table

    design = {name: value for name, value in (("actions", args.actions), ("reward", args.reward)) if value}
    panels = []
    for collection in args.collection:
        data = collection_data(collection, args.rows, args.budgets)
        runs = budget_table.BudgetRuns(collection + (f" (first {args.rows:,} rows)" if args.rows and
                                                     collection != "generated" else ""))
        greedy = {learner: indexing_learner(learner, args.seeds, args.quick, out, args.rules, design, data,
                                            runs if learner == args.learners[0] else None)
                  for learner in args.learners}
        for other in args.learners[1:]:
            paired_difference(args.learners[0], other, greedy, args.seeds)
        if args.budgets:
            rows, numbers = budget_table.budget_rows(runs)
            print_table(f"indexing, {args.learners[0]} on {runs.collection}: reward at equal decision budgets "
                        f"(seeds {', '.join(map(str, sorted(runs.sweeps)))}; the verdict's held-out instances, "
                        "paired by instance; learned: the greedy policy at budget 0, the policy-guided search "
                        "above; the advisor stopped at the budget, no index at 0)", budget_table.COLUMNS, rows)
            print(budget_table.decision_line(runs))
            print(budget_table.closing_note(runs.collection, numbers))
            panels.append((runs.collection, numbers))
        sys.stdout.flush()
    if panels:
        figure = Path(args.figure) if args.figure else (Path(args.out) if args.out else Path.cwd()) / "budgets.png"
        print(f"figure: {budget_table.save_figure(panels, figure)}")


def main(argv: list[str] | None = None) -> int:
    from wield.numerics import apply_numerics_mode

    apply_numerics_mode()  # before torch computes: the wield command's arithmetic (WIELD_NUMERICS, wield.numerics)
    args = parse_args(argv)
    cases = CASES if args.case == "all" else (args.case,)
    with tempfile.TemporaryDirectory(prefix="wield-learning-check-") as scratch:
        out = Path(args.out) if args.out else Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        for case in cases:
            if case == "indexing":
                indexing(args, out)
            elif case == "placement":
                placement(args.seeds, args.quick, out)
            else:
                options_case(case, args.seeds, args.quick, out)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
