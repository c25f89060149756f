"""SQLite-specific checks beyond the engine contract suite (tests/test_engine_contract.py, which runs the
shared index, work, size and error checks on every engine): no temporary sort B-tree when an index's canonical
form serves the query's sort, hostile values inside an OR of IN lists on the real titles table, and a stop
signal that lands inside SQLite's work counter stops the run instead of failing the query."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.sqlite import SQLiteEngine
from wield.errors import Terminated
from wield.workflows.signals import stop_on_sigterm
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


def write_csv(path, header, rows):
    """A collection file: ``header`` and ``rows`` as CSV."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def colliding_collection(path):
    """Fields ``p``, ``q`` and ``p_a__q``: the indexes (p asc, q asc) and (p_a__q asc) were both named
    ``wix__p_a__q_a`` before names were made injective (issue 37.4)."""
    from workloads.files import load_collection

    rows = [(i % 7, i % 13, f"{(i * 37) % 5000:05d}-" + "x" * 40, f"t{i % 29}") for i in range(600)]
    return load_collection(write_csv(path, ["p", "q", "p_a__q", "label"], rows))


def test_indexes_whose_names_once_collided_are_two_indexes(tmp_path):
    pair, single = IndexSpec.of([("p", "asc"), ("q", "asc")]), IndexSpec.of([("p_a__q", "asc")])
    assert pair.name != single.name and len({pair.name, single.name, pair.canonical().name}) == 2
    engine = SQLiteEngine.for_collection(colliding_collection(tmp_path / "pq.csv"), tmp_path)
    try:
        engine.create_index(pair)
        engine.create_index(single)  # was never created: "IF NOT EXISTS" found the pair under its name
        assert engine.list_indexes() == sorted([pair, single])
        single_bytes = engine.index_size(single)
        assert engine.index_size(pair) != single_bytes  # each measured on its own index
        engine.drop_index(pair)  # dropped both
        assert engine.list_indexes() == [single] and engine.index_size(single) == single_bytes
    finally:
        engine.close()


def test_a_run_on_fields_whose_index_names_once_collided_finishes(tmp_path, capsys):
    from wield.cli import main

    colliding_collection(tmp_path / "pq.csv")
    out = tmp_path / "run"
    assert main(["run", "indexing", "--collection", str(tmp_path / "pq.csv"), "--k", "2", "--queries", "4",
                 "--episodes", "2", "--repetitions", "1", "--quiet", "--json", "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("reserved", ["rowid", "ROWID", "oid", "_rowid_"])
def test_a_field_named_like_sqlites_rowid_is_refused_at_load(tmp_path, capsys, reserved):
    """Issue 37.3: a column named rowid hid SQLite's rowid: the size model disagreed, and a second run gave
    wrong figures with exit 0. Such a collection is refused before anything is written."""
    from wield.cli import main
    from wield.errors import ConfigError
    from workloads.files import load_collection

    data = write_csv(tmp_path / "data.csv", ["genre", reserved, "year"],
                     [(f"g{i % 5}", i, 1990 + i % 30) for i in range(300)])
    out = tmp_path / "run"
    assert main(["run", "indexing", "--collection", str(data), "--k", "2", "--quiet", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"invalid value for 'collection field': '{reserved}'" in error and "rowid, oid, _rowid_" in error
    assert "Traceback" not in error and not out.exists()
    with pytest.raises(ConfigError, match="reserves"):
        SQLiteEngine.for_collection(load_collection(data), tmp_path)


def test_a_stop_signal_during_a_counted_query_stops_the_run_instead_of_failing_the_query(engine):
    """sqlite3 swallows an exception raised in its progress handler (where the work is counted, and where a
    signal's handler runs while a query executes) and reports the query "interrupted": the engine must raise
    the stop (SIGTERM: Terminated, so the run is marked interrupted) and not a SystemFailure. The query sorts
    the whole table for one row, so nearly all of its time is spent inside SQLite; ten tries."""
    query = Query((Predicate("genre", "eq", "Drama"),),
                  sort=(SortKey("start_year", "desc"), SortKey("primary_title", "asc")), limit=1)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        for _ in range(10):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            stop_on_sigterm()
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
            with pytest.raises(Terminated):
                for _ in range(100_000):  # about 2 ms each: the signal arrives long before the end
                    engine.run_query(query, repetitions=0)
    finally:
        signal.signal(signal.SIGTERM, previous)
