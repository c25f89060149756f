"""Shared fixtures: small generated collections and an isolated database cache per test session."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wield.numerics import use_reproducible_numerics

# Before anything imports torch: the suite computes as the wield command does (WIELD_NUMERICS=reproducible,
# wield.numerics), so a trained network decides the same on every x86 processor, whatever MKL_CBWR,
# ATEN_CPU_CAPABILITY or thread count the machine running the tests sets. WIELD_NUMERICS=native runs the suite
# with the machine's own arithmetic instead (.ci/run does so for the guide's sample outputs: no test compares
# a figure that arithmetic can change as exact text).
if os.environ.get("WIELD_NUMERICS", "").strip().lower() != "native":
    use_reproducible_numerics()

from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """Small networks run fastest on one thread, and tests running beside each other do not contend."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Keep loaded base databases out of the user's cache."""
    import os

    path = tmp_path_factory.mktemp("wield-cache")
    previous = os.environ.get("WIELD_CACHE_DIR")
    os.environ["WIELD_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("WIELD_CACHE_DIR", None)
    else:
        os.environ["WIELD_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def benchmark_script():
    """A loader of ``benchmarks/<name>.py`` as a module (benchmarks are scripts, not a package); the module is
    registered in ``sys.modules`` while it runs (dataclasses look their module up there)."""
    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"wield_benchmark_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def small_collection():
    return generate_imdb_collection(20_000, seed=7)


@pytest.fixture(scope="session")
def small_workload(small_collection):
    schedule = make_query_schedule(small_collection, QueryWorkloadConfig(n_queries=12), 11, 1,
                                   per_episode=False)
    return schedule.task_for_episode(0)


@pytest.fixture(scope="session")
def postgres_uri():
    """A throwaway PostgreSQL server for the whole session, started and removed by the project's own code
    (``wield db start postgres``); needs the postgresql-15 and postgresql-15-hypopg Debian packages."""
    from case_studies.indexing.engines.postgres_server import throwaway_server

    with throwaway_server(prefix="wield-pg-test-") as uri:
        yield uri


@pytest.fixture
def mount_tmpfs(tmp_path):
    """``mount_tmpfs(size)``: a tmpfs of ``size`` (e.g. "512k", "3m") under ``tmp_path`` (root only, where
    mounting is allowed; the test is skipped elsewhere), unmounted after the test."""
    mounted = []

    def mount(size: str):
        directory = tmp_path / f"tmpfs-{len(mounted)}"
        directory.mkdir()
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                                str(directory)], capture_output=True).returncode != 0:
            pytest.skip("mounting a tmpfs needs root")
        mounted.append(directory)
        return directory

    yield mount
    for directory in mounted:
        subprocess.run(["umount", "-l", str(directory)], check=False)
