"""The ``--train-on`` protocols of a blackbox indexing run side by side (issue 42, goal 3): the greedy policy
against the unrestricted advisor on the verdict's held-out redraws, seed by seed.

For every seed and protocol (``--train-on workload``, the default, and ``redraws``) the default single run
(``wield run indexing --seed S --train-on P``, through the same trial function: ``run_trial`` with the run's
single-run seeds), then one row per seed:

- ``P: greedy - advisor``: the verdict's advisor rung, the mean per-instance difference of the greedy
  policy's reward and the advisor's on the verdict's instances (the training workload's queries with
  predicate values drawn anew, seeds of the stream ``evaluation-instances``), its paired 95% CI and the
  rung's outcome (better / worse / indistinguishable);
- ``P: greedy``: the greedy policy's mean reward there; ``s``: wall seconds of the run.

A closing line per protocol counts the seeds on which the greedy policy is at least as good as the advisor
(mean difference >= 0; the goal: 3 of 5) and those on which it is not significantly worse (the CI reaches
0), and the paired difference redraws - workload of the greedy policy's mean reward over the seeds (95% t
interval). ``--collection`` runs every seed on another collection (as ``wield run indexing --collection``,
e.g. ``flights``); ``--episodes`` changes the training episodes of every run (default: the run's default);
``--method dqfd --rules advisor`` (with ``--pretrain-steps`` and ``--agent-param KEY=VALUE``) trains the
learner from demonstrations its rules label on the run's own training episodes (under ``redraws``: the
training redraws, never the verdict's instances). ``--instances selection`` draws the held-out redraws from
the trial's selection stream instead of the verdict's (``wield.workflows.verdict_settings.instance_stream``):
compare variants there, then report the chosen one with ``--instances verdict`` (the default). The runs
compute in the ``wield`` command's arithmetic (``WIELD_NUMERICS``, reproducible by default: wield/numerics.py),
so each row is the run ``wield run indexing --seed S --train-on P`` gives.

    python benchmarks/redraw_protocol.py                      # seeds 0-4, both protocols (about 30 min, 2 cores)
    python benchmarks/redraw_protocol.py --seeds 0 1 --protocols redraws --episodes 400
    python benchmarks/redraw_protocol.py --protocols redraws --method dqfd --rules advisor --instances selection
    python benchmarks/redraw_protocol.py --collection flights --protocols redraws   # the real table
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from case_studies.indexing.train_on import TRAIN_ON
    from wield.cli.config_file import add_agent_parameter_option
    from wield.workflows.verdict_settings import STREAMS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="run seeds (default 0-4)")
    parser.add_argument("--protocols", default=",".join(TRAIN_ON), help="comma-separated --train-on values "
                                                                        f"(default {','.join(TRAIN_ON)})")
    parser.add_argument("--episodes", type=int, default=None, help="training episodes (default: the run's)")
    parser.add_argument("--method", choices=("dqn", "dqfd"), default="dqn", help="the learner (default dqn)")
    parser.add_argument("--rules", default=None, help="--method dqfd: comma-separated labelling rules of its "
                                                      "training episodes (default: the run's)")
    parser.add_argument("--pretrain-steps", type=int, default=None, help="--method dqfd: pretraining steps "
                                                                          "(default: the run's)")
    add_agent_parameter_option(parser)
    parser.add_argument("--instances", choices=STREAMS, default="evaluation",
                        help="held-out redraws of the verdict's stream (evaluation, the default) or of the "
                             "selection stream, to choose between variants without touching the verdict's")
    parser.add_argument("--collection", default=None, metavar="NAME|FILE",
                        help="the runs' --collection (e.g. flights; default: the generated collection)")
    parser.add_argument("--out", default=None, help="keep the run records under this directory")
    args = parser.parse_args(argv)
    args.protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    for protocol in args.protocols:
        if protocol not in TRAIN_ON:
            parser.error(f"--protocols: {protocol!r} is not one of {', '.join(TRAIN_ON)}")
    if args.method != "dqfd" and (args.rules or args.pretrain_steps is not None):
        parser.error("--rules and --pretrain-steps need --method dqfd")
    return args


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run configuration's fields the options set: the learner's and the collection (none: the run's defaults)."""
    from wield.cli.config_file import agent_parameters

    options: dict[str, Any] = {"agent": args.method}
    if args.collection:
        options["collection"] = args.collection
    if args.rules:
        options["rules"] = [rule.strip() for rule in args.rules.split(",") if rule.strip()]
    if args.pretrain_steps is not None:
        options["pretrain_steps"] = args.pretrain_steps
    if args.agent_params:
        options["hyperparameters"] = agent_parameters(args)
    return options


def advisor_rung(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """The verdict's heuristic rung against the advisor, or None."""
    for rung in (verdict or {}).get("rungs", []):
        if rung.get("kind") == "heuristic" and rung.get("name") == "advisor":
            return rung
    return None


def run_seed(seed: int, protocol: str, episodes: int | None, directory: Path, learner: dict[str, Any] | None = None,
             instances: str = "evaluation") -> dict[str, Any]:
    """One default single run (with ``learner``'s fields of the run configuration, and its verdict on the
    ``instances`` stream); its advisor rung's figures and its seconds."""
    from case_studies.indexing.run import IndexingRunConfig
    from wield.workflows import run_trial
    from wield.workflows.verdict_settings import instance_stream

    config = IndexingRunConfig(seed=seed, train_on=protocol, **(learner or {}),
                               **({"episodes": episodes} if episodes is not None else {})).validate()
    started = time.perf_counter()
    with instance_stream(instances):
        summary = run_trial("indexing", asdict(config), config.single_run_seeds(), str(directory), progress=False)
    rung = advisor_rung(summary.verdict) or {}
    return {"difference": rung.get("mean_difference"), "low": rung.get("ci_low"), "high": rung.get("ci_high"),
            "outcome": rung.get("outcome", "-"), "greedy": rung.get("learner_mean"),
            "seconds": time.perf_counter() - started}


def cell(result: dict[str, Any]) -> str:
    if result.get("difference") is None:
        return "-"
    return (f"{result['difference']:+.3f} [{result['low']:+.3f}, {result['high']:+.3f}] {result['outcome']}"
            if result.get("low") is not None else f"{result['difference']:+.3f} {result['outcome']}")


def main(argv: list[str] | None = None) -> int:
    from wield.numerics import apply_numerics_mode

    apply_numerics_mode()  # before torch computes: the wield command's arithmetic (WIELD_NUMERICS, wield.numerics)
    from case_studies.indexing.decision_cost import t_interval

    args = parse_args(argv)
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="redraw-protocol-"))
    results: dict[str, dict[int, dict[str, Any]]] = {p: {} for p in args.protocols}
    for seed in args.seeds:
        for protocol in args.protocols:
            found = run_seed(seed, protocol, args.episodes, root / f"{protocol}-seed{seed}", run_options(args),
                             args.instances)
            results[protocol][seed] = found
            print(f"seed {seed} {protocol}: greedy - advisor {cell(found)} ({found['seconds']:.0f} s)", flush=True)
    episodes = f"{args.episodes} episodes" if args.episodes is not None else "default episodes"
    learner = ", ".join(f"{k}={v}" for k, v in run_options(args).items())
    where = ("the verdict's held-out redraws" if args.instances == "evaluation" else
             "held-out redraws of the SELECTION stream (for choosing a variant; not the verdict's instances)")
    print(f"\ngreedy policy - unrestricted advisor on {where} (mean reward difference per instance [paired 95% "
          f"CI] outcome; {episodes}; {learner}; run records under {root})")
    columns = ["seed", *(f"{p}: greedy - advisor" for p in args.protocols), *(f"{p}: greedy" for p in args.protocols)]
    rows = [[str(seed), *(cell(results[p][seed]) for p in args.protocols),
             *(f"{results[p][seed]['greedy']:.3f}" if results[p][seed].get("greedy") is not None else "-"
               for p in args.protocols)] for seed in args.seeds]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(value.rjust(w) for value, w in zip(row, widths)))
    for protocol in args.protocols:
        found = [r for r in results[protocol].values() if r.get("difference") is not None]
        at_least = sum(r["difference"] >= 0 for r in found)
        not_worse = sum(r["high"] is None or r["high"] >= 0 for r in found)
        mean, low, high = t_interval([r["difference"] for r in found]) if found else (float("nan"),) * 3
        goal = "met" if at_least >= 3 and len(found) >= 5 else "not met"
        print(f"{protocol}: greedy at least as good as the advisor (mean difference >= 0) on {at_least} of "
              f"{len(found)} seeds (goal: 3 of 5: {goal}); not significantly worse on {not_worse} of {len(found)}; "
              f"mean over seeds {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    if len(args.protocols) == 2:
        first, second = args.protocols
        paired = [results[second][s]["greedy"] - results[first][s]["greedy"] for s in args.seeds
                  if results[first][s].get("greedy") is not None and results[second][s].get("greedy") is not None]
        if paired:
            mean, low, high = t_interval(paired)
            print(f"greedy policy's mean reward, {second} - {first}, paired over {len(paired)} seeds: {mean:+.3f} "
                  f"[{low:+.3f}, {high:+.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
