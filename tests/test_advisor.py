"""The index advisor (case_studies/indexing/advisor.py): its candidates, its greedy choice on a real SQLite
task against no index and the random policy, its evaluation count, and the ``advisor`` method through
``wield compare``."""

from __future__ import annotations

import json

import pytest

from case_studies.indexing.advisor import MEMORY_CAP, AdvisorResult, advise, query_candidates
from case_studies.indexing.baselines import random_policy_configuration
from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.defaults import EPISODES, MAX_RELATIVE_INDEX_SIZE, QUERIES
from case_studies.indexing.evaluation import full_index_configuration
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.methods import METHOD_COSTS, available_methods
from wield.cli import main
from wield.errors import ConfigError
from workloads import Predicate, Query, QueryWorkloadConfig, SortKey, generate_imdb_collection, make_query_schedule


def spec(*keys: str) -> IndexSpec:
    return IndexSpec.of([key.split() for key in keys])


@pytest.fixture(scope="module")
def small():
    """A real SQLite task on 2,000 documents and a 6-query workload; closed after the module."""
    collection = generate_imdb_collection(2000, seed=3)
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=6), 5, 1, per_episode=False)
    task = build_indexing_task(collection, actions="candidates")  # its rules label one query's candidates per step
    yield task, schedule
    task.close()


def reward_of(task, workload, configuration) -> float:
    task.system.configure(configuration)
    return task.converter.system_to_agent_reward(task.system.measure(workload))


def test_candidates_put_equalities_first_then_one_range_or_the_sort_keys():
    query = Query((Predicate("genre", "eq", "Drama"), Predicate("start_year", "gte", 1990),
                   Predicate("title_type", "eq", "movie")), sort=(SortKey("average_rating", "desc"),))
    found = query_candidates(query, k=3)
    assert len(found) == len(set(found)) and all(s == s.canonical() for s in found)
    for expected in (spec("genre asc"), spec("start_year asc"), spec("average_rating asc"),  # single fields
                     spec("genre asc", "start_year asc", "title_type asc"),  # the full index, k keys of it
                     spec("genre asc", "title_type asc", "start_year asc"),  # equalities, then the range
                     spec("title_type asc", "genre asc", "start_year asc"),
                     spec("title_type asc", "genre asc", "average_rating desc"),  # equalities, then the sort
                     spec("title_type asc", "genre asc")):  # a prefix
        assert expected in found, expected
    assert spec("start_year asc", "genre asc") not in found  # a range never leads an equality
    assert all(len(s.keys) <= 2 for s in query_candidates(query, k=2))  # the task's index width
    either = Query((Predicate("genre", "eq", "Drama"), Predicate("start_year", "gte", 1990)), logic="or")
    # an OR is served by one index per branch: its single fields, and its full index
    assert set(query_candidates(either, k=3)) == {spec("genre asc"), spec("start_year asc"),
                                                  spec("genre asc", "start_year asc")}


def test_the_memory_cap_is_the_objectives():
    assert MEMORY_CAP == MAX_RELATIVE_INDEX_SIZE == 0.5


def test_advice_fits_the_cap_beats_no_index_and_the_random_policy_in_few_evaluations(small):
    task, schedule = small
    workload = schedule.task_for_episode(0)
    before = [spec("genre asc")]
    task.system.configure(before)
    result = advise(task.system, task.converter, workload)
    assert isinstance(result, AdvisorResult)
    assert list(task.system.state()) == before  # the system's index set is as it was
    assert result.configuration and all(s == s.canonical() for s in result.configuration)
    full_bytes = sum(task.system.index_size(s) for s in full_index_configuration(workload))
    used = sum(task.system.index_size(s) for s in result.configuration)
    assert used <= MEMORY_CAP * full_bytes
    reward = reward_of(task, workload, result.configuration)
    assert reward == pytest.approx(result.reward)
    no_index = reward_of(task, workload, [])
    env = task.environment(schedule)
    random_rewards = [reward_of(task, workload, random_policy_configuration(env, seed)) for seed in range(5)]
    assert reward > no_index and reward > max(random_rewards), (reward, no_index, random_rewards)
    # the learner's budget is n = E x Q transitions, each one workload evaluation
    assert 0 < result.evaluations < EPISODES * QUERIES / 10
    assert result.candidates >= len(result.configuration) and result.seconds > 0
    assert [step["index"] for step in result.steps] == [str(s) for s in result.configuration]
    assert [step["reward"] for step in result.steps] == sorted(step["reward"] for step in result.steps)

    # deterministic: the same advice again (from the warm cost cache) and on a fresh task
    again = advise(task.system, task.converter, workload)
    assert (again.configuration, again.evaluations, again.candidates) == \
        (result.configuration, result.evaluations, result.candidates)
    fresh = build_indexing_task(generate_imdb_collection(2000, seed=3))
    try:
        other = advise(fresh.system, fresh.converter, workload)
    finally:
        fresh.close()
    assert (other.configuration, other.evaluations, other.reward) == \
        (result.configuration, result.evaluations, result.reward)


def test_no_memory_no_index_and_bad_caps_are_refused(small):
    task, schedule = small
    workload = schedule.task_for_episode(0)
    assert advise(task.system, task.converter, workload, memory_cap=0.0).configuration == []
    for bad in (-0.1, float("nan"), True):
        with pytest.raises(ConfigError, match="memory_cap"):
            advise(task.system, task.converter, workload, memory_cap=bad)
    with pytest.raises(ConfigError, match="at least one query"):
        advise(task.system, task.converter, [])


def test_the_advisor_is_a_method_with_a_cost():
    assert "advisor" in available_methods() and METHOD_COSTS["advisor"] < METHOD_COSTS["dqn"]


def test_compare_runs_dqn_advisor_and_random_and_shows_the_advisors_evaluations(tmp_path, capsys):
    out = tmp_path / "cmp"
    tiny = ["--documents", "2000", "--queries", "5", "--episodes", "2", "--repetitions", "1", "--metric", "work"]
    assert main(["compare", "indexing", "--class", "C2", "--trials", "1", "--out", str(out), *tiny,
                 "--methods", "dqn,advisor,random", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "  advisor" in printed and "system evaluations" in printed
    rows = {row["method"]: row for row in json.loads((out / "comparison.json").read_text())["methods"]}
    assert rows["dqn"]["evaluations"]["median"] == rows["random"]["evaluations"]["median"] == 5 * 2
    advisor = rows["advisor"]
    assert advisor["evaluations"] == advisor["transitions"] and advisor["evaluations"]["median"] > 0
    record = json.loads(next((out / "advisor" / "trials").glob("*/advisor.json")).read_text())
    assert record["evaluations"] == advisor["evaluations"]["median"]
    evaluation = json.loads(next((out / "advisor" / "trials").glob("*/evaluation.json")).read_text())
    assert set(evaluation["methods"]) == {"none", "full", "advisor"}
    assert evaluation["methods"]["advisor"]["relative_index_size"] <= MEMORY_CAP + 1e-9


def test_the_advisor_rule_demonstrates_the_advisors_set_one_query_at_a_time(small):
    from case_studies.indexing.demonstrations import AdvisorRule, rule_factories
    from wield.demonstrations import DemonstrationWorkflow, select_rules

    task, schedule = small
    workload = schedule.task_for_episode(0)
    advice = advise(task.system, task.converter, workload).configuration
    (rule,) = select_rules("advisor", rule_factories(3, 0.5, task.system, task.converter))
    dataset = DemonstrationWorkflow(task.system, task.converter).label_trace([workload], [rule])
    steps = dataset.demonstrations
    assert len(steps) == len(workload) and all(s.rule == "advisor" for s in steps)
    assert all(m > 0 for s in steps for m in s.margins.values() if m == m)  # positive demonstrations only
    # replaying the labels builds the advisor's indexes that some query's heads can build, each once
    built, noops = [], 0
    for step, query in enumerate(workload):
        label = rule.label(built, {"item": query, "workload": workload, "step": step})
        if label.action is None:
            noops += 1
        else:
            assert set(label.action.fields) <= set(query.attributes()[:3])
            built.append(label.action.canonical())
    assert built and len(set(built)) == len(built) and set(built) <= set(advice)
    assert noops == len(workload) - len(built)
    buildable = [i for i in advice if any(set(i.fields) <= set(q.attributes()[:3]) for q in workload)]
    assert len(built) == min(len(buildable), len(workload)), (built, buildable)
    with pytest.raises(ConfigError, match="system and converter"):
        select_rules("advisor", rule_factories(3))
    with pytest.raises(ConfigError, match="system and converter"):
        AdvisorRule(3, 0.5)


def test_advice_is_given_once_per_workload_and_settings_and_read_back_whole(tmp_path):
    """Issue 48: the verdicts of every method and trial share the advisor's advice on a held-out workload
    through the measurement store; other settings are advised anew, a damaged entry is a clear error."""
    import sqlite3

    from case_studies.indexing.advisor import shared_advice
    from wield.errors import DataError

    collection = generate_imdb_collection(2000, seed=3)
    workload = make_query_schedule(collection, QueryWorkloadConfig(n_queries=6), 5, 1,
                                   per_episode=False).task_for_episode(0)
    task = build_indexing_task(collection, cache_dir=tmp_path)
    try:
        computed = shared_advice(task.system, task.converter, workload)
        direct = advise(task.system, task.converter, workload)
        again = shared_advice(task.system, task.converter, workload)
    finally:
        task.close()
    assert not computed.reused and again.reused and task.system.counters.advice_reused == 1
    for name in ("configuration", "evaluations", "candidates", "reward", "steps", "trace", "stopped"):
        assert getattr(again, name) == getattr(computed, name) == getattr(direct, name), name
    assert again.seconds == computed.seconds  # the time measured when it was computed
    other = build_indexing_task(collection, cache_dir=tmp_path, size_weight=2.0)  # another reward: advised anew
    try:
        assert not shared_advice(other.system, other.converter, workload).reused
    finally:
        other.close()
    slow = build_indexing_task(collection, cache_dir=tmp_path, cost_cache=False)  # no store: always advised
    try:
        assert not shared_advice(slow.system, slow.converter, workload).reused
    finally:
        slow.close()
    store = next((tmp_path / "measurements").glob("*.sqlite"))
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE advice SET result = '{\"configuration\": 3}'")
    task = build_indexing_task(collection, cache_dir=tmp_path)
    try:
        with pytest.raises(DataError, match="damaged advice.*wield cache clear measurements"):
            shared_advice(task.system, task.converter, workload)
    finally:
        task.close()


def test_a_comparisons_learners_share_the_verdicts_advice_with_the_same_outcomes(tmp_path):
    """Issue 48: DQN and DQfD of one trial draw the same held-out instances; the advisor advises on each once
    (read back from the measurement store by the second learner), and the verdict is the one a fresh store
    gives: every rung's outcome and scores, and the same index sets measured for the objective."""
    tiny = ["--class", "C2", "--trials", "1", "--documents", "2000", "--queries", "4", "--episodes", "3",
            "--repetitions", "1", "--quiet"]
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    assert main(["compare", "indexing", *tiny, "--methods", "dqn,dqfd", "--out", str(shared / "cmp"),
                 "--cache-dir", str(shared / "cache")]) == 0
    assert main(["compare", "indexing", *tiny, "--methods", "dqfd", "--out", str(alone / "cmp"),
                 "--cache-dir", str(alone / "cache")]) == 0

    def evaluation(root, method):
        return json.loads((root / "cmp" / method / "trials" / "trial-000" / "evaluation.json").read_text())

    reused = [evaluation(shared, method)["verdict"]["decision_time"] for method in ("dqn", "dqfd")]
    # the second learner read every instance the first had advised on (a verdict may draw more instances)
    assert sorted(d["advisor_reused"] for d in reused) == [0, min(d["instances"] for d in reused)]
    figures = ("name", "outcome", "instances", "learner_mean", "comparator_mean", "mean_difference", "wins")
    together, fresh = evaluation(shared, "dqfd"), evaluation(alone, "dqfd")
    assert [{k: r[k] for k in figures} for r in together["verdict"]["rungs"]] == \
        [{k: r[k] for k in figures} for r in fresh["verdict"]["rungs"]]
    assert together["verdict"]["learned"] == fresh["verdict"]["learned"]
    assert together["verdict"]["decision_time"]["advisor_evaluations"] == \
        fresh["verdict"]["decision_time"]["advisor_evaluations"]
    for verdict in (evaluation(shared, "dqn")["verdict"], together["verdict"]):
        # advised only while its rung was undecided: exactly the instances the advisor's rung was decided on
        advisor = next(rung for rung in verdict["rungs"] if rung["name"] == "advisor")
        decision = verdict["decision_time"]
        assert decision["instances"] == advisor["instances"] <= decision["drawn"] == verdict["instances"]["count"]
        note = next(line for line in verdict["lines"] if "decision time per instance" in line)
        assert (f"the advisor ran on the first {advisor['instances']} of the {decision['drawn']} instances" in note) \
            == (advisor["instances"] < decision["drawn"])
    assert {m: row["indexes"] for m, row in together["methods"].items()} == \
        {m: row["indexes"] for m, row in fresh["methods"].items()}  # the sets the objective is measured on


def test_local_search_never_loses_to_its_start_stays_under_the_cap_and_teaches_the_advisor_search_rule(small):
    """From the advisor's set and from no index, the search ends at a set at least as rewarded, within the
    memory cap, from which no single move (drop, add, swap) is better; the system's set is left as it was; the
    ``advisor-search`` rule labels the searched set."""
    from case_studies.indexing.advisor import memory_limit, workload_candidates
    from case_studies.indexing.demonstrations import rule_factories
    from case_studies.indexing.local_search import local_search, neighbours
    from wield.demonstrations import select_rules

    task, schedule = small
    workload = schedule.task_for_episode(0)
    before = [spec("title_type asc")]
    task.system.configure(before)
    advice = advise(task.system, task.converter, workload)
    limit = memory_limit(task.system, workload, MEMORY_CAP)
    candidates = workload_candidates(workload, 3)
    size = task.system.index_size
    for start in (advice.configuration, []):
        task.system.configure(before)
        result = local_search(task.system, task.converter, workload, start)
        assert list(task.system.state()) == before  # restored
        assert result.reward == pytest.approx(reward_of(task, workload, result.configuration))
        assert result.reward >= reward_of(task, workload, list(start)) - 1e-12
        assert sum(size(s) for s in result.configuration) <= limit
        for other in neighbours(result.configuration, candidates):  # a local optimum
            if sum(size(s) for s in other) <= limit:
                assert reward_of(task, workload, other) <= result.reward + 1e-12
        assert result.evaluations > len(candidates)
    searched = local_search(task.system, task.converter, workload, advice.configuration).configuration
    (rule,) = select_rules("advisor-search", rule_factories(3, 0.5, task.system, task.converter))
    assert rule.advice(workload) == searched
    assert len(neighbours([spec("genre asc")], [spec("genre asc"), spec("start_year asc")])) == 3  # drop, add, swap
