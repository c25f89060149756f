"""RunRecord: the directory that holds everything about one run, written atomically and incrementally.

Layout (every file replaced atomically, so an interrupted run leaves each file either old or new):

- ``config.json``      the run's configuration (everything needed to rerun it)
- ``config.toml``      a single run of the ``wield`` command: every option it used, defaults included, and the
                       learner's hyperparameters; ``--config`` reads it back (``wield.command_config``)
- ``versions.json``    Python, platform and library versions, and the git commit when known
- ``seeds.json``       every seed the run used
- ``schema.json``      the schema's layout and fingerprint
- ``schedule*.json``   the serialised workload schedules
- ``episodes.csv``     one row per finished episode (rewritten whole after each episode)
- ``evaluation.json``  the evaluation results
- ``model.pt``         final model weights (``torch.save`` of the agent's ``state_dict``: tensors and plain
                       containers, numbers and strings only, so it loads with ``weights_only=True`` and
                       loading a record never runs code; see ``load_model``)
- ``*.png``            figures
- ``status.json``      running / complete / failed / interrupted, with a timestamp (and, while running, the
                       writer's pid and host)
- ``checksums.json``   sha256 of every file, written when the run completes, so a file damaged later is
                       found before it is trusted (``verify``)
- ``wield.log``        the run's log messages, DEBUG up, with times and loggers (``wield.logs``); not covered
                       by the checksums: it is written until the run's last line, and nothing reads it back
- ``.wield.lock``      held (``fcntl.flock``) by the process writing the run; see ``wield.workflows.ownership``

One process writes a record: ``create`` claims the directory's lock and refuses a directory that another
live process holds or that already holds a run. The claim ends with a final status (or with the process,
even on ``kill -9``), so a record that says "running" while nobody holds its lock is *stale*: its process
is gone (``state``). SIGTERM is handled like Ctrl-C (``wield.workflows.signals``): the run is marked
"interrupted".
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import platform
import socket
import stat
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from wield.errors import ConfigError, DataError, shown
from wield.logs import LOG_FILE
from wield.numerics import numerics_state
from wield.io import (atomic_write_bytes, atomic_write_json, atomic_write_text, read_json, read_record_bytes,
                      sha256_record_file)
from wield.workflows.ownership import LOCK_FILE, DirectoryLock, ensure_directory, is_claimed
from wield.workflows.signals import stop_on_sigterm

STATUSES = ("running", "complete", "failed", "interrupted")
FINAL_STATUSES = ("complete", "failed", "interrupted")
CHECKSUMS = "checksums.json"
# Files that change after a run completes (or say how it ended) are not covered by its checksums; wield.log
# (wield.logs) is a diagnostic log, written until the trial's last line, after "complete".
_UNCHECKED = ("status.json", CHECKSUMS, LOCK_FILE, "summary.json", LOG_FILE)


def check_finished(directory: str | os.PathLike, field: str = "RUN_DIR") -> "RunRecord":
    """The record in ``directory`` if it is a finished, intact run; otherwise a clear error saying what is
    wrong (not a run record, not finished, its process gone, a file damaged since it finished)."""
    path = Path(directory)
    if not (path / "run.json").is_file():
        raise ConfigError(field, str(path), reason="not a run record (no run.json)")
    record = RunRecord(path)
    state = record.state
    if state != "complete":
        why = {None: "it has no status.json", "damaged": "its status.json is damaged",
               "stale": "it says running but its process is gone (killed); rerun it",
               "running": "it is still running"}.get(state, f"its status is {state}")
        raise ConfigError(field, str(path), reason=f"not a finished run: {why}")
    problems = record.verify()
    if problems:
        raise DataError(f"{path}: the record is damaged: {'; '.join(problems)}")
    return record


def _sha256(path: Path) -> str:
    return sha256_record_file(path)  # a regular file, never through a link, a FIFO never waited on


_SHA256_HEX = frozenset("0123456789abcdef")


def record_name_problem(root: Path, name: Any) -> str | None:
    """Why ``name`` (a key of ``checksums.json``) is not a plain relative name of a file inside the record
    at ``root``: not a string, absolute, empty parts, ``.`` or ``..``, a NUL or a backslash, or a directory
    on its way that is a symbolic link (which would lead out of the record). None for a good name."""
    if not isinstance(name, str) or not name or len(name) > 1024:
        return f"{shown(name)} is not a file name"
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or "\x00" in name or any(part in ("", ".", "..") for part in parts):
        return f"{shown(name)} is not a plain name inside the record (absolute, '..' or empty parts)"
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return None  # missing: reported as a missing file
        if not stat.S_ISDIR(mode):
            return (f"{shown(name)} leads through {shown(str(current.relative_to(root)))}, which is not a "
                    "directory of the record (a symbolic link is not followed)")
    return None


def library_versions(extra: Iterable[str] = ()) -> dict[str, Any]:
    """Versions of Python, the platform, Wield's dependencies and any ``extra`` distributions, and the
    arithmetic the networks compute with (``numerics``: wield.numerics, the processor and code paths)."""
    versions: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(),
                                "numerics": numerics_state()}
    for name in ("wield", "numpy", "torch", "gymnasium", "pandas", "matplotlib", *extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=5)
        if commit.returncode == 0:
            versions["git_commit"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return versions


class RunRecord:
    """One run's directory. Methods write whole files atomically; nothing is ever appended in place."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = ensure_directory(directory, "run directory")
        self._lock: DirectoryLock | None = None
        self._episodes: list[dict[str, Any]] = []
        if (self.path / "episodes.csv").exists():
            self._episodes = self.read_episodes()

    @classmethod
    def create(cls, directory: str | os.PathLike, field: str = "out") -> "RunRecord":
        """A record for a new run, claimed by this process (see the module docstring). A directory that
        another live process is writing, or that already holds a run (finished, failed, interrupted or
        stale), is refused rather than mixed with it: single runs are not resumed in place (experiments
        resume by trial), and two runs writing into one directory would interleave their files."""
        def refuse_a_used_directory(path: Path) -> None:
            if (path / "status.json").exists():
                state = cls(path).state
                raise ConfigError(field, str(path), reason=f"already holds a run (status: {state}); choose "
                                                           "another directory or remove this one")

        if Path(directory).is_dir():
            refuse_a_used_directory(Path(directory))  # before writing anything
        lock = DirectoryLock.acquire(directory, field, what="run directory")
        try:
            path = lock.directory
            refuse_a_used_directory(path)  # again, now that it is ours
            record = cls(path)
        except BaseException:
            lock.release()
            raise
        record._lock = lock
        return record

    @classmethod
    def start(cls, directory: str | os.PathLike, *, case_study: str, config: Mapping[str, Any],
              seeds: Mapping[str, Any], versions: Iterable[str] = (), **run: Any) -> "RunRecord":
        """Create the record of a new run (see ``create``) and write what is needed to rerun it:
        ``config.json``, ``config.toml`` (a single run of the ``wield`` command: ``wield.command_config``),
        ``seeds.json``, ``run.json`` (case study, command line and ``run``'s entries),
        ``versions.json`` (with the ``versions`` libraries), and the status "running"."""
        stop_on_sigterm()
        record = cls.create(directory)
        record.write_json("config.json", config)
        from wield.command_config import pending_command_config

        command_config = pending_command_config()  # wield run NAME: config.toml, every option of the command
        if command_config is not None:
            record.write_text(*command_config)
        record.write_json("seeds.json", dict(seeds))
        record.write_json("run.json", {"case_study": case_study, **run, "command": list(sys.argv)})
        record.write_versions(extra=versions)
        record.mark("running")
        return record

    @contextlib.contextmanager
    def outcome_on_error(self) -> Iterator[None]:
        """Mark the run "interrupted" (Ctrl-C, SIGTERM) or "failed" (with the error) if the body raises; what
        was recorded so far stays. Marking never hides the original error: when even the status cannot be
        written (a full disk), the old status file is overwritten in place, else left as it is."""
        try:
            yield
        except KeyboardInterrupt as exc:
            self.mark_final("interrupted", signal=getattr(exc, "signal_name", "SIGINT"))
            raise
        except BaseException as exc:
            self.mark_final("failed", error=f"{type(exc).__name__}: {exc}"[:2000])
            raise

    def file(self, name: str) -> Path:
        return self.path / name

    def write_json(self, name: str, obj: Any) -> None:
        atomic_write_json(self.file(name), obj)

    def read_json(self, name: str) -> Any:
        return read_json(self.file(name))

    def exists(self, name: str) -> bool:
        return self.file(name).exists()

    def write_text(self, name: str, text: str) -> None:
        atomic_write_text(self.file(name), text)

    def write_versions(self, extra: Iterable[str] = (), **more: str) -> None:
        self.write_json("versions.json", {**library_versions(extra), **more})

    def mark(self, status: str, **details: Any) -> None:
        """Write ``status.json``. "running" records this process's pid and host; "complete" first writes
        ``checksums.json``; a final status releases the directory's claim."""
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        if status == "running":
            details = {"pid": os.getpid(), "host": socket.gethostname(), **details}
        if status == "complete":
            self.write_checksums()
        self.write_json("status.json", {"status": status, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                        **details})
        if status in FINAL_STATUSES:
            self.release()

    def mark_final(self, status: str, **details: Any) -> None:
        """``mark`` a final status without ever raising an OSError: used while another error propagates."""
        try:
            self.mark(status, **details)
        except OSError:
            entry = {"status": status, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **details}
            try:  # no room for a new file: overwrite the old status in its own blocks
                with open(self.file("status.json"), "r+b") as handle:
                    handle.write(json.dumps(entry).encode())
                    handle.truncate()
            except OSError:
                pass
        finally:
            self.release()

    def release(self) -> None:
        """Give up this process's claim on the directory (a final status does it)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @property
    def status(self) -> str | None:
        """The recorded status; "damaged" when ``status.json`` cannot be read."""
        if not self.exists("status.json"):
            return None
        try:
            status = self.read_json("status.json")
        except DataError:
            return "damaged"
        return status.get("status") if isinstance(status, dict) and status.get("status") in STATUSES else "damaged"

    @property
    def state(self) -> str | None:
        """The status, or "stale" for a run that says "running" while no live process holds it."""
        status = self.status
        if status == "running" and not is_claimed(self.path):
            return "stale"
        return status

    # -- integrity -------------------------------------------------------------------------------
    def write_checksums(self) -> None:
        """Record the sha256 of every file of the run (``checksums.json``)."""
        sums = {name: _sha256(self.path / name) for name in self._files()}
        self.write_json(CHECKSUMS, sums)

    def verify(self) -> list[str]:
        """What is wrong with a finished record: missing or changed files (by ``checksums.json``). Empty for
        an intact record, and for one written before checksums were recorded."""
        if not self.exists(CHECKSUMS):
            return []
        sums = self.read_json(CHECKSUMS)
        if not isinstance(sums, dict):
            return [f"{CHECKSUMS} is damaged"]
        problems = []
        for name, digest in sorted(sums.items()):
            wrong = record_name_problem(self.path, name)
            if wrong is not None:  # '../../etc/passwd', '/etc/passwd', a link on the way: never opened
                problems.append(f"{CHECKSUMS} names {wrong}")
                continue
            if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _SHA256_HEX):
                problems.append(f"{CHECKSUMS} is damaged (the sha256 of {shown(name)} is {shown(digest)})")
                continue
            path = self.path / name
            if not os.path.lexists(path):
                problems.append(f"{name} is missing")
                continue
            try:
                actual = _sha256(path)
            except DataError as exc:  # a link, a FIFO, a device or a directory in a file's place
                problems.append(str(exc))
                continue
            if actual != digest:
                problems.append(f"{name} is damaged (changed or truncated since the run finished)")
        return problems

    def _files(self) -> list[str]:
        return sorted(str(path.relative_to(self.path)) for path in self.path.rglob("*")
                      if path.is_file() and not path.is_symlink() and path.name not in _UNCHECKED and not path.name.endswith(".tmp"))

    # -- per-episode metrics ---------------------------------------------------------------------
    def append_episode(self, row: Mapping[str, Any]) -> None:
        """Add one episode's row and atomically rewrite ``episodes.csv``."""
        self.append_episodes([row])

    def append_episodes(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add several rows and atomically rewrite ``episodes.csv`` once; a tracked trial's trackers get the
        rows too (``wield.tracking``)."""
        from wield.tracking import log_episode_rows

        added = [dict(row) for row in rows]
        first = len(self._episodes)
        self._episodes.extend(added)
        columns = list(dict.fromkeys(key for r in self._episodes for key in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self._episodes)
        atomic_write_text(self.file("episodes.csv"), buffer.getvalue())
        log_episode_rows(added, first)

    def read_episodes(self) -> list[dict[str, Any]]:
        import pandas as pd

        data = read_record_bytes(self.file("episodes.csv"))  # a FIFO or /dev/zero planted here: refused unread
        try:
            return pd.read_csv(io.BytesIO(data)).to_dict("records")
        except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"{self.file('episodes.csv')}: damaged ({str(exc).strip().splitlines()[0]})") from None

    @property
    def episodes(self) -> list[dict[str, Any]]:
        return list(self._episodes)

    # -- artefacts -------------------------------------------------------------------------------
    def save_model(self, state: Mapping[str, Any], name: str = "model.pt") -> None:
        """Save an agent's state: numpy arrays and scalars become tensors and Python numbers, so the file
        holds only what ``torch.load(weights_only=True)`` accepts (checked before the file is written)."""
        import torch

        buffer = io.BytesIO()
        torch.save(plain_state(dict(state)), buffer)
        data = buffer.getvalue()
        load_weights(io.BytesIO(data), f"the state to save as {self.file(name)}")
        atomic_write_bytes(self.file(name), data)

    def load_model(self, name: str = "model.pt") -> dict[str, Any]:
        """The saved state, read without running any code from the file (``load_weights``)."""
        state = load_weights(self.file(name))
        if not isinstance(state, dict):
            raise DataError(f"{self.file(name)}: not a saved model (a {type(state).__name__}, not a state dict)")
        return state

    def save_figure(self, figure, name: str) -> Path:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
        atomic_write_bytes(self.file(name), buffer.getvalue())
        return self.file(name)


def plain_state(value: Any) -> Any:
    """``value`` with numpy arrays as tensors, numpy scalars as Python numbers and tuples kept: what
    ``torch.load(weights_only=True)`` reads back without running code."""
    import numpy as np
    import torch

    if isinstance(value, dict):
        return {key: plain_state(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_state(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain_state(item) for item in value)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic):
        return value.item()
    return value


def load_weights(source: str | os.PathLike | io.BytesIO, where: str | None = None) -> Any:
    """``torch.load(source, weights_only=True)``: tensors, containers, numbers and strings only, so a file
    that would run code when unpickled (a ``__reduce__`` payload) is refused, never executed. A path is
    opened without following a link and must be a regular file. A file that cannot be read that way is a
    ``DataError`` naming it."""
    import pickle
    import stat

    import torch

    where = where or str(source)
    handle: Any = source
    if not isinstance(source, io.BytesIO):
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise DataError(f"{where}: cannot be opened ({exc.strerror or exc}; a link is not followed)") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise DataError(f"{where}: not a regular file")
        handle = os.fdopen(fd, "rb")
    try:
        return torch.load(handle, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        why = next((line for line in lines if "GLOBAL" in line or "Unsupported" in line), lines[0] if lines else "")
        raise DataError(f"{where}: refused: it holds more than weights and plain values, and loading it could "
                        f"run code ({why[:200]}); Wield loads model files with weights_only=True only") from None
    except Exception as exc:  # torch raises RuntimeError, EOFError, ... for a damaged file
        first = next((line for line in str(exc).splitlines() if line.strip()), "damaged")
        raise DataError(f"{where}: cannot be loaded as a model ({type(exc).__name__}: {first.strip()[:200]})") from None
    finally:
        if handle is not source:
            handle.close()
