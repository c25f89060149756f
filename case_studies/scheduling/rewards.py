"""The scheduling rewards: the three-part dense reward of the modelled design and its two alternatives.

Every reward reads one step's measurement (``system.ServingSystem.measure``): what the decision dispatched
and what finished or timed out since the previous step. What happens between decisions (completions,
timeouts) is credited to the decision before it (semi-MDP accounting).

- ``dense`` (the design's reward, in GPU milliseconds), the sum of
  1. the GPU term: ``-gpu_weight x`` the decided GPU's outstanding work after the action (ms), at every
     decision;
  2. the early reward of every dispatched request: twice its model's batch-1 time minus its share of the
     batch time, i.e. ``2 b e1 - exec(b)`` for a batch of ``b`` (bigger batches earn more per request);
  3. the correction of every SLO violation (late completion or timeout): ``-3 x`` the early positive reward,
     ``-6 e1``, so a violated request's total is negative.
- ``dense-no-gpu``: parts 2 and 3 only.
- ``sparse``: +1 per request that completes within its SLO, -1 per violation (late or timed out).

When a late batch is charged (``late_charge``): ``completion`` charges its requests when the batch finishes
after their deadline, as the design describes the correction ("once the outcome is known");
``dispatch`` (the default) charges them at the decision that dispatched the batch. Execution is
predictable in a Clockwork-style system (the simulator knows the finish time at dispatch), so this is the
same amount, known earlier: the decision that caused the violation gets the blame directly instead of a
decision tens of milliseconds later. In one seed at an equal budget, PPO learned the hard workload with
``dispatch`` and not with ``completion`` (docs/scheduling.md). Requests that time out in the queue are charged when they time out,
either way.

The design gives no weight for the GPU term; ``gpu_weight`` = 0.1 (``DEFAULT_GPU_WEIGHT``) charges a GPU
kept 5 ms ahead 0.5 ms per decision, small beside a batch's early reward (about 75 ms for a batch of 16
ResNet-50 requests on the default profile), while a GPU overloaded by a second costs 100 ms per decision.
``scale`` multiplies every reward (the case study uses 0.01: hundreds of GPU ms per unit), which changes no
preference between policies but keeps returns and value targets of order one for the learners.
A shorter summary of the same design states the reward differently (no GPU term, ratios instead of
milliseconds, the early positive reward only for requests estimated to meet their deadline, and -3 x the
execution time per violation); this module implements the detailed statement above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from wield.errors import ConfigError

REWARDS = ("dense", "sparse", "dense-no-gpu")
LATE_CHARGES = ("dispatch", "completion")
DEFAULT_SCALE = 0.01
DEFAULT_REWARD = "dense"
DEFAULT_GPU_WEIGHT = 0.1
EARLY_FACTOR = 2.0  # early positive reward: twice the batch-1 time per request
CORRECTION_FACTOR = 3.0  # a violation costs three times the early positive reward


@dataclass(frozen=True)
class Reward:
    """One of ``REWARDS`` with its GPU-term weight (``dense`` only), when late batches are charged
    (``LATE_CHARGES``) and a scale."""

    kind: str = DEFAULT_REWARD
    gpu_weight: float = DEFAULT_GPU_WEIGHT
    late_charge: str = "dispatch"
    scale: float = 1.0  # every reward is multiplied by it

    def __post_init__(self) -> None:
        if self.kind not in REWARDS:
            raise ConfigError("reward", self.kind, REWARDS)
        if not self.gpu_weight >= 0:
            raise ConfigError("gpu_weight", self.gpu_weight, reason="must be a number >= 0")
        if self.late_charge not in LATE_CHARGES:
            raise ConfigError("late_charge", self.late_charge, LATE_CHARGES)
        if not self.scale > 0:
            raise ConfigError("reward_scale", self.scale, reason="must be a number > 0")

    def __call__(self, step: Mapping[str, Any]) -> float:
        """The reward of one step's measurement."""
        if self.kind == "sparse":
            return self.scale * float(step["on_time"] - step["late"] - step["timed_out"])
        late = step["late_dispatched_e1_ms"] if self.late_charge == "dispatch" else step["late_e1_ms"]
        reward = step["early_ms"] - CORRECTION_FACTOR * EARLY_FACTOR * (late + step["timed_out_e1_ms"])
        if self.kind == "dense" and step["decided"]:
            reward -= self.gpu_weight * step["outstanding_ms"]
        return self.scale * float(reward)
