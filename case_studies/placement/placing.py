"""Running a placement method on placement systems: a fresh system per graph, a method spending its budget
(learners train, random search samples, HEFT and the single device place once), and a trained method
placing an unseen graph. Used by a run (``run.py``) and by the cross-graph matrix (``matrix.py``).
"""

from __future__ import annotations

from typing import Any, Mapping

from case_studies.placement.baselines import GrapplerPlacer, heft, random_search, single_device
from case_studies.placement.methods import LEARNERS, SB3_PLACERS
from case_studies.placement.simulator import Simulator
from case_studies.placement.system import PlacementSystem
from case_studies.placement.topology import Topology
from case_studies.placement.wield_placer import WieldPlacer
from wield.agents import hyperparameters
from wield.seeding import derive_seed
from workloads.graphs import ComputationGraph


def new_system(graph: ComputationGraph, topology: Topology) -> PlacementSystem:
    """A placement system (nothing measured yet) of ``graph`` on the simulated ``topology``."""
    return PlacementSystem(Simulator(graph, topology))


def run_method(method: str, systems: list[PlacementSystem], budget: int, seed: int, progress=None,
               agent: Mapping[str, Any] | None = None):
    """Spend ``budget`` evaluations (learners, random search) or what the method needs; returns the
    trained placer for learners, else None. A learner's ``history`` holds its training episodes; ``agent``
    is the run's hyperparameter block (``wield.agents.hyperparameters``: ``WieldPlacerConfig`` for
    ``wield``, the SB3 class's keywords for ``sb3-*``)."""
    if method == "wield":
        placer = WieldPlacer(systems[0].topology.n_devices, hyperparameters.make_config("wield", agent), seed=seed)
        placer.train(systems, budget, progress)
        return placer
    if method == "grappler":
        placer = GrapplerPlacer(systems[0].topology.n_devices, seed=seed)
        placer.train(systems, budget, progress)
        return placer
    if method in SB3_PLACERS:
        from case_studies.placement.sb3_placer import SB3Placer

        placer = SB3Placer(method, systems[0].topology.n_devices, seed=seed,
                           hyperparameters=hyperparameters.for_learner(method, agent))
        placer.train(systems, budget, progress)
        return placer
    for i, system in enumerate(systems):
        if method == "random":
            random_search(system, budget // len(systems), derive_seed(seed, "graph", i), progress)
        elif method == "heft":
            heft(system)
        elif method == "single":
            single_device(system)
    return None


def place_unseen(method: str, placer, system: PlacementSystem, samples: int, seed: int) -> float:
    """Best step time of ``samples`` placements of ``system`` by a trained method (greedy first)."""
    if method in LEARNERS:
        system.measure(placer.place(system, explore=False))
        for _ in range(samples - 1):
            system.measure(placer.place(system, explore=True))
    else:
        run_method(method, [system], samples, seed)
    return system.best_time
