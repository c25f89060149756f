"""Workloads: the IMDB-like collection, the query model and generator, schedules and collection files."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from wield.errors import ConfigError, DataError
from workloads import (Collection, FieldSpec, Predicate, Query, QueryWorkloadConfig, QueryWorkloadGenerator,
                       SortKey, WorkloadSchedule, generate_imdb_collection, load_collection, make_query_schedule,
                       query_mask, regenerate_query_schedule, selectivity)

N = 30_000


@pytest.fixture(scope="module")
def titles() -> Collection:
    return generate_imdb_collection(N, seed=1)


@pytest.fixture(scope="module")
def workloads(titles) -> list[list[Query]]:
    generator = QueryWorkloadGenerator(titles)
    return [generator.generate(seed) for seed in range(10)]


# -- the generated collection --------------------------------------------------------------------------
def test_collection_is_determined_by_its_seed(titles):
    assert generate_imdb_collection(N, seed=1).fingerprint() == titles.fingerprint()
    assert generate_imdb_collection(N, seed=2).fingerprint() != titles.fingerprint()
    assert titles.source == {"generator": "imdb", "n_documents": N, "seed": 1}


def test_fifteen_typed_fields_without_missing_values(titles):
    assert titles.name == "titles" and len(titles) == N and len(titles.fields) == 15
    assert titles.field("average_rating") == FieldSpec("average_rating", "float")
    text = {f.name for f in titles.fields if f.kind == "text"}
    assert text == {"title_type", "primary_title", "genre", "region", "language"}
    first = next(titles.rows())
    assert len(first) == 15 and [type(v) for v in first] == [
        {"int": int, "float": float, "text": str}[f.kind] for f in titles.fields]
    assert sum(1 for _ in titles.rows()) == N
    for name in ("title_type", "primary_title", "genre", "region", "language"):
        assert all(isinstance(v, str) and v for v in titles.columns[name][:1000])
    rating = titles.columns["average_rating"]
    assert rating.min() >= 1.0 and rating.max() <= 10.0 and np.allclose(rating, np.round(rating, 1))


def test_cardinalities_range_from_two_to_large(titles):
    distinct = {name: titles.distinct_count(name) for name in titles.field_names}
    assert distinct["is_adult"] == 2 and distinct["is_original_title"] == 2
    assert distinct["title_type"] == 10 and distinct["genre"] == 28
    assert distinct["region"] == 60 and distinct["language"] == 40
    assert distinct["primary_title"] > 0.3 * N
    assert distinct["num_votes"] > 1_000 and distinct["director_id"] > 5_000


def test_popularity_is_skewed(titles):
    _, genre_counts = np.unique(titles.columns["genre"], return_counts=True)
    assert genre_counts.max() > 10 * np.median(genre_counts)
    kinds = Counter(titles.columns["title_type"].tolist())
    assert [k for k, _ in kinds.most_common(3)] == ["tvEpisode", "short", "movie"]
    assert 0.01 < titles.columns["is_adult"].mean() < 0.05
    votes = titles.columns["num_votes"]
    assert np.percentile(votes, 99) > 50 * np.median(votes)  # heavy tail
    years = titles.columns["start_year"]
    assert years.min() >= 1890 and years.max() == 2025 and np.median(years) > 2005


def test_fields_are_correlated(titles):
    c = titles.columns
    kind, runtime = c["title_type"], c["runtime_minutes"]
    episode, movie, short = kind == "tvEpisode", kind == "movie", kind == "short"
    assert 20 <= np.median(runtime[episode]) <= 60 and 80 <= np.median(runtime[movie]) <= 180
    assert runtime[short].max() <= 30
    assert (c["season_number"][~episode] == 0).all() and (c["season_number"][episode] >= 1).all()
    assert (c["episode_number"][~episode] == 0).all() and (c["episode_number"][episode] >= 1).all()
    series = np.isin(kind, ["tvSeries", "tvMiniSeries"])
    assert (c["end_year"][~series] == c["start_year"][~series]).all()
    assert (c["end_year"][series] >= c["start_year"][series]).all() and (c["end_year"] > c["start_year"]).any()
    assert (c["language"][c["region"] == "JP"] == "ja").mean() > 0.6
    rating, genre = c["average_rating"], c["genre"]
    assert rating[genre == "Documentary"].mean() > rating[genre == "Horror"].mean()
    assert np.median(c["num_votes"][movie]) > 3 * np.median(c["num_votes"][episode])


def test_collection_rejects_unknown_fields_and_inconsistent_columns(titles):
    with pytest.raises(ConfigError, match="'rating'.*allowed: 'title_type', 'primary_title'"):
        titles.field("rating")
    with pytest.raises(ConfigError, match="every column must have 2 values"):
        Collection("t", [FieldSpec("a", "int"), FieldSpec("b", "int")], {"a": [1, 2], "b": [1, 2, 3]})
    with pytest.raises(ConfigError, match="'1st'"):
        FieldSpec("1st", "int")
    with pytest.raises(ConfigError, match="allowed: 'int', 'float', 'text'"):
        FieldSpec("a", "date")
    assert not titles.columns["start_year"].flags.writeable


# -- queries -----------------------------------------------------------------------------------------
def test_queries_are_valid_and_sorted_longest_first(titles, workloads):
    for queries in workloads:
        assert len(queries) == 20
        order = [(len(q.attributes()), len(q.predicates)) for q in queries]
        assert order == sorted(order, reverse=True)
        for query in queries:
            assert query.validate(titles) is query
            assert 1 <= len(query.predicates) <= 3 and len(query.attributes()) <= 3
            assert query.template in QueryWorkloadGenerator(titles).available_templates
            if query.aggregate == "count":
                assert not query.sort and query.limit is None
    everything = [q for queries in workloads for q in queries]
    assert {q.logic for q in everything} == {"and", "or"} and {q.aggregate for q in everything} == {None, "count"}
    assert any(q.sort for q in everything) and any(q.limit for q in everything)
    assert {p.op for q in everything for p in q.predicates} >= {"eq", "between", "in", "gt"}


def test_predicate_values_come_from_the_data(titles, workloads):
    for query in (q for queries in workloads for q in queries):
        for p in query.predicates:
            column = set(titles.columns[p.field].tolist())
            if p.op in ("eq", "in", "between"):
                assert set(p.values()) <= column, (query, p)
            assert all(type(v) is {"int": int, "float": float, "text": str}[titles.field(p.field).kind]
                       for v in p.values())


def test_most_queries_are_selective_and_some_are_not(titles, workloads):
    shares = np.array([selectivity(q, titles) for queries in workloads for q in queries])
    assert (shares < 0.05).mean() >= 0.7
    assert (shares >= 0.05).any()


def test_difficulty_widens_ranges(titles):
    def median_range_share(difficulty: float) -> float:
        config = QueryWorkloadConfig(difficulty=difficulty, operator_weights={"range": 1})
        generator = QueryWorkloadGenerator(titles, config)
        shares = [query_mask(Query((p,)), titles).mean() for seed in range(5) for q in generator.generate(seed)
                  for p in q.predicates if p.op == "between"]
        return float(np.median(shares))

    assert median_range_share(1.0) > 5 * median_range_share(0.0)


def test_workload_is_determined_by_seed_collection_and_config(titles, workloads):
    generator = QueryWorkloadGenerator(titles)
    assert generator.generate(0) == workloads[0]
    assert generator.generate(1) != workloads[0]
    assert QueryWorkloadGenerator(titles, QueryWorkloadConfig(difficulty=0.9)).generate(0) != workloads[0]


def test_operator_weights_and_template_filters(titles):
    eq_only = QueryWorkloadGenerator(titles, QueryWorkloadConfig(operator_weights={"eq": 1.0}))
    assert {p.op for q in eq_only.generate(0) for p in q.predicates} == {"eq"}
    generator = QueryWorkloadGenerator(titles)
    held_out = tuple(generator.available_templates[:6])
    training = QueryWorkloadGenerator(titles, QueryWorkloadConfig(exclude_templates=held_out))
    assert not set(training.available_templates) & set(held_out)
    assert not {q.template for seed in range(5) for q in training.generate(seed)} & set(held_out)
    test = QueryWorkloadGenerator(titles, QueryWorkloadConfig(templates=held_out))
    assert {q.template for q in test.generate(0)} <= set(held_out)
    single = QueryWorkloadGenerator(titles, QueryWorkloadConfig(max_predicates=1, max_attributes=1))
    assert all(len(q.attributes()) == 1 for q in single.generate(0))


def test_query_json_round_trip_shape_and_key():
    predicates = (Predicate("genre", "in", ["Drama", "Comedy"]), Predicate("start_year", "between", (1990, 1999)))
    query = Query(predicates, sort=(SortKey("num_votes", "desc"),), limit=10, template="t")
    restored = Query.from_dict(json.loads(json.dumps(query.to_dict())))
    assert restored == query and restored.predicates[0].value == ("Drama", "Comedy")
    assert query.attributes() == ["genre", "start_year", "num_votes"]
    other_values = Query((Predicate("genre", "in", ("War",)), Predicate("start_year", "between", (1, 2))),
                         sort=(SortKey("num_votes", "desc"),), limit=50)
    assert query.shape() == other_values.shape() and query.key() != other_values.key()
    assert query.shape() != Query(query.predicates, sort=(SortKey("num_votes", "asc"),), limit=10).shape()
    assert query.shape() != Query(query.predicates, logic="or", sort=query.sort, limit=10).shape()
    assert query.key() == Query(query.predicates, sort=query.sort, limit=10, template="other").key()
    assert Predicate("a", "eq", np.int64(3)).value == 3 and type(Predicate("a", "eq", np.int64(3)).value) is int


def test_a_query_hashes_as_its_fields_once_and_its_copies_hash_again():
    """A query's and a predicate's hash are the frozen dataclass's, computed once (they key every cost
    estimate) and not carried into a copy or a pickle (string hashes differ between processes)."""
    import copy
    import pickle

    predicate = Predicate("genre", "in", ("Drama", "Comedy"))
    query = Query((predicate, Predicate("start_year", "lt", 1990)), sort=(SortKey("num_votes", "desc"),), limit=10)
    assert hash(predicate) == hash(("genre", "in", ("Drama", "Comedy")))
    assert hash(query) == hash((query.predicates, "and", query.sort, None, 10, ""))
    assert hash(query) != hash(Query(query.predicates, sort=query.sort, limit=10, template="t"))
    for copied in (pickle.loads(pickle.dumps(query)), copy.deepcopy(query)):
        assert "_hash" not in copied.__dict__ and "_hash" not in copied.predicates[0].__dict__
        assert copied == query and hash(copied) == hash(query)


def test_invalid_queries_name_the_problem(titles):
    with pytest.raises(ConfigError, match="'rating'.*allowed: 'title_type', 'primary_title'"):
        Query((Predicate("rating", "eq", 5),)).validate(titles)
    with pytest.raises(ConfigError, match="'votes'.*allowed"):
        Query((Predicate("genre", "eq", "Drama"),), sort=(SortKey("votes"),)).validate(titles.field_names)
    with pytest.raises(ConfigError, match="'like'.*allowed: 'eq', 'lt'"):
        Predicate("genre", "like", "D%")
    with pytest.raises(ConfigError, match="'up'.*allowed: 'asc', 'desc'"):
        SortKey("genre", "up")
    with pytest.raises(ConfigError, match="'xor'.*allowed: 'and', 'or'"):
        Query((Predicate("genre", "eq", "Drama"),), logic="xor")
    with pytest.raises(ConfigError, match="no sort"):
        Query((Predicate("genre", "eq", "Drama"),), sort=(SortKey("genre"),), aggregate="count")
    with pytest.raises(ConfigError, match="between"):
        Predicate("start_year", "between", 1990)
    with pytest.raises(ConfigError, match="must be a str"):
        Query((Predicate("genre", "eq", 3),)).validate(titles)
    with pytest.raises(DataError, match=r"predicate needs exactly the keys \['field', 'op', 'value'\]"):
        Query.from_dict({"predicates": [{"field": "genre", "op": "eq"}]})
    with pytest.raises(DataError, match="unknown keys"):
        Query.from_dict({"predicates": [{"field": "genre", "op": "eq", "value": "x"}], "order": []})


def test_bad_configurations_name_the_field(titles):
    for kwargs, field in [({"n_queries": 0}, "n_queries"), ({"difficulty": 2}, "difficulty"),
                          ({"min_predicates": 3, "max_predicates": 2}, "max_predicates"),
                          ({"operator_weights": {"like": 1}}, "operator_weights"),
                          ({"operator_weights": {"eq": 0}}, "operator_weights"),
                          ({"or_probability": -0.1}, "or_probability"), ({"limit_values": ()}, "limit_values")]:
        with pytest.raises(ConfigError, match=f"'{field}'"):
            QueryWorkloadConfig(**kwargs)
    with pytest.raises(ConfigError, match="'templates'.*no_such_template.*allowed: 'genre_years_by_rating'"):
        QueryWorkloadGenerator(titles, QueryWorkloadConfig(templates=("no_such_template",)))
    with pytest.raises(ConfigError, match="no template satisfies"):
        QueryWorkloadGenerator(titles, QueryWorkloadConfig(min_predicates=3, max_attributes=2))
    config = QueryWorkloadConfig(limit_values=[5], templates=["title_lookup"])
    assert QueryWorkloadConfig.from_dict(json.loads(json.dumps(config.as_dict()))) == config


def test_collections_of_other_shapes_get_generated_templates():
    rng = np.random.default_rng(0)
    fields = [FieldSpec("sku", "int"), FieldSpec("price", "float"), FieldSpec("colour", "text")]
    items = Collection("items", fields,
                       {"sku": np.arange(500), "price": np.round(rng.uniform(1, 100, 500), 2),
                        "colour": np.array(["red", "blue", "green", "black"] * 125, dtype=object)})
    generator = QueryWorkloadGenerator(items, QueryWorkloadConfig(n_queries=30))
    assert all(name.startswith("auto_") for name in generator.available_templates)
    queries = generator.generate(3)
    assert queries == QueryWorkloadGenerator(items, QueryWorkloadConfig(n_queries=30)).generate(3)
    assert {f for q in queries for f in q.attributes()} <= {"sku", "price", "colour"}
    assert all(p.op in ("eq", "in") for q in queries for p in q.predicates if p.field == "colour")


# -- schedules -----------------------------------------------------------------------------------------
def test_schedules_regenerate_byte_identically(titles, tmp_path):
    config = QueryWorkloadConfig(n_queries=5)
    schedule = make_query_schedule(titles, config, 3, 4, per_episode=True)
    assert schedule.to_json() == make_query_schedule(titles, config, 3, 4, per_episode=True).to_json()
    assert schedule.to_json() != make_query_schedule(titles, config, 4, 4, per_episode=True).to_json()
    assert schedule.n_episodes == 4 and len(schedule.tasks) == 4
    assert schedule.task_for_episode(0) != schedule.task_for_episode(1)
    assert schedule.params["collection"]["fingerprint"] == titles.fingerprint()
    assert schedule.params["config"]["n_queries"] == 5
    assert regenerate_query_schedule(schedule, titles).to_json() == schedule.to_json()
    with pytest.raises(ConfigError, match="different collection"):
        regenerate_query_schedule(schedule, generate_imdb_collection(1_000, seed=1))

    path = tmp_path / "schedule.json"
    schedule.save(path)
    loaded = WorkloadSchedule.load(path)
    assert loaded.to_json() == schedule.to_json() == path.read_text()
    assert loaded.fingerprint() == schedule.fingerprint()
    assert loaded.task_for_episode(2) == schedule.task_for_episode(2)

    blackbox = make_query_schedule(titles, config, 3, 4, per_episode=False)
    assert len(blackbox.tasks) == 1 and blackbox.episodes == [0, 0, 0, 0]
    assert blackbox.task_for_episode(3) == blackbox.task_for_episode(0)
    assert blackbox.task_for_episode(0) == QueryWorkloadGenerator(titles, config).generate(3)
    with pytest.raises(ConfigError, match="'episode'.*4.*0..3"):
        blackbox.task_for_episode(4)


def test_malformed_schedules_are_data_errors(titles, tmp_path):
    schedule = make_query_schedule(titles, QueryWorkloadConfig(n_queries=2), 0, 2, per_episode=False)
    good = json.loads(schedule.to_json())
    with pytest.raises(DataError, match="keys"):
        WorkloadSchedule.from_json(json.dumps({k: v for k, v in good.items() if k != "seed"}))
    with pytest.raises(DataError, match="episode 1 names task 5"):
        WorkloadSchedule.from_json(json.dumps({**good, "episodes": [0, 5]}))
    good["tasks"][0][0]["predicates"][0]["op"] = "like"
    with pytest.raises(DataError, match="task 0.*'like'"):
        WorkloadSchedule.from_json(json.dumps(good))
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(DataError, match="broken.json: line 1"):
        WorkloadSchedule.load(path)


# -- collection files ----------------------------------------------------------------------------------
def test_load_csv_and_json_collections(tmp_path):
    csv_file = tmp_path / "shop-items.csv"
    csv_file.write_text('sku,price,colour,note\n1,9.5,red,"a, quoted note"\n2,3,blue,plain\n3,3.25,red,x\n')
    items = load_collection(csv_file)
    assert items.name == "shop_items" and len(items) == 3
    assert [f.kind for f in items.fields] == ["int", "float", "text", "text"]
    assert list(items.rows())[0] == (1, 9.5, "red", "a, quoted note")
    assert items.source["format"] == "csv" and len(items.source["sha256"]) == 64
    assert load_collection(csv_file, name="shop").fingerprint() == items.fingerprint()

    lines = tmp_path / "docs.jsonl"
    lines.write_text('{"a": 1, "b": "x", "c": 1.5}\n\n{"a": 2, "b": "y", "c": 2}\n')
    docs = load_collection(lines)
    assert [f.kind for f in docs.fields] == ["int", "text", "float"] and docs.distinct_count("b") == 2
    array = tmp_path / "docs.json"
    array.write_text(json.dumps([{"a": 1, "b": "x", "c": 1.5}, {"a": 2, "b": "y", "c": 2.0}]))
    assert load_collection(array).fingerprint() == docs.fingerprint()
    queries = QueryWorkloadGenerator(items, QueryWorkloadConfig(n_queries=4)).generate(0)
    assert len(queries) == 4 and all(q.validate(items) for q in queries)


@pytest.mark.parametrize("name, text, message", [
    ("empty.csv", "", "empty.csv: the file is empty"),
    ("header_only.csv", "a,b\n", "header but no rows"),
    ("ragged.csv", "a,b\n1,2\n3\n", r"ragged.csv: line 3 has 1 value\(s\), the header has 2"),
    ("badname.csv", "a,2b\n1,2\n", "line 1 .*'2b' is not a valid identifier"),
    ("spaced.csv", "a,my field\n1,2\n", "'my field' is not a valid identifier"),
    ("hole.csv", "a,b\n1,2\n3,\n", r"hole.csv: 1 of 2 rows hold missing values .* 'b' 1 \(first at line 3\)"),
    ("nan.csv", "a,b\n1,2.5\n3,nan\n", "line 3, field 'b': 'nan' is not a finite number"),
    ("missing.json", '[{"a": 1, "b": 2}, {"a": 2}]', r"record 2 has different fields .*missing \['b'\]"),
    ("extra.jsonl", '{"a": 1}\n{"a": 2, "z": 3}\n', r"line 2 has different .*: missing \[\], extra \['z'\]"),
    ("null.json", '[{"a": 1}, {"a": null}]', r"missing values .* 'a' 1 \(first at record 2\)"),
    ("scalar.json", "[1, 2]", "record 1 is a int, expected an object"),
    ("string.json", '"text"', "line 1 is a str, expected an object"),
    ("broken.jsonl", '{"a": 1}\n{"a": \n', "line 2: invalid JSON"),
])
def test_malformed_collection_files_are_clear_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_collection(path)
