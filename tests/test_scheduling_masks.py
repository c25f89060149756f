"""The scheduling task design's late masks (issue 43): they forbid exactly the batches that would finish after
their model's oldest request's deadline, in a hand-built state and against the simulator's own lateness, and
the Wield and vector environments show the same masks (their action-for-action equivalence with late masks is
in test_scheduling_vector.py)."""

from __future__ import annotations

import numpy as np
import pytest

from case_studies.scheduling import decision_kernels as kernels
from case_studies.scheduling import engine
from case_studies.scheduling.environment import evaluation_env
from case_studies.scheduling.families import low_slo_workload
from case_studies.scheduling.state import SimState
from case_studies.scheduling.system import EpisodeTask, SchedulingState
from case_studies.scheduling.task_design import (WAITING_DESIGNS, SchedulingConverter, SchedulingSchema, batch_head,
                                                 infer_head)
from case_studies.scheduling.vector_env import SchedulingVectorEnv
from wield.envs import StandardView
from wield.errors import ConfigError

EXEC = np.array([[1.0, 2.0, 4.0, 8.0, 16.0], [2.7, 3.0, 4.0, 8.0, 16.0], [2.7, 3.0, 4.0, 8.0, 16.0]])


def _state() -> SchedulingState:
    """GPU busy until 12 ms at 10 ms; slot 0: 16 pending, deadline 20 ms; slot 1: 4 pending, deadline 13.5 ms
    (even a batch of 1 ends at 14.7 ms); slot 2: 1 pending, deadline 40 ms."""
    return SchedulingState(0, 10.0, np.array([3, 5, 7]), np.array([16, 4, 1]), np.array([7.0, 0.8, 27.3]), 2.0,
                           12.0, np.array([20.0, 13.5, 40.0]), EXEC)


def test_late_masks_forbid_exactly_the_batches_that_would_finish_late():
    late = SchedulingSchema(masks="late").action_mask({"state": _state()})
    fit = SchedulingSchema().action_mask({"state": _state()})
    # slot 0 ends at 13, 14, 16, 20 (= the deadline: on time) and 28 ms: only 16 is late
    assert late[batch_head(0)].tolist() == [True, True, True, True, False] and late[infer_head(0)].tolist() == [True, True]
    assert fit[batch_head(0)].tolist() == [True] * 5
    # slot 1: every batch is late, so null only (as an empty slot); the fit masks allow 1, 2, 4
    assert late[infer_head(1)].tolist() == [True, False] and late[batch_head(1)].tolist() == [True] + [False] * 4
    assert fit[infer_head(1)].tolist() == [True, True] and fit[batch_head(1)].tolist() == [True, True, True, False, False]
    # slot 2: one request, on time at batch 1; empty slots as ever
    assert late[batch_head(2)].tolist() == fit[batch_head(2)].tolist() == [True, False, False, False, False]
    assert all(late[head].tolist() == fit[head].tolist() for head in late if int(head[4:6]) >= 3)


def test_late_idle_masks_wait_while_the_gpu_has_a_decision_interval_of_work():
    """late-idle: with 2 ms of outstanding work (>= 1 ms) every slot allows null only; with 0.5 ms they are the
    late masks of the same state."""
    busy = SchedulingSchema(masks="late-idle").action_mask({"state": _state()})
    assert all(busy[infer_head(k)].tolist() == [True, False] for k in range(3))
    assert all(busy[batch_head(k)].tolist() == [True] + [False] * 4 for k in range(3))
    free = SchedulingState(0, 11.5, np.array([3, 5, 7]), np.array([16, 4, 1]), np.array([5.5, -0.7, 25.8]), 0.5,
                           12.0, np.array([20.0, 13.5, 40.0]), EXEC)
    idle = SchedulingSchema(masks="late-idle").action_mask({"state": free})
    late = SchedulingSchema(masks="late").action_mask({"state": free})
    assert all(idle[head].tolist() == late[head].tolist() for head in late)
    assert idle[batch_head(0)].tolist() == [True, True, True, True, False]


def test_late_idle_joint_does_not_dispatch_a_batch_that_would_finish_late_after_the_batches_before_it():
    """late-idle-joint: the masks are late-idle's; the chosen batches run one after another in urgency order and a
    batch late after those before it is not dispatched. Slot 0's batch of 8 ends at 20 ms (its deadline: on
    time); slot 1's batch of 1 would end at 14.7 ms alone (on time, so allowed) but at 22.7 ms after it (deadline
    16 ms): not dispatched; slot 2's batch of 1 then starts at 20 ms and ends at 22.7 ms (deadline 40 ms)."""
    free = SchedulingState(0, 11.5, np.array([3, 5, 7]), np.array([16, 4, 1]), np.array([5.5, 1.8, 25.8]), 0.5,
                           12.0, np.array([20.0, 16.0, 40.0]), EXEC)
    joint, idle = SchedulingSchema(masks="late-idle-joint"), SchedulingSchema(masks="late-idle")
    assert all(joint.action_mask({"state": free})[head].tolist() == idle.action_mask({"state": free})[head].tolist()
               for head in joint.action_space.spaces)
    action = {head: 0 for head in joint.action_space.spaces}
    action.update({infer_head(0): 1, batch_head(0): 3, infer_head(1): 1, infer_head(2): 1})
    context = {"state": free}
    assert SchedulingConverter(joint).agent_to_system_action(action, context) == ((3, 8), (7, 1))
    assert SchedulingConverter(idle).agent_to_system_action(action, context) == ((3, 8), (5, 1), (7, 1))
    action[batch_head(0)] = 2  # a batch of 4 ends at 16 ms: slot 1's batch then ends at 18.7 ms, late: not sent
    assert SchedulingConverter(joint).agent_to_system_action(action, context) == ((3, 4), (7, 1))
    action[batch_head(0)] = 0  # a batch of 1 ends at 13 ms: slot 1's ends at 15.7 ms, on time
    assert SchedulingConverter(joint).agent_to_system_action(action, context) == ((3, 1), (5, 1), (7, 1))


def test_a_state_without_deadlines_and_an_unknown_mask_design_are_refused():
    bare = SchedulingState(0, 10.0, np.array([3]), np.array([2]), np.array([5.0]), 0.0)
    with pytest.raises(ConfigError, match="late masks need"):
        SchedulingSchema(masks="late").action_mask({"state": bare})
    assert SchedulingSchema().action_mask({"state": bare})[batch_head(0)].tolist() == [True, True, False, False, False]
    with pytest.raises(ConfigError, match="'masks'.*'fit', 'late', 'late-idle', 'late-idle-joint'"):
        SchedulingSchema(masks="early")
    with pytest.raises(ConfigError, match="'masks'"):
        SchedulingVectorEnv([[EpisodeTask(low_slo_workload(1200.0, 12, 24.0, 0.05, 0), 2)]], masks="early")


@pytest.mark.parametrize("masks", ["late", "late-idle", "late-idle-joint"])
def test_both_environments_forbid_the_batches_the_simulator_finds_late(masks):
    """At every decision of an overloaded workload, each slot's batch size is allowed by the late masks iff it
    fits the pending requests and dispatching it alone (on a copy of the simulator) makes no request late (and,
    late-idle, the GPU has under 1 ms of work); the Wield environment's masks are the vector environment's."""
    workload = low_slo_workload(2400.0, 12, 12.0, duration_s=0.05, seed=5)
    vector = SchedulingVectorEnv([[EpisodeTask(workload, 2)]], masks=masks)
    wield_env = StandardView(evaluation_env([workload], 2, masks=masks))
    wield_env.reset(seed=0)
    vector.reset()
    rng = np.random.default_rng(1)
    layout, out, forbidden, waits = vector.layout, np.zeros(3), 0, 0
    for step in range(400):
        mask = vector.action_masks()[0]
        assert np.array_equal(mask, wield_env.action_masks()), step
        state = vector._envs[0].sim._state
        gpu = int(vector._positions[0, kernels.P_GPU])
        waiting = masks in WAITING_DESIGNS and state.gpu_free[gpu] - state.scal_f[0] >= 1.0
        waits += waiting
        for k in range(int(vector._found[0])):
            m, pending = int(vector._models[0, k]), int(vector._pending[0, k])
            expected = []
            for index, size in enumerate((1, 2, 4, 8, 16)):
                if size > pending:
                    expected.append(False)
                    continue
                copy = SimState(*(array.copy() for array in state))
                assert engine.dispatch_now(copy, gpu, m, index, out) == 0
                expected.append(out[2] == 0 and not waiting)  # no late request: the oldest is on time
            batch = layout[k, kernels.Y_BATCH_MASK]
            forbidden += sum(1 for index, size in enumerate((1, 2, 4, 8, 16))
                             if size <= pending and not expected[index] and not waiting)
            if any(expected):
                assert mask[batch:batch + 5].tolist() == expected, (step, k)
                assert mask[layout[k, kernels.Y_INFER_MASK] + 1]
            else:
                assert mask[batch:batch + 5].tolist() == [True] + [False] * 4 and not mask[layout[k, kernels.Y_INFER_MASK] + 1]
        starts = np.concatenate([[0], np.cumsum(vector.action_space.nvec)[:-1]])
        action = np.array([rng.choice(np.flatnonzero(mask[s:s + n])) for s, n in zip(starts, vector.action_space.nvec)])
        _, _, dones, _ = vector.step(action[None])
        _, _, terminated, truncated, _ = wield_env.step(action)
        assert bool(dones[0]) == (terminated or truncated)
        if dones[0]:
            break
    assert forbidden > 0 and step > 50 and (waits > 0) == (masks in WAITING_DESIGNS)


def test_a_run_with_late_idle_masks_trains_plays_and_records_them(tmp_path):
    """wield run scheduling --masks late-idle: the learner trains and is scored (verdict included) under them,
    and the run's config records them."""
    import json

    from wield.cli.main import main

    out = tmp_path / "late-idle"
    assert main(["run", "scheduling", "--workload", "multi-slo", "--rate", "1200", "--gpus", "2", "--masks",
                 "late-idle", "--episodes", "2", "--first-decisions", "100", "--max-decisions", "100", "--envs", "2",
                 "--train-s", "0.2", "--test-s", "0.2", "--curve-s", "0.1", "--verdict-cap", "10", "--quiet",
                 "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["masks"] == "late-idle"
    assert 'masks = "late-idle"' in (out / "config.toml").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert 0.0 <= summary["methods"]["maskable-ppo"]["slo_satisfaction"] <= 1.0 and summary["verdict"]


def test_a_run_timed_by_the_published_profile_records_it_and_every_method_serves_under_it(tmp_path):
    """wield run scheduling --profile clockwork-resnet50: the run's config records the profile, and the heuristics
    serve the same test workload as under the default curve but with its times (batching gains less there, so
    Clockwork meets fewer SLOs on the multi-SLO cell's workload)."""
    import json

    from wield.cli.main import main

    figures = {}
    for profile in ("accelerator", "clockwork-resnet50"):
        out = tmp_path / profile
        assert main(["run", "scheduling", "--method", "clockwork", "--workload", "multi-slo", "--rate", "1200",
                     "--gpus", "2", "--test-s", "0.5", "--profile", profile, "--quiet", "--out", str(out)]) == 0
        assert json.loads((out / "config.json").read_text())["profile"] == profile
        figures[profile] = json.loads((out / "summary.json").read_text())["methods"]
    assert figures["clockwork-resnet50"]["clockwork"]["slo_satisfaction"] < \
        figures["accelerator"]["clockwork"]["slo_satisfaction"]
    assert figures["clockwork-resnet50"]["edf"] != figures["accelerator"]["edf"]
