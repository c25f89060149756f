"""Names of the placement methods and the declared metrics (light: imported by the CLI plugin at start-up)."""

from wield.metrics import Metric

METHODS = ("wield", "grappler", "random", "heft", "single")
LEARNERS = ("wield", "grappler")
METRICS = ("improvement", "best_step_time_ms", "initial_mean_step_time_ms", "speedup_vs_single_device",
           "speedup_vs_heft", "evaluations", "invalid_placements")
METHOD_NOTES = {
    "wield": "Wield placer: PPO grouper + PPO placer task graph, incremental rewards",
    "grappler": "grappler-style hierarchical placer: REINFORCE, reward -sqrt(runtime), EMA baseline 0.9",
    "random": "random search over devices for the layer-major groups",
    "heft": "HEFT critical-path list scheduler (1 evaluation)",
    "single": "everything on the fastest device that fits",
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
