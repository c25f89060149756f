"""PPO with masks, the Wield placer against random search, and the placement CLI end to end."""

import json

import numpy as np
import pytest
import torch
from torch import nn

from case_studies.placement.placing import new_system, run_method
from case_studies.placement.graphs import prepare_graph
from case_studies.placement.topology import Topology
from wield.agents.base import Transition
from wield.agents.ppo import PPOAgent, PPOConfig
from wield.cli import main

SMALL_NMT = {"layers": 1, "hidden": 64, "vocab": 200, "batch": 16, "unroll": 4}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("placement-cache")


@pytest.fixture(scope="module")
def small_graph(cache):
    return prepare_graph("nmt", SMALL_NMT, cache)[0]


class _Logits(nn.Module):
    def __init__(self, items: int, actions: int) -> None:
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(items, actions))

    def forward(self, observation):
        return self.logits if observation.shape[0] > 1 else self.logits[0]


def test_ppo_learns_a_masked_choice_and_never_takes_a_masked_action():
    agent = PPOAgent(lambda: _Logits(1, 4), PPOConfig(learning_rate=0.1, epochs=4, min_episodes=4), seed=0)
    mask = np.array([True, True, True, False])
    observation = np.zeros(1, dtype=np.float32)
    for _ in range(40):
        action = agent.act(observation, explore=True, mask=mask)
        assert action != 3
        agent.observe(Transition(observation, action, float(action == 2), observation, True, mask=mask))
        agent.update()
    assert agent.act(observation, explore=False, mask=mask) == 2


def test_ppo_factorised_actions_learn_per_item_and_forced_items_stay_put():
    agent = PPOAgent(lambda: _Logits(3, 2), PPOConfig(learning_rate=0.1, min_episodes=4), seed=1)
    observation = np.zeros((3, 1), dtype=np.float32)
    forced = np.array([[True, True], [True, True], [False, True]])  # item 2 may only take action 1
    for _ in range(60):
        action = agent.act(observation, mask=forced)
        assert action.shape == (3,) and action[2] == 1
        agent.observe(Transition(observation, action, float(action[0] == 1) + float(action[1] == 0), observation,
                                 True, mask=forced))
        agent.update()
    assert agent.act(observation, explore=False, mask=forced).tolist() == [1, 0, 1]
    restored = PPOAgent(lambda: _Logits(3, 2), PPOConfig(), seed=5)
    restored.load_state_dict(agent.state_dict())
    assert restored.act(observation, explore=False, mask=forced).tolist() == [1, 0, 1]


def test_wield_placer_beats_random_search_at_equal_budget(small_graph):
    topology = Topology.load("4gpu-cpu")
    systems = {method: new_system(small_graph, topology) for method in ("wield", "random")}
    for method, system in systems.items():
        run_method(method, [system], 120, seed=0)
        assert system.evaluations == 120
    again = new_system(small_graph, topology)
    run_method("wield", [again], 120, seed=0)
    assert again.measurements == systems["wield"].measurements  # same seed, same search
    wield, random = systems["wield"].metrics(), systems["random"].metrics()
    assert wield["best_step_time_ms"] < 0.9 * random["best_step_time_ms"], (wield, random)
    assert wield["improvement"] > random["improvement"]


def test_single_run_and_compare_from_the_cli(small_graph, tmp_path, capsys):
    graph_file = small_graph.save(tmp_path / "graph.json")
    out = tmp_path / "run"
    assert main(["run", "placement", "--graph", str(graph_file), "--budget", "20", "--baselines", "random,heft",
                 "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "improvement" in printed and "heft" in printed and "objective speedup_vs_single_device >= 1.1" in printed
    assert "learned: " in printed  # the learning verdict of the trained placer
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert set(evaluation["methods"]) == {"wield", "random", "heft"}
    assert evaluation["methods"]["wield"]["evaluations"] == 20
    verdict = evaluation["verdict"]  # blackbox: the run's one graph, compared exactly (deterministic simulator)
    assert [r["name"] for r in verdict["rungs"]] == ["random-policy", "single-device", "heft"]
    assert verdict["instances"]["count"] == 1 and not verdict["instances"]["held_out"]
    assert verdict["rungs"][1]["samples"] == 0 and verdict["rungs"][1]["ci_low"] == verdict["rungs"][1]["ci_high"]
    assert evaluation["objective"]["metric"] == "speedup_vs_single_device"
    for name in ("config.json", "seeds.json", "measurements.csv", "results.png", "model.pt", "best_placement.npy"):
        assert (out / name).exists(), name
    assert json.loads((out / "status.json").read_text())["status"] == "complete"
    compare = tmp_path / "compare"
    assert main(["compare", "placement", "--class", "C1", "--trials", "2", "--methods", "wield,heft,single",
                 "--graph", str(graph_file), "--budget", "10", "--quiet", "--out", str(compare)]) == 0
    comparison = json.loads((compare / "comparison.json").read_text())
    assert [m["method"] for m in comparison["methods"]] == ["wield", "heft", "single"]
    assert comparison["methods"][0]["evaluations"]["median"] == 10


def test_generalisation_class_writes_the_cross_graph_matrix(cache, tmp_path, capsys):
    out = tmp_path / "c3"
    assert main(["run", "placement", "--class", "C3", "--trials", "1", "--batch", "8", "--unroll", "2",
                 "--budget", "8", "--train-graphs", "1", "--test-graphs", "1", "--test-samples", "2",
                 "--matrix-budget", "4", "--cache-dir", str(cache), "--quiet", "--out", str(out)]) == 0
    assert "C3(n=8, s=1" in capsys.readouterr().out
    trial = out / "trials" / "trial-000"
    matrix = json.loads((trial / "cross_graph_matrix.json").read_text())
    assert len(matrix["improvement"]) == len(matrix["graphs"]) == 2
    assert (trial / "cross_graph_matrix.png").exists() and (trial / "cross_graph_matrix.csv").exists()


def test_bad_cli_input_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["run", "placement", "--graph", str(bad), "--baselines", "none", "--quiet",
                 "--out", str(tmp_path / "r")]) == 2
    assert "does not parse as JSON" in capsys.readouterr().err
    assert main(["run", "placement", "--topology", "8gpu", "--quiet"]) == 2
    assert "'topology'" in capsys.readouterr().err


def test_cross_graph_matrix_rows_differ_only_in_the_training_graph(cache):
    from case_studies.placement.matrix import UNTRAINED, cross_graph_matrix

    graphs = [prepare_graph("nmt", SMALL_NMT, cache)[0],
              prepare_graph("nmt", {**SMALL_NMT, "batch": 8, "unroll": 2}, cache)[0]]
    topology = Topology.load("4gpu-cpu")
    # Untrained (budget 0), every row is the same initial model: any row effect would be initialisation luck.
    untrained = cross_graph_matrix("wield", graphs, topology, budget=0, samples=3, seed=7)
    assert untrained["improvement"][0] == untrained["improvement"][1] == untrained["control_rows"][UNTRAINED]
    trained = cross_graph_matrix("wield", graphs, topology, budget=8, samples=3, seed=7)
    assert trained["improvement"][0] != trained["improvement"][1]  # different training graphs, different rows
    assert trained["control_rows"][UNTRAINED] == untrained["control_rows"][UNTRAINED]  # the same initial model
