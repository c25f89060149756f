"""Traced training-step graphs: families, serialisation round trip, profiling cache, real evaluator."""

import numpy as np
import pytest

from case_studies.placement.graphs import prepare_graph
from case_studies.placement.profiler import OpCostCache, profile_graph
from case_studies.placement.real_evaluator import RealEvaluator
from case_studies.placement.simulator import Simulator
from case_studies.placement.topology import Topology
from wield.errors import ConfigError
from workloads.graphs import FAMILIES, ComputationGraph

SMALL_NMT = {"layers": 1, "hidden": 32, "vocab": 50, "batch": 4, "unroll": 3}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    graph, traced = prepare_graph("nmt", SMALL_NMT, cache, traced=True)
    return traced, cache


def test_nmt_graph_has_forward_and_backward_of_real_operations(traced):
    graph = traced[0].graph
    assert graph.phases.count("forward") > 50 and graph.phases.count("backward") > graph.phases.count("forward")
    assert "aten.addmm.default" in graph.targets and "aten.bmm.default" in graph.targets  # LSTM cells, attention
    assert any("backward" in t for t in graph.targets)
    params = 2 * 50 * 32 + 2 * (4 * 32 * 32 * 2 + 8 * 32) + (64 * 32 + 32) + (32 * 50 + 50)
    assert graph.param_bytes == params * 4
    assert (graph.seconds[np.array(graph.kinds) == "compute"] > 0).all()
    assert graph.flops[graph.targets.index("aten.addmm.default")] == 2 * 4 * 32 * 128  # 2 m n k


def test_unroll_length_drives_graph_size():
    small = FAMILIES["nmt"].build({**SMALL_NMT, "unroll": 2}).graph
    large = FAMILIES["nmt"].build({**SMALL_NMT, "unroll": 4}).graph
    per_step = (large.n_ops - small.n_ops) / 2
    assert per_step > 50
    assert FAMILIES["nmt"].build({**SMALL_NMT, "unroll": 6}).graph.n_ops == pytest.approx(large.n_ops + 2 * per_step,
                                                                                          rel=0.02)


def test_families_are_seeded_generators():
    nmt = FAMILIES["nmt"]
    assert nmt.sample(3) == nmt.sample(3)
    drawn = {(p["batch"], p["unroll"]) for p in (nmt.sample(s) for s in range(20))}
    assert len(drawn) > 5
    with pytest.raises(ConfigError, match="nmt graph parameter.*'depth'"):
        nmt.params(depth=3)
    for family in ("transformer", "convnet"):
        graph = FAMILIES[family].build(FAMILIES[family].params(batch=2)).graph
        assert graph.family == family and graph.phases.count("backward") > 0


def test_graph_serialisation_round_trip(traced, tmp_path):
    graph = traced[0].graph
    path = graph.save(tmp_path / "graph.json")
    loaded = ComputationGraph.load(path)
    assert loaded.fingerprint() == graph.fingerprint()
    assert loaded.inputs == graph.inputs and loaded.targets == graph.targets
    np.testing.assert_array_equal(loaded.seconds, graph.seconds)
    np.testing.assert_array_equal(loaded.output_bytes, graph.output_bytes)


def test_profiled_costs_are_cached_by_operation_and_shapes(traced):
    traced_graph, cache_dir = traced
    cache = OpCostCache(cache_dir)
    assert cache.path.exists()
    keys = {k for k, kind in zip(traced_graph.graph.cost_keys, traced_graph.graph.kinds) if kind == "compute"}
    assert keys <= set(cache.costs)
    assert len(keys) < traced_graph.graph.phases.count("forward")  # unrolled steps share keys
    profile_graph(traced_graph, cache)
    assert cache.profiled_keys == 0  # nothing left to measure
    graph, none = prepare_graph("nmt", SMALL_NMT, cache_dir)  # from the graph cache, no tracing
    assert none is None and graph.fingerprint() == traced_graph.graph.fingerprint()


def _one_device_step(traced_graph, tmp_path, kind: str) -> tuple[float, float]:
    """(real, simulated) seconds of a step with every operation on one ``kind`` device. How closely they agree
    is timing, measured by ``benchmarks/placement_calibration.py``, not asserted here."""
    name, extra = ("cpu:0", {}) if kind == "cpu" else ("gpu:0", {"torch_device": "cuda:0"})
    topology = Topology.from_dict({"devices": [{"name": name, "kind": kind, "speed": 1.0, "memory_bytes": 2**34,
                                                **extra}]})
    placement = np.zeros(traced_graph.graph.n_ops, dtype=np.int64)
    seconds = profile_graph(traced_graph, OpCostCache(tmp_path), repetitions=2, statistic="min",
                            device="cpu" if kind == "cpu" else "cuda:0")
    simulated = Simulator(traced_graph.graph, topology).evaluate(placement).step_time
    assert simulated >= float(np.sum(seconds[np.array(traced_graph.graph.kinds) == "compute"])) * 0.999
    real = RealEvaluator(traced_graph, topology).step_time(placement, warmup=1, repetitions=2)
    return real, simulated


def test_a_real_all_cpu_step_runs_and_the_simulator_adds_up_its_profiled_operations(traced, tmp_path):
    real, simulated = _one_device_step(traced[0], tmp_path, "cpu")
    assert np.isfinite(real) and real > 0 and simulated > 0


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_a_real_all_cuda_step_runs_and_the_simulator_adds_up_its_profiled_operations(traced, tmp_path):
    """The CUDA twin: operations profiled on the GPU (synchronised around each one), the real step on it."""
    real, simulated = _one_device_step(traced[0], tmp_path, "gpu")
    assert np.isfinite(real) and real > 0 and simulated > 0


def test_real_evaluator_runs_mixed_placements_on_cuda_or_rejects_missing_devices(traced):
    import torch

    evaluator = RealEvaluator(traced[0], Topology.load("1gpu-cpu"))
    mixed = np.arange(traced[0].graph.n_ops) % 2  # alternate cpu:0 and gpu:0: every edge crosses
    if torch.cuda.is_available():
        assert evaluator.step_time(mixed, warmup=1, repetitions=3) > 0
    else:
        with pytest.raises(ConfigError, match="gpu:0.*cuda:0"):
            evaluator.step_time(mixed, warmup=0, repetitions=1)
