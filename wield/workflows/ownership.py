"""Who is writing a record directory: an exclusive lock held while a process writes, and a probe for it.

A run record or an experiment directory is written by one process at a time. The writer holds an exclusive
``fcntl.flock`` on ``DIR/.wield.lock`` (the file holds its pid, for messages) from the moment it claims
the directory until it finishes; a second writer is refused with a clear error instead of interleaving
its files with the first one's. The kernel drops the lock when the holder dies, even by ``kill -9``, so a
lock is never left behind, and a directory whose status still says "running" while nobody holds its lock
belongs to a process that is gone: it is *stale*.

A forked child (a worker of the local process pool) closes its copies of the locks its parent holds
without unlocking them: it cannot release its parent's claim, and the parent's death still frees it at once.

Probes take a shared lock for an instant; a writer that meets a probe retries for half a second before
refusing, so a probe never makes a writer fail.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
import weakref
from pathlib import Path

from wield.errors import ConfigError

LOCK_FILE = ".wield.lock"
_RETRIES = 10
_RETRY_PAUSE_S = 0.05


class DirectoryLock:
    """An exclusive claim on a directory; released by ``release()`` or when the process ends."""

    def __init__(self, directory: Path, fd: int) -> None:
        self.directory = directory
        self._fd: int | None = fd
        _HELD.add(self)

    @classmethod
    def acquire(cls, directory: str | os.PathLike, field: str = "out", what: str = "directory",
                wait_s: float = 0.0) -> "DirectoryLock":
        """Claim ``directory`` (created if missing). Held by another live process: ``ConfigError`` naming
        ``field`` and that process, after waiting up to ``wait_s`` seconds for it to finish."""
        directory = ensure_directory(directory, field)
        try:
            fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(field, str(directory), reason=f"cannot write into this {what} "
                                                            f"({exc.strerror or exc})") from None
        deadline = time.monotonic() + max(wait_s, _RETRIES * _RETRY_PAUSE_S)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    holder = _read_pid(fd)
                    os.close(fd)
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise ConfigError(field, str(directory), reason=f"cannot lock this {what} "
                                                                        f"({exc.strerror or exc})") from None
                    who = f"process {holder}" if holder else "another process"
                    raise ConfigError(field, str(directory), reason=(
                        f"{who} is writing into this {what} right now; wait for it to finish (or stop it) "
                        "or choose another directory")) from None
                time.sleep(_RETRY_PAUSE_S)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is only for messages; a full disk must not stop the claim itself
        return cls(directory, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __del__(self) -> None:
        try:
            self.release()
        except OSError:
            pass


_HELD: "weakref.WeakSet[DirectoryLock]" = weakref.WeakSet()


def _forget_inherited_locks() -> None:
    """In a forked child: close the copies of the parent's lock descriptors without unlocking (an unlock
    through a shared descriptor would release the parent's claim)."""
    for lock in list(_HELD):
        fd, lock._fd = lock._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)


def is_claimed(directory: str | os.PathLike) -> bool:
    """Whether a live process holds ``directory``'s lock (False when it has no lock file)."""
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False


def claimant(directory: str | os.PathLike) -> int | None:
    """The pid recorded by the last process that claimed ``directory`` (it may be gone)."""
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        return _read_pid(fd)
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def ensure_directory(directory: str | os.PathLike, field: str = "out") -> Path:
    """``directory`` created if missing; a file in its place or a directory that cannot be created is a
    ``ConfigError`` naming ``field``."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise ConfigError(field, str(path), reason="is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(field, str(path), reason="a part of this path is a file, not a directory") from None
    except OSError as exc:
        raise ConfigError(field, str(path), reason=f"cannot create this directory ({exc.strerror or exc})") from None
    return path


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True
