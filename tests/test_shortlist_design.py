"""The shortlist task design (``--actions shortlist``) and the slots Q network it trains with: the actions are
the workload's candidates ranked by statistics-only estimates; one scorer is shared by the rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from case_studies.indexing.budgeted import PolicyPlayer, workload_evaluator
from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.cost_estimate import StatisticsCostModel
from case_studies.indexing.estimated_advisor import estimated_advice
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.run import IndexingRunConfig
from case_studies.indexing.shortlist_design import HEAD, SHORTLIST_FEATURES, SLOTS
from wield.agents import DQNAgent
from wield.agents.dqn_config import DQNConfig
from wield.agents.encoders import batch_observations
from wield.agents.networks import SlotQNetwork
from wield.envs import EpisodeList
from wield.errors import ConfigError
from wield.tasks import TaskGraph
from wield.workflows import run_episode, train_online
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule

QUERIES = 8


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    collection = generate_imdb_collection(3_000, seed=0)
    task = build_indexing_task(collection, workdir=tmp_path_factory.mktemp("shortlist"), actions="shortlist")
    yield collection, task
    task.close()


def _workloads(collection, seed: int, count: int) -> list[list]:
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=QUERIES), seed, count, per_episode=True)
    return [list(schedule.task_for_episode(episode)) for episode in range(count)]


def _slot_one_while_it_gains(observation, mask) -> dict[str, int]:
    """Build slot 1 while the estimates say it raises the reward; then nothing: the estimated advisor's rule."""
    return {HEAD: 1 if mask[HEAD][1] and observation["candidates"][0, SHORTLIST_FEATURES.index("improves")] else 0}


def _observations(task, workload: list) -> list[tuple[bytes, bytes]]:
    """Every observation of a play of ``workload`` by ``_slot_one_while_it_gains``, as bytes."""
    env = task.environment(EpisodeList([workload]))
    observation, info = env.reset(options={"episode": 0})
    seen, done = [], False
    while not done:
        seen.append((observation["candidates"].tobytes(), observation["workload"].tobytes()))
        observation, _, done, _, info = env.step(_slot_one_while_it_gains(observation, info["action_mask"]))
    return seen


def test_the_shortlist_environment_passes_check_env_and_masks_the_empty_slots(setup):
    collection, task = setup
    env = task.environment(EpisodeList(_workloads(collection, 1, 2)))
    check_env(env, skip_render_check=True)
    observation, info = env.reset(options={"episode": 0})
    mask = info["action_mask"][HEAD]
    filled = int(observation["candidates"][:, 0].sum())
    assert observation["candidates"].shape == (SLOTS, len(SHORTLIST_FEATURES))
    assert mask.tolist() == [True] * (1 + filled) + [False] * (SLOTS - filled) and filled > 0
    # slot 1 is the best estimated saving per byte; building it removes it from the shortlist
    first = task.schema.options(env.context)[0].spec
    _, _, _, _, info = env.step({HEAD: 1})
    assert info["system_action"] == first and first not in [o.spec for o in task.schema.options(env.context)]


def test_building_slot_one_while_it_gains_is_the_estimated_advisor(setup):
    """The design's ranking is the estimated advisor's: its one-line rule makes the same choice, so the verdict's
    estimated-advisor rung is the bar for a policy on this design."""
    collection, task = setup
    model = StatisticsCostModel(task.statistics)
    for workload in _workloads(collection, 2, 4):
        env = task.environment(EpisodeList([workload]))
        observation, info = env.reset(options={"episode": 0})
        done = False
        while not done:
            observation, _, done, _, info = env.step(_slot_one_while_it_gains(observation, info["action_mask"]))
        advice = estimated_advice(model, task.converter, workload, task.schema.k)
        assert len(advice.configuration) <= QUERIES  # the episode could build all of them
        assert sorted(map(str, task.system.state())) == sorted(map(str, advice.configuration))
        # a set reached by building a slot takes that slot's estimates: the model's own for the set, bit for bit
        shortlist, built = task.schema.shortlist, []
        for slot in (1, 3, 2):
            options = shortlist.ranked(workload, built)[2]
            built = [*built, options[slot - 1].spec]
            estimated = shortlist.estimated(workload)
            assert shortlist.ranked(workload, built)[:2] == (estimated.costs(built), estimated.size(built))


def test_forgetting_the_sets_keeps_the_estimates_and_works_the_same_figures_out_again(setup):
    """``forget_sets`` (the play benchmark's replay with a workload's estimates made) drops what was worked out
    per index set and keeps the workload's estimates; the play sees the same observations bit for bit."""
    collection, task = setup
    workload = _workloads(collection, 5, 1)[0]
    first = _observations(task, workload)
    shortlist = task.schema.shortlist
    estimated, options = shortlist.estimated(workload), shortlist.ranked(workload, [])[2]
    task.converter.forget_sets()
    assert shortlist.estimated(workload) is estimated  # the workload's estimates kept
    again = shortlist.ranked(workload, [])[2]
    assert again is not options and again == options  # the empty set's options worked out again, the same
    assert _observations(task, workload) == first


def test_forgetting_the_workload_estimates_its_queries_again_to_the_same_figures(setup, monkeypatch):
    """``forget_workload`` (a decision timed as a new workload's, ``budgeted.policy_search``): the next play of
    the same queries reads the column statistics again, where a play after an earlier one reads nothing, and it
    sees the same observations bit for bit."""
    collection, task = setup
    workload = _workloads(collection, 6, 1)[0]
    statistics = type(task.converter.statistics)
    reads = []
    selectivity = statistics.predicate_selectivity
    monkeypatch.setattr(statistics, "predicate_selectivity", lambda self, p: reads.append(p) or selectivity(self, p))

    first = _observations(task, workload)
    assert reads
    reads.clear()
    assert _observations(task, list(workload)) == first and not reads  # an earlier play's estimates remembered
    task.converter.forget_workload()
    assert _observations(task, list(workload)) == first and reads  # forgotten: read again, the same figures


def test_the_slots_network_scores_a_row_the_same_in_any_slot():
    space = spaces.Dict({"candidates": spaces.Box(0, 1, (4, 3), np.float32), "workload": spaces.Box(0, 1, (2,))})
    torch.manual_seed(0)
    network = SlotQNetwork(space, {"index": 5}, (16,))
    rows = np.array([[1, 0.2, 0.9], [1, 0.7, 0.1], [1, 0.5, 0.5], [0, 0, 0]], np.float32)
    swapped = rows[[1, 0, 2, 3]]
    q = network(batch_observations(space, [{"candidates": rows, "workload": np.zeros(2, np.float32)},
                                           {"candidates": swapped, "workload": np.zeros(2, np.float32)}]))["index"]
    assert q.shape == (2, 5)
    assert torch.allclose(q[0, [0, 2, 1, 3, 4]], q[1], atol=1e-6)  # no-op and the rows follow their rows


@pytest.mark.parametrize("space, heads, field", [
    (spaces.Box(0, 1, (4, 3)), {"index": 5}, "slot_key"),
    (spaces.Dict({"candidates": spaces.Box(0, 1, (4, 3))}), {"index": 4}, "network"),
    (spaces.Dict({"candidates": spaces.Box(0, 1, (4, 3))}), {"a": 5, "b": 5}, "network"),
])
def test_the_slots_network_refuses_a_space_it_cannot_score(space, heads, field):
    with pytest.raises(ConfigError) as caught:
        SlotQNetwork(space, heads)
    assert field in str(caught.value)


def test_an_unknown_network_names_the_allowed_ones():
    with pytest.raises(ConfigError) as caught:
        DQNConfig(network="transformer")
    assert "network" in str(caught.value) and "slots" in str(caught.value) and "mlp" in str(caught.value)


def test_dqfd_on_the_shortlist_design_takes_only_the_rules_that_can_label_for_it():
    with pytest.raises(ConfigError) as caught:
        IndexingRunConfig(actions="shortlist", agent="dqfd", rules="noop,reverse").validate()
    assert "rules" in str(caught.value) and "reverse" in str(caught.value) and "advisor-search" in str(caught.value)
    IndexingRunConfig(actions="shortlist", agent="dqfd", rules="noop,advisor").validate()


def test_the_default_rules_are_the_designs():
    assert IndexingRunConfig(agent="dqfd").validate().rules == ["advisor"]  # the shortlist is the default design
    assert IndexingRunConfig(agent="dqfd", actions="candidates").validate().rules == ["noop", "reverse"]
    assert IndexingRunConfig(agent="dqfd", actions="positional").validate().rules == ["noop", "reverse"]


def test_a_comparison_with_dqfd_on_the_shortlist_is_refused_before_any_trial_runs(tmp_path, capsys):
    from wield.cli import main

    out = tmp_path / "comparison"
    assert main(["compare", "indexing", "--actions", "shortlist", "--methods", "dqn,dqfd", "--rules", "noop,reverse",
                 "--documents", "2000", "--episodes", "2", "--out", str(out)]) != 0
    assert "'rules'" in capsys.readouterr().err and not out.exists()


def test_the_advisor_rule_labels_its_sets_best_shortlisted_index_and_every_label_is_an_action(setup):
    from case_studies.indexing.advisor import shared_advice
    from case_studies.indexing.demonstrations import rule_factories
    from wield.demonstrations import DemonstrationWorkflow, select_rules

    collection, task = setup
    factories = rule_factories(task.schema.k, system=task.system, converter=task.converter)
    assert sorted(factories) == ["advisor", "advisor-search", "noop"]
    workloads = _workloads(collection, 5, 2)
    dataset = DemonstrationWorkflow(task.system, task.converter).label_trace(
        workloads, select_rules(("advisor",), factories), progress=False)
    assert len(dataset) == 2 * QUERIES
    labels = list(dataset)
    for number, workload in enumerate(workloads):  # each label: the advised index the shortlist ranks first
        advised = {spec.canonical() for spec in shared_advice(task.system, task.converter, workload).configuration}
        env = task.environment(EpisodeList([workload]))
        env.reset(options={"episode": 0})
        built, done = [], False
        for label in [d for d in labels if d.trajectory == number]:
            offered = task.schema.offered(env.context)
            wanted = [spec for spec in offered if spec in advised]
            labelled = None if label.system_action is None else IndexSpec.of(label.system_action)
            assert labelled == (wanted[0] if wanted else None)
            _, _, done, _, info = env.step({HEAD: 1 + offered.index(wanted[0]) if wanted else 0})
            assert info["system_action"] == labelled
            built += [labelled] if labelled is not None else []
        assert done and built and set(built) <= advised


def test_dqn_on_the_shortlist_learns_a_policy_that_beats_random_play_on_new_workloads(setup):
    """Trained on one workload's predicate redraws (3,000 documents, 40 episodes), the greedy policy is scored
    on 6 workloads of other queries against a uniformly random valid policy (the mean of its 3 plays)."""
    collection, task = setup
    training = make_query_schedule(collection, QueryWorkloadConfig(n_queries=QUERIES), 3, 40, per_episode=False)
    agent = DQNAgent(task.schema.state_space, task.schema.action_space,
                     DQNConfig(network="slots", epsilon_decay_steps=150), seed=0)
    train_online(task.environment(training), TaskGraph.single(agent), 40, progress=False)
    rng = np.random.default_rng(0)
    learned, random = [], []
    fast = PolicyPlayer(agent, task.schema, task.converter)  # the forward passes in NumPy, as the verdict plays
    assert fast.numpy_forward is not None
    for workload in _workloads(collection, 4, 6):
        env = task.environment(EpisodeList([workload]))
        evaluate = workload_evaluator(task.system, task.converter, workload)
        run_episode(env, TaskGraph.single(agent), explore=False, learn=False, options={"episode": 0})
        # the trained policy's play without the engine, in NumPy, builds the set its environment play built
        assert set(fast.rollout(workload).configuration) == set(task.system.state())
        learned.append(evaluate(task.system.state()))
        plays = []
        for _ in range(3):
            _, info = env.reset(options={"episode": 0})
            done = False
            while not done:
                allowed = np.flatnonzero(info["action_mask"][HEAD])
                _, _, done, _, info = env.step({HEAD: int(rng.choice(allowed))})
            plays.append(evaluate(task.system.state()))
        random.append(float(np.mean(plays)))
    assert np.mean(learned) > np.mean(random), (learned, random)
    assert sum(a > b for a, b in zip(learned, random)) >= 5, (learned, random)


def test_a_shortlist_run_records_the_slots_network_and_its_model_loads_again(tmp_path, capsys):
    from wield.cli import main

    from case_studies.indexing.transfer import evaluate_checkpoint

    out = tmp_path / "run"
    assert main(["run", "indexing", "--actions", "shortlist", "--documents", "3000", "--queries", "5",
                 "--episodes", "8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("(its whole play as of a new workload: state features, masks and 5 forward passes, no engine "
            "evaluation)") in printed
    assert 'network = "slots"' in (out / "config.toml").read_text()
    result = evaluate_checkpoint(out, "sqlite")  # the slots network is rebuilt from the record and plays again
    assert result["greedy_same_as_source"]
