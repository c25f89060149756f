"""``--json`` prints one versioned object per command (``wield.cli.output``): ``schema_version`` 1 and the
``kind`` of its shape at the top level, every kind documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

from wield.cli import main
from wield.cli import output

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--episodes", "3", "--quiet"]


def _printed(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == output.SCHEMA_VERSION == 1
    return document


def test_every_command_that_prints_json_prints_the_versioned_object(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WIELD_CACHE_DIR", str(tmp_path / "cache"))
    assert _printed(capsys, ["cache", "list", "--json"])["kind"] == "cache"
    run = tmp_path / "run"
    single = _printed(capsys, ["run", "caching", "--out", str(run), "--json", *TINY])
    assert single["kind"] == "trial-summary" and single["method"] == "dqn"
    assert _printed(capsys, ["reproduce", str(run), "--json"])["kind"] == "reproduction"
    experiment = tmp_path / "experiment"
    found = _printed(capsys, ["run", "caching", "--class", "C1", "--trials", "1", "--out", str(experiment),
                              "--json", *TINY])
    assert found["kind"] == "experiment" and len(found["trials"]) == 1
    classified = _printed(capsys, ["classify", str(experiment), "--json"])
    assert classified["kind"] == "classifications"
    assert classified["experiments"][0]["classification"] == found["classification"]
    compared = _printed(capsys, ["compare", "caching", "--methods", "lru,random", "--trials", "1",
                                 "--out", str(tmp_path / "compare"), "--json", *TINY])
    assert compared["kind"] == "comparison" and [m["method"] for m in compared["methods"]] == ["lru", "random"]
    # one key for the class everywhere (class_name); compare's old 'class' stays, the same value, for one release
    assert compared["class_name"] == compared["class"] == "C2"
    assert found["classification"]["class_name"] == "C1"
    recorded = json.loads((tmp_path / "compare" / "comparison.json").read_text())
    assert recorded["class_name"] == recorded["class"] == "C2"


def test_progress_json_prints_only_the_json_document(tmp_path, capsys):
    document = _printed(capsys, ["progress", "caching", "--highest", "C0", "--trials", "1",
                                 "--out", str(tmp_path / "progress"), "--json", *TINY])
    assert document["kind"] == "progress" and document["directory"] == str(tmp_path / "progress")
    assert list(document["classes"]) == ["C0"] and document["classes"]["C0"].startswith("C0(n=")
    recorded = json.loads((tmp_path / "progress" / "progress.json").read_text())
    assert {key: document[key] for key in recorded} == recorded


def test_every_kind_printed_is_documented():
    kinds = set()
    for package in ("wield", "case_studies", "wield_examples"):
        for path in (ROOT / package).rglob("*.py"):
            kinds |= set(re.findall(r'print_json\(\s*"([a-z-]+)"', path.read_text()))
    assert {"trial-summary", "experiment", "classifications", "comparison", "reproduction", "cache"} <= kinds
    table = output.__doc__ or ""
    undocumented = sorted(kind for kind in kinds if not re.search(rf"^{kind}\s", table, re.MULTILINE))
    assert not undocumented, undocumented
