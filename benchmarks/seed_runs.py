"""Seeds run one after another or in a process pool, saved after each to a resumable JSON file (imported by the
scheduling benchmarks beside it).

``run_seeds(job, seeds, out, settings, workers)`` calls ``job(seed)`` (a picklable callable: a top-level
function or a ``functools.partial`` of one) for every seed not already in ``out``, records the seed's wall
seconds under ``result["seconds"]["seed"]`` and rewrites ``out`` atomically after every seed as
``{**settings, "versions": ..., "results": {seed: result}}``, where ``versions`` says what ran
(``wield.workflows.library_versions``: Python, the libraries, and the git commit and directory of the checkout
whose code was imported, which is also printed at the start: a worktree's code runs only with ``PYTHONPATH``
pointing at it). A file written with other ``settings`` is not resumed from (its seeds are run again and the
file replaced). With ``workers`` > 1 the seeds run in that many spawned
processes, each with one torch thread (``one_torch_thread``), as the ``wield`` command trains; the workers end
with the process that started them (``seed_worker``), so a benchmark stopped by SIGTERM or kill -9 leaves no seed
running on (its finished seeds are in ``out``; rerun to resume).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from wield.io import atomic_write_json, read_json

Job = Callable[[int], dict[str, Any]]


def add_schedule_options(parser: argparse.ArgumentParser) -> None:
    """The MaskablePPO training schedule's options both scheduling benchmarks take (the study's by default:
    20 episodes from 3,000 decisions, doubling every other episode up to 60,000)."""
    from case_studies.scheduling.vector_training import DEFAULT_ENVS

    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--first-decisions", type=int, default=3000)
    parser.add_argument("--max-decisions", type=int, default=60000)
    parser.add_argument("--envs", type=int, default=DEFAULT_ENVS, help="environments playing every episode together")


def add_pool_options(parser: argparse.ArgumentParser, out: str) -> None:
    """``--out`` (the resumable JSON file, default ``out``) and ``--workers`` (seeds at once)."""
    parser.add_argument("--out", default=out)
    parser.add_argument("--workers", type=int, default=1,
                        help="seeds run at once, each in its own process (default 1; 2 on a 2-core machine)")


def check_workers(parser: argparse.ArgumentParser, workers: int) -> None:
    """Refuse ``--workers`` below 1 as a usage error."""
    if workers < 1:
        parser.error(f"--workers must be at least 1, not {workers}")


def one_torch_thread() -> None:
    """A seed's worker process: one torch thread (``WIELD_TORCH_THREADS`` to change it); the arithmetic mode
    travels in the environment the parent set."""
    import torch

    torch.set_num_threads(int(os.environ.get("WIELD_TORCH_THREADS", "1")))


def seed_worker(parent: int) -> None:
    """A seed's worker process: ``one_torch_thread``, and it ends when ``parent`` (the benchmark) does."""
    from wield.workflows.executors import die_with_parent

    die_with_parent(parent)
    one_torch_thread()


def code_versions() -> dict[str, Any]:
    """What runs the seeds: ``library_versions`` (with sb3-contrib and Stable-Baselines3) and ``checkout``, the
    directory whose ``wield`` package was imported."""
    import wield
    from wield.workflows import library_versions

    versions = library_versions(("stable-baselines3", "sb3-contrib"))
    versions["checkout"] = str(Path(wield.__file__).resolve().parents[1])
    return versions


def timed(job: Job, seed: int) -> dict[str, Any]:
    """``job(seed)`` with its wall seconds in ``["seconds"]["seed"]``."""
    started = time.perf_counter()
    result = job(seed)
    result.setdefault("seconds", {})["seed"] = time.perf_counter() - started
    return result


def saved_results(out: str, settings: Mapping[str, Any], seeds: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The results of ``seeds`` already in ``out`` if it was written with the same ``settings``, else none."""
    if not os.path.exists(out):
        return {}
    saved = read_json(out)
    if any(saved.get(key) != value for key, value in settings.items()):
        print(f"{out} was written with other settings: its seeds are run again and the file replaced", flush=True)
        return {}
    results = {int(k): v for k, v in saved.get("results", {}).items() if int(k) in seeds}
    if results:
        print(f"resuming: seeds {sorted(results)} already in {out}", flush=True)
    return results


def run_seeds(job: Job, seeds: Sequence[int], out: str, settings: Mapping[str, Any], workers: int = 1,
              ) -> dict[int, dict[str, Any]]:
    """Every seed's result (see the module docstring), those in ``out`` included."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    results = saved_results(out, settings, seeds)
    pending = [seed for seed in seeds if seed not in results]
    versions = code_versions()
    print(f"code: {versions['checkout']} at {versions.get('git_commit', 'an unknown commit')}", flush=True)

    def finished(seed: int, result: dict[str, Any]) -> None:  # saved after every seed: a stopped run resumes
        results[seed] = result
        print(f"seed {seed}: {result['seconds']['seed']:.0f} s in all", flush=True)
        atomic_write_json(out, {**settings, "versions": versions,
                                "results": {str(k): v for k, v in sorted(results.items())}})

    if workers > 1 and len(pending) > 1:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(workers, len(pending)), mp_context=context, initializer=seed_worker,
                                 initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(timed, job, seed): seed for seed in pending}
            for future in as_completed(futures):
                finished(futures[future], future.result())
    else:
        for seed in pending:
            finished(seed, timed(job, seed))
    return results
