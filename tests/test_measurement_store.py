"""The measurement store shared by parallel trials: processes that open a new store together all get it;
a store filled under another revision of the work model is not read."""

from __future__ import annotations

import multiprocessing
import sqlite3

from case_studies.indexing.engines import sqlite as sqlite_engine
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.measurement_store import MeasurementStore

IDENTITY = {"collection": "c", "engine": "sqlite"}
SPEC = IndexSpec((("start_year", "asc"), ("genre", "desc")))


def _open_and_record(path: str, start, outcomes) -> None:
    start.wait()
    try:
        store = MeasurementStore(path, IDENTITY)
        store.put_index(SPEC, 4096, "100 10 1")
        store.close()
        outcomes.put("ok")
    except Exception as exc:  # the outcome is what the test checks
        outcomes.put(repr(exc))


def test_processes_opening_a_new_store_at_once_all_open_it(tmp_path):
    # Before the set-up took a lock, about one round in four had a process fail with "database is locked"
    # (SQLite does not wait for another connection switching a new file to WAL).
    context = multiprocessing.get_context("fork")
    failures = []
    for round_ in range(16):
        path = str(tmp_path / f"round-{round_}" / "measurements" / "sqlite-x.sqlite")
        start, outcomes = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open_and_record, args=(path, start, outcomes)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        failures += [outcome for outcome in (outcomes.get(timeout=5) for _ in workers) if outcome != "ok"]
        store = MeasurementStore(path)
        assert store.index(SPEC) == (4096, "100 10 1", False) and store.counts() == {"indexes": 1, "work": 0, "group_rows": 0, "advice": 0}
        store.close()
    assert failures == []


def test_a_store_filled_by_another_revision_of_the_work_model_is_not_read(tmp_path, monkeypatch):
    # Counted works are stored beside executed ones; a fix to the model must not read the old counts.
    path = tmp_path / "t.sqlite"
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE "t" ("a" INTEGER)')
    conn.executemany('INSERT INTO "t" VALUES (?)', [(i % 7,) for i in range(100)])
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    engine = SQLiteEngine(path, table="t")
    try:
        store = MeasurementStore.for_engine(tmp_path / "cache", "sqlite", "c", engine.identity())
        store.put_work("q", "program", 120.0, 3, ())
        store.close()
        again = MeasurementStore.for_engine(tmp_path / "cache", "sqlite", "c", engine.identity())
        assert again.work("q", "program") == (120.0, 3, ())  # the same revision reads it
        again.close()
        monkeypatch.setattr(sqlite_engine, "MODEL_REVISION", sqlite_engine.MODEL_REVISION + 1)
        later = MeasurementStore.for_engine(tmp_path / "cache", "sqlite", "c", engine.identity())
        assert later.work("q", "program") is None  # a later revision starts an empty store
        later.close()
    finally:
        engine.close()


def test_a_store_of_another_revision_is_not_read_and_a_measured_size_replaces_a_computed_one(tmp_path, monkeypatch):
    """Issue 37.4: index names changed (they are injective now) and the store keys sizes by name, so a store
    of the earlier revision is not read. Issue 37.3: a size a model computed is marked so; a build replaces
    it, and ``forget_computed`` (the model disagreed) removes the computed ones."""
    from case_studies.indexing import measurement_store

    store = MeasurementStore.for_engine(tmp_path, "sqlite", "c", {"engine": "sqlite"})
    store.put_index(SPEC, 4096, None, computed=True)
    other = IndexSpec((("genre", "asc"),))
    store.put_index(other, 8192, None, computed=True)
    store.put_index(other, 9216, None)  # measured by a build
    store.put_index(other, 1024, None, computed=True)  # a computed size never replaces a measured one
    assert store.index(SPEC) == (4096, None, True) and store.index(other) == (9216, None, False)
    assert store.forget_computed() == 1 and store.index(SPEC) is None and store.index(other) == (9216, None, False)
    store.close()
    monkeypatch.setattr(measurement_store, "STORE_REVISION", measurement_store.STORE_REVISION + 1)
    later = MeasurementStore.for_engine(tmp_path, "sqlite", "c", {"engine": "sqlite"})
    assert later.index(other) is None  # another revision starts an empty store
    later.close()
