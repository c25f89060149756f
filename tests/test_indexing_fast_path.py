"""The fast path of the indexing adapter (what-if planning, forced plans, indexes kept across configurations,
the measurement store) gives exactly what the slow path measures, whatever the order of configurations."""

from __future__ import annotations

import random

import pytest

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.engines.sqlite_whatif import signature
from case_studies.indexing.index_spec import IndexSpec, full_index
from case_studies.indexing.search_space import IndexSetSpace
from wield.agents import RandomSearchAgent
from workloads import QueryWorkloadConfig, Predicate, Query, generate_imdb_collection, make_query_schedule
from workloads.query_generator import QueryWorkloadGenerator


@pytest.fixture(scope="module")
def collection():
    return generate_imdb_collection(6_000, seed=3)


@pytest.fixture(scope="module")
def workload(collection):
    return make_query_schedule(collection, QueryWorkloadConfig(n_queries=12), 4, 1, per_episode=False) \
        .task_for_episode(0)


def index_sets(collection, count: int, seed: int, slots: int = 6):
    """``count`` random index sets of the optimisers' search space (as random search proposes them)."""
    space = IndexSetSpace(collection.field_names, slots=slots, k=3)
    agent = RandomSearchAgent(space.space, seed=seed)
    return [space.decode(agent.propose()) for _ in range(count)]


def with_workload_indexes(sets, workload, seed: int):
    """Mix in indexes on the workload's own fields, so plans use them (random fields rarely serve a query)."""
    rng = random.Random(seed)
    mixed = []
    for indexes in sets:
        extra = [full_index(rng.choice(workload)) for _ in range(rng.randint(1, 4))]
        mixed.append(list(dict.fromkeys([*indexes, *(spec.canonical() for spec in extra)])))
    return mixed


def evaluate(task, workload, configurations):
    """(rewards, per-query costs) of whole index sets, as an optimiser's evaluations measure them."""
    rewards, costs = [], []
    for configuration in configurations:
        task.system.configure(configuration)
        metrics = task.system.measure(workload)
        rewards.append(task.converter.system_to_agent_reward(metrics))
        costs.append(metrics["costs"])
    return rewards, costs


def test_incremental_evaluation_by_difference_equals_the_slow_path(collection, workload, tmp_path):
    configurations = with_workload_indexes(index_sets(collection, 14, seed=1), workload, seed=2)
    configurations += configurations[:4]  # revisits
    fast = build_indexing_task(collection, workdir=tmp_path, cache_dir=tmp_path / "cache")
    slow = build_indexing_task(collection, workdir=tmp_path, cost_cache=False)
    try:
        fast_rewards, fast_costs = evaluate(fast, workload, configurations)
        slow_rewards, slow_costs = evaluate(slow, workload, configurations)
        assert fast_costs == slow_costs  # every query's work, exactly
        assert fast_rewards == slow_rewards
        counters = fast.system.counters
        assert counters.plans > 0 and counters.plan_hits > 0 and counters.relevant_hits > 0
        assert counters.planner_disagreements == 0
        assert counters.query_executions < 0.75 * slow.system.counters.query_executions
        assert counters.index_builds < slow.system.counters.index_builds
    finally:
        fast.close()
        slow.close()


def test_every_cost_is_an_execution_a_counted_work_or_a_counted_hit(collection, workload, tmp_path):
    configurations = with_workload_indexes(index_sets(collection, 8, seed=5), workload, seed=6)
    task = build_indexing_task(collection, workdir=tmp_path, cache_dir=tmp_path / "cache")
    try:
        evaluate(task, workload, configurations + configurations)
        c = task.system.counters
        asked = (2 * len(configurations) + 1) * len(workload)  # + the no-index reference, once
        assert c.query_executions + c.works_counted + c.cache_hits == asked
        assert c.works_counted > 0 and c.work_checks >= 5  # the work model answered, and was checked
        assert c.cache_hits == c.relevant_hits + c.plan_hits + c.equivalent_hits + c.store_hits
        assert c.relevant_hits >= len(configurations) * len(workload)  # the second pass is all hits
        assert c.store_hits == 0  # a fresh store
        # every build on the whole table has one purpose; sizes are checked, most programs counted or sliced
        assert c.index_builds == (c.builds_for_sizes + c.builds_for_programs + c.builds_for_representatives
                                  + c.builds_for_configurations)
        assert c.builds_for_sizes >= 3 and c.works_declined < c.works_counted
    finally:
        task.close()


def test_a_warm_measurement_store_changes_nothing_but_the_work_done(collection, workload, tmp_path):
    configurations = with_workload_indexes(index_sets(collection, 8, seed=7), workload, seed=8)
    results, counters = [], []
    for _ in range(2):  # the second task finds the first one's measurements in the store
        task = build_indexing_task(collection, workdir=tmp_path, cache_dir=tmp_path / "cache")
        try:
            results.append(evaluate(task, workload, configurations))
            counters.append(task.system.counters)
        finally:
            task.close()
    assert results[0] == results[1]
    cold, warm = counters
    assert cold.store_hits == 0 and warm.store_hits > 0 and warm.sizes_from_store > 0
    assert warm.query_executions < cold.query_executions and warm.index_builds < cold.index_builds


def test_a_set_measured_after_any_other_set_gives_identical_work(collection, workload, tmp_path):
    configurations = with_workload_indexes(index_sets(collection, 6, seed=9), workload, seed=10)
    target = configurations[0]
    for cost_cache in (True, False):
        measured = []
        for history in ([], configurations[1:3], list(reversed(configurations[1:6])), [target[::-1]]):
            task = build_indexing_task(collection, workdir=tmp_path, cost_cache=cost_cache,
                                       measurement_store=False)
            try:
                evaluate(task, workload, history)
                task.system.configure(target)
                metrics = task.system.measure(workload)
                task.system.materialise_all()  # evaluation's free plans, after the same history
                plans = [task.system.execute(query, repetitions=0).indexes_used for query in workload]
                measured.append((metrics["costs"], metrics["index_bytes"], plans))
            finally:
                task.close()
        assert all(m == measured[0] for m in measured[1:]), f"cost_cache={cost_cache}"


def tie_query():
    """Two indexes tie in SQLite's planner for this query: equality on the first key, a range on the second."""
    return Query((Predicate("title_type", "eq", "movie"), Predicate("start_year", "between", (1990, 2000)),
                  Predicate("end_year", "between", (1990, 2005))))


def test_creation_order_decides_ties_on_the_bare_engine_but_not_through_the_adapter(collection, tmp_path):
    first = IndexSpec.of([("title_type", "asc"), ("start_year", "asc")])
    second = IndexSpec.of([("title_type", "asc"), ("end_year", "asc")])
    query = tie_query()
    used = []
    for order in ((first, second), (second, first)):
        engine = SQLiteEngine.for_collection(collection, tmp_path)
        try:
            for spec in order:
                engine.create_index(spec)
            used.append(engine.run_query(query, repetitions=0).indexes_used)
        finally:
            engine.close()
    assert used[0] != used[1]  # the bare engine's plan depends on the order: the test below can fail
    for cost_cache in (True, False):
        results = []
        for order in ((first, second), (second, first)):
            task = build_indexing_task(collection, workdir=tmp_path, cost_cache=cost_cache,
                                       measurement_store=False)
            try:
                task.system.reset()
                for spec in order:  # an agent building them one step at a time, in either order
                    task.system.apply(spec)
                    task.system.measure([query])
                results.append(task.system.query_result(query).work)
                task.system.materialise_all()
                results.append(task.system.execute(query, repetitions=0).indexes_used)
            finally:
                task.close()
        assert results[:2] == results[2:], f"cost_cache={cost_cache}"


def test_whatif_plans_are_the_real_database_plans(collection, workload, tmp_path):
    engine = SQLiteEngine.for_collection(collection, tmp_path)
    planner = engine.whatif_planner()
    try:
        statistics = {}
        for configuration in with_workload_indexes(index_sets(collection, 8, seed=11), workload, seed=12):
            for spec in engine.list_indexes():
                engine.drop_index(spec)
            for spec in sorted(configuration):
                engine.create_index(spec)
                statistics[spec] = engine.index_statistics(spec)
            planner.configure(configuration, statistics)
            for query in workload:
                assert planner.plan(query).signature == signature(engine.program(query))
    finally:
        planner.close()
        engine.close()


def test_under_latency_a_revisited_plan_is_remeasured_up_to_the_sample_count(collection, workload, tmp_path):
    task = build_indexing_task(collection, metric="latency", repetitions=1, workdir=tmp_path,
                               cache_dir=tmp_path / "cache")
    try:
        system = task.system
        configuration = [full_index(query) for query in workload[:3]]
        system.configure(configuration)
        executions = []
        for _ in range(system.latency_samples + 3):
            system.measure(workload)
            executions.append(system.counters.query_executions)
        assert executions[1] > executions[0]  # a revisit re-measures...
        assert executions[system.latency_samples:] == [executions[-1]] * 3  # ... until every cost has its samples
        assert executions[-1] - executions[0] <= (system.latency_samples - 1) * len(workload)
        assert system.counters.store_hits == 0  # latency is never taken from the store
    finally:
        task.close()


def test_postgres_cached_costs_equal_the_slow_path_whatever_came_before(postgres_uri, collection, workload):
    configurations = with_workload_indexes(index_sets(collection, 5, seed=13), workload, seed=14)
    history = configurations[1:] + configurations[:1]  # the first set last: measured after all the others
    fast = build_indexing_task(collection, engine="postgres", uri=postgres_uri)
    slow = build_indexing_task(collection, engine="postgres", uri=postgres_uri, cost_cache=False)
    fresh = build_indexing_task(collection, engine="postgres", uri=postgres_uri)
    try:
        fast_results = evaluate(fast, workload, history)
        assert fast_results == evaluate(slow, workload, history)
        assert evaluate(fresh, workload, configurations[:1]) == (fast_results[0][-1:], fast_results[1][-1:])
        assert fast.system.counters.cache_hits > 0
        assert fast.system.counters.query_executions < slow.system.counters.query_executions
    finally:
        for task in (fast, slow, fresh):
            task.close()


def test_programs_equal_up_to_unused_keys_do_the_same_work(collection, workload, tmp_path):
    """The claim behind the equivalence cache, checked directly: where a query visits whole ranges, its
    program on an index and on the index of only the leading keys it uses are equivalent and count the
    same steps."""
    from case_studies.indexing.engines.sqlite_equivalence import equivalent_program, visits_whole_ranges

    engine = SQLiteEngine.for_collection(collection, tmp_path, in_memory=True)
    compared = 0
    try:
        fields = engine.translator.fields
        for configuration in with_workload_indexes(index_sets(collection, 12, seed=15), workload, seed=16):
            for spec in configuration:
                engine.create_index(spec)
            named = {spec.name: spec for spec in configuration}
            for query in workload:
                used = engine.run_query(query, repetitions=0).indexes_used
                matching = engine.count_rows(query) if query.limit is not None else None
                if len(used) != 1 or used[0] not in named or not visits_whole_ranges(query, matching):
                    continue
                planned = equivalent_program(engine.program(query), named, engine.table, fields)
                representative = planned.representatives[0]
                engine.create_index(representative)
                forced = equivalent_program(engine.program(query, representative.name),
                                            {representative.name: representative}, engine.table, fields)
                if forced.signature == planned.signature:
                    exact = engine.run_query(query, repetitions=0, force=used[0]).work
                    assert engine.run_query(query, repetitions=0, force=representative.name).work == exact
                    compared += 1
            for spec in engine.list_indexes():
                engine.drop_index(spec)
    finally:
        engine.close()
    assert compared >= 20


def test_the_adapter_measures_on_slices_what_the_slow_path_measures(collection, tmp_path):
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=12))
    first, second = generator.generate(10), generator.generate(11)
    configurations = with_workload_indexes(index_sets(collection, 10, seed=3), first + second, seed=4)
    store = tmp_path / "cache"
    warm = build_indexing_task(collection, workdir=tmp_path, cache_dir=store)
    try:
        evaluate(warm, first, configurations)  # the store learns every index's size on another workload
    finally:
        warm.close()
    fast = build_indexing_task(collection, workdir=tmp_path, cache_dir=store)
    slow = build_indexing_task(collection, workdir=tmp_path, cost_cache=False)
    try:
        assert evaluate(fast, second, configurations) == evaluate(slow, second, configurations)
        counters = fast.system.counters
        assert counters.slice_runs > 0 and counters.slices_made > 0
        assert counters.plan_fallbacks == 0 and counters.planner_disagreements == 0
        assert counters.index_builds < counters.slice_runs  # the slices replaced most builds
    finally:
        fast.close()
        slow.close()
