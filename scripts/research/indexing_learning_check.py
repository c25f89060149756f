"""Does Wield's learner learn on the indexing task? One table per setting, seeds side by side.

For every seed this trains the learner exactly as ``wield run indexing`` seeds it (collection, workload and
agent seeds derived from the run seed by ``IndexingRunConfig.seeds``), then reports:

- the mean return of the first 10 and the last 10 training episodes (epsilon near 1 at the start, so the
  first ten are close to random play);
- the greedy policy's return: one episode on the training workload with ``explore=False``;
- the random policy's return over ``--random-episodes`` episodes (uniform over the valid head values that
  the action masks allow, the same ``RandomAgent`` the run's baseline uses), mean and sample sd;
- whether the greedy policy and each random episode meet the objective, on the deterministic work measure
  (final index set: mean work improvement over no index >= ``--objective-work`` and index bytes <=
  ``--objective-size`` of the full index), and, with ``--latency``, on wall-time latency measured on the
  engine as ``wield run`` does (mean latency improvement >= ``--objective-latency`` and the same size cap);
- the best index set seen during training (what ``wield run`` reports as ``dqn`` in blackbox mode: a search
  outcome of the training run, not a learned policy) and, with ``--random-search``, random search over
  whole index sets (``wield compare --methods random``) at the same number of system evaluations.

The verdict "learned" asks for greedy > random mean + 2 sd and last-10 > first-10. Everything except the
latency columns is deterministic under the work metric. Example (the ``wield run indexing`` defaults):

    WIELD_TORCH_THREADS=1 python scripts/research/indexing_learning_check.py --seeds 0 1 2 3 4 \
        --documents 100000 --queries 20 --episodes 100 --size-weight 0.5 --json-out out.jsonl

The recommended defaults of the learning research (10 queries, w_m = 1, memory-capped objective):

    WIELD_TORCH_THREADS=1 python scripts/research/indexing_learning_check.py --seeds 0 1 2 3 4 \
        --documents 20000 --queries 10 --episodes 200 --size-weight 1.0 --objective-size 0.5 --latency

``--agent dqfd --rules noop,reverse`` pretrains DQfD on the run's workload labelled by those rules;
``--learning-rate``, ``--gamma``, ``--epsilon-decay-steps`` override DQNConfig; ``--first-head-noop`` probes
an action-semantics change (the first head alone decides "no index").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from case_studies.indexing.agents import workload_demonstrations  # noqa: E402
from case_studies.indexing.evaluation import evaluate_methods  # noqa: E402
from case_studies.indexing.experiment import IndexingRunConfig, build_run_task  # noqa: E402
from case_studies.indexing.search_space import IndexSetSpace  # noqa: E402
from wield.agents import DQfDAgent, DQfDConfig, DQNAgent, DQNConfig, RandomAgent, RandomSearchAgent  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402
from wield.tasks import TaskGraph  # noqa: E402
from wield.workflows import run_episode, train_online  # noqa: E402
from wield.workflows.search import run_configuration_search  # noqa: E402
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--size-weight", type=float, default=0.5)
    parser.add_argument("--runtime-weight", type=float, default=1.0)
    parser.add_argument("--difficulty", type=float, default=0.3, help="QueryWorkloadConfig.difficulty")
    parser.add_argument("--max-attributes", type=int, default=3, help="QueryWorkloadConfig.max_attributes")
    parser.add_argument("--min-predicates", type=int, default=1, help="QueryWorkloadConfig.min_predicates")
    parser.add_argument("--agent", choices=("dqn", "dqfd"), default="dqn")
    parser.add_argument("--rules", default="noop,reverse", help="DQfD labelling rules (comma separated)")
    parser.add_argument("--pretrain-steps", type=int, default=1000)
    parser.add_argument("--epsilon-decay-steps", type=int, default=None, help="DQNConfig override")
    parser.add_argument("--learning-rate", type=float, default=None, help="DQNConfig override")
    parser.add_argument("--gamma", type=float, default=None, help="DQNConfig override")
    parser.add_argument("--first-head-noop", action="store_true",
                        help="probe: key_1 = no-op means no index at all (today every head must be 0)")
    parser.add_argument("--random-episodes", type=int, default=20)
    parser.add_argument("--objective-work", type=float, default=0.5)
    parser.add_argument("--objective-latency", type=float, default=0.5)
    parser.add_argument("--objective-size", type=float, default=float("inf"),
                        help="largest index size allowed, as a share of the full index (default: no cap)")
    parser.add_argument("--latency", action="store_true", help="also measure latency on the engine")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--random-search", action="store_true",
                        help="random search over index sets at the same number of evaluations")
    parser.add_argument("--json-out", default=None, help="append one JSON line per seed to this file")
    return parser.parse_args(argv)


def workload_config(args: argparse.Namespace) -> QueryWorkloadConfig:
    return QueryWorkloadConfig(n_queries=args.queries, difficulty=args.difficulty,
                               max_attributes=args.max_attributes, min_predicates=args.min_predicates)


def final_shares(task, result) -> tuple[float, float]:
    """(index size share of the full index, work share of no index) after an episode."""
    return task.converter.normalised_costs(result.final_metrics)


def meets(size: float, runtime: float, args: argparse.Namespace) -> bool:
    return (1.0 - runtime) >= args.objective_work and size <= args.objective_size


def make_first_head_decide(converter) -> None:
    """Probe of an action-semantics change: the first head's no-op means "no index" whatever the others say.

    Today an index is built unless every head is 0, so "build nothing" needs all k heads to agree, which
    independent heads (DQN's per-head Q values, PPO's factorised policy) learn slowly.
    """
    original = converter.agent_to_system_action
    first = converter.schema.head_names[0]

    def agent_to_system_action(agent_action, context=None):
        return None if int(agent_action[first]) == 0 else original(agent_action, context)

    converter.agent_to_system_action = agent_to_system_action


def make_agent(args, task, schedule, seed: int):
    space = (task.schema.state_space, task.schema.action_space)
    overrides = {name: getattr(args, name) for name in ("epsilon_decay_steps", "learning_rate", "gamma")
                 if getattr(args, name) is not None}
    if args.agent == "dqn":
        return DQNAgent(*space, DQNConfig(**overrides), seed=seed), {}
    dataset = workload_demonstrations(task, schedule, rules=tuple(args.rules.split(",")))
    agent = DQfDAgent(*space, DQfDConfig(**overrides), seed=seed, demonstration_capacity=len(dataset))
    agent.add_demonstrations(dataset)
    stats = agent.pretrain(args.pretrain_steps)
    return agent, {"demonstrations": len(dataset), "pretrain": stats}


def random_search(args, task, collection, schedule, seed: int) -> dict[str, Any]:
    """Random search over whole index sets with as many evaluations as the learner had transitions."""
    space = IndexSetSpace(collection.field_names, slots=args.queries, k=args.k)
    agent = RandomSearchAgent(space.space, seed=seed)
    items = schedule.task_for_episode(0)
    shares: dict[int, tuple[float, float]] = {}

    def evaluate(t: int, configuration: dict[str, Any]) -> float:
        task.system.configure(space.decode(configuration))
        metrics = task.system.measure(items)
        shares[t] = task.converter.normalised_costs(metrics)
        return task.converter.system_to_agent_reward(metrics)

    budget = args.episodes * args.queries
    result = run_configuration_search(agent, evaluate, budget, None, progress=False)
    agent.close()
    task.system.configure(space.decode(result.best_configuration))
    size, runtime = task.converter.normalised_costs(task.system.measure(items))
    met = sum(meets(s, r, args) for s, r in shares.values())
    return {"evaluations": budget, "best_reward": result.best_reward, "best_size": size,
            "best_work_improvement": 1 - runtime, "best_meets": meets(size, runtime, args),
            "share_of_evaluations_meeting": met / max(1, len(shares)),
            "best_configuration": [str(s) for s in space.decode(result.best_configuration)]}


def check_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    config = IndexingRunConfig(documents=args.documents, queries=args.queries, k=args.k, episodes=args.episodes,
                               seed=seed, size_weight=args.size_weight, runtime_weight=args.runtime_weight,
                               repetitions=args.repetitions).validate()
    seeds = config.seeds()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    collection = generate_imdb_collection(config.documents, seeds["collection"])
    task = build_run_task(config, collection)
    if args.first_head_noop:
        make_first_head_decide(task.converter)
    try:
        schedule = make_query_schedule(collection, workload_config(args), seeds["train_workload"], 1,
                                       per_episode=False)
        env = task.environment(schedule)
        timings["setup"] = time.perf_counter() - started

        mark = time.perf_counter()
        agent, pretrain = make_agent(args, task, schedule, seeds["agent"])
        graph = TaskGraph.single(agent, name="indexer")
        results = train_online(env, graph, args.episodes, progress=False)
        timings["train"] = time.perf_counter() - mark
        returns = [r.total_reward for r in results]
        best_step = max((step for r in results for step in r.steps), key=lambda s: s.reward)
        best_size, best_runtime = task.converter.normalised_costs(best_step.metrics)

        mark = time.perf_counter()
        greedy = run_episode(env, graph, explore=False, learn=False, options={"episode": 0})
        greedy_size, greedy_runtime = final_shares(task, greedy)
        greedy_configuration = list(env.system.state())
        randomiser = RandomAgent(env.action_space, seed=seeds["random_policy"])
        random_graph = TaskGraph.single(randomiser, name="indexer")
        random_returns, random_shares, random_configurations = [], [], []
        for _ in range(args.random_episodes):
            episode = run_episode(env, random_graph, explore=True, learn=False, options={"episode": 0})
            random_returns.append(episode.total_reward)
            random_shares.append(final_shares(task, episode))
            random_configurations.append(list(env.system.state()))
        timings["greedy_and_random"] = time.perf_counter() - mark

        first, last = statistics.mean(returns[:10]), statistics.mean(returns[-10:])
        random_mean, random_sd = statistics.mean(random_returns), statistics.stdev(random_returns)
        row: dict[str, Any] = {
            "seed": seed, "agent": args.agent, "settings": settings_of(args),
            "first10": first, "last10": last, "greedy_return": greedy.total_reward,
            "random_mean": random_mean, "random_sd": random_sd, "random_returns": random_returns,
            "greedy_size": greedy_size, "greedy_work_improvement": 1 - greedy_runtime,
            "greedy_meets_work": meets(greedy_size, greedy_runtime, args),
            "greedy_configuration": [str(s) for s in greedy_configuration],
            "random_meets_work_share": sum(meets(s, r, args) for s, r in random_shares) / len(random_shares),
            "random_work_improvement_mean": statistics.mean(1 - r for _, r in random_shares),
            "random_size_mean": statistics.mean(s for s, _ in random_shares),
            "best_seen_reward": best_step.reward, "best_seen_size": best_size,
            "best_seen_work_improvement": 1 - best_runtime,
            "best_seen_meets_work": meets(best_size, best_runtime, args),
            "random_shares": random_shares, "returns": returns, **pretrain,
            "mean_q": [r.update_stats.get("indexer", {}).get("mean_q") for r in results],
        }
        row["learned"] = bool(greedy.total_reward > random_mean + 2 * random_sd and row["last10"] > row["first10"])
        if args.latency:
            mark = time.perf_counter()
            named = {"greedy": greedy_configuration,
                     **{f"random{i}": c for i, c in enumerate(random_configurations)}}
            metrics = evaluate_methods(task.evaluation_system(), schedule.task_for_episode(0), named,
                                       repetitions=args.repetitions)

            def meets_latency(name: str) -> bool:
                m = metrics[name]
                return (m.mean_latency_improvement >= args.objective_latency
                        and m.relative_index_size <= args.objective_size)

            row["greedy_latency_improvement"] = metrics["greedy"].mean_latency_improvement
            row["greedy_meets_latency"] = meets_latency("greedy")
            random_names = [n for n in named if n.startswith("random")]
            row["random_latency_improvement_mean"] = statistics.mean(
                metrics[n].mean_latency_improvement for n in random_names)
            row["random_meets_latency_share"] = sum(map(meets_latency, random_names)) / len(random_names)
            row["random0_latency_improvement"] = metrics["random0"].mean_latency_improvement
            row["random_latency"] = [(metrics[n].mean_latency_improvement, metrics[n].relative_index_size)
                                     for n in random_names]
            row["full_latency_improvement"] = metrics["full"].mean_latency_improvement
            timings["latency"] = time.perf_counter() - mark
        if args.random_search:
            mark = time.perf_counter()
            row["random_search"] = random_search(args, task, collection, schedule,
                                                 derive_seed(seeds["agent"], "random-search"))
            timings["random_search"] = time.perf_counter() - mark
        row["seconds"] = timings
        return row
    finally:
        task.close()


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("documents", "queries", "k", "episodes", "size_weight", "runtime_weight", "difficulty",
            "max_attributes", "min_predicates", "objective_work", "objective_latency", "objective_size",
            "epsilon_decay_steps", "learning_rate", "gamma", "first_head_noop")
    settings = {key: getattr(args, key) for key in keys}
    if args.agent == "dqfd":
        settings.update(rules=args.rules, pretrain_steps=args.pretrain_steps)
    return settings


def print_row(row: dict[str, Any]) -> None:
    latency = ""
    if "greedy_latency_improvement" in row:
        latency = (f" | lat greedy {row['greedy_latency_improvement']:.1%} meets={row['greedy_meets_latency']}"
                   f" random mean {row['random_latency_improvement_mean']:.1%}"
                   f" meets {row['random_meets_latency_share']:.0%}")
    search = ""
    if "random_search" in row:
        rs = row["random_search"]
        search = (f" | rsearch best {rs['best_reward']:.3f} work {rs['best_work_improvement']:.1%}"
                  f" size {rs['best_size']:.2f} meets={rs['best_meets']}")
    print(f"seed {row['seed']}: first10 {row['first10']:.3f} last10 {row['last10']:.3f} "
          f"greedy {row['greedy_return']:.3f} random {row['random_mean']:.3f} +- {row['random_sd']:.3f} "
          f"learned={'yes' if row['learned'] else 'no'} | greedy work {row['greedy_work_improvement']:.1%} "
          f"size {row['greedy_size']:.2f} meets={row['greedy_meets_work']} | random work "
          f"{row['random_work_improvement_mean']:.1%} size {row['random_size_mean']:.2f} meets "
          f"{row['random_meets_work_share']:.0%} | best-seen work {row['best_seen_work_improvement']:.1%} "
          f"size {row['best_seen_size']:.2f} meets={row['best_seen_meets_work']}{latency}{search} | "
          f"{sum(row['seconds'].values()):.0f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    print(json.dumps(settings_of(args)), flush=True)
    rows = []
    for seed in args.seeds:
        row = check_seed(args, seed)
        rows.append(row)
        print_row(row)
        if args.json_out:
            with open(args.json_out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
    learned = sum(r["learned"] for r in rows)
    random_meets = sum(r["random_meets_work_share"] > 0.5 for r in rows)
    print(f"learned in {learned}/{len(rows)} seeds; last10 > first10 in "
          f"{sum(r['last10'] > r['first10'] for r in rows)}/{len(rows)}; greedy > random + 2 sd in "
          f"{sum(r['greedy_return'] > r['random_mean'] + 2 * r['random_sd'] for r in rows)}/{len(rows)}; "
          f"random policy meets the work objective (majority of episodes) in {random_meets}/{len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
