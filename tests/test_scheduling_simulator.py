"""The serving simulator against hand-computed runs: closed loop, late batches, two GPUs, timeouts, the
Clockwork heuristic's choices on hand-built queues, the policy hook, and bad input.

The profile used here takes ``2 + b`` ms for a batch of ``b`` (batch 1: 3 ms, 2: 4 ms, 4: 6 ms), so every
time below can be checked by hand.
"""

import math

import numpy as np
import pytest

from case_studies.scheduling.families import low_slo_workload
from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.runner import EveryInterval, RandomAgent, run_policy
from case_studies.scheduling.simulator import ServingSimulator
from case_studies.scheduling.workload import Stream, Workload
from wield.errors import ConfigError

HAND = BatchProfile("hand", tuple(2.0 + b for b in range(1, 17)), "2 + b ms")


def one_shot(model: int, at_ms: float) -> Stream:
    """One request to ``model`` at ``at_ms`` (a fixed-rate stream that ends before its second request)."""
    return Stream(model, "fixed-rate", rate=1.0, start_ms=at_ms, end_ms=at_ms + 1.0)


def test_one_model_closed_loop_serves_one_request_at_a_time():
    # one client: a request at 0, and the next one whenever the previous completes, until 10 ms
    workload = Workload("closed", (10.0,), [Stream(0, "closed-loop", concurrency=1)], duration_ms=10.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    metrics = sim.run("clockwork")
    # batches of 1: 0-3, 3-6, 6-9, 9-12; the client stops sending at 10 ms
    assert sim.now == pytest.approx(12.0)
    assert (metrics.arrived, metrics.on_time, metrics.late, metrics.timed_out) == (4, 4, 0, 0)
    assert metrics.batches_by_size[1] == 4 and metrics.gpu_utilisation == pytest.approx(1.0)
    assert metrics.slo_satisfaction == 100.0 and metrics.throughput_rps == pytest.approx(4 / 0.012)


def test_a_batch_that_finishes_after_the_oldest_deadline_counts_those_requests_late():
    # requests at 0, 1, 2, 3 ms with SLO 8.5 ms: deadlines 8.5, 9.5, 10.5, 11.5
    workload = Workload("late", (8.5,), [Stream(0, "fixed-rate", rate=1000.0)], duration_ms=4.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    sim.advance(3.0)
    assert sim.pending(0) == 4
    assert sim.oldest_laxity_ms(0) == pytest.approx(8.5 - 3.0 - 3.0)
    batch = sim.dispatch(0, 0, 4)  # 3 + 6 = 9 ms: only the first request misses its deadline
    assert (batch.start_ms, batch.finish_ms, batch.on_time, batch.late) == (3.0, 9.0, 3, 1)
    assert sim.counters()["late"] == 0  # counted when the batch completes
    sim.advance(math.inf)
    metrics = sim.metrics()
    assert (metrics.on_time, metrics.late, metrics.timed_out) == (3, 1, 0)
    assert metrics.slo_satisfaction == pytest.approx(75.0) and metrics.goodput_rps == pytest.approx(3 / 0.009)


def test_two_gpus_run_batches_concurrently():
    # three requests of one model at 0 ms, SLO 20 ms
    workload = Workload("burst", (20.0,), [one_shot(0, 0.0)] * 3, duration_ms=5.0)
    two = ServingSimulator(workload, n_gpus=2, profile=HAND)
    two.run("clockwork")
    # GPU 0 takes a batch of 2 (0-4 ms); GPU 1, now the less loaded, takes the last request (0-3 ms)
    assert two.now == pytest.approx(4.0)
    assert two.metrics().batches_by_size == {1: 1, 2: 1, 4: 0, 8: 0, 16: 0}
    assert two.metrics().gpu_utilisation == pytest.approx(7.0 / (2 * 4.0))
    one = ServingSimulator(workload, n_gpus=1, profile=HAND)
    one.run("clockwork")
    assert one.now == pytest.approx(7.0)  # the batch of 1 queues behind the batch of 2 on the only GPU


def test_dispatches_queue_behind_the_gpus_outstanding_work():
    workload = Workload("queue", (50.0, 50.0), [one_shot(0, 0.0), one_shot(1, 0.0)], duration_ms=1.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    sim.advance(0.0)
    first, second = sim.dispatch(0, 0, 1), sim.dispatch(0, 1, 1)
    assert (first.start_ms, first.finish_ms, second.start_ms, second.finish_ms) == (0.0, 3.0, 3.0, 6.0)
    sim.advance(2.0)
    assert sim.outstanding_ms(0) == pytest.approx(4.0)


def test_a_request_times_out_once_even_an_immediate_batch_of_one_would_be_late():
    # SLO 6 ms, batch 1 takes 3 ms: the request at 0 can be dispatched up to 3 ms and is dropped after
    workload = Workload("timeout", (6.0,), [one_shot(0, 0.0)], duration_ms=1.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    sim.advance(3.0)
    assert sim.pending(0) == 1 and sim.oldest_laxity_ms(0) == pytest.approx(0.0)
    sim.advance(3.001)
    assert sim.pending(0) == 0 and sim.counters()["timed_out"] == 1
    assert sim.counters()["timed_out_e1_ms"] == pytest.approx(3.0)
    on_time = ServingSimulator(workload, n_gpus=1, profile=HAND)
    on_time.advance(3.0)
    assert on_time.dispatch(0, 0, 1).finish_ms == pytest.approx(6.0)  # exactly at its deadline: on time
    assert on_time.run("clockwork").on_time == 1


def test_a_closed_loop_client_resends_when_its_request_times_out():
    workload = Workload("resend", (6.0,), [Stream(0, "closed-loop", concurrency=1)], duration_ms=10.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    sim.advance(10.0)  # nothing dispatched: requests sent at 0, 3, 6, 9 time out at 3, 6, 9 (and 12)
    assert sim.counters()["timed_out"] == 3 and sim.pending(0) == 1
    assert sim.oldest_laxity_ms(0) == pytest.approx(9.0 + 3.0 - 10.0)
    sim.advance(math.inf)
    assert sim.finished and sim.metrics().timed_out == 4 and sim.metrics().arrived == 4


def clockwork_queues(slo_model0: float) -> ServingSimulator:
    # model 0: requests at 0, 1, 2, 3 ms; model 1 (SLO 12 ms): one request at 2 ms (deadline 14 ms)
    workload = Workload("queues", (slo_model0, 12.0), [Stream(0, "fixed-rate", rate=1000.0, end_ms=4.0),
                                                      one_shot(1, 2.0)], duration_ms=4.0)
    sim = ServingSimulator(workload, n_gpus=1, profile=HAND)
    sim.advance(4.0)
    return sim


def test_clockwork_takes_strategies_by_latest_start():
    # latest starts: model 1 batch 1: 14 - 3 = 11; model 0 (deadline 20): batch 4: 14, 2: 16, 1: 17
    sim = clockwork_queues(20.0)
    assert sim.schedule(0, "clockwork") == 2  # model 1 alone (4-7 ms), then model 0's batch of 4 (7-13 ms)
    assert sim.pending(0) == 0 and sim.pending(1) == 0
    assert sim.metrics().batches_by_size[4] == 1 and sim.outstanding_ms(0) == pytest.approx(9.0)
    assert sim.schedule(0, "clockwork") == 0  # 9 ms of outstanding work is above the 5 ms lookahead


def test_clockwork_skips_batches_that_would_miss_the_oldest_deadline():
    # model 0's deadline is 9 ms: batch 4 (latest start 3) is too late at 4 ms, batch 2 (latest start 5) fits;
    # then the GPU is free at 8: model 0's next pair (deadline 11) would have to start by 7, a single
    # request by 8, which it does; model 1 (latest start 11) waits
    sim = clockwork_queues(9.0)
    assert sim.schedule(0, "clockwork") == 2
    assert sim.pending(0) == 1 and sim.pending(1) == 1
    assert sim.metrics().batches_by_size == {1: 1, 2: 1, 4: 0, 8: 0, 16: 0}
    assert sim.outstanding_ms(0) == pytest.approx(7.0)
    assert sim.run("clockwork").late == 0


def test_edf_and_fifo_take_the_largest_batch_of_the_first_model():
    sim = clockwork_queues(20.0)
    sim.schedule(0, "edf")  # earliest deadline: model 1 (14 ms) before model 0 (20 ms)
    assert sim.pending(1) == 0 and sim.pending(0) == 0  # then all four of model 0 in one batch
    fifo = clockwork_queues(20.0)
    fifo.schedule(0, "fifo")  # oldest request: model 0's, all four in a batch (4-10 ms); 6 ms > lookahead
    assert fifo.metrics().batches_by_size[4] == 1 and fifo.pending(1) == 1
    assert fifo.outstanding_ms(0) == pytest.approx(6.0)


def test_most_urgent_orders_models_by_oldest_laxity():
    sim = clockwork_queues(20.0)
    models, pending, laxity = sim.most_urgent(12)
    assert models.tolist() == [1, 0] and pending.tolist() == [1, 4]
    assert laxity.tolist() == pytest.approx([14.0 - 4.0 - 3.0, 20.0 - 4.0 - 3.0])
    assert sim.most_urgent(1)[0].tolist() == [1] and sim.active_models() == 2
    assert sim.most_urgent(12)[0].tolist() == [1, 0]  # reading the state does not change it


def test_baselines_serve_an_easy_workload_and_runs_are_deterministic():
    workload = low_slo_workload(total_rate=600, n_models=12, slo_ms=96.0, duration_s=2.0, seed=3)
    results = {name: ServingSimulator(workload, 6).run(name) for name in ("clockwork", "edf", "fifo", "random")}
    for name, metrics in results.items():  # keeping only the heaps a baseline reads changes nothing else
        assert ServingSimulator(workload, 6, baselines=(name,)).run(name) == metrics
    for name, metrics in results.items():
        assert metrics.slo_satisfaction == 100.0, name
        assert metrics.arrived == metrics.on_time > 1000
    again = ServingSimulator(workload, 6)
    assert again.run("random") == results["random"]
    again.reset()
    assert again.now == 0.0 and again.counters()["arrived"] == 0
    assert again.run("random") == results["random"]
    series = ServingSimulator(workload, 6)
    series.run("clockwork")
    rows = series.time_series()
    assert rows["goodput_rps"].sum() == pytest.approx(results["clockwork"].on_time)  # 1 s bins


def test_random_agent_piles_up_work_that_the_clockwork_heuristic_avoids():
    workload = low_slo_workload(total_rate=2400, n_models=48, slo_ms=24.0, duration_s=0.3, seed=0)
    agent = run_policy(ServingSimulator(workload, 6), RandomAgent(seed=1), interval_ms=1.0)
    heuristic = run_policy(ServingSimulator(workload, 6), EveryInterval("clockwork"), interval_ms=1.0)
    assert heuristic.slo_satisfaction > 99.0
    assert agent.slo_satisfaction < 80.0 and agent.late > 0


def test_bad_input_is_rejected_with_the_field_named():
    workload = Workload("bad", (10.0,), [one_shot(0, 0.0)], duration_ms=1.0)
    sim = ServingSimulator(workload, n_gpus=2, profile=HAND)
    sim.advance(0.0)
    with pytest.raises(ConfigError, match="batch_size.*allowed: 1, 2, 4, 8, 16"):
        sim.dispatch(0, 0, 3)
    with pytest.raises(ConfigError, match="batch_size.*model 0 has 1 pending"):
        sim.dispatch(0, 0, 2)
    with pytest.raises(ConfigError, match="'gpu'"):
        sim.dispatch(2, 0, 1)
    with pytest.raises(ConfigError, match="'model'"):
        sim.pending(1)
    with pytest.raises(ConfigError, match="scheduler.*clockwork"):
        sim.run("sjf")
    with pytest.raises(ConfigError, match="'scheduler': 'fifo'; this simulator was built for these baselines"):
        ServingSimulator(workload, 1, HAND, baselines=("edf",)).run("fifo")
    with pytest.raises(ConfigError, match="baselines"):
        ServingSimulator(workload, 1, HAND, baselines=("lifo",))
    sim.advance(0.5)
    with pytest.raises(ConfigError, match="until_ms"):
        sim.advance(0.2)
    with pytest.raises(ConfigError, match="slo_ms.*batch-1 time 3 ms"):
        ServingSimulator(Workload("tight", (2.5,), [one_shot(0, 0.0)], 1.0), 1, HAND)
    with pytest.raises(ConfigError, match="n_gpus"):
        ServingSimulator(workload, 0, HAND)
    with pytest.raises(ConfigError, match="profiles"):
        ServingSimulator(workload, 1, [HAND, HAND])
    assert np.all(sim.pending_counts() == [1])


def test_clockworks_lookahead_is_tuned_to_the_best_on_the_validation_workload():
    """The tuned Clockwork rung's knob: the grid value that meets the most SLOs (ties: the shipped 5 ms, then
    the smallest), each value's figure the compiled baseline's own."""
    from case_studies.scheduling.families import low_slo_workload
    from case_studies.scheduling.runner import TUNED_LOOKAHEADS_MS, run_baseline, tune_lookahead

    workload = low_slo_workload(2400.0, 48, 24.0, 0.3, seed=5)
    chosen, scores = tune_lookahead(workload, 4)
    assert set(scores) == set(TUNED_LOOKAHEADS_MS) and scores[chosen] == max(scores.values())
    assert scores[1.0] == run_baseline(workload, "clockwork", 4, lookahead_ms=1.0).slo_satisfaction
    easy = low_slo_workload(600.0, 12, 96.0, 0.3, seed=5)
    chosen, scores = tune_lookahead(easy, 6)
    assert max(scores.values()) == scores[5.0] and chosen == 5.0  # a tie keeps the shipped setting
