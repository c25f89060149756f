"""An index's size and statistics computed without building it (sqlite_index_size.py) equal what SQLite's
CREATE INDEX, ANALYZE and dbstat give, byte for byte; and the adapter uses them only while they agree."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines import sqlite_columns
from case_studies.indexing.engines.radix_order import radix_order
from case_studies.indexing.engines.sqlite_columns import TableColumns
from case_studies.indexing.engines.sqlite_index_size import SQLiteIndexSizes
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import SIZE_CHECK_EVERY, SIZE_CHECKS, IndexingSystem
from wield.errors import SystemFailure
from workloads import generate_imdb_collection

FIELDS = ("small", "wide", "fraction", "label", "essay", "raw")


def odd_table(path, rows: int, page_size: int) -> sqlite3.Connection:
    """A table holding every kind of value a record can carry: NULLs, integers of every serial size (0 and 1
    take none), whole and fractional REALs, short and long TEXT (a two-byte serial type past 57 bytes,
    overflow pages past about 1,000) and BLOBs, on small pages so the b-tree has several interior levels."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute('CREATE TABLE t ("small" INTEGER, "wide" INTEGER, "fraction" REAL, "label" TEXT, '
                 '"essay" TEXT, "raw" BLOB)')
    rng = random.Random(7)
    magnitudes = (0, 1, 2, 100, 200, 40_000, 9_000_000, 3_000_000_000, 1 << 50, 1 << 62)

    def maybe(value):
        return None if rng.random() < 0.1 else value

    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", [
        (maybe(rng.randrange(-3, 4)), maybe(rng.choice(magnitudes) * rng.choice((1, -1))),
         maybe(rng.choice((rng.randrange(0, 20) / 2, float(rng.randrange(-5, 5))))),
         maybe(rng.choice(("a", "bb", "x" * 70, "é" * 30, ""))),
         maybe("w" * rng.choice((1, 60, 900, 1_500, 5_000))), maybe(bytes(rng.randrange(0, 80))))
        for _ in range(rows)])
    return conn


def test_radix_order_is_a_stable_argsort_of_non_negative_keys():
    rng = np.random.default_rng(3)
    cases = [np.zeros(0, np.int64), np.array([5]), np.full(1_000, 7), rng.integers(0, 2, 5_000),
             rng.integers(0, 1 << 20, 50_000), rng.integers(0, 1 << 62, 10_000),
             rng.integers(0, 40, 30_000) << 24]  # low digits all equal: those passes move nothing
    for keys in cases:
        assert np.array_equal(radix_order(keys), np.argsort(keys, kind="stable"))
    with pytest.raises(ValueError, match="non-negative"):
        radix_order(np.array([3, -1]))


def built(conn, table: str, spec: IndexSpec) -> tuple[int, str]:
    """(bytes, sqlite_stat1 line) of ``spec`` built for real, then dropped."""
    keys = ", ".join(f'"{field}" {direction.upper()}' for field, direction in spec.keys)
    conn.execute(f'CREATE INDEX probe ON "{table}" ({keys})')
    conn.execute("ANALYZE probe")
    size = conn.execute("SELECT pgsize FROM dbstat WHERE name = 'probe' AND aggregate = TRUE").fetchone()[0]
    statistics = conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'probe'").fetchone()[0]
    conn.execute("DROP INDEX probe")
    return size, statistics


def random_specs(fields, count: int, seed: int) -> list[IndexSpec]:
    rng = random.Random(seed)
    specs = []
    for _ in range(count):
        chosen = rng.sample(fields, rng.choice((1, 2, 3)))
        specs.append(IndexSpec(tuple((field, "asc" if i == 0 else rng.choice(("asc", "desc")))
                                     for i, field in enumerate(chosen))))
    return specs


@pytest.mark.parametrize("radix", [False, True], ids=["numpy-sort", "radix-sort"])
@pytest.mark.parametrize("page_size", [512, 4096])
def test_computed_sizes_equal_built_ones_for_every_kind_of_value(tmp_path, page_size, radix, monkeypatch):
    if radix:  # the compiled radix sort orders tables from RADIX_ROWS rows on: here every table
        monkeypatch.setattr(sqlite_columns, "RADIX_ROWS", 0)
    conn = odd_table(tmp_path / "odd.sqlite", 3_000, page_size)
    model = SQLiteIndexSizes(TableColumns(conn, "t", {field: f'"{field}"' for field in FIELDS}))
    specs = random_specs(list(FIELDS), 40, seed=page_size)
    computed = {spec: model.geometry(spec) for spec in specs}
    pages = [geometry.pages for geometry in computed.values()]
    assert max(pages) > 3 * min(pages)  # the sample spans small and large trees (overflow pages too)
    for spec, geometry in computed.items():
        assert (geometry.bytes, geometry.statistics) == built(conn, "t", spec), spec
    conn.close()


@pytest.fixture(scope="module")
def collection():
    return generate_imdb_collection(4_000, seed=9)


def test_the_adapter_computes_what_it_would_build(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    try:
        for spec in random_specs(list(collection.field_names), 30, seed=3):
            geometry = engine.index_geometry(spec)
            engine.create_index(spec)
            assert (geometry.bytes, geometry.statistics) == (engine.index_size(spec), engine.index_statistics(spec))
            engine.drop_index(spec)
    finally:
        engine.close()


def test_sizes_are_computed_once_checked_and_equal_to_the_slow_path(collection, tmp_path):
    specs = random_specs(list(collection.field_names), 2 * SIZE_CHECK_EVERY, seed=5)
    fast = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "cache"))
    slow = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "cache"), cost_cache=False)
    try:
        for spec in specs:
            assert fast.index_size(spec) == slow.index_size(spec)
        distinct = len({spec.canonical() for spec in specs})
        counters = fast.counters
        assert counters.sizes_computed + counters.size_checks == distinct
        assert SIZE_CHECKS < counters.size_checks <= SIZE_CHECKS + distinct // SIZE_CHECK_EVERY + 1
        assert counters.index_builds == counters.size_checks  # nothing else was built
    finally:
        fast.engine.close()
        slow.engine.close()


class _SkewedEngine:
    """An engine whose computed sizes are one page too large from the ``wrong_from``-th on: a model that
    disagrees with SQLite."""

    def __init__(self, engine, wrong_from: int) -> None:
        self._engine, self._wrong_from, self._calls = engine, wrong_from, 0

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def index_geometry(self, spec):
        from dataclasses import replace

        self._calls += 1
        geometry = self._engine.index_geometry(spec)
        return replace(geometry, pages=geometry.pages + 1) if self._calls >= self._wrong_from else geometry


def test_a_model_that_disagrees_is_switched_off_before_use_and_stops_the_run_after(collection, tmp_path):
    specs = random_specs(list(collection.field_names), 3 * SIZE_CHECK_EVERY, seed=6)
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    try:
        wrong_at_once = IndexingSystem(_SkewedEngine(engine, wrong_from=1))
        with pytest.warns(RuntimeWarning, match="measured from now on"):
            sizes = [wrong_at_once.index_size(spec) for spec in specs[:10]]
        assert wrong_at_once.counters.sizes_computed == 0 and wrong_at_once.counters.size_checks == 1
        engine.drop_all_indexes()
        for spec, size in zip(specs[:10], sizes):
            engine.create_index(spec)
            assert engine.index_size(spec) == size
            engine.drop_index(spec)

        wrong_later = IndexingSystem(_SkewedEngine(engine, wrong_from=SIZE_CHECKS + 1))
        with pytest.raises(SystemFailure, match="WIELD_COMPUTED_SIZES=0"):
            for spec in specs:
                wrong_later.index_size(spec)
        assert wrong_later.counters.sizes_computed > 0
    finally:
        engine.close()


def test_a_computed_index_built_for_another_reason_is_compared_then(collection, tmp_path):
    specs = list(dict.fromkeys(spec.canonical() for spec in random_specs(list(collection.field_names), 20, seed=7)))
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    try:
        right = IndexingSystem(engine)
        for spec in specs[:SIZE_CHECKS + 1]:
            right.index_size(spec)
        assert (right.counters.size_checks, right.counters.sizes_computed) == (SIZE_CHECKS, 1)
        right.configure([specs[SIZE_CHECKS]])
        right.materialise_all()  # built for evaluation: its computed size is compared, no build added
        assert right.counters.size_checks == right.counters.index_builds == SIZE_CHECKS + 1
        engine.drop_all_indexes()

        wrong = IndexingSystem(_SkewedEngine(engine, wrong_from=SIZE_CHECKS + 1))
        for spec in specs[:SIZE_CHECKS + 1]:
            wrong.index_size(spec)
        assert (wrong.counters.size_checks, wrong.counters.sizes_computed) == (SIZE_CHECKS, 1)
        wrong.configure([specs[SIZE_CHECKS]])
        with pytest.raises(SystemFailure, match="disagree"):
            wrong.materialise_all()
    finally:
        engine.close()


_BUILT_AFTER_REFERENCES = """
import json, sys, tempfile
from case_studies.indexing.build import open_engine
from case_studies.indexing.system import IndexingSystem
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule
collection = generate_imdb_collection(3_000, seed=1)
workload = make_query_schedule(collection, QueryWorkloadConfig(n_queries=12), 2, 1, per_episode=False).task_for_episode(0)
with tempfile.TemporaryDirectory() as scratch:
    system = IndexingSystem(open_engine(collection, "sqlite", cache_dir=scratch))
    system.references(workload)
    print(json.dumps([spec.name for spec in system.engine.list_indexes()]))
    system.close()
"""


def test_which_computed_sizes_are_checked_does_not_follow_string_hashes():
    """The first computed sizes are built as checks, so the order sizes are first asked for decides what is
    built: it must be the same under every PYTHONHASHSEED (a set of indexes once made it vary)."""
    import json
    import os
    import subprocess
    import sys

    built = set()
    for seed in ("0", "1", "2", "3", "4"):
        result = subprocess.run([sys.executable, "-c", _BUILT_AFTER_REFERENCES], capture_output=True, text=True,
                                env={**os.environ, "PYTHONHASHSEED": seed}, check=True, timeout=120)
        built.add(tuple(json.loads(result.stdout.strip().splitlines()[-1])))
    assert len(built) == 1, built
    assert len(next(iter(built))) >= SIZE_CHECKS


def test_sizes_of_a_model_that_disagreed_are_removed_from_the_measurement_store(collection, tmp_path):
    """Issue 37.3: computed sizes went into the shared measurement store at once; when the model then
    disagreed with a build the run stopped, but the next run read the wrong sizes from the store and
    finished with exit 0. A disagreement removes every computed size from the store."""
    from case_studies.indexing.measurement_store import MeasurementStore

    specs = list(dict.fromkeys(spec.canonical() for spec in random_specs(list(collection.field_names),
                                                                         3 * SIZE_CHECK_EVERY, seed=8)))
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    store = MeasurementStore.for_engine(tmp_path / "cache", "sqlite", collection.fingerprint(), engine.identity())
    reference = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "cache"), cost_cache=False)
    try:
        wrong = IndexingSystem(_SkewedEngine(engine, wrong_from=SIZE_CHECKS + 1), store=store)
        with pytest.raises(SystemFailure, match="disagree"):
            for spec in specs:
                wrong.index_size(spec)
        assert wrong.counters.sizes_computed > 0  # wrong sizes were computed (and kept) before it stopped
        engine.drop_all_indexes()
        again = IndexingSystem(engine, store=store)  # the next run, on the same store
        for spec in specs:
            assert again.index_size(spec) == reference.index_size(spec), spec
    finally:
        store.close()
        engine.close()
        reference.engine.close()
