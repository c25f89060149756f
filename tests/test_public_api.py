"""The public API a third-party case study is written against (issue 44): the guide's example adapter imports
and registers, every name ``import wield`` documents exists, the verdict's keywords the guide and the
changelog name are accepted, and CHANGELOG.md keeps its sections. A break of any of these shows here, in CI,
before a user's case study crashes after training."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "new-system.md").read_text()
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def test_the_guides_example_adapter_imports_and_declares_a_case_study():
    from wield import CaseStudy, WieldEnv
    from wield_examples.caching import plugin, system

    assert isinstance(plugin.CASE_STUDY, CaseStudy) and plugin.CASE_STUDY.name == "caching"
    assert isinstance(plugin.make_env(), WieldEnv)
    for name in ("BufferPool", "PoolSchema", "PoolConverter", "LRU", "LFU", "page_requests"):
        assert hasattr(system, name), name


def test_every_name_import_wield_exports_resolves():
    import wield

    for name in wield.__all__:
        assert getattr(wield, name) is not None, name


def test_the_names_the_guide_imports_from_wield_are_exported():
    import wield

    imported = set()
    for block in re.findall(r"^from wield import (\([^)]*\)|.*)$", GUIDE, flags=re.M):
        block = block.strip("()")
        imported |= {name.strip() for name in block.replace("\n", " ").split(",") if name.strip()}
    assert {"trial_verdict", "EvaluationInstances", "InstanceBatch", "Comparator"} <= imported
    assert imported <= set(wield.__all__), sorted(imported - set(wield.__all__))


@pytest.mark.parametrize("module, names", [
    ("wield.protocols", ["EvaluationInstances", "LadderVerdict", "ComparatorScores", "InstanceScores", "Rung",
                         "SequentialDesign", "ladder_verdict", "paired_rung", "verdict_lines", "TrialSeeds",
                         "TrialSummary", "Objective"]),
    ("wield.workflows", ["trial_verdict", "assess_learning", "Comparator", "InstanceBatch", "verdict_cap",
                         "verdict_settings", "run_trial", "train_online", "evaluate_policy", "RunRecord"]),
])
def test_the_documented_verdict_names_exist(module, names):
    loaded = importlib.import_module(module)
    for name in names:
        assert hasattr(loaded, name), f"{module}.{name}"


def test_trial_verdict_takes_the_keywords_the_guide_documents():
    from wield import trial_verdict

    parameters = inspect.signature(trial_verdict).parameters
    for keyword in ("seed", "instances", "comparators", "more", "cap", "played", "score", "training_returns",
                    "search_outcome"):
        assert keyword in parameters, keyword
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())  # 0.1.0's, deprecated


def test_the_changelog_has_an_unreleased_and_a_release_section_and_the_migration_notes():
    assert CHANGELOG.startswith("# Changelog")
    assert "## [Unreleased]" in CHANGELOG and re.search(r"^## \[0\.1\.0\] - \d{4}-\d{2}-\d{2}$", CHANGELOG, re.M)
    for name in ("greedy_episodes", "trivial=", "instances=", "DeprecationWarning", "LearningVerdict"):
        assert name in CHANGELOG, name
    from wield import __version__

    assert f"## [{__version__}]" in CHANGELOG  # the released version has its section
