"""Names of the placement methods and the declared metrics (light: imported by the CLI plugin at start-up)."""

from wield.metrics import Metric
from wield.protocols import Objective

# Stable-Baselines3 reference placers (sb3_placer.py; the optional extra wield[sb3]). SB3 DQN is not one:
# a placement is one device per group, a Dict of many heads, and SB3's DQN takes a single Discrete action.
SB3_PLACERS = ("sb3-ppo", "sb3-maskable-ppo", "sb3-a2c")
METHODS = ("wield", "grappler", "random", "heft", "single") + SB3_PLACERS
LEARNERS = ("wield", "grappler") + SB3_PLACERS
METRICS = ("improvement", "best_step_time_ms", "initial_mean_step_time_ms", "speedup_vs_single_device",
           "speedup_vs_heft", "evaluations", "invalid_placements")
METHOD_NOTES = {
    "wield": "Wield placer: PPO grouper + PPO placer task graph, incremental rewards",
    "grappler": "grappler-style hierarchical placer: REINFORCE, reward -sqrt(runtime), EMA baseline 0.9",
    "random": "random search over devices for the layer-major groups",
    "heft": "HEFT critical-path list scheduler (1 evaluation)",
    "single": "everything on the fastest device that fits",
    "sb3-ppo": "Stable-Baselines3 PPO placing the layer-major groups (placement environment, one step per evaluation)",
    "sb3-maskable-ppo": "sb3-contrib MaskablePPO placing the layer-major groups (every device allowed)",
    "sb3-a2c": "Stable-Baselines3 A2C placing the layer-major groups",
}

DECLARED = (
    Metric("improvement", "improvement over the mean of the first 20 measurements", "fraction"),
    Metric("best_step_time_ms", "best step time", "ms", higher_is_better=False),
    Metric("initial_mean_step_time_ms", "mean step time of the first 20 measurements", "ms", higher_is_better=False),
    Metric("speedup_vs_single_device", "speed-up over the single-device placement", "ratio"),
    Metric("speedup_vs_heft", "speed-up over HEFT", "ratio"),
    Metric("evaluations", "graph evaluations", "count", higher_is_better=False),
    Metric("invalid_placements", "invalid placements", "count", higher_is_better=False),
)

# The objective: at least 10% faster than everything on the fastest single device. Relative to a real
# alternative placement, not to random ones: "30% better than the first 20 measurements" was met by random
# search on every seed (best of n random placements against their mean), so it showed no learning.
OBJECTIVE = Objective("speedup_vs_single_device", 1.1, straggler_above=1.0)
