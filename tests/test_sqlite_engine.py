"""The SQLite adapter through the engine contract: indexes, work, plans, sizes, safety of values."""

from __future__ import annotations

import pytest

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.sqlite_engine import SQLiteEngine
from wield.errors import ConfigError
from workloads import Predicate, Query, SortKey


@pytest.fixture()
def engine(small_collection, tmp_path):
    engine = SQLiteEngine.for_collection(small_collection, tmp_path)
    yield engine
    engine.close()


def test_create_list_drop_indexes_with_directions(engine):
    spec = IndexSpec.of([("genre", "asc"), ("start_year", "desc")])
    engine.create_index(spec)
    assert engine.list_indexes() == [spec]
    assert engine.index_size(spec) > 0
    engine.drop_index(spec)
    assert engine.list_indexes() == []


def test_work_is_deterministic_and_an_index_reduces_it(engine):
    query = Query((Predicate("director_id", "eq", 17),))
    before = engine.run_query(query, repetitions=0)
    again = engine.run_query(query, repetitions=0)
    assert before.work == again.work and before.indexes_used == ()
    spec = IndexSpec.of([("director_id", "asc")])
    engine.create_index(spec)
    after = engine.run_query(query, repetitions=3)
    assert after.rows == before.rows
    assert after.work < before.work / 10
    assert after.indexes_used == (spec.name,)
    assert after.latency_s > 0


def test_inverted_index_serves_a_sort_in_the_opposite_direction(engine):
    query = Query((Predicate("genre", "eq", "Drama"),), sort=(SortKey("start_year", "desc"),), limit=5)
    spec = IndexSpec.of([("genre", "desc"), ("start_year", "asc")])
    engine.create_index(spec.canonical())
    result = engine.run_query(query, repetitions=0)
    assert spec.canonical().name in result.indexes_used
    assert not any("TEMP B-TREE" in line for line in result.plan)


def test_values_with_quotes_and_sql_are_data(engine):
    hostile = "x'); DROP TABLE titles; --"
    query = Query((Predicate("primary_title", "eq", hostile), Predicate("genre", "in", ('"', "' OR 1=1 --"))),
                  logic="or")
    result = engine.run_query(query, repetitions=0)
    assert result.rows == 0
    assert engine.collection_size() > 0  # the table is still there


def test_unknown_field_is_a_clear_error(engine):
    with pytest.raises(ConfigError, match="nonexistent"):
        engine.run_query(Query((Predicate("nonexistent", "eq", 1),)), repetitions=0)
