"""The estimated advisor (case_studies/indexing/estimated_advisor.py) and its cost model (cost_estimate.py): the
model's estimates follow the engine's work on a real SQLite table (scans, seeks, the planner's choice, a
multi-index OR), the advisor decides with no engine call, stays under the memory cap, beats no index and the
random policy on real workloads and is close to the advisor, and the verdict and a class run report it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from case_studies.indexing.advisor import MEMORY_CAP, advise, memory_limit
from case_studies.indexing.baselines import random_policy_configuration
from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.cost_estimate import StatisticsCostModel, stored_width
from case_studies.indexing.estimated_advisor import EstimatedScores, EstimatedWorkload, estimated_advice
from case_studies.indexing.statistics import ColumnStatistics
from case_studies.indexing.system import aggregate_costs
from case_studies.indexing.index_spec import IndexSpec
from wield.cli import main
from wield.envs import EpisodeList
from wield.errors import ConfigError
from workloads import Predicate, Query, QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


def spec(*keys: str) -> IndexSpec:
    return IndexSpec.of([key.split() for key in keys])


@pytest.fixture(scope="module")
def task():
    """A real SQLite task on 8,000 generated documents; closed after the module."""
    collection = generate_imdb_collection(8000, seed=5)
    built = build_indexing_task(collection)
    yield built
    built.close()


def work(task, query, configuration) -> float:
    task.system.configure(configuration)
    return float(task.system.measure([query])["costs"][0])


def test_estimates_follow_the_engines_work_for_scans_seeks_and_the_planners_choice(task):
    model = StatisticsCostModel(task.converter.statistics)
    rare = Query((Predicate("title_type", "eq", "tvMiniSeries"), Predicate("genre", "eq", "Drama")),
                 aggregate="count")
    common = Query((Predicate("is_adult", "eq", 0), Predicate("start_year", "gte", 2020)))
    for query in (rare, common):  # a scan of the table: within 25% of the engine's steps
        assert model.scan_cost(query) == pytest.approx(work(task, query, []), rel=0.25)
    # a seek on a selective index costs a small share of the scan, in the model as on the engine
    seek = [spec("title_type asc", "genre asc")]
    assert model.cost(rare, seek) < 0.2 * model.scan_cost(rare) and work(task, rare, seek) < 0.2 * work(task, rare, [])
    # an index no predicate leads on is no use; an OR needs every branch served
    assert model.cost(rare, [spec("start_year asc")]) == model.scan_cost(rare)
    either = Query((Predicate("genre", "eq", "Horror"), Predicate("region", "eq", "JP")), logic="or")
    assert model.cost(either, [spec("genre asc")]) == model.scan_cost(either)
    both = [spec("genre asc"), spec("region asc")]
    assert model.cost(either, both) < 0.5 * model.scan_cost(either) and work(task, either, both) < 0.5 * work(task, either, [])


def test_an_or_takes_a_skip_scan_branch_where_sqlites_planner_does(task):
    """An OR of two ranges with one two-key index: a counting query uses the index for both branches (the
    second by skip-scan), a query returning its rows scans the table; the model makes the same choice."""
    model = StatisticsCostModel(task.converter.statistics)
    both = (Predicate("average_rating", "gt", 9.6), Predicate("num_votes", "gt", 20000))
    index = [spec("average_rating asc", "num_votes asc")]
    counted, returned = Query(both, logic="or", aggregate="count"), Query(both, logic="or")
    assert work(task, counted, index) < 0.5 * work(task, counted, [])
    assert model.cost(counted, index) < 0.5 * model.scan_cost(counted)
    assert work(task, returned, index) == work(task, returned, [])
    assert model.cost(returned, index) == model.scan_cost(returned)
    # an equality on the first key keeps the expected branches small: the index serves both
    lead = Query((Predicate("genre", "eq", "Horror"), Predicate("num_votes", "gt", 1500)), logic="or")
    skip = [spec("genre asc", "num_votes asc")]
    assert work(task, lead, skip) < 0.5 * work(task, lead, [])
    assert model.cost(lead, skip) < 0.5 * model.scan_cost(lead)


def test_an_or_branch_skip_scans_over_several_leading_keys_as_sqlite_does(task):
    """A counting OR of three equalities with one three-key index: SQLite serves every branch from it, the third
    by a skip-scan over both keys before it (``ANY(is_adult) AND ANY(genre) AND start_year=?``); the model
    takes the same multi-index OR instead of the scan, at the engine's scale."""
    model = StatisticsCostModel(task.converter.statistics)
    query = Query((Predicate("is_adult", "eq", 1), Predicate("genre", "eq", "Horror"),
                   Predicate("start_year", "eq", 1950)), logic="or", aggregate="count")
    index = [spec("is_adult asc", "genre asc", "start_year asc")]
    engine = work(task, query, index)
    assert engine < 0.2 * work(task, query, [])
    assert model.cost(query, index) == pytest.approx(engine, rel=0.5)
    # a key before the branch's field with too few rows per value is not skipped: no multi-index OR
    few = [spec("num_votes asc", "genre asc", "start_year asc")]  # about 7 rows per num_votes value
    assert model.cost(query, few) == model.scan_cost(query)


def test_index_bytes_are_proportional_to_the_engines_sizes(task):
    model = StatisticsCostModel(task.converter.statistics)
    specs = [spec("is_adult asc"), spec("start_year asc"), spec("genre asc", "start_year asc"),
             spec("primary_title asc"), spec("region asc", "language asc", "num_votes asc")]
    ratios = np.array([model.index_bytes(s) / task.system.index_size(s) for s in specs])
    assert ratios.max() / ratios.min() < 1.6, ratios  # the same scale for narrow and wide indexes
    assert stored_width(np.array([0, 1, 0])) == 1.0 and stored_width(np.array([300, 300])) == 3.0
    assert stored_width(np.array(["ab", "abcd"], dtype=object)) == 4.0


def test_the_estimated_advisor_decides_without_the_engine_and_is_close_to_the_advisor(task):
    model = StatisticsCostModel(task.converter.statistics)
    collection = task.collection
    config = QueryWorkloadConfig(n_queries=8)
    mine, advisor, random_sets = [], [], []
    for seed in range(6):
        workload = make_query_schedule(collection, config, 100 + seed, 1, per_episode=False).task_for_episode(0)
        counted = task.system.counters.as_dict()
        chosen = estimated_advice(model, task.converter, workload, task.schema.k)
        assert task.system.counters.as_dict() == counted  # no engine call to decide
        assert chosen.evaluations == 0 and len(set(chosen.configuration)) == len(chosen.configuration)
        size = sum(task.system.index_size(s) for s in chosen.configuration)
        assert size <= 1.6 * memory_limit(task.system, workload, MEMORY_CAP)  # its cap is on estimated bytes
        score = EstimatedScores(task)
        mine.append(score.reward(workload))
        assert score.reward(workload) == mine[-1] and len(score.advice) == 1  # scored once per workload
        advisor.append(advise(task.system, task.converter, workload).reward)
        env = task.environment(EpisodeList([workload]))
        random_sets.append(score_of(task, workload, random_policy_configuration(env, seed)))
    mine_, advisor_, random_ = map(np.array, (mine, advisor, random_sets))
    assert (mine_ > -1.0).all()  # better than no index (reward -w_t) on every workload
    assert mine_.mean() > random_.mean() + 0.1
    assert mine_.mean() >= advisor_.mean() - 0.1 * abs(advisor_.mean())  # within 10% of the advisor's reward


@pytest.mark.parametrize("aggregate", ["mean", "p99"])
def test_every_candidates_option_is_what_the_model_says_of_the_set_with_it(task, aggregate):
    """``EstimatedWorkload.options`` weighs all candidates at once from per-(query, candidate) plans: its
    figures are exactly the model's own for each query under the set with the candidate added, for sets that
    are not the greedy ones, with ``or`` queries among the workloads."""
    model = StatisticsCostModel(task.converter.statistics)
    config = QueryWorkloadConfig(n_queries=10)
    seen_or = 0
    for seed in range(8):
        workload = make_query_schedule(task.collection, config, 300 + seed, 1, per_episode=False).task_for_episode(0)
        seen_or += sum(query.logic == "or" and len(query.predicates) > 1 for query in workload)
        estimated = EstimatedWorkload(model, task.converter, workload, task.schema.k, aggregate=aggregate)
        chosen: list[IndexSpec] = []
        for step in range(3):
            costs, used = estimated.costs(chosen), estimated.size(chosen)
            options = estimated.options(chosen, costs, used)
            expected = [spec for spec in estimated.candidates
                        if spec not in chosen and used + model.index_bytes(spec) <= estimated.limit]
            assert [option.spec for option in options] == expected
            for option in options:
                with_it = [*chosen, option.spec]
                assert option.costs == [model.cost(query, with_it) for query in workload]
                assert option.level == estimated.level(used + option.size, option.costs)
                saved = aggregate_costs(costs, aggregate) - aggregate_costs(option.costs, aggregate)
                assert option.per_byte == saved / option.size
                assert option.runtime_share == estimated.runtime_share(option.costs)
            # the few that save the most per byte (the shortlist design's slots): a stable sort's first ones
            assert estimated.options(chosen, costs, used, best=4) == sorted(options, key=lambda o: -o.per_byte)[:4]
            if not options:
                break
            chosen.append(options[(5 * step + seed) % len(options)].spec)
    assert seen_or > 0


def test_a_predicates_selectivity_counts_what_comparing_every_sampled_value_counts():
    """Selectivities are counted, and matching sampled rows found, by binary search in a sorted sample; the
    count and the rows are the elementwise ones for every operator, with NaN in a float column, None in a text
    column and values of the wrong type."""
    rng = np.random.default_rng(3)
    numbers = rng.integers(0, 30, 400).astype(float)
    numbers[rng.random(400) < 0.2] = np.nan
    texts = np.array([None if r < 0.2 else f"v{int(r * 10)}" for r in rng.random(400)], dtype=object)
    words = np.array([f"w{int(r * 10)}" for r in rng.random(400)], dtype=object)
    sample = {"n": numbers, "i": rng.integers(-5, 5, 400), "t": texts, "w": words}
    statistics = ColumnStatistics(400, {name: 10 for name in sample}, sample)
    for field_name, values in sample.items():
        for value in (0, 3, 7.5, -5, 29.0, "v3", "w2", "5"):
            for op in ("eq", "lt", "lte", "gt", "gte", "between", "in"):
                argument = (value, 20) if op == "between" else (value, "w4", 4) if op == "in" else value
                predicate = Predicate(field_name, op, argument)
                try:
                    expected = elementwise_share(values, op, argument)
                except TypeError:  # a comparison the values refuse: the same error either way
                    with pytest.raises(TypeError):
                        statistics.predicate_selectivity(predicate)
                    continue
                assert statistics.predicate_selectivity(predicate) == expected, (field_name, op, argument)
                # the sampled rows it matches, read off the sorted sample's ranges: the elementwise ones
                matched = statistics.matching_rows(Query((predicate,)))
                assert matched is not None and matched.tolist() == np.flatnonzero(
                    elementwise_matches(values, op, argument)).tolist(), (field_name, op, argument)
    both = (Predicate("i", "gte", 0), Predicate("w", "in", ("w1", "w3")))
    hits = [elementwise_matches(sample["i"], "gte", 0), elementwise_matches(words, "in", ("w1", "w3"))]
    for logic, combined in (("and", hits[0] & hits[1]), ("or", hits[0] | hits[1])):
        matched = statistics.matching_rows(Query(both, logic=logic))
        assert matched is not None and matched.tolist() == np.flatnonzero(combined).tolist()


def elementwise_matches(values, op, value) -> np.ndarray:
    compare = {"eq": lambda: values == value, "lt": lambda: values < value, "lte": lambda: values <= value,
               "gt": lambda: values > value, "gte": lambda: values >= value,
               "between": lambda: (values >= value[0]) & (values <= value[1]),
               "in": lambda: np.isin(values, list(value))}
    return np.asarray(compare[op](), dtype=bool)


def elementwise_share(values, op, value) -> float:
    return max(int(np.count_nonzero(elementwise_matches(values, op, value))), 0.5) / len(values)


def score_of(task, workload, configuration) -> float:
    task.system.configure(configuration)
    return float(task.converter.system_to_agent_reward(task.system.measure(workload)))


def test_a_run_reports_the_estimated_advisor_as_a_rung_a_decision_time_and_at_budget_zero(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "indexing", "--documents", "3000", "--queries", "5", "--episodes", "10",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "  vs heuristic estimated-advisor: " in printed
    verdict = json.loads((out / "evaluation.json").read_text())["verdict"]
    rung = next(r for r in verdict["rungs"] if r["name"] == "estimated-advisor")
    assert rung["kind"] == "heuristic" and rung["instances"] >= 10
    assert verdict["decision_time"]["estimated_seconds"] > 0
    sweep = verdict["budgets"]
    assert len(sweep["estimated"]) == len(sweep["advisor"]) and all(-1.0 <= e <= 0.0 for e in sweep["estimated"])
    note = next(line for line in verdict["lines"] if line.startswith("  note: equal decision budget 0"))
    assert "the estimated advisor, which decides without the engine too, " in note
    assert "estimated advisor " in next(line for line in verdict["lines"] if "decision time per instance" in line)


def test_the_estimated_advisor_is_a_method_of_run_and_compare_with_no_evaluation(tmp_path, capsys):
    from case_studies.indexing.methods import METHOD_COSTS, available_methods

    assert "estimated-advisor" in available_methods() and METHOD_COSTS["estimated-advisor"] < METHOD_COSTS["advisor"]
    out = tmp_path / "cmp"
    tiny = ["--documents", "2000", "--queries", "5", "--episodes", "2", "--repetitions", "1"]
    assert main(["compare", "indexing", "--class", "C2", "--trials", "1", "--out", str(out), *tiny,
                 "--methods", "advisor,estimated-advisor", "--quiet"]) == 0
    rows = {row["method"]: row for row in json.loads((out / "comparison.json").read_text())["methods"]}
    assert rows["estimated-advisor"]["evaluations"]["median"] == 0 < rows["advisor"]["evaluations"]["median"]
    trial = next((out / "estimated-advisor" / "trials").glob("*/"))
    chosen = json.loads((trial / "estimated-advisor.json").read_text())
    assert chosen["evaluations"] == 0 and chosen["configuration"]
    evaluation = json.loads((trial / "evaluation.json").read_text())
    assert set(evaluation["methods"]) == {"none", "full", "estimated-advisor"}
    assert evaluation["methods"]["estimated-advisor"]["mean_work_improvement"] > 0


def test_a_class_run_of_a_method_with_no_evaluation_has_no_random_search_at_equal_budget(tmp_path, capsys):
    tiny = ["--class", "C4", "--trials", "2", "--documents", "3000", "--queries", "5", "--repetitions", "1", "--quiet"]
    assert main(["run", "indexing", "--method", "estimated-advisor", *tiny, "--out", str(tmp_path / "e")]) == 0
    printed = capsys.readouterr().out
    assert "C4(n=0, s=2" in printed and "random search at equal budget" not in printed
    assert main(["run", "indexing", "--method", "advisor", *tiny, "--out", str(tmp_path / "a")]) == 0
    assert "random search at equal budget: not run here; 'wield compare indexing" in capsys.readouterr().out


def test_the_decision_benchmark_times_a_greedy_play_that_builds_the_estimated_advisors_sets(capsys, benchmark_script):
    """``benchmarks/estimated_advisor.py --play``: the greedy policy's play on the workloads the two advisors
    decide, split into state features and forward passes; the play builds the estimated advisor's set (slot 1
    while it added indexes) on every workload, so it visits as many sets as a policy that learned that choice."""
    benchmark = benchmark_script("estimated_advisor")
    assert benchmark.main(["--documents", "2000", "--workloads", "3", "--play"]) == 0
    printed = capsys.readouterr().out
    play = next(line for line in printed.splitlines() if line.startswith("  greedy policy's play "))
    assert "10 forward passes" in play and "differs from the estimated advisor's on 0 of 3 workloads" in play
    assert "advisor / greedy play: " in printed and "100x asks for a play of at most " in printed
    # the same play replayed with the workload's estimates made, then with every set's tables made too
    again = next(line for line in printed.splitlines() if line.startswith("  the same play again: "))
    given = [float(ms) for ms in re.findall(r"(\d+\.\d) ms with ", again)]
    assert "with the workload's estimates already made" in again and len(given) == 2 and all(g > 0 for g in given)


def test_the_estimate_errors_benchmark_runs_the_advisors_rule_on_engine_and_model_figures(capsys, benchmark_script):
    """``benchmarks/estimate_errors.py``: the advisor's own rule on the engine's figures is the advisor (0 behind
    on every workload) and on the model's is the estimated advisor (its set on every workload)."""
    benchmark = benchmark_script("estimate_errors")
    assert benchmark.main(["--documents", "2000", "--workloads", "2"]) == 0
    printed = capsys.readouterr().out
    assert "the 'model' variant chose the estimated advisor's set on 2 of 2" in printed
    rows = {line.split("  ")[1].strip(): line for line in printed.splitlines() if line.startswith("  ") and "(" in line
            and not line.startswith("  reward")}
    assert rows.keys() == {"model", "engine bytes", "engine costs", "engine",
                           *(f"model on {kind} only" for kind in benchmark.KINDS)}
    assert rows["engine"].split()[1:] == ["+0.0000", "(0.0000)", "0/0"]


def test_the_imitation_ceiling_plays_the_teachers_labels_and_a_trained_policys_model(tmp_path, capsys, benchmark_script):
    """``benchmarks/imitation_ceiling.py``: the advisor rule's labels played as a policy build the advisor's set
    (a perfect imitator's reward: 0 behind where the set is reached); a ``model.pt`` is played beside it and its
    workloads are split by what it built; a model of another kind is refused, naming the field."""
    import torch

    benchmark = benchmark_script("imitation_ceiling")
    task = build_indexing_task(generate_imdb_collection(2000, seed=0), workdir=tmp_path / "task")
    try:
        model = tmp_path / "model.pt"
        torch.save(benchmark.greedy_player(task).agent.state_dict(), model)
        torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
        with pytest.raises(ConfigError, match="model"):
            benchmark.trained_player(task, str(tmp_path / "other.pt"))
    finally:
        task.close()
    assert benchmark.main(["--documents", "2000", "--workloads", "2", "--model", str(model)]) == 0
    printed = capsys.readouterr().out
    teacher = next(line for line in printed.splitlines() if "teacher's play" in line)
    assert "minus the advisor +0.0000 [+0.0000, +0.0000]" in teacher
    assert "the teacher's set not reached on the shortlist on 0 of 2" in teacher
    assert "estimated advisor (slot 1 while the estimates gain): minus the advisor " in printed
    departing = re.search(r"departs from the estimated advisor's rule on (\d) of 2 workloads; it stops where slot 1 "
                          r"still gains on (\d), takes another slot on (\d), builds where slot 1 does not gain on "
                          r"(\d)", printed)
    assert departing is not None and all(int(k) <= int(departing.group(1)) for k in departing.groups()[1:])
    assert "trained policy's greedy play (model.pt): minus the advisor " in printed
    groups = re.findall(r"^    .*: (\d) workloads, reward lost ", printed, flags=re.M)
    assert sum(int(count) for count in groups) == 2


def test_a_limited_scan_stops_where_the_table_order_puts_the_matches_and_a_fixed_sort_orders_nothing(tmp_path):
    """Two things SQLite's work depends on and the model now reads: a scan that stops at its limit reads the
    table in stored order, so on a table stored by year the newest years' first matches sit near its end (the
    statistics' sample keeps the table's order); and an ORDER BY on a field an equality fixes is dropped."""
    from workloads import Collection, SortKey

    generated = generate_imdb_collection(6000, seed=2)
    order = np.argsort(generated.columns["start_year"], kind="stable")
    by_year = Collection("by_year", generated.fields, {name: generated.columns[name][order]
                                                       for name in generated.field_names})
    task = build_indexing_task(by_year, workdir=tmp_path)
    try:
        model = StatisticsCostModel(task.converter.statistics)
        years = np.sort(by_year.columns["start_year"])
        newest = Query((Predicate("start_year", "gte", int(years[int(0.9 * len(years))])),), limit=10)
        evenly = model.rows * 10 / (model.rows * model.query_selectivity(newest))  # rows read if spread evenly
        engine = work(task, newest, [])
        assert engine > 20 * evenly  # it reads most of the table before the first match
        assert model.scan_cost(newest) == pytest.approx(engine, rel=0.3)
        fixed = Query((Predicate("genre", "eq", "Drama"),), sort=(SortKey("genre", "desc"),), limit=10)
        assert not model.ordered(fixed) and model.ordered(Query(fixed.predicates, sort=(SortKey("region"),)))
        assert model.scan_cost(fixed) == pytest.approx(work(task, fixed, []), rel=0.5)
        sorted_ = Query(fixed.predicates, sort=(SortKey("region"),), limit=10)  # a sorter over every match
        assert model.scan_cost(fixed) < 0.1 * model.scan_cost(sorted_) and work(task, fixed, []) < 0.1 * work(
            task, sorted_, [])
    finally:
        task.close()


def test_a_seek_plan_is_shared_by_a_structure_and_takes_each_querys_own_values(task):
    """A seek's plan is worked out once per query structure and index (``cost_estimate._SeekPlan``): a model
    that has costed other queries of the same structure first gives each query the figures a fresh model gives
    it, and ``seek_options`` gives what ``seek_option`` gives, index by index."""
    statistics = task.converter.statistics
    warm = StatisticsCostModel(statistics)
    config = QueryWorkloadConfig(n_queries=10)
    queries = [query for seed in range(6) for query in
               make_query_schedule(task.collection, config, 500 + seed, 1, per_episode=False).task_for_episode(0)]
    specs = sorted({spec for query in queries for spec in EstimatedWorkload(warm, task.converter, [query],
                                                                             task.schema.k).candidates})
    shared = 0
    for query in queries:
        fresh = StatisticsCostModel(statistics)
        shared += sum(key[0] == warm._facts(query).structure for key in warm._seek_plans)
        assert warm.seek_options(query, specs) == [fresh.seek_option(query, spec) for spec in specs]
        assert [warm.seek_option(query, spec) for spec in specs] == fresh.seek_options(query, specs)
    assert shared > 0  # some queries met plans that others of their structure made
