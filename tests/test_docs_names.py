"""Every Wield name the documentation quotes exists: each ``wield.X`` it writes and each name its listings
import ``from wield...``. (tests/test_example_system.py runs the guide's listings themselves.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md", "docs/design.md", "docs/new-system.md", "docs/scheduling.md"]
# Dotted names the documents write that are not Python names: entry-point groups, a lock file and the log file.
NOT_PYTHON = {"wield.case_studies", "wield.commands", "wield.trackers", "wield.lock", "wield.log"}
QUOTED = re.compile(r"(?<![\w./-])(wield(?:\.[A-Za-z_]\w*)+)")
IMPORTED = re.compile(r"^from (wield(?:\.\w+)*) import \(?([^)#\n]*(?:\n[ \t]+[^)#\n]*)*)\)?", re.MULTILINE)


def _quoted() -> set[str]:
    names = set()
    for document in DOCUMENTS:
        text = (ROOT / document).read_text()
        names |= {name.rstrip(".") for name in QUOTED.findall(text)}
        for module, imported in IMPORTED.findall(text):
            names |= {f"{module}.{name.strip().split(' as ')[0]}" for name in imported.split(",") if name.strip()}
    return names - NOT_PYTHON


def _resolve(dotted: str) -> object:
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_documents_quote_names():
    names = _quoted()
    assert {"wield.SB3Agent", "wield.trial_stopwatch", "wield.StandardView", "wield.agents.SB3Agent"} <= names


@pytest.mark.parametrize("name", sorted(_quoted()))
def test_a_quoted_name_exists(name):
    try:
        _resolve(name)
    except (AttributeError, ModuleNotFoundError) as exc:
        pytest.fail(f"the documents quote {name}, which does not exist ({exc})")


def test_the_trial_signature_the_documents_give_is_the_one_trials_are_called_with():
    import inspect

    from wield_examples.caching.plugin import CASE_STUDY

    assert list(inspect.signature(CASE_STUDY.trial_function).parameters) == ["config", "seeds", "record"]
    for document in ("docs/new-system.md", "docs/design.md"):
        text = re.sub(r"\s+", " ", (ROOT / document).read_text())
        assert "trial_function(config, seeds, record)" in text
        assert "trial_seeds, directory" not in text
