"""One contract, three engines: the same tests run on SQLite, PostgreSQL and (given a server) MongoDB.

PostgreSQL runs on a throwaway server started by the project (the ``postgres_uri`` session fixture).
MongoDB cannot be installed on these machines: its cases run when ``WIELD_MONGODB_URI`` names a server
(e.g. ``mongodb://127.0.0.1:27017/wield_test``) and are reported as skipped with that reason otherwise.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from case_studies.indexing.build import build_indexing_task, open_engine
from case_studies.indexing.index_spec import IndexSpec
from wield.errors import ConfigError
from workloads import Collection, FieldSpec, Predicate, Query, SortKey
from workloads.evaluate import result_size

ENGINES = ("sqlite", "postgres", "mongodb")
MONGODB_SKIP = ("MongoDB integration tests need a server: set WIELD_MONGODB_URI, e.g. "
                "mongodb://127.0.0.1:27017/wield_test (see README, 'Database engines')")


@pytest.fixture(params=ENGINES)
def engine_uri(request):
    """(engine name, URI) for each engine; MongoDB is skipped without WIELD_MONGODB_URI."""
    if request.param == "sqlite":
        return "sqlite", None
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("postgres_uri")
    uri = os.environ.get("WIELD_MONGODB_URI")
    if not uri:
        pytest.skip(MONGODB_SKIP)
    return "mongodb", uri


@pytest.fixture()
def engine(engine_uri, small_collection, tmp_path):
    system, uri = engine_uri
    engine = open_engine(small_collection, system, tmp_path, uri=uri)
    yield engine
    engine.close()


def expected_rows(query, collection) -> int:
    if query.aggregate == "count":
        return 1
    return min(result_size(query, collection), query.limit or len(collection))


def sorts_explicitly(plan) -> bool:
    """Whether a plan sorts rows itself instead of reading them in index order."""
    return any("TEMP B-TREE" in step or step in ("Sort", "Incremental Sort", "SORT") for step in plan)


def test_create_list_drop_indexes_with_directions(engine):
    spec = IndexSpec.of([("genre", "asc"), ("start_year", "desc")])
    other = IndexSpec.of([("director_id", "asc")])
    engine.create_index(spec)
    engine.create_index(spec)  # idempotent
    engine.create_index(other)
    assert engine.list_indexes() == sorted([spec, other])
    assert engine.index_size(spec) > 0 and engine.collection_size() > engine.index_size(other)
    engine.drop_index(spec)
    assert engine.list_indexes() == [other]
    engine.create_index(spec)  # back again (MongoDB: unhidden, not rebuilt)
    assert engine.list_indexes() == sorted([spec, other])
    engine.drop_all_indexes()
    assert engine.list_indexes() == []


def test_results_match_the_reference_evaluator(engine, small_collection, small_workload):
    for query in small_workload:
        assert engine.run_query(query, repetitions=0).rows == expected_rows(query, small_collection), query


def test_work_is_deterministic_across_fresh_engines_and_an_index_reduces_it(engine, engine_uri,
                                                                             small_collection, tmp_path):
    query = Query((Predicate("director_id", "eq", 17),))
    before = engine.run_query(query, repetitions=0)
    assert engine.run_query(query, repetitions=0).work == before.work and before.indexes_used == ()
    second = open_engine(small_collection, engine_uri[0], tmp_path, uri=engine_uri[1])
    try:
        assert second.run_query(query, repetitions=0).work == before.work
    finally:
        second.close()
    spec = IndexSpec.of([("director_id", "asc")])
    engine.create_index(spec)
    after = engine.run_query(query, repetitions=3)
    assert after.rows == before.rows
    assert after.work < before.work / 10
    assert after.indexes_used == (spec.name,)
    assert after.latency_s > 0


def test_an_inverted_index_serves_the_opposite_sort(engine):
    spec = IndexSpec.of([("genre", "desc"), ("start_year", "asc")]).canonical()  # (genre asc, start_year desc)
    engine.create_index(spec)
    query = Query((Predicate("genre", "eq", "Drama"),), sort=(SortKey("start_year", "asc"),), limit=5)
    result = engine.run_query(query, repetitions=0)
    assert spec.name in result.indexes_used
    assert not sorts_explicitly(result.plan), result.plan


def test_an_or_uses_one_index_per_branch(engine, small_collection):
    title = str(small_collection.columns["primary_title"][123])
    first, second = IndexSpec.of([("director_id", "asc")]), IndexSpec.of([("primary_title", "asc")])
    engine.create_index(first)
    engine.create_index(second)
    query = Query((Predicate("director_id", "eq", 17), Predicate("primary_title", "eq", title)), logic="or")
    result = engine.run_query(query, repetitions=0)
    assert set(result.indexes_used) == {first.name, second.name}
    assert result.rows == expected_rows(query, small_collection)


HOSTILE = ["O'Brien", 'say "hi"', "x'); DROP TABLE hostile; --", "' OR '1'='1", "{'$gt': ''}", "$where",
           "%s %(name)s ?", "back\\slash", "semi;colon"]


@pytest.fixture()
def hostile_engine(engine_uri, tmp_path):
    collection = Collection("hostile", [FieldSpec("title", "text"), FieldSpec("n", "int")],
                            {"title": np.array(HOSTILE + ["plain"] * 50, dtype=object),
                             "n": np.arange(len(HOSTILE) + 50)})
    engine = open_engine(collection, engine_uri[0], tmp_path, uri=engine_uri[1], cache_dir=tmp_path)
    yield engine
    engine.close()


def test_values_with_quotes_and_query_syntax_are_data(hostile_engine):
    engine = hostile_engine
    engine.create_index(IndexSpec.of([("title", "asc")]))
    for value in HOSTILE:
        assert engine.run_query(Query((Predicate("title", "eq", value),)), repetitions=1).rows == 1, value
    both = Query((Predicate("title", "in", ("' OR '1'='1", "{'$gt': ''}")),), aggregate="count")
    assert engine.run_query(both, repetitions=0).rows == 1
    nothing = Query((Predicate("title", "eq", "nothing' OR 1=1 --"), Predicate("n", "gte", 0)), logic="and")
    assert engine.run_query(nothing, repetitions=0).rows == 0
    assert engine.collection_size() > 0 and engine.list_indexes()  # table and index survived


def test_unknown_field_is_a_clear_error(engine):
    with pytest.raises(ConfigError, match="nonexistent"):
        engine.run_query(Query((Predicate("nonexistent", "eq", 1),)), repetitions=0)


def test_the_same_schema_and_converter_drive_every_engine(engine_uri, small_collection, small_workload, tmp_path):
    system, uri = engine_uri
    task = build_indexing_task(small_collection, engine=system, uri=uri, workdir=tmp_path)
    reference = build_indexing_task(small_collection, engine="sqlite", workdir=tmp_path)
    try:
        assert task.schema.fingerprint() == reference.schema.fingerprint()
        workload = [Query((Predicate("director_id", "eq", 17),)), *small_workload[:3]]
        context = {"item": workload[0]}
        state = task.converter.system_to_agent_state((), context)
        assert all(np.array_equal(state[key], value)
                   for key, value in reference.converter.system_to_agent_state((), context).items())
        none = task.system.measure(workload)
        task.system.configure([IndexSpec.of([("director_id", "asc")])])
        indexed = task.system.measure(workload)
        assert indexed["costs"][0] < none["costs"][0] / 10
        assert 0 < indexed["index_bytes"] < none["full_index_bytes"]
    finally:
        task.close()
        reference.close()
