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

``--learner maskable-ppo`` tables the reference learner instead of Wield's DQN on the indexing task:
sb3-contrib's MaskablePPO (``pip install -e '.[sb3]'``) through ``wield.envs.StandardView`` on the
environment ``wield run indexing --seed S`` builds (same collection, workload, reward), for the same
E x Q transitions (rollouts of 10 episodes, minibatches of 64, the library's other defaults), with the same
verdict (``wield.protocols.learning_verdict``). Placement is not tabled
for it (the placer's episodes are not a gymnasium loop here).

    python benchmarks/learning_check.py                       # both tables, seeds 0-4, defaults
    python benchmarks/learning_check.py --case indexing --seeds 0 1 --quick   # small settings, minutes
    python benchmarks/learning_check.py --case indexing --learner maskable-ppo

Run records go to a temporary directory (``--out DIR`` keeps them). Wall times are whatever the machine
gives; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--learner", choices=("wield", "maskable-ppo"), default="wield",
                        help="wield: the case study's own learner (indexing DQN, the Wield placer); maskable-ppo: "
                             "sb3-contrib's MaskablePPO on the indexing task (the reference learner)")
    parser.add_argument("--quick", action="store_true",
                        help=f"small settings to try the script (indexing {QUICK_INDEXING}, placement "
                             f"{QUICK_PLACEMENT}); the defaults are what the verdict is about")
    parser.add_argument("--out", default=None, help="keep the run records under this directory")
    return parser.parse_args(argv)


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
def indexing_config(seed: int, quick: bool):
    from case_studies.indexing.run import IndexingRunConfig

    return IndexingRunConfig(seed=seed, **(QUICK_INDEXING if quick else {})).validate()


def indexing_dqn(seeds: list[int], quick: bool, out: Path) -> None:
    from case_studies.indexing.defaults import OBJECTIVE
    from wield.workflows import run_trial

    rows, learned, random_meets = [], 0, 0
    config = indexing_config(seeds[0], quick)
    for seed in seeds:
        config = indexing_config(seed, quick)
        started = time.perf_counter()
        summary = run_trial("indexing", asdict(config), config.single_run_seeds(), str(out / f"indexing-{seed}"),
                            progress=False)
        verdict, methods = summary.verdict or {}, summary.methods
        meets = {name: OBJECTIVE.met(methods[name]) for name in ("random-policy", "dqn-greedy", "dqn")}
        learned += bool(verdict.get("learned"))
        random_meets += meets["random-policy"]
        rows.append([str(seed), *verdict_cells(verdict), _fmt(verdict.get("trivial_return")),
                     _yes(meets["random-policy"]), _yes(meets["dqn-greedy"]), _yes(meets["dqn"]),
                     f"{time.perf_counter() - started:.0f}"])
    print_table(f"indexing, DQN: {config.documents:,} documents, {config.queries} queries, k = {config.k}, "
                f"{config.episodes} episodes, w_m = {config.size_weight:g}, w_t = {config.runtime_weight:g}; "
                f"objective: {OBJECTIVE.describe()}",
                ["seed", *VERDICT_COLUMNS, "no-index", "random meets", "greedy meets", "best seen meets (search)",
                 "s"], rows)
    print(f"learned in {learned}/{len(seeds)} seeds; the random policy meets the objective in "
          f"{random_meets}/{len(seeds)}")


def indexing_maskable_ppo(seeds: list[int], quick: bool, out: Path) -> None:
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from case_studies.indexing.build import build_run
    from case_studies.indexing.demonstrations import NoOpRule
    from wield.agents import RandomAgent
    from wield.envs import StandardView
    from wield.protocols import learning_verdict
    from wield.workflows import RunRecord, evaluate_policy

    class Returns(gym.Wrapper):
        """Records every finished episode's return (the skipped steps' reward included)."""

        def __init__(self, env):
            super().__init__(env)
            self.returns: list[float] = []
            self.total = 0.0

        def reset(self, **kwargs):
            observation, info = self.env.reset(**kwargs)
            self.total = float(info.get("skipped_reward", 0.0))
            return observation, info

        def step(self, action):
            observation, reward, terminated, truncated, info = self.env.step(action)
            self.total += float(reward) + float(info.get("skipped_reward", 0.0))
            if terminated or truncated:
                self.returns.append(self.total)
            return observation, reward, terminated, truncated, info

        def action_masks(self):
            return self.env.action_masks()

    rows, learned = [], 0
    config = indexing_config(seeds[0], quick)
    for seed in seeds:
        config = indexing_config(seed, quick)
        seeds_ = config.single_run_seeds()
        started = time.perf_counter()
        run = build_run(config, seeds_, RunRecord.create(out / f"indexing-ppo-{seed}"))
        try:
            env = run.task.environment(run.schedule)
            view = Returns(StandardView(env))
            n_steps = 10 * config.queries  # ten episodes per rollout, so the budget holds several updates
            model = MaskablePPO("MlpPolicy", view, n_steps=n_steps, batch_size=min(64, n_steps),
                                seed=seeds_.optimisation_seed % 2**31, device="cpu", verbose=0)
            model.learn(total_timesteps=config.episodes * config.queries)
            curve = list(view.returns)
            observation, info = view.reset(options={"episode": 0})
            done = False
            while not done:
                action, _ = model.predict(observation, action_masks=view.action_masks(), deterministic=True)
                observation, _, terminated, truncated, info = view.step(action)
                done = terminated or truncated
            greedy = view.returns[-1]
            random = evaluate_policy(env, RandomAgent(env.action_space, seed=seeds_.derive("random_policy")), 20,
                                     explore=True).returns
            trivial = evaluate_policy(env, NoOpRule(config.k)).mean_return
        finally:
            run.close()
        verdict = learning_verdict([greedy], random, curve, trivial_return=trivial,
                                   trivial_label="no-index policy").as_dict()
        learned += bool(verdict["learned"])
        rows.append([str(seed), *verdict_cells(verdict), _fmt(trivial), str(model.num_timesteps),
                     f"{time.perf_counter() - started:.0f}"])
    print_table(f"indexing, sb3-contrib MaskablePPO (n_steps 10 episodes, batch 64, otherwise its defaults): "
                f"{config.documents:,} documents, "
                f"{config.queries} queries, {config.episodes * config.queries} transitions",
                ["seed", *VERDICT_COLUMNS, "no-index", "steps", "s"], rows)
    print(f"learned in {learned}/{len(seeds)} seeds")


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
            (indexing_maskable_ppo if args.learner == "maskable-ppo" else indexing_dqn)(args.seeds, args.quick, out)
        if args.case in ("placement", "both"):
            if args.learner == "maskable-ppo":
                print("\nplacement: the reference learner is tabled for indexing only")
            else:
                placement(args.seeds, args.quick, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
