"""Executors run independent trials: in-process, in a local process pool, or on a Ray cluster.

Every executor calls the same top-level function with the same arguments, and a trial's results depend only
on its arguments (its seeds), so the same plan gives the same results whichever executor runs it. Results
are yielded as trials finish (completion order), each with the index of its arguments.

The local pool forks its workers on Linux when this process runs no thread but the main one: a forked
worker starts at once, with the modules already imported, where a spawned interpreter imports torch and the
case study again (3-5 s of CPU per worker, most of the cost of short trials). Elsewhere, or when another
thread runs (a notebook kernel, a progress bar's monitor), workers are spawned; ``$WIELD_START_METHOD``
(fork, forkserver or spawn) chooses. A forked worker does not keep its parent's directory locks
(``wield.workflows.ownership``), and every trial seeds what it uses, so results are the same either way.

Worker processes of the local pool never outlive the process that started them: on Linux the kernel sends
them SIGTERM when it dies (``PR_SET_PDEATHSIG``), and a watchdog thread checks the parent too (and ends a
worker whose clean-up has not finished ``STOP_GRACE_S`` later). A worker stops on SIGTERM or Ctrl-C the way
a run does (its trial is marked "interrupted") and then exits instead of waiting for more work, even when
the trial turned the stop into an error of its own; when the parent is interrupted it stops its workers the
same way before it exits.

Each trial writes its own record's ``wield.log`` in the process that runs it (``wield.logs``); workers log
at the level of the process that started them (a spawned worker and a Ray task are told it).
"""

from __future__ import annotations

import abc
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

from wield.errors import ConfigError, SystemFailure
from wield.logs import apply_logging_state, forget_inherited_record_logs, get_logger, logging_state
from wield.workflows.signals import stop

EXECUTORS = ("local", "process", "ray")
START_METHODS = ("fork", "forkserver", "spawn")
START_METHOD_VARIABLE = "WIELD_START_METHOD"
MAX_WORKERS = 512
# How long an interrupted parent waits for its workers to mark their trials interrupted before killing them.
STOP_GRACE_S = 20.0
# How long a parent whose pool broke waits for a stop signal that may be the cause (see run()).
STOP_SIGNAL_WAIT_S = 1.0
log = get_logger(__name__)


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
    """A local pool of ``workers`` processes, forked or spawned (``start_method``)."""

    name = "process"

    def __init__(self, workers: int) -> None:
        check_workers(workers)
        self.workers = workers
        self.start_method: str | None = None  # chosen when the pool starts (see start_method())
        start_method()  # a bad $WIELD_START_METHOD is refused before anything runs

    def run(self, function, arguments):
        _quiet_resource_tracker()
        self.start_method = start_method()
        context = multiprocessing.get_context(self.start_method)
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=_worker_start,
                                   initargs=(os.getpid(), logging_state()))
        log.debug("a pool of %d worker processes (%s)", self.workers, self.start_method)
        try:
            futures = {pool.submit(_in_worker, function, args): index for index, args in enumerate(arguments)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()
        except BrokenProcessPool as exc:
            _stop_workers(pool)
            # Ctrl-C reaches the whole process group: a worker between trials exits at once, which can
            # break the pool before this process has run its own SIGINT handler. Give a stop signal that
            # is on its way the moment it needs (it raises KeyboardInterrupt here); without one, a worker
            # really died.
            time.sleep(STOP_SIGNAL_WAIT_S)
            raise SystemFailure("a trial's worker process ended abruptly (killed, or out of memory); the "
                                "finished trials are kept: rerun the command to resume") from exc
        except BaseException:
            _stop_workers(pool)
            raise
        else:
            pool.shutdown(wait=True)


def check_workers(workers: Any) -> int:
    """``workers`` if it is an integer from 1 to ``MAX_WORKERS``, else a ``ConfigError``."""
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise ConfigError("workers", workers, reason=f"must be an integer from 1 to {MAX_WORKERS}")
    return workers


def start_method() -> str:
    """How the local pool starts its workers: ``$WIELD_START_METHOD`` when set; else "fork" on Linux while
    this process runs no other thread (forking a process with threads can copy a lock another thread
    holds); else "spawn"."""
    available = multiprocessing.get_all_start_methods()
    chosen = os.environ.get(START_METHOD_VARIABLE)
    if chosen:
        allowed = [method for method in START_METHODS if method in available]
        if chosen not in allowed:
            raise ConfigError(START_METHOD_VARIABLE, chosen, allowed)
        return chosen
    if sys.platform.startswith("linux") and "fork" in available and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _quiet_resource_tracker() -> None:
    """When a pool is stopped by a signal (or its parent is killed), multiprocessing's resource tracker
    frees the pool's semaphores itself and warns about "leaked semaphore objects": expected here, not a
    fault, so that one warning is filtered (in the tracker process, through its environment)."""
    rule = "ignore:resource_tracker:UserWarning"
    current = os.environ.get("PYTHONWARNINGS", "")
    if rule not in current.split(","):
        os.environ["PYTHONWARNINGS"] = f"{current},{rule}" if current else rule


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM every worker (each marks its trial interrupted and exits), wait a little, kill the rest."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            try:
                process.terminate()
            except OSError:
                pass
    deadline = time.monotonic() + STOP_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(5)
    pool.shutdown(wait=True, cancel_futures=True)  # the workers are gone: this returns at once


_IN_TRIAL = False
_STOPPING = False  # a stop signal reached this worker: it exits after its trial, whatever the trial did


def _worker_start(parent: int, log_state: tuple[int, int | None] | None = None) -> None:
    """Initialise a pool worker: one compute thread, stop on SIGTERM/SIGINT, die with the parent, log as the
    parent does (a forked worker writes no log of its parent's directories: its trials write their own)."""
    forget_inherited_record_logs()
    apply_logging_state(log_state)
    _single_threaded()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _worker_stop)
    die_with_parent(parent)


def _worker_stop(signum, frame) -> None:
    """Inside a trial: raise, so the trial's record is marked interrupted (``_in_worker`` then exits).
    Between trials: exit now."""
    if not _IN_TRIAL:
        os._exit(128 + signum)
    # Stopping now: a second stop signal (Ctrl-C reaches the whole process group, then the parent sends
    # SIGTERM) must not cut short the clean-up that marks the trial interrupted; the parent kills a worker
    # that has not exited after STOP_GRACE_S.
    # (A handler that does nothing, not SIG_IGN: a signal already pending would then raise OSError.)
    global _STOPPING
    _STOPPING = True
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, _already_stopping)
    raise stop(signum)


def _already_stopping(signum, frame) -> None:
    """A stop signal received while the worker is already stopping: nothing more to do."""


def _in_worker(function: Callable[..., Any], args: tuple) -> Any:
    """Run one task in a pool worker; after an interruption the worker exits instead of taking more work
    (its parent is gone or is stopping)."""
    global _IN_TRIAL
    _IN_TRIAL = True
    try:
        return function(*args)
    except KeyboardInterrupt as exc:
        _exit_stopped(getattr(exc, "signal_name", "SIGINT"))
    finally:
        _IN_TRIAL = False
        if _STOPPING:  # the stop was turned into another error on its way out (or the trial ended meanwhile)
            _exit_stopped("SIGTERM")


def _exit_stopped(signal_name: str) -> None:
    sys.stderr.flush()
    os._exit(130 if signal_name == "SIGINT" else 143)


def die_with_parent(parent: int) -> None:
    """SIGTERM this process when ``parent`` dies: ``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread (which
    ends the process ``STOP_GRACE_S`` later if SIGTERM did not). For any pool's worker initializer: the local
    pool's workers call it, and so do the benchmarks' seed workers."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the kernel was told
        os.kill(os.getpid(), signal.SIGTERM)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)
        # Nobody is left to kill a worker whose clean-up hangs (the parent would after STOP_GRACE_S).
        time.sleep(STOP_GRACE_S)
        os._exit(143)

    threading.Thread(target=watch, name="wield-parent-watchdog", daemon=True).start()


def _single_threaded() -> None:
    """One compute thread per worker (unless the user chose otherwise, ``wield.workflows.threads``): N
    workers on N cores do not oversubscribe them."""
    from wield.workflows.threads import apply_torch_threads

    apply_torch_threads()


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
                    log.info("connected to the Ray cluster at %s", address)
                else:
                    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
                    log.info("started a local Ray instance (%s CPUs)", num_cpus or "all")
            except ConfigError:
                raise
            except Exception as exc:  # ray raises ConnectionError, RuntimeError... depending on the failure
                raise ConfigError("address", address, reason=f"could not connect to a Ray cluster: {exc}") from exc
            self._started = True

    def run(self, function, arguments):
        ray = self._ray
        remote = ray.remote(num_cpus=1)(_ray_trial)
        state = logging_state()
        refs = {remote.remote(function, args, state): index for index, args in enumerate(arguments)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def _ray_trial(function, args, log_state=None):
    forget_inherited_record_logs()
    apply_logging_state(log_state)  # the trial's wield.log gets what it would get in the driver
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
    check_workers(workers)
    if kind == "ray":
        return RayExecutor(address, num_cpus=workers if workers > 1 else None)
    if kind == "process" or workers > 1:
        return ProcessPoolTrialExecutor(workers)
    return InProcessExecutor()
