"""The measurement store shared by parallel trials: processes that open a new store together all get it."""

from __future__ import annotations

import multiprocessing

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
        assert store.index(SPEC) == (4096, "100 10 1") and store.counts() == {"indexes": 1, "work": 0, "group_rows": 0}
        store.close()
    assert failures == []
