"""Workload generators: the IMDB-like collection, query workloads, schedules and collection files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wield.errors import ConfigError, DataError
from workloads import (Predicate, Query, QueryWorkloadConfig, QueryWorkloadGenerator, SortKey,
                       WorkloadSchedule, generate_imdb_collection, load_collection, make_query_schedule)


@pytest.fixture(scope="module")
def collection():
    return generate_imdb_collection(30_000, seed=1)


def test_collection_is_seeded(collection):
    assert generate_imdb_collection(30_000, seed=1).fingerprint() == collection.fingerprint()
    assert generate_imdb_collection(30_000, seed=2).fingerprint() != collection.fingerprint()


def test_fifteen_fields_with_wide_cardinality_skew_and_correlation(collection):
    assert len(collection.fields) == 15
    distinct = {f: collection.distinct_count(f) for f in collection.field_names}
    assert distinct["is_adult"] == 2
    assert distinct["primary_title"] > 25_000 and distinct["director_id"] > 10_000
    genres, counts = np.unique(collection.columns["genre"], return_counts=True)
    assert counts.max() > 5 * np.median(counts)  # Zipf-like popularity
    votes = collection.columns["num_votes"]
    assert np.percentile(votes, 99) > 20 * np.median(votes)  # heavy tail
    runtime, kind = collection.columns["runtime_minutes"], collection.columns["title_type"]
    assert runtime[kind == "movie"].mean() > 2 * runtime[kind == "tvEpisode"].mean()
    seasons = collection.columns["season_number"]
    assert (seasons[kind != "tvEpisode"] == 0).all() and (seasons[kind == "tvEpisode"] > 0).all()


def test_queries_are_valid_sorted_longest_first_and_drawn_from_data(collection):
    queries = QueryWorkloadGenerator(collection).generate(seed=4)
    assert len(queries) == 20
    lengths = [(len(q.attributes()), len(q.predicates)) for q in queries]
    assert lengths == sorted(lengths, reverse=True)
    for query in queries:
        query.validate(collection)
        assert 1 <= len(query.predicates) <= 3 and len(query.attributes()) <= 3
        for predicate in query.predicates:
            if predicate.op == "eq":
                assert predicate.value in set(collection.columns[predicate.field].tolist())
    assert QueryWorkloadGenerator(collection).generate(seed=4) == queries
    assert QueryWorkloadGenerator(collection).generate(seed=5) != queries


def test_most_queries_are_selective(collection):
    generator = QueryWorkloadGenerator(collection)
    queries = [q for seed in range(5) for q in generator.generate(seed)]
    columns = collection.columns

    def matches(p):
        values = columns[p.field]
        if p.op == "eq":
            return values == p.value
        if p.op == "in":
            return np.isin(values, list(p.value))
        if p.op == "between":
            return (values >= p.value[0]) & (values <= p.value[1])
        return {"lt": values < p.value, "lte": values <= p.value, "gt": values > p.value,
                "gte": values >= p.value}[p.op]

    selective = 0
    for q in queries:
        hits = [matches(p) for p in q.predicates]
        combined = np.logical_and.reduce(hits) if q.logic == "and" else np.logical_or.reduce(hits)
        selective += combined.mean() < 0.05
    assert selective / len(queries) >= 0.7


def test_query_and_schedule_json_round_trip(collection):
    query = Query((Predicate("genre", "in", ("Drama", "Comedy")), Predicate("start_year", "between", (1990, 1999))),
                  sort=(SortKey("num_votes", "desc"),), limit=10)
    assert Query.from_dict(json.loads(json.dumps(query.to_dict()))) == query
    assert query.shape() == Query((Predicate("genre", "in", ("War",)), Predicate("start_year", "between", (1, 2))),
                                  sort=(SortKey("num_votes", "desc"),), limit=50).shape()
    assert query.key() != Query(query.predicates[:1]).key()
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=5), 3, 4, per_episode=True)
    again = make_query_schedule(collection, QueryWorkloadConfig(n_queries=5), 3, 4, per_episode=True)
    assert schedule.to_json() == again.to_json()
    assert WorkloadSchedule.from_json(schedule.to_json()).task_for_episode(2) == schedule.task_for_episode(2)
    assert schedule.task_for_episode(0) != schedule.task_for_episode(1)
    blackbox = make_query_schedule(collection, QueryWorkloadConfig(n_queries=5), 3, 4, per_episode=False)
    assert blackbox.task_for_episode(0) == blackbox.task_for_episode(3)


def test_templates_can_be_held_out(collection):
    generator = QueryWorkloadGenerator(collection)
    held_out = tuple(generator.available_templates[:5])
    training = QueryWorkloadGenerator(collection, QueryWorkloadConfig(exclude_templates=held_out))
    assert not {q.template for q in training.generate(1)} & set(held_out)
    test = QueryWorkloadGenerator(collection, QueryWorkloadConfig(templates=held_out))
    assert {q.template for q in test.generate(1)} <= set(held_out)


def test_bad_queries_and_configs_name_the_field(collection):
    with pytest.raises(ConfigError, match="'rating'.*allowed: 'title_type'"):
        Query((Predicate("rating", "eq", 5),)).validate(collection)
    with pytest.raises(ConfigError, match="'like'"):
        Query((Predicate("genre", "like", "D%"),)).validate(collection)
    with pytest.raises(ConfigError, match="'difficulty'"):
        QueryWorkloadConfig(difficulty=2)
    with pytest.raises(ConfigError, match="'templates'"):
        QueryWorkloadGenerator(collection, QueryWorkloadConfig(templates=("no_such_template",)))
    with pytest.raises(DataError, match="malformed query"):
        Query.from_dict({"predicates": [{"field": "genre"}]})


def test_load_user_collections(tmp_path):
    csv_file = tmp_path / "items.csv"
    csv_file.write_text("sku,price,colour\n1,9.5,red\n2,3.0,blue\n3,3.0,red\n")
    items = load_collection(csv_file)
    assert items.name == "items" and len(items) == 3
    assert [f.kind for f in items.fields] == ["int", "float", "text"]
    lines = tmp_path / "docs.jsonl"
    lines.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')
    assert load_collection(lines).distinct_count("b") == 2
    assert QueryWorkloadGenerator(items, QueryWorkloadConfig(n_queries=4)).generate(0)


@pytest.mark.parametrize("name, text, message", [
    ("ragged.csv", "a,b\n1,2\n3\n", "line 3 has 1 values"),
    ("empty.csv", "", "empty"),
    ("badname.csv", "a,2b\n1,2\n", "'2b' is not a valid identifier"),
    ("hole.csv", "a,b\n1,\n", "no value for field 'b'"),
    ("keys.json", '[{"a": 1}, {"b": 2}]', "record 2 has different fields"),
    ("scalar.json", "[1, 2]", "record 1 is a int"),
])
def test_malformed_collection_files_are_clear_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_collection(path)
