"""One placement run (or one trial of an experiment): graphs, a method, its budget, metrics, a run record.

Blackbox (single runs, C0-C2): one graph; the method searches placements for ``budget`` graph evaluations;
metrics are the best step time found and the improvement over the mean of the first 20 measurements
(success: >= 30%). Generalisation (C3-C6): the method trains on ``train_graphs`` graphs of the family
(round-robin, ``budget`` evaluations), then places unseen test graphs (in-distribution: the same family;
out-of-distribution: the transformer and convnet families); a test graph's improvement compares the best
of ``test_samples`` placements of the trained policy with the mean of 20 random group placements of it.
Generalisation runs of a learner also write the cross-graph matrix (``matrix.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from case_studies.placement.baselines import heft, random_search, single_device
from case_studies.placement.config import PlacementRunConfig
from case_studies.placement.placing import new_system, place_unseen, run_method
from case_studies.placement.graphs import load_graph_file, prepare_graph
from case_studies.placement.learning import placer_verdict, record_curve
from case_studies.placement.methods import LEARNERS, METRICS, OBJECTIVE
from case_studies.placement.system import FIRST_MEASUREMENTS, PlacementSystem
from case_studies.placement.topology import Topology
from wield.protocols import EvaluationInstances, TrialSeeds, TrialSummary
from wield.seeding import derive_seed
from wield.workflows import RunRecord, progress_wanted, run_objective
from workloads.graphs import ComputationGraph, get_family

OUT_OF_DISTRIBUTION = ("transformer", "convnet")
VERDICT_GRAPHS = 10  # generalisation: unseen graphs of the learning verdict


def _family_graph(family: str, seed: int | None, overrides: dict, cache_dir) -> ComputationGraph:
    params = get_family(family).params(**overrides) if seed is None else get_family(family).sample(seed, **overrides)
    return prepare_graph(family, params, cache_dir)[0]


def blackbox_graph(config: PlacementRunConfig, seeds: TrialSeeds) -> ComputationGraph:
    if config.graph:
        return load_graph_file(config.graph)
    return _family_graph(config.family, seeds.train_workload_seed, config.overrides(), config.cache_dir)


def generalisation_graphs(config: PlacementRunConfig, seeds: TrialSeeds):
    overrides = config.overrides()
    train = [_family_graph(config.family, derive_seed(seeds.train_workload_seed, "graph", i), overrides,
                           config.cache_dir) for i in range(config.train_graphs)]
    test = [test_graph(config, seeds, derive_seed(seeds.test_workload_seed, "graph", i), i)
            for i in range(config.test_graphs)]
    return train, test


def test_graph(config: PlacementRunConfig, seeds: TrialSeeds, seed: int, index: int) -> ComputationGraph:
    """A graph of the trial's test distribution drawn with ``seed``: the family's (in-distribution), or the
    ``index``-th out-of-distribution family's."""
    if seeds.test_distribution == "out":
        return _family_graph(OUT_OF_DISTRIBUTION[index % len(OUT_OF_DISTRIBUTION)], seed, {}, config.cache_dir)
    return _family_graph(config.family, seed, config.overrides(), config.cache_dir)


def verdict_instances(config: PlacementRunConfig, seeds: TrialSeeds,
                      graph: ComputationGraph | None = None) -> tuple[list[ComputationGraph], EvaluationInstances]:
    """The learning verdict's graphs. Blackbox: the run's one graph (the test workload is the training
    workload; the simulator is deterministic, so comparisons on it are exact). Generalisation: ``VERDICT_GRAPHS``
    graphs of the test distribution drawn with the trial's evaluation seeds, never trained or selected on."""
    if graph is not None:
        seed = seeds.train_workload_seed if seeds.train_workload_seed is not None else seeds.shared("graph")
        return [graph], EvaluationInstances((seed,), f"the graph {graph.name}", held_out=False, deterministic=True)
    return verdict_graphs(config, seeds, 0, VERDICT_GRAPHS)


def verdict_graphs(config: PlacementRunConfig, seeds: TrialSeeds, first: int,
                   count: int) -> tuple[list[ComputationGraph], EvaluationInstances]:
    """Graphs ``first .. first + count - 1`` of the verdict's held-out stream (generalisation classes)."""
    chosen = seeds.evaluation_seeds(first + count)[first:]
    graphs = [test_graph(config, seeds, seed, i) for i, seed in enumerate(chosen, start=first)]
    what = "out-of-distribution" if seeds.test_distribution == "out" else f"{config.family}"
    return graphs, EvaluationInstances(chosen, f"{what} graphs of the test distribution", deterministic=True)


def save_placer(record: RunRecord, method: str, placer) -> None:
    """The trained placer's model as ``model.pt``."""
    record.save_model(placer.state_dict() if method == "wield" else placer.policy.state_dict())


def method_verdict(placer, graphs: list[ComputationGraph], instances: EvaluationInstances, topology: Topology,
                   seed: int, record: RunRecord, training_seeds, more=None) -> dict[str, Any]:
    """The learning verdict of a trained placer on ``graphs`` (``learning.py``; ``more(first, count)``: further
    held-out graphs while a rung is undecided); writes ``episodes.csv``."""
    curve = record_curve(record, placer.history)
    return placer_verdict(placer, graphs, instances, topology, derive_seed(seed, "random-policy"), curve,
                          training_seeds, more)


def _reference(system: PlacementSystem, seed: int) -> PlacementSystem:
    """20 random group placements of a graph on a separate record: the initial-placement reference."""
    reference = new_system(system.graph, system.topology)
    random_search(reference, FIRST_MEASUREMENTS, derive_seed(seed, "reference"))
    return reference


def _baseline_times(graph: ComputationGraph, topology: Topology) -> dict[str, float]:
    single, heft_system = new_system(graph, topology), new_system(graph, topology)
    single_device(single)
    heft(heft_system)
    return {"single": single.best_time, "heft": heft_system.best_time}


def _metrics(system: PlacementSystem, baselines: dict[str, float]) -> dict[str, float]:
    metrics = system.metrics()
    best = system.best_time
    metrics["speedup_vs_single_device"] = float(baselines["single"] / best) if np.isfinite(best) else 0.0
    metrics["speedup_vs_heft"] = float(baselines["heft"] / best) if np.isfinite(best) else 0.0
    return metrics


# ---------------------------------------------------------------------------------------- runs
@dataclass
class PlacementRunResult:
    record: RunRecord
    metrics: dict[str, dict[str, float]]  # per method
    transitions: int
    seconds: float
    matrix: dict[str, Any] | None = None
    verdict: dict[str, Any] | None = None


def run_placement(config: PlacementRunConfig, seeds: TrialSeeds, record: RunRecord, *, progress: bool = False,
                  echo: Callable[[str], None] = print) -> PlacementRunResult:
    """Run ``config.method`` and its ``baselines`` into the run record the core started; blackbox or
    generalisation."""
    config.validate()
    methods = tuple(dict.fromkeys((config.method, *config.baselines)))
    if seeds.mode == "generalisation":
        return _run_generalisation(config, record, seeds, methods, progress, echo)
    return _run_blackbox(config, record, seeds, methods, progress, echo)


def _progress_bar(total: int, enabled: bool, label: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="eval", disable=not enabled, leave=False)


def agent_block(config: PlacementRunConfig, method: str) -> dict[str, Any] | None:
    """The hyperparameters ``method`` trains with: the run's block for its own method, none for baselines."""
    return config.hyperparameters if method == config.method else None


def _run_blackbox(config, record, seeds, methods, progress, echo) -> PlacementRunResult:
    topology = Topology.load(config.topology)
    graph = blackbox_graph(config, seeds)
    echo(f"graph {graph.summary()}; topology {topology.name}")
    record.write_json("graphs.json", {"blackbox": _graph_info(graph)})
    baselines = _baseline_times(graph, topology)
    agent_seed = int(seeds.optimisation_seed)
    results, curves, transitions, verdict = {}, {}, 0, None
    for method in methods:
        system = new_system(graph, topology)
        with _progress_bar(config.budget, progress and method in LEARNERS + ("random",), method) as bar:
            placer = run_method(method, [system], config.budget, agent_seed, bar.update, agent_block(config, method))
        results[method] = _metrics(system, baselines)
        curves[method] = system.measurements
        if method == methods[0]:
            transitions = system.evaluations
            if placer is not None:
                save_placer(record, method, placer)
                graphs, instances = verdict_instances(config, seeds, graph)
                verdict = method_verdict(placer, graphs, instances, topology, agent_seed, record, instances.seeds)
            np.save(record.file("best_placement.npy"), system.best_placement)
    _write_measurements(record, curves)
    record.write_json("evaluation.json", {"mode": "blackbox", "graph": graph.name, "topology": topology.name,
                                          "methods": results, **_judged(results[methods[0]]), "verdict": verdict})
    _learning_figure(record, curves)
    return PlacementRunResult(record, results, transitions, 0.0, verdict=verdict)


def _run_generalisation(config, record, seeds, methods, progress, echo) -> PlacementRunResult:
    topology = Topology.load(config.topology)
    train, test = generalisation_graphs(config, seeds)
    echo(f"train graphs: {', '.join(g.name for g in train)}; test graphs: {', '.join(g.name for g in test)}")
    record.write_json("graphs.json", {"train": [_graph_info(g) for g in train], "test": [_graph_info(g) for g in test]})
    agent_seed = int(seeds.optimisation_seed)
    results, transitions, matrix, verdict = {}, 0, None, None
    for method in methods:
        systems = [new_system(g, topology) for g in train]
        with _progress_bar(config.budget, progress and method in LEARNERS + ("random",), method) as bar:
            placer = run_method(method, systems, config.budget, agent_seed, bar.update, agent_block(config, method))
        per_graph = []
        for i, graph in enumerate(test):
            system = new_system(graph, topology)
            best = place_unseen(method, placer, system, config.test_samples, derive_seed(agent_seed, "test", i))
            reference = _reference(system, agent_seed).metrics()["initial_mean_step_time_ms"] / 1e3
            baselines = _baseline_times(graph, topology)
            per_graph.append({"graph": graph.name, "best_step_time_ms": best * 1e3,
                              "reference_step_time_ms": reference * 1e3, "improvement": 1 - best / reference,
                              "speedup_vs_single_device": baselines["single"] / best,
                              "speedup_vs_heft": baselines["heft"] / best, "invalid_placements": system.invalid})
        training_evaluations = sum(s.evaluations for s in systems)
        results[method] = {
            "improvement": float(np.mean([g["improvement"] for g in per_graph])),
            "best_step_time_ms": float(np.mean([g["best_step_time_ms"] for g in per_graph])),
            "initial_mean_step_time_ms": float(np.mean([g["reference_step_time_ms"] for g in per_graph])),
            "speedup_vs_single_device": float(np.mean([g["speedup_vs_single_device"] for g in per_graph])),
            "speedup_vs_heft": float(np.mean([g["speedup_vs_heft"] for g in per_graph])),
            "evaluations": training_evaluations + config.test_samples * len(test),
            "invalid_placements": int(sum(s.invalid for s in systems) + sum(g["invalid_placements"] for g in per_graph)),
            "test_graphs": per_graph,
        }
        if method == methods[0]:
            transitions = training_evaluations
            if placer is not None:
                save_placer(record, method, placer)
                graphs, instances = verdict_instances(config, seeds)
                trained_on = [derive_seed(seeds.train_workload_seed, "graph", i) for i in range(config.train_graphs)]
                verdict = method_verdict(placer, graphs, instances, topology, agent_seed, record, trained_on,
                                         lambda first, count: verdict_graphs(config, seeds, first, count))
            if method in LEARNERS and config.matrix_budget > 0:
                from case_studies.placement.matrix import cross_graph_matrix

                matrix = cross_graph_matrix(method, train[:2] + test[:2], topology, config.matrix_budget,
                                            config.test_samples, agent_seed, record, agent=agent_block(config, method))
    record.write_json("evaluation.json", {"mode": "generalisation", "topology": topology.name,
                                          "test_distribution": seeds.test_distribution, "methods": results,
                                          **_judged(results[methods[0]]), "verdict": verdict,
                                          "cross_graph_matrix": matrix})
    return PlacementRunResult(record, results, transitions, 0.0, matrix, verdict)


# ---------------------------------------------------------------------------------------- records
def _judged(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``evaluation.json``'s ``objective`` and ``success`` (it met, on the method's row): the run's objective
    (``--objective``'s in a single run, the experiment's in a trial, else ``methods.OBJECTIVE``)."""
    objective = run_objective(OBJECTIVE)
    return {"objective": objective.as_dict(), "success": objective.met(metrics)}


def _graph_info(graph: ComputationGraph) -> dict[str, Any]:
    return {"name": graph.name, "family": graph.family, "params": graph.params, "operations": graph.n_ops,
            "edges": graph.n_edges, "fingerprint": graph.fingerprint()}


def _write_measurements(record: RunRecord, curves: Mapping[str, list[float]]) -> None:
    rows = [{"method": method, "evaluation": i + 1, "step_time_ms": v * 1e3}
            for method, values in curves.items() for i, v in enumerate(values)]
    table = pd.DataFrame(rows, columns=["method", "evaluation", "step_time_ms"])
    record.write_text("measurements.csv", table.to_csv(index=False, float_format="%.6f", lineterminator="\n"))


def _learning_figure(record: RunRecord, curves: Mapping[str, list[float]]) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4))
    axis = figure.subplots()
    styles = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))  # one per reference line: never two identical dashes
    references = 0
    for index, (method, values) in enumerate(curves.items()):
        values = np.array(values, dtype=float) * 1e3
        colour = f"C{index % 10}"  # each method its own colour, reference lines included
        if values.size > 1:
            best = np.fmin.accumulate(np.where(np.isfinite(values), values, np.inf))
            axis.plot(np.arange(1, values.size + 1), best, color=colour, label=f"{method} (best so far)")
        elif values.size == 1:
            axis.axhline(values[0], color=colour, linestyle=styles[references % len(styles)], lw=1.5, label=method)
            references += 1
    axis.set_xlabel("graph evaluations")
    axis.set_ylabel("step time (ms)")
    axis.legend()
    record.save_figure(figure, "results.png")


def run_placement_trial(config: Mapping[str, Any], seeds: TrialSeeds, record: RunRecord) -> TrialSummary:
    """One planned trial of ``config["method"]`` (and, in a single run, its ``baselines``) into ``record``;
    the summary the classification reads."""
    import torch

    torch.set_num_threads(1)
    run_config = PlacementRunConfig.from_dict(config)
    progress = progress_wanted()
    result = run_placement(run_config, seeds, record, progress=progress, echo=print if progress else (lambda _: None))
    metrics = result.metrics[run_config.method]
    return TrialSummary(trial=seeds.trial, method=run_config.method, transitions=result.transitions,
                        evaluations=int(metrics["evaluations"]),
                        metrics={k: v for k, v in metrics.items() if k in METRICS},
                        methods={name: {k: v for k, v in m.items() if k in METRICS} for name, m in result.metrics.items()},
                        verdict=result.verdict, extras={"cross_graph_matrix": result.matrix} if result.matrix else {})
