"""A placement run's configuration (``PlacementRunConfig``: saved as config.json, enough to rerun it).

Kept apart from ``run.py`` and importable without torch, numba or pandas: ``wield run placement --help``
declares its options with these defaults, and the run's machinery is imported only when a run starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from case_studies.placement.methods import METHODS, SB3_PLACERS
from case_studies.placement.topology import BUILTIN
from wield.agents.sb3_classes import import_sb3_class
from wield.configs import dataclass_from_dict, require_integers
from wield.errors import ConfigError
from wield.protocols import TrialSeeds
from workloads.graphs.families import FAMILIES


# Upper bounds of the run's counts (issue 45): graph evaluations, graphs, placements, the cost-matrix budget,
# and the graph family's batch size and unroll length (a graph's operations grow with both).
MAXIMA = {"budget": 1_000_000, "train_graphs": 10_000, "test_graphs": 10_000, "test_samples": 10_000,
          "matrix_budget": 1_000_000, "batch": 65_536, "unroll": 1_000}


@dataclass
class PlacementRunConfig:
    family: str = "nmt"
    topology: str = "4gpu-cpu"
    method: str = "wield"
    budget: int = 500
    seed: int = 0
    batch: int | None = None
    unroll: int | None = None
    graph: str | None = None
    train_graphs: int = 3
    test_graphs: int = 2
    test_samples: int = 10
    matrix_budget: int = 100
    cache_dir: str | None = None
    baselines: list[str] = field(default_factory=list)  # single runs: methods run beside ``method``
    # the learner's hyperparameters (a config file's [agent] block; None: the defaults), for ``method`` only
    # (baselines beside it keep theirs); wield.agents.hyperparameters
    hyperparameters: dict[str, Any] | None = None

    def validate(self) -> "PlacementRunConfig":
        if self.family not in FAMILIES:
            raise ConfigError("family", self.family, list(FAMILIES))
        if self.method not in METHODS:
            raise ConfigError("method", self.method, METHODS)
        if self.topology not in BUILTIN and not Path(self.topology).exists():
            raise ConfigError("topology", self.topology, list(BUILTIN) + ["a JSON topology file"])
        require_integers(self, {"budget": 2, "train_graphs": 1, "test_graphs": 1, "test_samples": 1,
                                "matrix_budget": 0})
        for name, most in MAXIMA.items():  # beyond them a run never ends or exhausts memory: a usage error
            value = getattr(self, name)
            if value is not None and value > most:
                raise ConfigError(name, value, reason=f"must be an integer <= {most:,}")
        for name in self.baselines:
            if name not in METHODS:
                raise ConfigError("baselines", name, METHODS)
        for name in (self.method, *self.baselines):
            if name in SB3_PLACERS:  # a missing extra fails before anything is written
                import_sb3_class(name)
        for name in ("batch", "unroll"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1
                                      or value > MAXIMA[name]):
                raise ConfigError(name, value, reason=f"must be a positive integer <= {MAXIMA[name]:,}")
        if self.unroll is not None and self.family != "nmt":
            raise ConfigError("unroll", self.unroll, reason="only the nmt family has an unroll length")
        self.check_hyperparameters((self.method,))
        return self

    def check_hyperparameters(self, methods: Sequence[str]) -> None:
        """Refuse hyperparameters that do not fit one of ``methods``' learners (naming the key and the
        allowed keys); the grappler baseline and the non-learners take none."""
        import case_studies.placement.wield_placer  # noqa: F401  registers the 'wield' learner's keys (torch)
        from wield.agents import hyperparameters

        if self.hyperparameters is None:
            return
        if not isinstance(self.hyperparameters, dict):
            raise ConfigError("hyperparameters", self.hyperparameters, reason="must be a table (the [agent] block)")
        for method in methods:
            if method == "wield" or method in SB3_PLACERS:
                hyperparameters.check(method, self.hyperparameters)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PlacementRunConfig":
        return dataclass_from_dict(cls, data).validate()

    def overrides(self) -> dict[str, Any]:
        return {k: v for k, v in (("batch", self.batch), ("unroll", self.unroll)) if v is not None}

    def single_run_seeds(self) -> TrialSeeds:
        """A single run's seeds: the family's default graph (no workload seed) and the base seed as the
        optimisation seed."""
        return TrialSeeds(trial=0, mode="blackbox", train_workload_seed=None, test_workload_seed=None,
                          test_distribution="in", optimisation_seed=self.seed, base_seed=self.seed)


# ---------------------------------------------------------------------------------------- graphs
