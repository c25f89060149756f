"""Reference learner: sb3-contrib's MaskablePPO on the indexing task, beside Wield's DQN at equal transitions.

Stable-Baselines3 needs a flat action space, so ``MultiDiscreteHeads`` wraps a Wield environment whose action
space is a Dict of Discrete heads: the action becomes a MultiDiscrete vector (one entry per head, in the
schema's head order), ``action_masks()`` returns the heads' masks concatenated (what MaskablePPO asks for),
and the ``info`` dictionaries drop Wield's integer ``episode`` entry (SB3's Monitor and gymnasium's
RecordEpisodeStatistics use ``info["episode"]`` for their own episode statistics).

For each seed the task is built exactly as ``wield run indexing`` builds it (collection, workload and agent
seeds derived from the run seed), MaskablePPO trains for ``episodes x queries`` transitions, and its greedy
policy (deterministic, masked) plays one episode of the training workload. Printed beside it: the random
policy's return mean and sd (the same masked uniform ``RandomAgent``), and, with ``--dqn``, Wield's DQN
trained for the same number of transitions and its greedy return.

Needs ``pip install stable-baselines3==2.9.2 sb3-contrib==2.9.2`` (CPU; torch stays at 2.13.0). Example:

    WIELD_TORCH_THREADS=1 python scripts/research/sb3_reference.py --seeds 0 1 2 3 4 --dqn
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

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from case_studies.indexing.experiment import IndexingRunConfig, build_run_task  # noqa: E402
from wield.agents import DQNAgent, DQNConfig, RandomAgent  # noqa: E402
from wield.tasks import TaskGraph  # noqa: E402
from wield.workflows import run_episode, train_online  # noqa: E402
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule  # noqa: E402


class MultiDiscreteHeads(gym.Wrapper):
    """A Dict-of-Discrete-heads environment seen as MultiDiscrete, with ``action_masks()`` for MaskablePPO."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.head_names = list(env.action_space.spaces)
        self.action_space = gym.spaces.MultiDiscrete([env.action_space[h].n for h in self.head_names])
        self._mask: dict[str, np.ndarray] | None = None

    def _clean(self, info: dict[str, Any]) -> dict[str, Any]:
        self._mask = info.get("action_mask")
        return {key: value for key, value in info.items()
                if key not in ("episode", "action_mask", "system_state", "system_action", "metrics")}

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return observation, self._clean(info)

    def step(self, action):
        heads = {name: int(value) for name, value in zip(self.head_names, np.asarray(action).tolist())}
        observation, reward, terminated, truncated, info = self.env.step(heads)
        return observation, reward, terminated, truncated, self._clean(info)

    def action_masks(self) -> np.ndarray:
        if self._mask is None:
            return np.ones(int(np.sum(self.action_space.nvec)), dtype=bool)
        return np.concatenate([np.asarray(self._mask[name], dtype=bool) for name in self.head_names])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=100, help="budget: episodes x queries transitions")
    parser.add_argument("--size-weight", type=float, default=0.5)
    parser.add_argument("--runtime-weight", type=float, default=1.0)
    parser.add_argument("--difficulty", type=float, default=0.3)
    parser.add_argument("--n-steps", type=int, default=0, help="PPO rollout length (0: 10 episodes)")
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--random-episodes", type=int, default=20)
    parser.add_argument("--dqn", action="store_true", help="also train Wield's DQN at the same budget")
    parser.add_argument("--json-out", default=None)
    return parser.parse_args(argv)


def greedy_return_sb3(model, env: MultiDiscreteHeads) -> float:
    observation, _ = env.reset(options={"episode": 0})
    total, done = 0.0, False
    while not done:
        action, _ = model.predict(observation, deterministic=True, action_masks=env.action_masks())
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


def check_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    from sb3_contrib import MaskablePPO

    config = IndexingRunConfig(documents=args.documents, queries=args.queries, k=args.k, episodes=args.episodes,
                               seed=seed, size_weight=args.size_weight,
                               runtime_weight=args.runtime_weight).validate()
    seeds = config.seeds()
    collection = generate_imdb_collection(config.documents, seeds["collection"])
    task = build_run_task(config, collection)
    row: dict[str, Any] = {"seed": seed, "settings": {k: getattr(args, k) for k in (
        "documents", "queries", "k", "episodes", "size_weight", "runtime_weight", "difficulty", "n_steps",
        "learning_rate")}}
    try:
        schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=args.queries,
                                                                       difficulty=args.difficulty),
                                       seeds["train_workload"], 1, per_episode=False)
        env = task.environment(schedule)
        transitions = args.episodes * args.queries
        randomiser = TaskGraph.single(RandomAgent(env.action_space, seed=seeds["random_policy"]), name="indexer")
        randoms = [run_episode(env, randomiser, explore=True, learn=False, options={"episode": 0}).total_reward
                   for _ in range(args.random_episodes)]
        row.update(random_mean=statistics.mean(randoms), random_sd=statistics.stdev(randoms))

        started = time.perf_counter()
        wrapped = MultiDiscreteHeads(env)
        n_steps = args.n_steps or 10 * args.queries
        model = MaskablePPO("MultiInputPolicy", wrapped, n_steps=n_steps, batch_size=min(64, n_steps),
                            learning_rate=args.learning_rate, seed=seeds["agent"] % 2**31, verbose=0,
                            device="cpu")
        model.learn(total_timesteps=transitions)
        row["ppo_greedy"] = greedy_return_sb3(model, wrapped)
        row["ppo_seconds"] = time.perf_counter() - started
        row["ppo_transitions"] = int(model.num_timesteps)

        if args.dqn:
            started = time.perf_counter()
            agent = DQNAgent(task.schema.state_space, task.schema.action_space, DQNConfig(), seed=seeds["agent"])
            graph = TaskGraph.single(agent, name="indexer")
            results = train_online(env, graph, args.episodes, progress=False)
            row["dqn_greedy"] = run_episode(env, graph, explore=False, learn=False,
                                            options={"episode": 0}).total_reward
            row["dqn_first10"] = statistics.mean(r.total_reward for r in results[:10])
            row["dqn_last10"] = statistics.mean(r.total_reward for r in results[-10:])
            row["dqn_seconds"] = time.perf_counter() - started
            row["dqn_transitions"] = agent.steps_observed
    finally:
        task.close()
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    for seed in args.seeds:
        row = check_seed(args, seed)
        dqn = (f" | DQN greedy {row['dqn_greedy']:.3f} (first10 {row['dqn_first10']:.3f}, last10 "
               f"{row['dqn_last10']:.3f}, {row['dqn_seconds']:.0f}s)" if "dqn_greedy" in row else "")
        print(f"seed {seed}: random {row['random_mean']:.3f} +- {row['random_sd']:.3f} | MaskablePPO greedy "
              f"{row['ppo_greedy']:.3f} after {row['ppo_transitions']} transitions ({row['ppo_seconds']:.0f}s)"
              f"{dqn}", flush=True)
        if args.json_out:
            with open(args.json_out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
