"""Executors run independent trials: in-process, in a local process pool, or on a Ray cluster.

Every executor calls the same top-level function with the same arguments, and a trial's results depend only
on its arguments (its seeds), so the same plan gives the same results whichever executor runs it. Results
are yielded as trials finish (completion order), each with the index of its arguments.
"""

from __future__ import annotations

import abc
import multiprocessing
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterator, Sequence

from wield.errors import ConfigError

EXECUTORS = ("local", "process", "ray")


class Executor(abc.ABC):
    """Maps a picklable top-level function over argument tuples."""

    name = "executor"

    @abc.abstractmethod
    def run(self, function: Callable[..., Any], arguments: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Yield (index, result) for every argument tuple, in completion order."""

    def close(self) -> None:
        """Release workers."""


class InProcessExecutor(Executor):
    name = "local"

    def run(self, function, arguments):
        for index, args in enumerate(arguments):
            yield index, function(*args)


class ProcessPoolTrialExecutor(Executor):
    """A local pool of ``workers`` processes (spawned, so each trial starts from a clean interpreter)."""

    name = "process"

    def __init__(self, workers: int) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ConfigError("workers", workers, reason="must be an integer >= 1")
        self.workers = workers

    def run(self, function, arguments):
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context,
                                 initializer=_single_threaded) as pool:
            futures = {pool.submit(function, *args): index for index, args in enumerate(arguments)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()


def _single_threaded() -> None:
    """One compute thread per worker: N workers on N cores do not oversubscribe them."""
    import torch

    torch.set_num_threads(1)


class RayExecutor(Executor):
    """Trials as Ray tasks on a local instance (``address=None``) or an existing cluster."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, timeout_s: float = 60.0) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ConfigError("executor", "ray", reason="Ray is not installed: pip install 'wield[ray]'") from exc
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            try:
                if address:
                    _check_reachable(address, timeout_s)
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            except ConfigError:
                raise
            except Exception as exc:  # ray raises ConnectionError, RuntimeError... depending on the failure
                raise ConfigError("address", address, reason=f"could not connect to a Ray cluster: {exc}") from exc
            self._started = True

    def run(self, function, arguments):
        ray = self._ray
        remote = ray.remote(num_cpus=1)(_ray_trial)
        refs = {remote.remote(function, args): index for index, args in enumerate(arguments)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def _ray_trial(function, args):
    _single_threaded()
    return function(*args)


def _check_reachable(address: str, timeout_s: float) -> None:
    """Fail fast with a clear error when a ``host:port`` Ray address does not answer."""
    import socket

    target = address.split("://", 1)[-1]
    if target in ("auto", "local"):
        return
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError("address", address, reason="expected HOST:PORT of a Ray head node, 'auto' or 'local'")
    try:
        with socket.create_connection((host, int(port)), timeout=min(timeout_s, 5.0)):
            pass
    except OSError as exc:
        raise ConfigError("address", address, reason=f"no Ray head node answers there ({exc.strerror or exc})") from exc


def make_executor(kind: str = "local", workers: int = 1, address: str | None = None) -> Executor:
    """``local`` (in-process; ``workers`` > 1 means a process pool), ``process`` or ``ray``."""
    if kind not in EXECUTORS:
        raise ConfigError("executor", kind, EXECUTORS)
    if kind == "ray":
        return RayExecutor(address, num_cpus=workers if workers > 1 else None)
    if kind == "process" or workers > 1:
        return ProcessPoolTrialExecutor(workers)
    return InProcessExecutor()
