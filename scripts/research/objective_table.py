"""Re-score the JSON lines of ``indexing_learning_check.py`` under other objectives, without rerunning.

An objective here is "mean work improvement over no index >= W and index size <= S of the full index"
(work: the deterministic measure the reward uses). For every run it prints, per seed, whether the greedy
policy, the best index set seen in training and random search (when recorded) meet it, and the share of
random-policy episodes that meet it. Example:

    python scripts/research/objective_table.py out.jsonl --work 0.5 --size 0.5
"""

from __future__ import annotations

import argparse
import json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--work", type=float, default=0.5)
    parser.add_argument("--size", type=float, default=float("inf"))
    args = parser.parse_args(argv)

    def meets(size: float, work: float) -> bool:
        return work >= args.work and size <= args.size

    for path in args.files:
        print(f"{path}: work >= {args.work:.0%} and size <= {args.size}")
        for line in open(path, encoding="utf-8"):
            row = json.loads(line)
            randoms = [meets(s, 1 - r) for s, r in row.get("random_shares", [])]
            share = f"{sum(randoms) / len(randoms):.0%}" if randoms else "n/a"
            search = row.get("random_search")
            search_text = (f" random-search best meets={meets(search['best_size'], search['best_work_improvement'])}"
                           f" ({search['best_work_improvement']:.1%}, size {search['best_size']:.2f})"
                           if search else "")
            print(f"  seed {row['seed']}: learned={row['learned']} greedy meets="
                  f"{meets(row['greedy_size'], row['greedy_work_improvement'])} "
                  f"({row['greedy_work_improvement']:.1%}, size {row['greedy_size']:.2f}); best-seen meets="
                  f"{meets(row['best_seen_size'], row['best_seen_work_improvement'])} "
                  f"({row['best_seen_work_improvement']:.1%}, size {row['best_seen_size']:.2f}); random episodes "
                  f"meeting: {share}{search_text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
