"""SQLite-specific checks beyond the engine contract suite (tests/test_engine_contract.py, which runs the
shared index, work, size and error checks on every engine): no temporary sort B-tree when an index's canonical
form serves the query's sort, and hostile values inside an OR of IN lists on the real titles table."""

from __future__ import annotations

import pytest

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sqlite import SQLiteEngine
from workloads import Predicate, Query, SortKey


@pytest.fixture()
def engine(small_collection, tmp_path):
    engine = SQLiteEngine.for_collection(small_collection, tmp_path)
    yield engine
    engine.close()


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
