"""The scheduling RL task: masks, the three rewards on hand-computed episodes, the growing episodes, the
classes' workloads, the module layering, and PPO learning against the random policy on a small workload.

The profile takes ``2 + b`` ms for a batch of ``b`` (batch 1: 3 ms), so every reward below can be checked by
hand: the early reward of a batch of ``b`` is ``2 b e1 - exec(b)``; a violation costs ``-3 x 2 e1 = -18``;
the GPU term is ``-0.1 x`` the GPU's outstanding work after the decision.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

from case_studies.scheduling.environment import episode_lengths, evaluation_env
from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.rewards import Reward
from case_studies.scheduling.task_design import batch_head, infer_head
from case_studies.scheduling.workload import Stream, Workload
from wield.errors import ConfigError
from wield.protocols import TrialPlan

HAND = BatchProfile("hand", tuple(2.0 + b for b in range(1, 17)), "2 + b ms")
SLOTS = 12


def one_shot(model: int, at_ms: float) -> Stream:
    return Stream(model, "fixed-rate", rate=1.0, start_ms=at_ms, end_ms=at_ms + 1.0)


def two_requests(reward: str = "dense", late_charge: str = "completion"):
    """Models 0 and 1 get one request each at 0.5 ms, SLO 6 ms (deadline 6.5), one GPU."""
    workload = Workload("two", (6.0, 6.0), [one_shot(0, 0.5), one_shot(1, 0.5)], duration_ms=2.0)
    return evaluation_env([workload], 1, Reward(reward, late_charge=late_charge), profile=HAND)


def action(**infer_batch: tuple[int, int]) -> dict:
    """Null everywhere except ``slotN=(infer, batch index)``."""
    chosen = {}
    for slot in range(SLOTS):
        chosen[infer_head(slot)], chosen[batch_head(slot)] = 0, 0
    for name, (infer, batch) in infer_batch.items():
        slot = int(name[4:])
        chosen[infer_head(slot)], chosen[batch_head(slot)] = infer, batch
    return chosen


def test_state_is_25_numbers_with_padding_and_masks_follow_pending_requests():
    workload = Workload("five", (30.0, 30.0), [one_shot(0, 0.5)] * 5 + [one_shot(1, 0.2)], duration_ms=2.0)
    env = evaluation_env([workload], 2, profile=HAND)
    observation, info = env.reset(seed=0)
    assert observation.shape == (25,) and env.observation_space.contains(observation)
    # model 1's request is older (0.2 ms): slot 0; then model 0 with 5 requests; the rest is padding
    state = env.context["state"]
    assert state.models.tolist() == [1, 0] and state.pending.tolist() == [1, 5]
    assert observation[1] == pytest.approx((30.2 - 1.0 - 3.0) / 25.0)  # laxity of model 1, scaled by 25 ms
    assert np.all(observation[4:24:2] == 0) and np.all(observation[5:24:2] == 4.0)  # (0, 1000 ms) clipped
    mask = info["action_mask"]
    assert mask[infer_head(0)].tolist() == [True, True] and mask[batch_head(0)].tolist() == [1, 0, 0, 0, 0]
    assert mask[batch_head(1)].tolist() == [1, 1, 1, 0, 0]  # 1, 2 or 4 of its 5 requests
    assert mask[infer_head(2)].tolist() == [True, False] and mask[batch_head(2)].tolist() == [1, 0, 0, 0, 0]
    # an agent that ignores the masks is corrected: batch 16 of 5 pending becomes 4; infer on padding is null
    system_action = env.converter.agent_to_system_action(action(slot1=(1, 4), slot5=(1, 0)), env.context)
    assert system_action == ((0, 4),)


def test_dense_reward_on_a_hand_computed_episode():
    env = two_requests("dense")
    env.reset(seed=0)
    # tick 1: run model 0 only (1 -> 4 ms, on time): early 2*3 - 3 = 3, GPU term -0.1 * 3
    _, reward, done, _, _ = env.step(action(slot0=(1, 0)))
    assert reward == pytest.approx(3.0 - 0.3) and not done
    # tick 2: model 1 behind it (4 -> 7 ms, deadline 6.5: late): early 3, GPU term -0.1 * 5, and the late
    # completion at 7 ms (skipped steps, credited to this decision) costs -18
    _, reward, done, _, info = env.step(action(slot0=(1, 0)))
    assert reward == pytest.approx(3.0 - 0.5 - 18.0) and done
    episode = info["metrics"]["episode"]
    assert (episode["on_time"], episode["late"], episode["timed_out"]) == (1, 1, 0)


def test_alternative_rewards_and_late_charged_at_dispatch():
    returns = {}
    for reward, charge in (("dense", "dispatch"), ("dense-no-gpu", "completion"), ("sparse", "completion")):
        env = two_requests(reward, charge)
        env.reset(seed=0)
        first = env.step(action(slot0=(1, 0), slot1=(1, 0)))  # both at once: model 1 runs 4 -> 7, late
        returns[reward] = first[1]
        assert first[2]
    # dense with the violation charged when the late batch is dispatched: the same total, in one step
    assert returns["dense"] == pytest.approx(6.0 - 0.1 * 6.0 - 18.0)
    assert returns["dense-no-gpu"] == pytest.approx(6.0 - 18.0)
    assert returns["sparse"] == pytest.approx(1.0 - 1.0)
    with pytest.raises(ConfigError, match="late_charge"):
        Reward("dense", late_charge="later")


def test_a_request_never_scheduled_times_out_and_is_charged():
    env = two_requests("dense")
    env.reset(seed=0)
    total, done, steps = 0.0, False, 0
    while not done:
        _, reward, done, _, info = env.step(action())
        total, steps = total + reward, steps + 1
    # both requests time out when their laxity passes 0 (6.5 - 3 = 3.5 ms): decisions at 1, 2 and 3 ms
    assert steps == 3 and total == pytest.approx(-36.0)
    assert info["metrics"]["episode"]["timed_out"] == 2


def test_episodes_double_every_other_episode_up_to_the_maximum():
    assert episode_lengths(7, 500, 1500) == [500, 500, 1000, 1000, 1500, 1500, 1500]
    with pytest.raises(ConfigError, match="max_decisions"):
        episode_lengths(3, 500, 100)


def test_classes_draw_shapes_and_hold_out_the_azure_like_workload():
    from case_studies.scheduling.tasks import trial_tasks

    config = {"rate": 2400.0, "models": 48, "slo_ms": 24.0, "gpus": 6, "train_s": 0.05, "test_s": 1.0,
              "curve_s": 0.05, "trace": ""}
    c0 = trial_tasks(config, TrialPlan.make("C0", 1).trials[0], 2)
    assert c0.test.name == "low-slo-2400rps-48m-24ms" and c0.test_gpus == 6 and not c0.held_out
    c2 = [trial_tasks(config, seeds, 2).test.name for seeds in TrialPlan.make("C2", 6).trials]
    assert len(set(c2)) > 1  # the shape changes between trials
    c4 = trial_tasks(config, TrialPlan.make("C4", 1).trials[0], 4)
    assert len(c4.train) == 4 and not c4.held_out
    c5 = trial_tasks(config, TrialPlan.make("C5", 1).trials[0], 2)
    assert c5.held_out and "SYNTHETIC" in c5.test.name and c5.test_gpus == 12
    assert all(w.name.startswith("low-slo") for w in c5.train)


def test_scheduling_modules_import_no_cycle():
    """Every import between the case study's modules, lazy ones included, goes one way."""
    package = Path(__file__).resolve().parents[1] / "case_studies" / "scheduling"
    graph = {}
    for path in package.glob("*.py"):
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("case_studies.scheduling."):
                targets.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.ImportFrom) and node.module == "case_studies.scheduling":
                targets.update(alias.name for alias in node.names)
        graph[path.stem] = targets
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        if state.get(module) == 2:
            return
        assert state.get(module) != 1, " -> ".join(trail + [module])
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            visit(target, trail + [module])
        state[module] = 2

    for module in sorted(graph):
        visit(module, [])


def test_ppo_with_masks_learns_to_serve_better_than_the_random_policy():
    """One GPU, 600 r/s over 4 models, SLO 24 ms: the random agent meets about half of the SLOs (it dispatches
    small batches too eagerly and queues them behind each other); PPO trained for about 12,000 decisions (cut
    episodes truncated, so it bootstraps at the cuts) meets clearly more on a workload instance it did not
    train on, playing the policy it learned (sampled, 3 episodes).

    Not greedily: at this budget the learned policy infers each model with a probability below one half at
    most decisions (it waits a few milliseconds to batch), so its per-head argmax never dispatches (0% on
    seeds 0-3 with these settings); with gamma 0.99 and learning rate 3e-4 (this test's earlier setup) the
    greedy policy met 0-65% depending on the seed, whichever the episode-end semantics (docs/scheduling.md)."""
    from dataclasses import replace

    import torch

    from case_studies.scheduling.environment import training_env
    from case_studies.scheduling.families import low_slo_workload
    from case_studies.scheduling.learners import PPO_CONFIG, make_ppo
    from wield import RandomAgent, evaluate_policy, train_online

    torch.set_num_threads(1)
    lengths = episode_lengths(8, 500, 2000)
    train = training_env([low_slo_workload(600.0, 4, 24.0, 2.0, seed=0)], 1, lengths)
    test = evaluation_env([low_slo_workload(600.0, 4, 24.0, 0.2, seed=1)], 1)
    agent = make_ppo(train, seed=0, config=replace(PPO_CONFIG, gamma=0.9), infer_logit=0.0)
    train_online(train, agent, len(lengths), progress=False)
    learned = evaluate_policy(test, agent, 3, explore=True)
    random = evaluate_policy(test, RandomAgent(test.action_space, seed=1), 3, explore=True)
    learned_slo = [m["episode"]["slo_satisfaction"] for m in learned.metrics]
    random_slo = [m["episode"]["slo_satisfaction"] for m in random.metrics]
    assert np.mean(learned_slo) >= max(random_slo) + 10.0, (learned_slo, random_slo)
    assert np.mean(learned.returns) > max(random.returns), (learned.returns, random.returns)


def test_wield_run_scheduling_records_every_method_and_the_verdict_and_reproduces(tmp_path, capsys):
    import json

    from wield.cli.main import main

    tiny = ["--episodes", "2", "--first-decisions", "100", "--max-decisions", "100", "--envs", "2", "--rate", "600",
            "--models", "12", "--test-s", "0.1", "--curve-s", "0.05", "--train-s", "0.2", "--quiet"]
    out = tmp_path / "run"
    assert main(["run", "scheduling", *tiny, "--out", str(out)]) == 0  # the default learner: MaskablePPO
    printed = capsys.readouterr().out
    assert "learned: " in printed and "clockwork" in printed
    # the tuned Clockwork rung beside the shipped one, its lookahead chosen on the validation workload (issue 43)
    assert "vs heuristic clockwork-tuned: " in printed and "note: clockwork-tuned: lookahead " in printed
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["methods"]) == {"maskable-ppo", "clockwork", "edf", "fifo", "random"}
    from wield.workflows import RunRecord

    weights = RunRecord(out).load_model()  # the trained network, plain weights (loaded with weights_only=True)
    assert any(name.startswith("action_net") for name in weights) and (out / "results.png").stat().st_size > 1000
    verdict = summary["verdict"]
    assert summary["transitions"] == 200 and verdict["status"] != "yes" and verdict["trend"] is None  # 2 episodes
    assert [r["name"] for r in verdict["rungs"]] == ["random-policy", "never-dispatch", "urgent-batch", "clockwork",
                                                     "edf", "fifo", "clockwork-tuned"]
    # 10 instances, more of the same stream for a rung that 10 cannot decide (sequential, up to 50)
    assert 10 <= verdict["instances"]["count"] <= 50 and verdict["instances"]["held_out"]
    assert verdict["instances"]["count"] == max(r["instances"] for r in verdict["rungs"])
    assert all(r["instances"] in verdict["sequential"]["looks"] for r in verdict["rungs"])
    assert "vs trivial urgent-batch: " in printed and "vs heuristic clockwork: " in printed
    assert len(summary["extras"]["training_curve"]) == 2
    assert main(["reproduce", str(out)]) == 0
    assert "match" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", "scheduling", "--reward", "dense-ish", "--out", str(tmp_path / "bad")])
