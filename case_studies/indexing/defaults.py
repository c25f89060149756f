"""The indexing task's defaults, in one place: ``wield run indexing`` (``IndexingRunConfig``), the Python API
(``build_indexing_task``, ``IndexingConverter``) and ``gymnasium.make("wield/Indexing-v0")`` all read them.

They were chosen so that learning shows and the objective discriminates (docs/design.md section 5.11, with
the per-seed figures; ``benchmarks/learning_check.py`` checks them on seeds 0-4):

- **w_m = w_t = 1** (``SIZE_WEIGHT``, ``RUNTIME_WEIGHT``): with both reward terms as shares of their
  baselines, the whole full index then costs as much as running the workload with no index, so an index pays
  off only when the share of work it saves exceeds its share of the full index's bytes. The reward's optimum
  keeps 75-92% of the work saving with a quarter to a half of the memory, and indiscriminate indexing
  (random play, the full index) ends below the no-index reward. At w_m = 0.5 almost every index paid for
  itself, random play was near the optimum and the training curve stayed flat.
- **10 queries per workload, 200 episodes** (``QUERIES``, ``EPISODES``): the same 2,000 transitions as the
  study's budget, but each query's decision is trained on 200 times instead of 100 and the random return
  spreads less, so the greedy policy separates from random play by 2-4 sd.
- **The candidate design, rewarded by improvement** (``ACTION_DESIGN``, ``STEP_REWARD``; docs/design.md
  section 5.12): the agent picks one of the query's candidate indexes (described by selectivity, bytes and
  the share of the workload each serves) instead of the study's k positional key heads, and is rewarded with
  the change of the set's level instead of the level itself, so its return is the final set's level. DQN at
  n = 2,000 on seeds 0-4: mean greedy score on the verdict's held-out workloads -0.608 (was -0.754; better
  on 4 seeds of 5), greedy - advisor -0.074 (was -0.220), the objective met by the greedy policy on 5 of 5
  seeds (was 2), learned on 5 of 5 (was 4); C1 f = 1.00 and C2 f = 0.80 for the greedy policy (were 0.00 and
  0.20). The reward alone gave -0.633, the candidates alone -0.767.
- **20,000 documents** (``DOCUMENTS``): an engine evaluation several times cheaper than at 100,000, with
  the same picture of random play (it keeps about the full index's memory and saves most of the work).
- **The objective** (``OBJECTIVE``): mean latency improvement over no index >= 50% *and* index bytes <= 50%
  of the full index. Latency alone was met by the random policy in 39 of 40 episodes; with the memory cap
  no random episode met it (0 of 100 on seeds 0-4), while the reward's optimum meets it on every seed.
  Latency, the study's criterion, rather than the deterministic work: the evaluation measures it side by side
  in rounds with a 95% interval and the objective says ``inconclusive`` when the interval straddles 50%;
  on seeds 0-2 it decided every row within 5-15 rounds and never met a row idle and not beside two busy loops
  (``benchmarks/objective_under_load.py``; the former one-after-another measurement did on 2 of 9).
"""

from wield.protocols import Condition, Objective

ACTION_DESIGN = "candidates"  # the agent acts on the query's candidate indexes (candidate_design.py)
STEP_REWARD = "improvement"  # the learner is rewarded with the change of the level reward

DOCUMENTS = 20_000
QUERIES = 10
K = 3
EPISODES = 200
SIZE_WEIGHT = 1.0  # w_m
RUNTIME_WEIGHT = 1.0  # w_t

MIN_LATENCY_IMPROVEMENT = 0.5
MAX_RELATIVE_INDEX_SIZE = 0.5
OBJECTIVE = Objective("mean_latency_improvement", MIN_LATENCY_IMPROVEMENT,
                      also=(Condition("relative_index_size", "<=", MAX_RELATIVE_INDEX_SIZE),))
