"""The cache root: where case studies keep what is expensive to rebuild and safe to delete.

``cache_root()`` is ``$WIELD_CACHE_DIR`` or ``~/.cache/wield``; every case study keeps its caches under it
(the indexing case study's loaded base databases and their columns as arrays, placement's traced graphs and
operation costs). Nothing in it is a result: deleting an entry only costs the time to rebuild it.
``wield cache list`` shows the entries with their sizes and ``wield cache clear`` removes them (nothing
evicts them otherwise).

The core knows no case study: an entry is any file or directory directly under the root. Hidden files are
locks and half-built files; the latter carry the pid of the process building them
(``.loading-<pid>-...``) and ``stale_partial_files`` finds those whose process is gone.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from wield.errors import ConfigError
from wield.workflows.ownership import pid_alive

CACHE_VARIABLE = "WIELD_CACHE_DIR"
_OWNER_PID = re.compile(r"-(\d+)-")


def cache_root() -> Path:
    """``$WIELD_CACHE_DIR``, else ``~/.cache/wield``."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "wield")


@dataclass(frozen=True)
class CacheEntry:
    """A file or directory directly under the cache root."""

    name: str
    path: Path
    bytes: int
    modified: float
    directory: bool

    def describe(self) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.modified))
        return f"{human_size(self.bytes):>9s}  {stamp}  {self.name}{'/' if self.directory else ''}"


@contextmanager
def exclusive_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on the file ``path`` (created if missing) while the block runs:
    processes that set up the same cached file take turns instead of racing."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _size(path: Path) -> int:
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_size
        return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_dir())
    except OSError:
        return 0


def cache_entries(root: str | os.PathLike | None = None) -> list[CacheEntry]:
    """Every entry of the cache root, largest first (lock files left out)."""
    root = Path(root) if root else cache_root()
    if not root.is_dir():
        return []
    entries = []
    for path in root.iterdir():
        if path.name.endswith(".lock"):
            continue
        try:
            modified = path.lstat().st_mtime
        except OSError:
            continue
        entries.append(CacheEntry(path.name, path, _size(path), modified, path.is_dir() and not path.is_symlink()))
    return sorted(entries, key=lambda e: (-e.bytes, e.name))


def stale_partial_files(directory: str | os.PathLike, prefix: str) -> list[Path]:
    """Files ``<prefix><pid>-...`` in ``directory`` whose process ``pid`` is gone (left by a killed
    process that was writing them)."""
    found = []
    directory = Path(directory)
    try:
        candidates = list(directory.glob(f"{prefix}*"))
    except OSError:
        return []
    for path in candidates:
        match = _OWNER_PID.match(path.name[len(prefix) - 1:])
        if match and not pid_alive(int(match.group(1))):
            found.append(path)
    return found


def remove_stale_partial_files(directory: str | os.PathLike, prefix: str) -> int:
    """Delete ``stale_partial_files``; returns how many (files that vanish meanwhile are skipped)."""
    removed = 0
    for path in stale_partial_files(directory, prefix):
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def clear_cache(names: Iterable[str] = (), root: str | os.PathLike | None = None) -> list[CacheEntry]:
    """Remove the named entries (every entry when none is named); returns what was removed. A file being
    built by a live process is left alone."""
    root = Path(root) if root else cache_root()
    entries = {entry.name: entry for entry in cache_entries(root)}
    names = list(names)
    for name in names:
        if name not in entries:
            raise ConfigError("entry", name, sorted(entries) or "none: the cache is empty")
    removed = []
    for name in names or list(entries):
        entry = entries[name]
        match = _OWNER_PID.match(name[name.find("-"):]) if name.startswith(".") else None
        if match and pid_alive(int(match.group(1))):
            continue  # being built right now
        try:
            if entry.directory:
                shutil.rmtree(entry.path)
            else:
                entry.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise ConfigError("entry", name, reason=f"cannot remove {entry.path} ({exc.strerror or exc})") from None
        removed.append(entry)
    return removed
