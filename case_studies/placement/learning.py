"""The learning verdict of a placement learner, and its training curve in the run record.

Every return here is the reward of one complete placement, ``-step_time / reference`` (the sequential
compute time on the fastest device; -5 for a placement that overflows a device's memory), so the three
inputs of the verdict (``wield.protocols.learning_verdict``) are on one scale:

- the training curve: the return of each training episode's complete placement (the Wield placer's second
  half-placement; each grappler sample);
- the greedy policy's placement of every evaluated graph (the run's graph, or each unseen test graph);
- the random policy: ``RANDOM_PLACEMENTS`` uniformly random devices for the layer-major groups of each of
  those graphs (the random placements the improvement and the cross-graph matrix are measured against).

The Wield placer and the grappler baseline train on placement systems directly (not through a gymnasium
environment), so their verdict is computed here from those returns with ``learning_verdict``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from case_studies.placement.baselines import random_search
from case_studies.placement.env import INVALID_REWARD
from case_studies.placement.simulator import Simulator
from case_studies.placement.system import PlacementSystem
from wield.protocols import learning_verdict
from wield.seeding import derive_seed
from wield.workflows import RunRecord

RANDOM_PLACEMENTS = 20


def returns_of(system: PlacementSystem) -> list[float]:
    """The return of every placement measured on ``system``, in order."""
    reference = system.reference_time
    return [INVALID_REWARD if not np.isfinite(t) else -float(t) / reference for t in system.measurements]


def random_returns(graph, topology, seed: int, count: int = RANDOM_PLACEMENTS) -> list[float]:
    """Returns of ``count`` random layer-major group placements of ``graph`` (a fresh record)."""
    system = PlacementSystem(Simulator(graph, topology))
    random_search(system, count, seed)
    return returns_of(system)


def placer_verdict(placer, graphs: Sequence[Any], topology, seed: int, curve: Sequence[float]) -> dict[str, Any]:
    """The verdict of a trained placer (``place(system, explore=False)``): its greedy placement of each of
    ``graphs`` against random placements of the same graphs, and its training ``curve``."""
    greedy, random = [], []
    for i, graph in enumerate(graphs):
        system = PlacementSystem(Simulator(graph, topology))
        system.measure(placer.place(system, explore=False))
        greedy += returns_of(system)
        random += random_returns(graph, topology, derive_seed(seed, "random-policy", i))
    return learning_verdict(greedy, random, curve).as_dict()


def record_curve(record: RunRecord, history: Sequence[dict[str, float]]) -> list[float]:
    """Write the training episodes into ``episodes.csv`` (``total_reward`` is the episode's return); the
    returns, in order."""
    for row in history:
        record.append_episode({"episode": int(row["episode"]), "total_reward": float(row["return"]),
                               "step_time_ms": row["step_time_ms"] if row["valid"] else float("nan")})
    return [float(row["return"]) for row in history]
