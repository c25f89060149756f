"""The placement simulator against hand-computed step times, memory limits and bad input."""

import json

import numpy as np
import pytest

from case_studies.placement.simulator import Simulator
from case_studies.placement.topology import Topology
from wield.errors import ConfigError, DataError
from workloads.graphs import ComputationGraph


def make_graph(seconds, inputs, nbytes, name="hand"):
    n = len(seconds)
    return ComputationGraph(name=name, family="hand", params={}, op_names=[f"op{i}" for i in range(n)],
                            kinds=["compute"] * n, targets=["aten.test"] * n, phases=["forward"] * n,
                            inputs=inputs, output_bytes=np.array(nbytes, float), flops=np.zeros(n),
                            cost_keys=[f"k{i}" for i in range(n)], seconds=np.array(seconds, float))


def make_topology(speeds=(1.0, 1.0), memory=(1000.0, 1000.0), latency=0.5, bandwidth=100.0):
    return Topology.from_dict({
        "name": "test", "devices": [{"name": f"d{i}", "speed": s, "memory_bytes": m}
                                    for i, (s, m) in enumerate(zip(speeds, memory))],
        "default_link": {"latency_s": latency, "bandwidth_bytes_per_s": bandwidth}})


def test_chain_runs_sequentially_and_scales_with_device_speed():
    graph = make_graph([1.0, 2.0, 3.0], [[], [0], [1]], [10, 20, 30])
    sim = Simulator(graph, make_topology(speeds=(1.0, 2.0)))
    assert sim.evaluate([0, 0, 0]).step_time == pytest.approx(6.0)
    assert sim.evaluate([1, 1, 1]).step_time == pytest.approx(3.0)
    # A on d0 (1 s), transfer of 10 bytes (0.5 + 10/100 s), B and C on d1 at speed 2 (1 + 1.5 s)
    assert sim.evaluate([0, 1, 1]).step_time == pytest.approx(1.0 + 0.6 + 1.0 + 1.5)


def test_fork_join_runs_branches_in_parallel_on_two_devices():
    # A -> (B, C) -> D, every output 10 bytes: transfers cost 0.5 + 0.1 s
    graph = make_graph([1.0, 2.0, 3.0, 1.0], [[], [0], [0], [1, 2]], [10, 10, 10, 10])
    sim = Simulator(graph, make_topology())
    assert sim.evaluate([0, 0, 0, 0]).step_time == pytest.approx(7.0)
    # B on d0: 1..3; C on d1: 1.6..4.6; C's output back on d0 at 5.2; D: 5.2..6.2
    assert sim.evaluate([0, 0, 1, 0]).step_time == pytest.approx(6.2)


def test_cross_device_transfer_costs_latency_plus_bytes_over_bandwidth():
    graph = make_graph([1.0, 1.0], [[], [0]], [50, 5])
    sim = Simulator(graph, make_topology(latency=0.5, bandwidth=100.0))
    assert sim.evaluate([0, 1]).step_time == pytest.approx(1.0 + 0.5 + 0.5 + 1.0)
    assert sim.evaluate(["d0", "d1"]).step_time == pytest.approx(3.0)
    assert sim.evaluate({"op0": "d1", "op1": "d1"}).step_time == pytest.approx(2.0)


def test_one_link_carries_one_transfer_at_a_time():
    # A feeds B and C, both on d1; one copy crosses; then D on d0 reads B and C from d1 (one link, two sends)
    graph = make_graph([1.0, 1.0, 1.0, 1.0], [[], [0], [0], [1, 2]], [100, 100, 100, 1])
    sim = Simulator(graph, make_topology(latency=0.0, bandwidth=100.0))
    # A 0..1; copy to d1 1..2; B 2..3; C 3..4 (d1 serial); B's output 3..4, C's output 4..5; D 5..6
    assert sim.evaluate([0, 1, 1, 0]).step_time == pytest.approx(6.0)


def test_peak_memory_and_out_of_memory_placement_is_rejected_with_reason():
    graph = make_graph([1.0, 1.0, 1.0], [[], [0], [1]], [10, 20, 30])
    # A (10) is freed after B; C (30, the step's output) stays: peak = 20 (B) + 30 (C) = 50
    result = Simulator(graph, make_topology()).evaluate([0, 0, 0])
    assert result.valid and result.peak_memory[0] == pytest.approx(50.0)
    small = Simulator(graph, make_topology(memory=(40.0, 1000.0))).evaluate([0, 0, 0])
    assert not small.valid
    assert "out of memory on d0" in small.reason and "> " in small.reason
    assert Simulator(graph, make_topology(memory=(40.0, 1000.0))).evaluate([0, 0, 1]).valid


def test_topology_device_with_zero_memory_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"devices\[1\]\.memory_bytes.*positive"):
        make_topology(memory=(1000.0, 0.0))


def test_topology_errors_name_the_field():
    with pytest.raises(ConfigError, match="links"):
        Topology.from_dict({"devices": [{"name": "a", "speed": 1, "memory_bytes": 1},
                                        {"name": "b", "speed": 1, "memory_bytes": 1}]})
    with pytest.raises(ConfigError, match="topology.*4gpu-cpu"):
        Topology.load("no-such-topology")
    topology = Topology.load("4gpu-cpu")
    assert topology.names == ["cpu:0", "gpu:0", "gpu:1", "gpu:2", "gpu:3"]
    assert Topology.load("1gpu-cpu").n_devices == 2


def test_placement_naming_a_missing_device_is_a_clear_error():
    graph = make_graph([1.0, 1.0], [[], [0]], [1, 1])
    sim = Simulator(graph, make_topology())
    with pytest.raises(ConfigError, match=r"'gpu:7'.*allowed: 'd0', 'd1'"):
        sim.evaluate(["d0", "gpu:7"])
    with pytest.raises(ConfigError, match="placement device"):
        sim.evaluate([0, 5])
    with pytest.raises(ConfigError, match="2 operations"):
        sim.evaluate([0])


def test_graph_file_that_does_not_parse_is_a_clear_error(tmp_path):
    bad = tmp_path / "graph.json"
    bad.write_text('{"format": "wield.computation_graph/1", "ops": [')
    with pytest.raises(DataError, match="does not parse as JSON"):
        ComputationGraph.load(bad)
    bad.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(DataError, match="not a computation graph"):
        ComputationGraph.load(bad)
    graph = make_graph([1.0, 1.0], [[], [0]], [1, 1]).to_dict()
    graph["ops"]["inputs"] = [[], [1]]  # reads itself: not in topological order
    bad.write_text(json.dumps(graph))
    with pytest.raises(DataError, match="inputs must be indices of earlier operations"):
        ComputationGraph.load(bad)


def test_heft_runs_parallel_branches_on_two_devices_and_is_charged_one_evaluation():
    from case_studies.placement.baselines import heft
    from case_studies.placement.system import PlacementSystem

    graph = make_graph([1.0, 3.0, 3.0, 1.0], [[], [0], [0], [1, 2]], [1, 1, 1, 1])
    system = PlacementSystem(Simulator(graph, make_topology(latency=0.01)))
    assert heft(system)
    assert system.evaluations == 1
    assert set(system.best_placement[1:3]) == {0, 1}  # the branches run side by side
    # A 0..1 and B 1..4 on one device; C 1.02..4.02 on the other (A's copy: 0.01 + 1/100 s) and D there
    # once B's output arrives at 4.02: until 5.02
    assert system.best_time == pytest.approx(5.02)
