"""Does the learner learn on the default tasks, and does the default objective discriminate? Seeds side by side.

Indexing: for every seed, ``wield run indexing --seed S`` at the defaults (the same trial function, through
``wield.workflows.run_trial``), then one row of its learning verdict (``evaluation.json["verdict"]``):

- first10 / last10: mean return of the first / last 10 training episodes (epsilon near 1 at the start, so
  the first ten are close to random play);
- greedy: the trained policy's greedy return on the run's workload; random: 20 episodes of the uniformly
  random policy over the valid actions on the same workload, mean +- sample sd; d = (greedy - mean) / sd;
- learned: greedy > random mean + 2 sd, last10 > first10 and greedy > the no-index policy's return (-Q);
- whether the random policy's index set (row ``random-policy``), the greedy policy's (``dqn-greedy``) and
  the best set seen in training (``dqn``: a search outcome, not a learned policy) meet the default objective
  (mean latency improvement >= 50% and index bytes <= 50% of the full index), as the run measures them.

Placement: ``wield run placement --seed S --baselines random,heft,single`` at the defaults (default graph,
500 graph evaluations): the Wield placer's verdict (greedy placement from a state training shows, against
20 random layer-major placements), and whether the placer's best placement (a search outcome) and random
search's best at the same 500 evaluations meet the objective (speed-up over the single-device placement
>= 1.1); HEFT's speed-up for scale.

``--learners dqn,sb3-maskable-ppo`` tables each indexing learner in turn through the same trial
(``wield run indexing --agent L``: same collection, workload, reward and n = E x Q transitions; the
Stable-Baselines3 learners need ``pip install -e '.[sb3]'``; MaskablePPO's rollouts are 1/20 of the budget,
minibatches 64, the library's other defaults) and then the paired difference of greedy returns of each
against the first over the seeds, with a 95% t interval and the paired t test's p (scipy): "within noise"
when the interval contains 0. Placement tables its default placer.

    python benchmarks/learning_check.py                       # both tables, seeds 0-4, defaults
    python benchmarks/learning_check.py --case indexing --seeds 0 1 --quick   # small settings, minutes
    python benchmarks/learning_check.py --case indexing --learners dqn,sb3-maskable-ppo   # + the reference

Run records go to a temporary directory (``--out DIR`` keeps them). Wall times are whatever the machine
gives; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUICK_INDEXING = dict(documents=4000, queries=8, episodes=30, repetitions=1)
QUICK_PLACEMENT = dict(budget=60)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=("indexing", "placement", "both"), default="both")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--learners", default="dqn",
                        help="indexing learners, comma-separated, each tabled in turn (any 'wield run indexing "
                             "--agent' name: dqn, dqfd, sb3-maskable-ppo, sb3-ppo, sb3-a2c); with more than "
                             "one, the paired difference of greedy returns of each against the first")
    parser.add_argument("--quick", action="store_true",
                        help=f"small settings to try the script (indexing {QUICK_INDEXING}, placement "
                             f"{QUICK_PLACEMENT}); the defaults are what the verdict is about")
    parser.add_argument("--out", default=None, help="keep the run records under this directory")
    args = parser.parse_args(argv)
    from case_studies.indexing.methods import learner_methods
    from wield.configs import parse_name_list
    from wield.errors import ConfigError

    try:
        args.learners = parse_name_list(args.learners, "--learners", learner_methods(), what="learner")
    except ConfigError as exc:
        parser.error(str(exc))
    return args


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    print(f"\n{title}")
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


def verdict_cells(verdict: dict[str, Any]) -> list[str]:
    return [_fmt(verdict.get("first_mean")), _fmt(verdict.get("last_mean")), _fmt(verdict["greedy_return"]),
            f"{verdict['random_mean']:.2f} +- {verdict['random_sd']:.2f}", _fmt(verdict["effect_size"], ".1f"),
            _yes(verdict["learned"])]


VERDICT_COLUMNS = ["first10", "last10", "greedy", "random mean +- sd", "d", "learned"]


# ---------------------------------------------------------------------------------------- indexing
def indexing_config(seed: int, quick: bool, learner: str = "dqn"):
    from case_studies.indexing.run import IndexingRunConfig

    return IndexingRunConfig(seed=seed, agent=learner, **(QUICK_INDEXING if quick else {})).validate()


def indexing_learner(learner: str, seeds: list[int], quick: bool, out: Path) -> dict[int, float]:
    """One verdict row per seed for ``learner``; returns its greedy return per seed."""
    from case_studies.indexing.defaults import OBJECTIVE
    from wield.workflows import run_trial

    rows, learned, random_meets, greedy = [], 0, 0, {}
    config = indexing_config(seeds[0], quick, learner)
    for seed in seeds:
        config = indexing_config(seed, quick, learner)
        started = time.perf_counter()
        summary = run_trial("indexing", asdict(config), config.single_run_seeds(),
                            str(out / f"indexing-{learner}-{seed}"), progress=False)
        verdict, methods = summary.verdict or {}, summary.methods
        meets = {name: OBJECTIVE.met(methods[name]) for name in ("random-policy", f"{learner}-greedy", learner)}
        learned += bool(verdict.get("learned"))
        random_meets += meets["random-policy"]
        greedy[seed] = float(verdict["greedy_return"])
        rows.append([str(seed), *verdict_cells(verdict), _fmt(verdict.get("trivial_return")),
                     _yes(meets["random-policy"]), _yes(meets[f"{learner}-greedy"]), _yes(meets[learner]),
                     f"{time.perf_counter() - started:.0f}"])
    print_table(f"indexing, {learner}: {config.documents:,} documents, {config.queries} queries, k = {config.k}, "
                f"{config.episodes} episodes (n = {config.episodes * config.queries:,}), w_m = {config.size_weight:g}, "
                f"w_t = {config.runtime_weight:g}; objective: {OBJECTIVE.describe()}",
                ["seed", *VERDICT_COLUMNS, "no-index", "random meets", "greedy meets", "best seen meets (search)",
                 "s"], rows)
    print(f"{learner}: learned in {learned}/{len(seeds)} seeds; the random policy meets the objective in "
          f"{random_meets}/{len(seeds)}")
    return greedy


def paired_difference(first: str, other: str, greedy: dict[str, dict[int, float]], seeds: list[int]) -> None:
    """The paired difference of greedy returns (first - other) over the seeds, with a 95% t interval."""
    differences = [greedy[first][s] - greedy[other][s] for s in seeds]
    mean = statistics.fmean(differences)
    line = (f"greedy return, mean over seeds: {first} {statistics.fmean(greedy[first].values()):.2f}, {other} "
            f"{statistics.fmean(greedy[other].values()):.2f}; paired difference {first} - {other} = {mean:+.2f}")
    if len(differences) > 1:
        from scipy import stats

        test = stats.ttest_rel([greedy[first][s] for s in seeds], [greedy[other][s] for s in seeds])
        low, high = test.confidence_interval(0.95)
        line += (f", 95% CI [{low:+.2f}, {high:+.2f}], paired t p = {test.pvalue:.2f}: "
                 f"{'within noise' if low <= 0 <= high else 'different'}")
    print(line)


# ---------------------------------------------------------------------------------------- placement
def placement(seeds: list[int], quick: bool, out: Path) -> None:
    from case_studies.placement.methods import OBJECTIVE
    from case_studies.placement.run import PlacementRunConfig
    from wield.workflows import run_trial

    rows, learned, search_meets = [], 0, 0
    config = PlacementRunConfig()
    for seed in seeds:
        config = PlacementRunConfig(seed=seed, baselines=["random", "heft", "single"],
                                    **(QUICK_PLACEMENT if quick else {})).validate()
        started = time.perf_counter()
        summary = run_trial("placement", asdict(config), config.single_run_seeds(), str(out / f"placement-{seed}"),
                            progress=False)
        verdict, methods = summary.verdict or {}, summary.methods
        learned += bool(verdict.get("learned"))
        search_meets += OBJECTIVE.met(methods["random"])
        best, search = methods["wield"], methods["random"]
        rows.append([str(seed), *verdict_cells(verdict),
                     f"{best['best_step_time_ms']:.2f} ({best['speedup_vs_single_device']:.2f}x)",
                     _yes(OBJECTIVE.met(best)),
                     f"{search['best_step_time_ms']:.2f} ({search['speedup_vs_single_device']:.2f}x)",
                     _yes(OBJECTIVE.met(search)), f"{methods['heft']['speedup_vs_single_device']:.2f}x",
                     f"{time.perf_counter() - started:.0f}"])
    print_table(f"placement, Wield placer: {config.family} default graph, {config.topology}, budget "
                f"{config.budget} graph evaluations; returns are -step time / reference; objective: "
                f"{OBJECTIVE.describe()}",
                ["seed", *VERDICT_COLUMNS, "placer best ms (vs single)", "meets (search outcome)",
                 "random search best ms", "meets", "HEFT", "s"], rows)
    print(f"learned in {learned}/{len(seeds)} seeds; random search at the same budget meets the objective in "
          f"{search_meets}/{len(seeds)}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wield-learning-check-") as scratch:
        out = Path(args.out) if args.out else Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        if args.case in ("indexing", "both"):
            greedy = {learner: indexing_learner(learner, args.seeds, args.quick, out) for learner in args.learners}
            for other in args.learners[1:]:
                paired_difference(args.learners[0], other, greedy, args.seeds)
        if args.case in ("placement", "both"):
            placement(args.seeds, args.quick, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
