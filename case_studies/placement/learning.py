"""The learning verdict of a placement learner, and its training curve in the run record.

Every return here is the reward of one complete placement, ``-step_time / reference`` (the sequential
compute time on the fastest device; -5 for a placement that overflows a device's memory), so the three
inputs of the verdict (``wield.protocols.ladder_verdict``) are on one scale:

- the training curve: the return of each training episode's complete placement (the Wield placer's second
  half-placement; each grappler sample);
- the greedy policy's placement of every evaluated graph (the run's graph, or unseen graphs of the test
  distribution);
- the ladder on the same graphs: the random policy (``RANDOM_PLACEMENTS`` uniformly random devices for the
  layer-major groups of each graph, the random placements the improvement and the cross-graph matrix are
  measured against), the single fastest device (trivial) and HEFT (the field's heuristic).

The Wield placer and the grappler baseline train on placement systems directly (not through a gymnasium
environment), so their verdict is computed here from those returns with ``ladder_verdict``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from case_studies.placement.baselines import heft, random_search, single_device
from case_studies.placement.env import INVALID_REWARD
from case_studies.placement.simulator import Simulator
from case_studies.placement.system import PlacementSystem
from wield.protocols import ComparatorScores, EvaluationInstances, InstanceScores, ladder_verdict
from wield.seeding import derive_seed
from wield.workflows import RunRecord, verdict_cap

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


def _fixed_placement(graph, topology, place) -> float:
    """The return of a heuristic's placement of ``graph`` (``place(system)``: single device, HEFT): the
    best valid placement it measured."""
    system = PlacementSystem(Simulator(graph, topology))
    place(system)
    return max(returns_of(system))


def placer_verdict(placer, graphs: Sequence[Any], instances: EvaluationInstances, topology, seed: int,
                   curve: Sequence[float], training_seeds: Sequence[int] = (),
                   more: Callable[[int, int], tuple[Sequence[Any], EvaluationInstances]] | None = None,
                   cap: int | None = None) -> dict[str, Any]:
    """The verdict of a trained placer (``place(system, explore=False)``): its greedy placement of each of
    ``graphs`` (the ``instances``) against, on the same graphs, random group placements (random), every
    operation on the fastest device that fits (trivial) and HEFT (the heuristic), and its training
    ``curve``. ``more(first, count)`` gives further graphs of the same held-out stream (and their instances)
    for a rung that is still undecided, up to ``cap`` graphs (default: the run's verdict cap)."""

    def scored(chosen: Sequence[Any], batch: EvaluationInstances, first: int) -> InstanceScores:
        batch.check_unused(training=training_seeds if batch.held_out else ())
        greedy, random, single, heft_scores = [], [], [], []
        for i, graph in enumerate(chosen, start=first):
            system = PlacementSystem(Simulator(graph, topology))
            system.measure(placer.place(system, explore=False))
            greedy.append(returns_of(system)[-1:])
            random.append(random_returns(graph, topology, derive_seed(seed, "random-policy", i)))
            single.append([_fixed_placement(graph, topology, single_device)])
            heft_scores.append([_fixed_placement(graph, topology, heft)])
        return InstanceScores(batch, greedy, [
            ComparatorScores("random-policy", "random", random, f"{RANDOM_PLACEMENTS} random layer-major group "
                             "placements per graph, averaged"),
            ComparatorScores("single-device", "trivial", single, "every operation on the fastest device that fits"),
            ComparatorScores("heft", "heuristic", heft_scores, "HEFT list scheduling (single device if invalid)")])

    def further(first: int, count: int, wanted: frozenset[str]) -> InstanceScores:
        assert more is not None
        return scored(*more(first, count), first)

    played = scored(graphs, instances, 0)
    return ladder_verdict(played.learner, played.comparators, instances, curve,
                          score="-step time / sequential time on the fastest device",
                          more=further if more is not None else None,
                          cap=verdict_cap() if cap is None else cap).as_dict()


def record_curve(record: RunRecord, history: Sequence[dict[str, float]]) -> list[float]:
    """Write the training episodes into ``episodes.csv`` (``total_reward`` is the episode's return;
    ``decisions``, the placer's environment steps in the episode, where it says); the returns, in order."""
    for row in history:
        steps = {"decisions": int(row["decisions"])} if "decisions" in row else {}
        record.append_episode({"episode": int(row["episode"]), "total_reward": float(row["return"]),
                               "step_time_ms": row["step_time_ms"] if row["valid"] else float("nan"), **steps})
    return [float(row["return"]) for row in history]
