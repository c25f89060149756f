"""The scheduling suite: per cell, tuned Clockwork, the shipped heuristics, random and the agent, over seeds.

The cells are ``case_studies.scheduling.suite.SUITE`` (the 4-GPU overload, multi-SLO, tight-SLO and
Azure-like-bursts workloads, where the best tuned heuristic stays below 100% of the SLOs). Per seed and cell:
Clockwork's lookahead is tuned on the seed's validation draw (grid 0, 0.25, 0.5, 1, 2, 5, 10 ms), then every method
serves the seed's held-out test instance: tuned Clockwork (the chosen lookahead is printed), shipped
Clockwork (5 ms), EDF, FIFO, the one-line urgent-batch rule, the masked uniform random policy and the agent
(sb3-contrib's MaskablePPO on the vector environment, the findings benchmark's learner, trained on the cell's
own training instances; its checkpoint chosen on the validation draw). Printed per cell: % SLO met, mean and
95% t-interval over seeds, with the per-seed figures; the cell's ceiling (the best method's mean); and
``agent vs tuned clockwork: better|worse|indistinguishable (mean difference [CI], wins k/n)``, paired by seed.

``--fixed-share`` re-times every model with another fixed share of the ASSUMED batch-latency curve (0.8
shipped); ``--profile clockwork-resnet50`` re-times them with the ResNet-50 curve Clockwork's authors measured
on a GPU (the Azure-like families scaled from its least-squares line, still ASSUMED). ``--no-agent`` measures
the heuristics only; ``--agent-cells`` trains on some cells only; ``--episodes``, ``--first-decisions``,
``--max-decisions`` and ``--agent-decisions`` (the most decisions in all: the schedule is cut after the last
whole episode within it) shrink the agent's budget; ``--agent-masks late`` trains and plays the agent with the
task design's late masks (batches that would finish after their oldest request's deadline are forbidden;
``late-idle`` also waits while the decided GPU has 1 ms or more of work; ``late-idle-joint`` also judges an
action's batches together, not dispatching one that would finish late after the batches before it; ``fit``, the
default, is the modelled study's masks; the heuristic and random rows are the same either way). Results go to
``--out`` (JSON, rewritten after every seed: a stopped run resumes; seeds already there with the same settings
are not run again); ``--workers N`` runs N seeds at once, each in its own process. Usage:

python benchmarks/scheduling_suite.py [--seeds 0 1 2 3 4] [--workers 2] [--no-agent] [--agent-cells multi-slo]
    [--episodes 20] [--agent-decisions 200000] [--fixed-share 0.2 | --profile clockwork-resnet50]
    [--agent-masks late] [--out scheduling_suite.json]
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any, Sequence

from confidence import mean_ci_text  # benchmarks/confidence.py, beside this script
# benchmarks/seed_runs.py: the resumable seed pool
from seed_runs import add_pool_options, add_schedule_options, check_workers, one_torch_thread, run_seeds
from case_studies.scheduling.profile import ACCELERATOR_FIXED_SHARE, DEFAULT_PROFILE, profile_names
from case_studies.scheduling.suite import (AGENT_ROW, CELL_NAMES, HEURISTIC_ROWS, Curve, agent_row, agent_schedule,
                                           ceiling, cell_named, compare, curve_label, heuristic_rows)
from case_studies.scheduling.task_design import MASK_DESIGNS
from wield.analysis import format_table

LABELS = {"clockwork-tuned": "clockwork, tuned lookahead", "clockwork": "clockwork, shipped (5 ms)", "edf": "EDF",
          "fifo": "FIFO", "urgent-batch": "urgent-batch rule", "random": "random (masked uniform)",
          AGENT_ROW: "agent (MaskablePPO)"}


def one_seed(seed: int, cells: Sequence[str], agent_cells: Sequence[str], lengths: list[int], envs: int,
             curve: Curve, masks: str = MASK_DESIGNS[0]) -> dict[str, Any]:
    """Every cell's heuristic rows of one seed, and the agent's (with the ``masks`` design) on ``agent_cells``."""
    out: dict[str, Any] = {"seconds": {}}
    for name in cells:
        cell = cell_named(name)
        started = time.perf_counter()
        out[name] = heuristic_rows(cell, seed, curve)
        if name in agent_cells:
            trained = agent_row(cell, seed, lengths, envs, curve, masks)
            out[name]["methods"][AGENT_ROW] = trained.pop("figures")
            out[name]["agent"] = trained
            print(f"seed {seed}: {name}: agent trained in {trained['train_s']:.0f} s ({trained['decisions']:,} "
                  f"decisions, best episode {trained['best_episode']})", flush=True)
        out["seconds"][name] = time.perf_counter() - started
    return out


def cell_report(name: str, results: dict[int, dict[str, Any]], masks: str = MASK_DESIGNS[0],
                curve: Curve = None) -> str:
    """The cell's table over seeds, its ceiling and the agent's comparison with tuned Clockwork (``masks``: the
    agent's mask design, named in its row)."""
    cell = cell_named(name)
    agent = LABELS[AGENT_ROW] if masks == MASK_DESIGNS[0] else f"agent (MaskablePPO, {masks} masks)"
    labels = {**LABELS, AGENT_ROW: agent}
    seeds = sorted(seed for seed, r in results.items() if name in r)
    per_method: dict[str, list[float]] = {}
    for method in (*HEURISTIC_ROWS, AGENT_ROW):
        values = [100.0 * results[s][name]["methods"][method]["slo_satisfaction"] for s in seeds
                  if method in results[s][name]["methods"]]
        if values:
            per_method[method] = values
    rows = []
    for method, values in per_method.items():
        batch = [results[s][name]["methods"][method]["mean_batch_size"] for s in seeds
                 if method in results[s][name]["methods"]]
        rows.append({"method": labels[method], "slo": mean_ci_text(values), "n": len(values),
                     "per_seed": ", ".join(f"{v:.1f}" for v in values), "batch": sum(batch) / len(batch)})
    lookaheads = ", ".join(f"{results[s][name]['lookahead_ms']:g}" for s in seeds)
    reach = f"  wield run scheduling {cell.cli}" + (
        f" --profile {curve}" if isinstance(curve, str) and curve != DEFAULT_PROFILE
        else "" if curve is None else "  (at the shipped curve; the other share is not a command-line option)")
    lines = [f"{name}: {cell.what}", reach,
             format_table(rows, [("method", "method", None), ("slo", "SLO met % (mean +- 95% CI)", None),
                                 ("n", "seeds", "d"), ("per_seed", "per seed", None),
                                 ("batch", "mean batch", ".2f")]),
             f"  tuned lookahead per seed (ms, chosen on the validation draw): {lookaheads}"]
    best, level = ceiling(per_method)
    lines.append(f"  ceiling (best method found): {labels[best]} {level:.1f}%")
    if AGENT_ROW in per_method:
        paired = [s for s in seeds if AGENT_ROW in results[s][name]["methods"]]
        agent = [100.0 * results[s][name]["methods"][AGENT_ROW]["slo_satisfaction"] for s in paired]
        tuned = [100.0 * results[s][name]["methods"]["clockwork-tuned"]["slo_satisfaction"] for s in paired]
        budget = {results[s][name]["agent"]["decisions"] for s in paired}
        lines.append(f"  {compare(agent, tuned).line()}; agent budget "
                     f"{', '.join(f'{d:,}' for d in sorted(budget))} decisions")
    return "\n".join(lines)


def main() -> None:
    from wield.numerics import apply_numerics_mode

    apply_numerics_mode()  # the wield command's arithmetic (WIELD_NUMERICS, reproducible by default), before torch
    one_torch_thread()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--cells", nargs="+", choices=CELL_NAMES, default=list(CELL_NAMES))
    parser.add_argument("--no-agent", action="store_true", help="measure the heuristics only")
    parser.add_argument("--agent-cells", nargs="+", choices=CELL_NAMES, default=None,
                        help="cells the agent trains on (default: every cell measured)")
    add_schedule_options(parser)
    parser.add_argument("--agent-decisions", type=int, default=None,
                        help="the most training decisions in all (the schedule is cut after the last whole episode)")
    timing = parser.add_mutually_exclusive_group()
    timing.add_argument("--fixed-share", type=float, default=ACCELERATOR_FIXED_SHARE,
                        help=f"fixed share of the ASSUMED ResNet-50 batch curve (shipped: {ACCELERATOR_FIXED_SHARE})")
    timing.add_argument("--profile", choices=profile_names(), default=None,
                        help="a shipped ResNet-50 profile instead (clockwork-resnet50: measured by Clockwork's "
                             "authors on a GPU; see case_studies/scheduling/profile.py)")
    parser.add_argument("--agent-masks", choices=MASK_DESIGNS, default=MASK_DESIGNS[0],
                        help="the agent's mask design: fit (the modelled study's), late (also forbids batches that "
                             "would finish after their oldest request's deadline), late-idle (late, and no dispatch "
                             "onto a GPU with 1 ms or more of outstanding work) or late-idle-joint (late-idle, and a "
                             "batch that would finish late after the batches chosen before it is not dispatched)")
    add_pool_options(parser, "scheduling_suite.json")
    args = parser.parse_args()
    check_workers(parser, args.workers)
    if not 0.0 <= args.fixed_share < 1.0:
        parser.error(f"--fixed-share must be in [0, 1), not {args.fixed_share}")
    if args.agent_decisions is not None and args.agent_decisions < 1:
        parser.error(f"--agent-decisions must be at least 1, not {args.agent_decisions}")
    agent_cells = [] if args.no_agent else [c for c in (args.agent_cells or args.cells) if c in args.cells]
    lengths = agent_schedule(args.episodes, args.first_decisions, args.max_decisions, args.agent_decisions)
    curve: Curve = args.profile if args.profile not in (None, DEFAULT_PROFILE) else (
        None if args.fixed_share == ACCELERATOR_FIXED_SHARE else args.fixed_share)
    print(f"cells {args.cells}; seeds {args.seeds}; {curve_label(curve)}; agent: "
          + (f"{len(lengths)} episodes, {sum(lengths):,} decisions, {args.envs} environments, {args.agent_masks} "
             f"masks, on {agent_cells}"
             if agent_cells else "not run"), flush=True)
    job = functools.partial(one_seed, cells=args.cells, agent_cells=agent_cells, lengths=lengths, envs=args.envs,
                            curve=curve, masks=args.agent_masks)
    settings = {"cells": args.cells, "agent_cells": agent_cells, "lengths": lengths if agent_cells else [],
                "envs": args.envs if agent_cells else None, "fixed_share": args.fixed_share}
    if isinstance(curve, str):  # a file of the shipped curve (no "profile" key) is not resumed from, nor the reverse
        settings["profile"] = curve
    if agent_cells:  # a file of the other mask design is not resumed from
        settings["agent_masks"] = args.agent_masks
    results = run_seeds(job, args.seeds, args.out, settings, args.workers)
    print(f"\n% of requests meeting their SLO on each seed's held-out test instance (seed + 1000); "
          f"{curve_label(curve)}; mean +- 95% t-interval over seeds {sorted(results)}\n")
    for name in args.cells:
        print(cell_report(name, results, args.agent_masks if agent_cells else MASK_DESIGNS[0], curve) + "\n")
    print("wall seconds per seed: " + ", ".join(f"{seed}: {r['seconds']['seed']:.0f}"
                                                for seed, r in sorted(results.items())))


if __name__ == "__main__":
    main()
