"""Evaluation's full-index and shared rows' copies kept on disk by one trial and loaded by the next
(sqlite_kept_copies.py)."""

from __future__ import annotations

import os

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.evaluation import FULL, evaluate_methods, full_index_configuration
from case_studies.indexing.engines.sqlite_kept_copies import KEPT_BYTES, keep_copy, kept_image


def _evaluate(collection, workload, cache, tmp_path, name, configurations=None, shared=()):
    task = build_indexing_task(collection, metric="work", workdir=tmp_path / name, cache_dir=cache)
    try:
        metrics = evaluate_methods(task.system, workload, configurations or {}, repetitions=1, shared=shared)
        return metrics[FULL], task.system.counters, task.system.engine._kept_directory
    finally:
        task.system.close()


def test_a_later_trial_loads_the_full_index_copy_an_earlier_one_built(small_collection, small_workload, tmp_path):
    cache = tmp_path / "cache"
    built, first, directory = _evaluate(small_collection, small_workload, cache, tmp_path, "first")
    full = full_index_configuration(small_workload)
    assert first.copies_loaded == 0 and first.builds_for_configurations == len(full)
    assert len(list(directory.glob("*.sqlite"))) == 1  # kept beside the base database, with its record
    loaded, second, _ = _evaluate(small_collection, small_workload, cache, tmp_path, "second")
    assert second.copies_loaded == 1 and second.builds_for_configurations == 0
    # the same indexes: the same work, plans' index uses and sizes as the copy built
    assert loaded.mean_work_improvement == built.mean_work_improvement
    assert loaded.p99_work_improvement == built.p99_work_improvement
    assert loaded.uses_per_index == built.uses_per_index and loaded.index_bytes == built.index_bytes
    assert loaded.indexes == built.indexes


def test_a_row_shared_between_methods_is_kept_and_loaded_and_a_method_s_own_is_not(small_collection, small_workload,
                                                                                   tmp_path):
    """The learners' random policy builds the same set in DQN's and DQfD's trial on a workload: the second
    loads it; a row not named shared (the method's own set) is built every time and never kept."""
    cache = tmp_path / "cache"
    full = full_index_configuration(small_workload)
    rows = {"random-policy": full[:2], "dqn": full[2:3]}
    _, first, directory = _evaluate(small_collection, small_workload, cache, tmp_path, "dqn", rows, ("random-policy",))
    assert first.copies_loaded == 0 and len(list(directory.glob("*.sqlite"))) == 2  # the full index's, the shared row's
    _, second, _ = _evaluate(small_collection, small_workload, cache, tmp_path, "dqfd", rows, ("random-policy",))
    assert second.copies_loaded == 2 and second.builds_for_configurations == 1  # only the method's own row built
    assert len(list(directory.glob("*.sqlite"))) == 2


def test_a_damaged_or_planted_kept_copy_is_not_loaded(small_collection, small_workload, tmp_path):
    cache = tmp_path / "cache"
    _, _, directory = _evaluate(small_collection, small_workload, cache, tmp_path, "first")
    [kept] = directory.glob("*.sqlite")
    content = bytearray(kept.read_bytes())
    content[len(content) // 2] ^= 0xFF  # one byte changed: the record's sha256 no longer matches
    kept.write_bytes(bytes(content))
    _, damaged, _ = _evaluate(small_collection, small_workload, cache, tmp_path, "damaged")
    assert damaged.copies_loaded == 0 and damaged.builds_for_configurations > 0
    # a link planted where a copy is kept is never followed, even to a genuine copy whose record matches
    genuine = tmp_path / "elsewhere.sqlite"
    os.replace(kept, genuine)
    kept.symlink_to(genuine)
    assert kept_image(directory, kept.stem) is None


def test_kept_copies_stay_within_their_limit_least_recently_used_first(tmp_path):
    import sqlite3

    directory = tmp_path / "kept"
    sizes = {}
    for key in ("a", "b", "c"):
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", ((i,) for i in range(20_000)))
        conn.commit()
        assert keep_copy(directory, key, conn, limit=KEPT_BYTES)
        sizes[key] = (directory / f"{key}.sqlite").stat().st_size
        os.utime(directory / f"{key}.sqlite", (1_000 + len(sizes), 1_000 + len(sizes)))
    assert kept_image(directory, "a") is not None  # read: now the most recently used
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x)")
    assert keep_copy(directory, "d", conn, limit=sizes["a"] * 3 // 2)  # room for a and the small d
    left = sorted(path.stem for path in directory.glob("*.sqlite"))
    assert left == ["a", "d"]  # b and c, the least recently used, went first; records with them
    assert sorted(path.name for path in directory.glob("*.json")) == ["a.sqlite.json", "d.sqlite.json"]


def test_copies_kept_for_an_earlier_content_of_the_base_are_removed(tmp_path):
    from case_studies.indexing.engines.sqlite_kept_copies import KIND
    from wield.cache import entry_beside, remove_other_entries_beside

    base = tmp_path / "sqlite-x.sqlite"
    old, new = entry_beside(base, KIND, "a" * 64), entry_beside(base, KIND, "b" * 64)
    for directory in (old, new):
        directory.mkdir()
        (directory / "k.sqlite").write_bytes(b"x")
    remove_other_entries_beside(base, KIND, "b" * 64)  # the base was rebuilt with content b
    assert not old.exists() and (new / "k.sqlite").exists()


def test_copies_leave_out_the_pages_dropped_indexes_freed(small_collection, small_workload, tmp_path):
    import shutil

    from case_studies.indexing.index_spec import IndexSpec

    def kept_bytes(name, search):
        task = build_indexing_task(small_collection, metric="work", workdir=tmp_path / name, cache_dir=cache)
        try:
            if search:  # a search that built (more than the full index) and dropped indexes on the trial's database
                task.system.configure([IndexSpec.of([(field, "asc"), (other, "asc")])
                                       for field in small_collection.field_names
                                       for other in small_collection.field_names[:3] if other != field])
                task.system.materialise_all()
            evaluate_methods(task.system, small_workload, {}, repetitions=1)
            directory = task.system.engine._kept_directory
            [kept] = directory.glob("*.sqlite")
            size = kept.stat().st_size
            shutil.rmtree(directory)
            return size
        finally:
            task.system.close()

    cache = tmp_path / "cache"
    assert kept_bytes("after-search", True) == kept_bytes("fresh", False)


def test_a_link_planted_where_the_base_database_is_cached_is_replaced_not_read(small_collection, tmp_path):
    from case_studies.indexing.engines.sqlite import SQLiteEngine
    from case_studies.indexing.engines.sqlite_kept_copies import verified_image

    cache = tmp_path / "cache"
    base = SQLiteEngine.base_database(small_collection, cache)
    genuine = tmp_path / "elsewhere.sqlite"  # the same bytes: the record beside the base would match them
    genuine.write_bytes(base.read_bytes())
    base.unlink()
    base.symlink_to(genuine)
    assert verified_image(base) is None
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work", cache_dir=cache, in_memory=True)
    try:
        assert not base.is_symlink() and verified_image(base) is not None  # rebuilt in place of the link
        assert engine._conn.execute(f"SELECT count(*) FROM {engine.table}").fetchone()[0] == len(small_collection)
    finally:
        engine.close()
