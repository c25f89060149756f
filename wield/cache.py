"""The cache root: where case studies keep what is expensive to rebuild and safe to delete.

``cache_root()`` is ``$WIELD_CACHE_DIR`` or ``~/.cache/wield``; every case study keeps its caches under it
(the indexing case study's loaded base databases and their columns as arrays, placement's traced graphs and
operation costs). Nothing in it is a result: deleting an entry only costs the time to rebuild it.
``wield cache list`` shows the entries with their sizes and ``wield cache clear`` removes them (nothing
evicts them otherwise).

The core knows no case study: an entry is any file or directory directly under the root. Hidden files are
locks and half-built files; the latter carry the pid of the process building them
(``.loading-<pid>-...``) and ``stale_partial_files`` finds those whose process is gone.

The root is a directory Wield writes into and deletes in, so it gets the ownership policy of every such
directory (``wield.workflows.ownership.check_path``: no link of another user's in its path, no directory on
it writable by another user unless sticky, the root itself yours or root's). Wield marks a root it creates
or uses with a ``CACHEDIR.TAG`` (the Cache Directory Tagging convention, naming Wield), and
``clear_cache`` removes only what is Wield's: entries of a marked root whose names are Wield's
(``ENTRY_NAME``) and that are plain files or directories of your own, never a link.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from wield.errors import ConfigError
from wield.workflows.ownership import check_owner, check_path, ensure_directory, pid_alive

CACHE_VARIABLE = "WIELD_CACHE_DIR"
MARKER = "CACHEDIR.TAG"
MARKER_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
MARKER_TEXT = (f"{MARKER_SIGNATURE}\n# This file is written by Wield: this directory is Wield's cache "
               "('wield cache list|clear'); every entry in it can be rebuilt.\n")
ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}\Z")  # the names Wield gives its entries
_OWNER_PID = re.compile(r"-(\d+)-")
_PARTIAL = re.compile(r"\.loading-\d+-[A-Za-z0-9._+-]{0,240}\Z")  # a half-built file (see LOADING_PREFIX users)


def cache_root(cache_dir: str | os.PathLike | None = None, *, create: bool = False) -> Path:
    """``cache_dir`` when given (a case study's ``--cache-dir``), else ``$WIELD_CACHE_DIR``, else
    ``~/.cache/wield``, checked under the ownership policy (``check_path``; a root that exists must belong to
    you or root). With ``create`` it is made when missing and marked as Wield's (``CACHEDIR.TAG``). A root
    that fails the policy is a ``ConfigError`` naming where it came from."""
    if cache_dir:
        root, field = Path(cache_dir), "cache_dir"
    elif os.environ.get(CACHE_VARIABLE):
        root, field = Path(os.environ[CACHE_VARIABLE]), CACHE_VARIABLE
    else:
        root, field = Path.home() / ".cache" / "wield", "cache root"
    check_path(root, field)
    if create:
        ensure_directory(root, field, owned=True)
        _mark(root)
    elif os.path.isdir(root):
        check_owner(root, field)
    return root


def _mark(root: Path) -> None:
    """Write ``CACHEDIR.TAG`` into ``root`` when it has none (never through a link)."""
    if is_marked(root):
        return
    try:
        fd = os.open(root / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return  # another process marked it meanwhile, or a file of that name is there: is_marked decides
    except OSError:
        return  # a read-only or full cache: the write that follows says so (a failure of the machine, exit 3)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(MARKER_TEXT)
    except OSError:
        os.unlink(root / MARKER)  # half a marker is none: 'wield cache clear' will not take it for Wield's


def is_marked(root: str | os.PathLike) -> bool:
    """Whether ``root`` holds Wield's ``CACHEDIR.TAG`` (a plain file, not a link, that names Wield)."""
    from wield.io import read_bytes

    try:
        text = read_bytes(Path(root) / MARKER, follow_symlinks=False, max_bytes=4096).decode("utf-8", "replace")
    except (OSError, ConfigError, ValueError):
        return False
    return text.startswith(MARKER_SIGNATURE) and "written by Wield" in text


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
    """Every entry of the cache root, largest first (lock files and the marker left out)."""
    root = cache_root(root)
    if not root.is_dir():
        return []
    entries = []
    for path in root.iterdir():
        if path.name.endswith(".lock") or path.name == MARKER:
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


def entry_beside(base: Path, kind: str, sha256: str) -> Path:
    """The entry of ``kind`` (what a case study derives from the cached file ``base`` and keeps beside it,
    e.g. a database's columns) for the content of ``base`` with this sha256."""
    return base.with_name(f"{base.name}.{kind}-{sha256[:16]}")


def remove_other_entries_beside(base: Path, kind: str, sha256: str) -> None:
    """Remove the entries of ``kind`` kept beside ``base`` for any other content of it (when it is rebuilt)."""
    keep = entry_beside(base, kind, sha256)
    for stale in base.parent.glob(f"{base.name}.{kind}-*"):
        if stale != keep:
            shutil.rmtree(stale, ignore_errors=True)


def write_npz_entry(path: Path, arrays: Mapping[str, Any], partial_prefix: str) -> None:
    """Store ``arrays`` as the npz cache entry ``path``, atomically: written to ``<partial_prefix><pid>-*.npz``
    beside it (what ``remove_stale_partial_files`` clears after a crash), then renamed. A cache that cannot be
    written costs later processes time, not results, so a failure leaves no entry and raises nothing."""
    import tempfile

    import numpy as np

    try:
        fd, partial = tempfile.mkstemp(prefix=f"{partial_prefix}{os.getpid()}-", suffix=".npz", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(partial, path)
    except OSError:
        Path(partial).unlink(missing_ok=True)


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


def is_wields(entry: CacheEntry) -> bool:
    """Whether ``entry`` is one Wield made: a name Wield gives (or a half-built file's), a plain file or a
    real directory (not a link), owned by you or root."""
    if not (ENTRY_NAME.match(entry.name) or _PARTIAL.match(entry.name)):
        return False
    try:
        info = entry.path.lstat()
    except OSError:
        return False
    return (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)) and info.st_uid in (os.geteuid(), 0)


def clearable(names: Iterable[str] = (), root: str | os.PathLike | None = None) -> list[CacheEntry]:
    """The entries ``clear_cache`` would remove: the named ones (every entry of Wield's when none is named).
    The root must pass the ownership policy and carry Wield's marker, and a named entry must exist and be
    Wield's (``is_wields``); otherwise a ``ConfigError``."""
    root = cache_root(root)
    names = list(names)
    if not os.path.isdir(root):
        if names:
            raise ConfigError("entry", names[0], "none: the cache is empty")
        return []
    if not is_marked(root):
        raise ConfigError("cache root", str(root), reason=(
            f"holds no {MARKER} written by Wield, so it is not (or not yet) Wield's cache; nothing was removed "
            "(Wield marks its cache when a run creates or uses it)"))
    entries = {entry.name: entry for entry in cache_entries(root)}
    for name in names:
        if name not in entries:
            raise ConfigError("entry", name, sorted(entries) or "none: the cache is empty")
        if not is_wields(entries[name]):
            raise ConfigError("entry", name, reason="is not an entry of Wield's (a link, a foreign name or "
                                                    "another user's file); Wield leaves it alone")
    return [entries[name] for name in names] if names else [e for e in entries.values() if is_wields(e)]


def clear_cache(names: Iterable[str] = (), root: str | os.PathLike | None = None) -> list[CacheEntry]:
    """Remove ``clearable(names, root)``; returns what was removed. An entry that is not Wield's is never
    removed, nor a file being built by a live process."""
    removed = []
    for entry in clearable(names, root):
        name = entry.name
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
