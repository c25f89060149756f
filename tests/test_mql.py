"""Query and index translation to MongoDB's query language: exact documents, no server needed."""

from __future__ import annotations

import pytest

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.mongodb import explain_indexes, explain_work
from case_studies.indexing.engines.mql import ASCENDING, DESCENDING, MQLTranslator, spec_from_keys
from wield.errors import ConfigError
from workloads import Predicate, Query, SortKey

FIELDS = ("title", "genre", "start_year", "rating", "votes")


@pytest.fixture()
def mql():
    return MQLTranslator(FIELDS)


def test_comparisons_between_and_in(mql):
    query = Query((Predicate("genre", "eq", "Drama"), Predicate("start_year", "between", (1990, 1999)),
                   Predicate("rating", "gt", 7.5), Predicate("votes", "lte", 100),
                   Predicate("title", "in", ("A", "B"))))
    assert mql.query(query).command("c") == {"find": "c", "filter": {"$and": [
        {"genre": {"$eq": "Drama"}},
        {"start_year": {"$gte": 1990, "$lte": 1999}},
        {"rating": {"$gt": 7.5}},
        {"votes": {"$lte": 100}},
        {"title": {"$in": ["A", "B"]}},
    ]}}


def test_or_with_sort_and_limit(mql):
    query = Query((Predicate("genre", "eq", "Drama"), Predicate("votes", "gte", 1000)), logic="or",
                  sort=(SortKey("start_year", "desc"), SortKey("rating", "asc")), limit=10)
    translated = mql.query(query)
    assert translated.command("titles") == {
        "find": "titles",
        "filter": {"$or": [{"genre": {"$eq": "Drama"}}, {"votes": {"$gte": 1000}}]},
        "sort": {"start_year": -1, "rating": 1},
        "limit": 10,
    }
    assert list(translated.sort) == ["start_year", "rating"]  # key order is the sort order


def test_single_predicate_is_the_filter_itself_and_lt(mql):
    assert mql.query(Query((Predicate("start_year", "lt", 1950),))).filter == {"start_year": {"$lt": 1950}}


def test_count_is_the_count_documents_pipeline(mql):
    query = Query((Predicate("genre", "eq", "Drama"), Predicate("rating", "gte", 8.0)), aggregate="count")
    translated = mql.query(query)
    match = {"$and": [{"genre": {"$eq": "Drama"}}, {"rating": {"$gte": 8.0}}]}
    assert translated.is_count
    assert translated.command("c") == {"aggregate": "c", "cursor": {},
                                       "pipeline": [{"$match": match}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]}


def test_operator_syntax_in_values_stays_an_operand(mql):
    hostile = ("{'$gt': ''}", "$where", "'; db.dropDatabase(); '", "$ne")
    query = Query((Predicate("title", "eq", hostile[0]), Predicate("title", "in", hostile[1:])), logic="or")
    assert mql.query(query).filter == {"$or": [{"title": {"$eq": "{'$gt': ''}"}},
                                                {"title": {"$in": ["$where", "'; db.dropDatabase(); '", "$ne"]}}]}


def test_unknown_and_operator_like_fields_are_refused(mql):
    with pytest.raises(ConfigError, match="nonexistent"):
        mql.query(Query((Predicate("nonexistent", "eq", 1),)))
    with pytest.raises(ConfigError):
        MQLTranslator(["$where"]).query(Query((Predicate("$where", "eq", 1),)))
    with pytest.raises(ConfigError):
        MQLTranslator(["a.b"]).query(Query((Predicate("a.b", "eq", 1),)))


def test_index_keys_round_trip(mql):
    spec = IndexSpec.of([("genre", "asc"), ("start_year", "desc"), ("rating", "asc")])
    keys = mql.index_keys(spec)
    assert keys == [("genre", ASCENDING), ("start_year", DESCENDING), ("rating", ASCENDING)]
    assert spec_from_keys(keys) == spec
    assert spec_from_keys({"genre": 1.0, "start_year": -1.0}.items()) == IndexSpec.of(
        [("genre", "asc"), ("start_year", "desc")])


def test_explain_work_and_indexes_per_or_branch():
    # The shape of MongoDB's explain("executionStats") for an $or planned branch by branch.
    explained = {
        "queryPlanner": {"winningPlan": {"stage": "SUBPLAN", "inputStage": {"stage": "FETCH", "inputStage": {
            "stage": "OR", "inputStages": [
                {"stage": "IXSCAN", "indexName": "wix__genre_a", "keyPattern": {"genre": 1}},
                {"stage": "IXSCAN", "indexName": "wix__votes_a", "keyPattern": {"votes": 1}}]}}},
            "rejectedPlans": [{"stage": "IXSCAN", "indexName": "wix__other_a"}]},
        "executionStats": {"nReturned": 12, "executionTimeMillis": 1, "totalKeysExamined": 14,
                           "totalDocsExamined": 12},
    }
    assert explain_work(explained) == 26
    assert explain_indexes(explained) == ("wix__genre_a", "wix__votes_a")  # rejected plans do not count
    # Aggregations (count) nest the find's explain under a $cursor stage.
    nested = {"stages": [{"$cursor": explained}, {"$group": {}}]}
    assert explain_work(nested) == 26 and explain_indexes(nested) == ("wix__genre_a", "wix__votes_a")
