"""Wield's DQN beside a reference learner from Stable-Baselines3 (sb3-contrib MaskablePPO by default) on one
indexing task, at the same budget of transitions, seed by seed.

For each seed both learners train on the same task (collection, workload, reward weights: built by the
indexing case study exactly as ``wield run indexing`` builds it, with the seed's typed trial seeds) through
the same loop (``wield.workflows.train_online``) for ``--episodes`` episodes of ``--queries`` steps. Printed
per seed and learner: transitions, the mean return of the first and last 10 training episodes, the greedy
return (one episode with ``explore=False`` on the training workload), the random policy's mean +- sd over
``--random-episodes`` episodes on the same workload, the greedy return's margin over it in sds, and the wall
time (noisy on a shared machine). Then the paired difference of greedy returns over the seeds, with a 95%
t interval and the paired t test's p (scipy): "within noise" when the interval contains 0.

Needs the optional extra: pip install 'wield[sb3]'.

Usage: python benchmarks/sb3_reference.py [--seeds 0 1 2] [--documents 20000] [--queries 10] [--episodes 200]
           [--size-weight 1.0] [--reference sb3-maskable-ppo] [--random-episodes 20] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from case_studies.indexing.agents import make_run_agent
from case_studies.indexing.build import build_run
from case_studies.indexing.run import IndexingRunConfig
from wield.agents import RandomAgent
from wield.tasks import TaskGraph
from wield.workflows import RunRecord, run_episode, train_online


def play(env, agent, episodes: int, explore: bool) -> list[float]:
    """Returns of ``episodes`` episodes of the schedule's first task, without learning."""
    graph = TaskGraph.single(agent, name="indexer")
    return [run_episode(env, graph, explore=explore, learn=False, options={"episode": 0}).total_reward
            for _ in range(episodes)]


def run_learner(args: argparse.Namespace, seed: int, agent_name: str, workdir: Path,
                random_episodes: int) -> dict:
    config = IndexingRunConfig(documents=args.documents, queries=args.queries, episodes=args.episodes, seed=seed,
                               size_weight=args.size_weight, repetitions=1, agent=agent_name).validate()
    seeds = config.single_run_seeds()
    record = RunRecord.create(workdir / f"{agent_name}-seed{seed}")
    run = build_run(config, seeds, record)
    try:
        env = run.task.environment(run.schedule)
        started = time.perf_counter()
        agent = make_run_agent(config, run.task, run.schedule, seeds.optimisation_seed, record, echo=lambda _: None)
        curve = [r.total_reward for r in train_online(env, TaskGraph.single(agent, name="indexer"),
                                                      config.episodes, progress=False)]
        seconds = time.perf_counter() - started
        print(f"  seed {seed} {agent_name}: trained in {seconds:.0f} s", flush=True)
        greedy = play(env, agent, 1, explore=False)[0]
        random_returns = play(env, RandomAgent(env.action_space, seed=seeds.derive("random_policy")),
                              random_episodes, explore=True) if random_episodes else []
    finally:
        run.close()
    return {"seed": seed, "agent": agent_name, "transitions": agent.steps_observed,
            "first10": statistics.fmean(curve[:10]), "last10": statistics.fmean(curve[-10:]), "greedy": greedy,
            "random": random_returns, "seconds": seconds, "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--size-weight", type=float, default=1.0)
    parser.add_argument("--reference", default="sb3-maskable-ppo")
    parser.add_argument("--random-episodes", type=int, default=20)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    import os

    import torch

    torch.set_num_threads(int(os.environ.get("WIELD_TORCH_THREADS", "1")))  # as the wield command does
    rows = []
    with tempfile.TemporaryDirectory(prefix="wield-sb3-reference-") as workdir:
        for seed in args.seeds:
            dqn = run_learner(args, seed, "dqn", Path(workdir), args.random_episodes)
            reference = run_learner(args, seed, args.reference, Path(workdir), 0)
            reference["random"] = dqn["random"]  # the same workload and random policy
            for row in (dqn, reference):
                rows.append(row)
                mean = statistics.fmean(row["random"]) if row["random"] else float("nan")
                sd = statistics.stdev(row["random"]) if len(row["random"]) > 1 else float("nan")
                print(f"seed {seed} {row['agent']:17s} n={row['transitions']:5d} first10 {row['first10']:7.2f} "
                      f"last10 {row['last10']:7.2f} greedy {row['greedy']:7.2f} random {mean:7.2f} +- {sd:.2f} "
                      f"margin {(row['greedy'] - mean) / sd:5.1f} sd  {row['seconds']:.0f} s", flush=True)
                if args.json_out:
                    with open(args.json_out, "a", encoding="utf-8") as out:
                        out.write(json.dumps(row) + "\n")
    greedy = {(r["agent"], r["seed"]): r["greedy"] for r in rows}
    differences = [greedy["dqn", s] - greedy[args.reference, s] for s in args.seeds]
    mean_dqn = statistics.fmean(greedy["dqn", s] for s in args.seeds)
    mean_ref = statistics.fmean(greedy[args.reference, s] for s in args.seeds)
    print(f"\nmean greedy return: dqn {mean_dqn:.2f}, {args.reference} {mean_ref:.2f}; "
          f"paired difference dqn - {args.reference} = {statistics.fmean(differences):+.2f}", end="")
    if len(differences) > 1:
        from scipy import stats

        test = stats.ttest_rel([greedy["dqn", s] for s in args.seeds], [greedy[args.reference, s] for s in args.seeds])
        low, high = test.confidence_interval(0.95)
        verdict = "within noise" if low <= 0 <= high else "different"
        print(f", 95% CI [{low:+.2f}, {high:+.2f}], paired t p = {test.pvalue:.2f}: {verdict}")
    else:
        print()


if __name__ == "__main__":
    main()
