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
    assert not any(name.endswith(".lock") for name in entries)
    assert main(["cache", "list"]) == 0
    printed = capsys.readouterr().out
    assert f"cache root: {cache}" in printed and database in printed and "3 entries" in printed
    assert main(["cache", "clear", database]) == 0
    assert f"removed {database}" in capsys.readouterr().out
    assert not (cache / database).exists() and (cache / "placement").exists()
    assert main(["cache", "clear"]) == 0
    assert "freed" in capsys.readouterr().out
    assert main(["cache", "list", "--json"]) == 0 and json.loads(capsys.readouterr().out)["entries"] == []
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work")  # rebuilt on demand
    engine.close()
    assert (cache / database).exists()
