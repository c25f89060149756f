"""``wield cache list|clear``: the cache root's entries with their sizes, and removing them (the next run
rebuilds what it needs)."""

from __future__ import annotations

import json

from case_studies.indexing.engines.sqlite import SQLiteEngine
from wield.cache import cache_root
from wield.cli import main


def test_cache_lists_entries_with_sizes_and_clears_them(tmp_path, monkeypatch, capsys, small_collection):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WIELD_CACHE_DIR", str(cache))
    assert cache_root() == cache
    SQLiteEngine.for_collection(small_collection, tmp_path / "work").close()
    (cache / "placement").mkdir()
    (cache / "placement" / "op-costs.json").write_text("0" * 200)
    assert main(["cache", "list", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)["entries"]}
    (database,) = [name for name in entries if name.endswith(".sqlite")]
    assert entries[database]["bytes"] == (cache / database).stat().st_size > 100_000
    assert f"{database}.json" in entries and entries["placement"]["bytes"] == 200
    assert not any(name.endswith(".lock") for name in entries) and "CACHEDIR.TAG" not in entries
    assert main(["cache", "list"]) == 0
    printed = capsys.readouterr().out
    assert f"cache root: {cache}" in printed and database in printed and "3 entries" in printed
    assert main(["cache", "clear", database, "--yes"]) == 0
    assert f"removed {database}" in capsys.readouterr().out
    assert not (cache / database).exists() and (cache / "placement").exists()
    assert main(["cache", "clear", "--yes"]) == 0
    assert "freed" in capsys.readouterr().out
    assert main(["cache", "list", "--json"]) == 0 and json.loads(capsys.readouterr().out)["entries"] == []
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work")  # rebuilt on demand
    engine.close()
    assert (cache / database).exists()


def test_in_memory_copies_are_verified_and_a_dead_processs_file_copy_is_removed(tmp_path, monkeypatch,
                                                                                small_collection):
    """Runs copy the cached database into their own memory, checked against its recorded sha256 (a damaged
    cache file is rebuilt first); a file copy left by a killed process is removed by the next file copy."""
    import subprocess
    import sys

    cache = tmp_path / "cache"
    monkeypatch.setenv("WIELD_CACHE_DIR", str(cache))
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work", in_memory=True)
    rows = engine._conn.execute(f"SELECT COUNT(*) FROM {engine.table}").fetchone()[0]
    engine.close()
    assert rows == len(small_collection)
    (database,) = cache.glob("*.sqlite")
    with open(database, "r+b") as handle:  # damage one page in the middle
        handle.seek(database.stat().st_size // 2)
        handle.write(b"\xff" * 512)
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work", in_memory=True)
    assert engine._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    engine.close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / "work" / f"wield-{dead.pid}-x.sqlite"
    leftover.parent.mkdir()
    leftover.write_bytes(b"left by a killed run")
    SQLiteEngine.for_collection(small_collection, tmp_path / "work").close()
    assert not leftover.exists() and not list((tmp_path / "work").glob("wield-*.sqlite"))
