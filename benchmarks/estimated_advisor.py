"""The estimated advisor against the advisor, side by side on the same workloads (issue 42, docs/design.md 5.15).

For each collection, ``--workloads`` new 10-query workloads of the training templates (the distribution a C4
trial trains on), drawn from a named seed stream that no verdict draws from (``derive_seed(--stream-seed,
--stream, i)``; the defaults are the development stream the cost model was shaped on, so pass another
``--stream`` to see it on workloads it never saw). On each: the advisor (``advisor.advise``, its workload
evaluations on the engine) and the estimated advisor (``estimated_advisor.estimated_advice``, none), each set
scored by the engine with the task's reward. Prints, per collection, both mean rewards, the paired difference
with its 95% t interval, the gap as a share of the advisor's reward, wins/ties/losses, and the decision time
of each (median per workload) with their ratio, measured in this one run.

With ``--play``, the decision time of a greedy policy on the same workloads too (issue 42, goal 2 asks for
at least 100x less than the advisor's): its play as the verdict times it (``budgeted.PolicyPlayer``: per
query the shortlist design's state, built from the statistics-only estimates of every candidate, its mask,
and one forward pass of the slots network), split into state features and forward passes. The policy is
Wield's DQN with the design's default network, untrained: a forward pass costs the same whatever the
weights. Its play builds what the estimated advisor built (slot 1 while the estimated advisor added indexes,
then no-op: the set trained policies choose, docs/design.md section 5.20), so it visits as many index sets
as a trained policy; the line counts the workloads where the play's set differs from the estimated
advisor's. Its forward passes run in NumPy (``wield.agents.numpy_forward``), as the verdict's play runs them;
the line gives the network's own PyTorch pass on the same observations (timed after the NumPy play, so with
the estimates warm: only its forward passes are read), the near ties the NumPy pass left to the network, and
on how many workloads the policy's own play (no forced step) ends with another set in PyTorch than in NumPy. The advisor's measurements go to a fresh temporary cache, so a rerun reads nothing an earlier one
measured. The arithmetic is the one a run uses (``WIELD_NUMERICS``, default reproducible: ``wield.numerics``).
The play is then replayed twice on the same workload, to show what would be left if a new workload's work
were free: once with the workload's statistics-only estimates already made (its index sets' option tables,
slot tables and the NumPy pass's per-table parts worked out again), once with all of that made too.

    python benchmarks/estimated_advisor.py                                   # generated, 30 workloads
    python benchmarks/estimated_advisor.py --collection generated,flights --workloads 12 --stream fresh
    python benchmarks/estimated_advisor.py --play --stream decision --workloads 20 --documents 20000,200000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wield.numerics import apply_numerics_mode  # noqa: E402

apply_numerics_mode()  # the arithmetic a run uses (WIELD_NUMERICS, default reproducible), before torch loads

from case_studies.indexing.advisor import advise, set_reward  # noqa: E402
from case_studies.indexing.agents import learner_config  # noqa: E402
from case_studies.indexing.budgeted import PolicyPlayer  # noqa: E402
from case_studies.indexing.build import build_indexing_task, held_out_templates  # noqa: E402
from case_studies.indexing.cost_estimate import StatisticsCostModel  # noqa: E402
from case_studies.indexing.decision_cost import t_interval  # noqa: E402
from case_studies.indexing.defaults import ACTION_DESIGN  # noqa: E402
from case_studies.indexing.estimated_advisor import estimated_advice  # noqa: E402
from case_studies.indexing.shortlist_design import HEAD  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule  # noqa: E402
from workloads.files import load_collection  # noqa: E402


def collection_named(name: str, documents: int):
    """``generated`` (the IMDB-like default of ``wield run indexing --seed 0``) or a built-in or file
    collection (``flights``), its rows with NULLs dropped."""
    if name == "generated":
        return generate_imdb_collection(documents, derive_seed(0, "collection"))
    return load_collection(name, nulls="drop")


def greedy_player(task) -> PolicyPlayer:
    """An untrained DQN of the design's default network, on one torch thread (as a run plays it)."""
    from wield.agents import DQNAgent
    from wield.workflows.threads import apply_torch_threads

    apply_torch_threads()
    agent = DQNAgent(task.schema.state_space, task.schema.action_space, learner_config("dqn", ACTION_DESIGN, None),
                     seed=0)
    return PolicyPlayer(agent, task.schema, task.converter)


def replayed(player: PolicyPlayer, converter, workload: list, forced: dict) -> dict[str, float]:
    """The same play again, what it costs without the work a new workload asks (module docstring): with the
    workload's estimates made (its sets' option tables, slot tables and the NumPy pass's table parts worked out
    again: a fresh player's pass, ``converter.forget_sets``), then with everything made (the same player again).
    """
    fresh = PolicyPlayer(player.agent, player.schema, converter)
    converter.forget_sets()
    estimated = sum(fresh.rollout(workload, forced).seconds.values())
    return {"estimates_given": estimated, "all_given": sum(fresh.rollout(workload, forced).seconds.values())}


def play_lines(plays: list[dict[str, float]], advisor_seconds: list[float], differing: int,
               player: PolicyPlayer | None = None, network_differing: int = 0) -> list[str]:
    """The greedy policy's play against the advisor (module docstring), medians over the workloads."""
    def median(key: str) -> float:
        return statistics.median(p[key] for p in plays)

    total, queries = median("total"), median("queries")
    ratio = statistics.median(a / max(p["total"], 1e-12) for a, p in zip(advisor_seconds, plays))
    needed = statistics.median(advisor_seconds) / 100
    each = median("forward") / max(queries, 1) * 1e6
    forward = (f"in NumPy, {each:.0f} us each; the network's own PyTorch pass on the same observations "
               f"{median('network_forward') / max(queries, 1) * 1e6:.0f} us each; {player.network_checks} of "
               f"{player.forward_passes} passes were near ties the network decided; the play's set differs from "
               f"the PyTorch play's on {network_differing} of {len(plays)}"
               if player is not None and player.numpy_forward is not None else f"{each:.0f} us each")
    return [f"  greedy policy's play {total * 1e3:.1f} ms: state features and masks {median('state') * 1e3:.1f} ms "
            f"(the statistics-only estimates included), {queries:.0f} forward passes {median('forward') * 1e3:.1f} "
            f"ms ({forward}), other {median('rest') * 1e3:.1f} ms; "
            f"its set differs from the estimated advisor's on {differing} of {len(plays)} workloads",
            f"  advisor / greedy play: {ratio:.0f}x (median per workload); 100x asks for a play of at most "
            f"{needed * 1e3:.1f} ms, {needed / max(total, 1e-12):.2f} of the play measured; the forward passes "
            f"alone take {median('forward') / max(needed, 1e-12):.2f} of it",
            f"  the same play again: {median('estimates_given') * 1e3:.1f} ms with the workload's estimates already "
            f"made ({median('estimates_given') / max(needed, 1e-12):.2f} of what 100x allows), "
            f"{median('all_given') * 1e3:.1f} ms with its sets' option tables, slot tables and table passes made "
            f"too ({median('all_given') / max(needed, 1e-12):.2f}: masks, contexts, the passes over each step's "
            f"own features and near ties)"]


def side_by_side(name: str, documents: int, workloads: int, stream: str, stream_seed: int,
                 play: bool = False) -> list[str]:
    collection = collection_named(name, documents)
    with tempfile.TemporaryDirectory(prefix="wield-decision-") as cache:
        return _side_by_side(collection, name, workloads, stream, stream_seed, play, cache)


def _side_by_side(collection, name: str, workloads: int, stream: str, stream_seed: int, play: bool,
                  cache: str) -> list[str]:
    task = build_indexing_task(collection, cache_dir=cache)
    plays: list[dict[str, float]] = []
    differing = network_differing = 0
    try:
        system, converter = task.system, task.converter
        model = StatisticsCostModel(converter.statistics)
        player = greedy_player(task) if play else None
        # the same network's forward passes in PyTorch, timed after the NumPy play (its estimates then warm)
        network = PolicyPlayer(player.agent, task.schema, task.converter, numpy_forward=False) if player else None
        config = QueryWorkloadConfig(n_queries=10, exclude_templates=held_out_templates(collection))
        mine, theirs, my_seconds, their_seconds, evaluations = [], [], [], [], []
        for i in range(workloads):
            schedule = make_query_schedule(collection, config, derive_seed(stream_seed, stream, i), 1,
                                           per_episode=False)
            workload = list(schedule.task_for_episode(0))
            chosen = estimated_advice(model, converter, workload, task.schema.k, aggregate=system.aggregate)
            if player is not None and network is not None:
                built = len(chosen.configuration)
                forced = {step: {HEAD: 1 if step < built else 0} for step in range(len(workload))}
                rollout = player.rollout(workload, forced)
                plays.append({**rollout.seconds, "total": sum(rollout.seconds.values()),
                              "queries": float(len(workload)),
                              "network_forward": network.rollout(workload, forced).seconds["forward"],
                              **replayed(player, task.converter, workload, forced)})
                differing += set(rollout.configuration) != set(chosen.configuration)
                # the policy's own choices (no forced step) in both arithmetics
                network_differing += player.rollout(workload).configuration != network.rollout(workload).configuration
            references = system.references(workload)
            system.configure(chosen.configuration)
            costs = [float(c) for c in system.measure(workload)["costs"]]
            size = sum(system.index_size(spec) for spec in chosen.configuration)
            mine.append(set_reward(system, converter, references, size, costs))
            advised = advise(system, converter, workload)
            theirs.append(advised.reward)
            my_seconds.append(chosen.seconds)
            their_seconds.append(advised.seconds)
            evaluations.append(advised.evaluations)
    finally:
        task.close()
    differences = [a - b for a, b in zip(mine, theirs)]
    mean, low, high = t_interval(differences)
    advisor_mean = statistics.fmean(theirs)
    wins = sum(d > 1e-12 for d in differences)
    ties = sum(abs(d) <= 1e-12 for d in differences)
    mine_time, their_time = statistics.median(my_seconds), statistics.median(their_seconds)
    return [f"{name} ({len(collection):,} rows; {workloads} workloads of stream '{stream}', seed {stream_seed}):",
            f"  reward: estimated advisor {statistics.fmean(mine):.3f}, advisor {advisor_mean:.3f}; estimated - advisor "
            f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] (paired 95% t CI), a gap of {-100 * mean / abs(advisor_mean):.1f}% "
            f"of the advisor's reward; better/tied/worse on {wins}/{ties}/{len(differences) - wins - ties}",
            f"  decision time per workload (median): estimated advisor {mine_time * 1e3:.1f} ms (no engine "
            f"evaluation), advisor {their_time:.3f} s ({statistics.fmean(evaluations):.0f} evaluations): "
            f"{their_time / max(mine_time, 1e-12):.0f}x",
            *(play_lines(plays, their_seconds, differing, player, network_differing) if plays else [])]


def add_stream_options(parser: argparse.ArgumentParser, workloads: int) -> None:
    """``--workloads``, ``--stream`` and ``--stream-seed``: the new workloads a benchmark draws (module docstring)."""
    parser.add_argument("--workloads", type=int, default=workloads,
                        help=f"workloads per collection (default {workloads})")
    parser.add_argument("--stream", default="eval",
                        help="the seed stream's name (default eval: the development stream the cost model was "
                             "shaped on)")
    parser.add_argument("--stream-seed", type=int, default=11, help="the seed stream's root (default 11)")


def add_collection_options(parser: argparse.ArgumentParser) -> None:
    """``--collection`` (comma-separated names) and ``--documents`` (one size of the generated collection)."""
    parser.add_argument("--collection", default="generated",
                        help="comma-separated: generated (IMDB-like, --documents rows), flights, or a file")
    parser.add_argument("--documents", type=int, default=20000,
                        help="rows of the generated collection (default 20000)")


def parsed_options(parser: argparse.ArgumentParser, argv: list[str] | None, interval: str) -> argparse.Namespace:
    """``parser``'s arguments, refusing fewer than 2 workloads (``interval`` needs two) or 100 rows."""
    args = parser.parse_args(argv)
    if args.workloads < 2:
        parser.error(f"--workloads must be at least 2 ({interval} needs two)")
    if args.documents < 100:
        parser.error("--documents must be at least 100 rows")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", default="generated",
                        help="comma-separated: generated (IMDB-like, --documents rows), flights, or a file")
    parser.add_argument("--documents", default="20000",
                        help="rows of the generated collection, comma-separated for several sizes (default 20000)")
    parser.add_argument("--play", action="store_true",
                        help="also time a greedy policy's play on the same workloads, split into state features "
                             "and forward passes, against the advisor (issue 42's goal 2: >= 100x less)")
    add_stream_options(parser, workloads=30)
    args = parser.parse_args(argv)
    if args.workloads < 2:
        parser.error("--workloads must be at least 2 (a paired interval needs two)")
    try:
        sizes = [int(part) for part in args.documents.split(",")]
    except ValueError:
        parser.error(f"--documents takes whole numbers of rows, comma-separated, not {args.documents!r}")
    if any(size < 100 for size in sizes):
        parser.error("--documents: each size must be at least 100 rows")
    for name in args.collection.split(","):
        for size in sizes if name.strip() == "generated" else sizes[:1]:
            for line in side_by_side(name.strip(), size, args.workloads, args.stream, args.stream_seed, args.play):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
