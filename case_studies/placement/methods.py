"""Names of the placement methods and metrics (light: imported by the CLI plugin at start-up)."""

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
