"""Kept copies: a cached base database with one configuration's indexes built, kept on disk for later trials.

Evaluation (``evaluation.py``) measures the full-index baseline beside every method's set, each on its own
in-memory copy of the base database. In a comparison every method's trial i measures it on the same test
workload, so the same 14-20 indexes were built six times per trial (about 1.1 s an index at 1,000,000
documents, 15 s a trial); the learners' random policy builds the same set for DQN and DQfD (12-15 indexes).
The first trial that builds such a copy writes it out here (its serialization: the bytes SQLite's backup API
would write), and the later ones load it (a fraction of a second) instead of building: the loaded copy is
the built one byte for byte, so its B-trees and statistics, hence its work, plans and index sizes, are the
same.

Where: a directory beside the cached base database, named by the base's recorded sha256
(``<base>.kept-<sha256[:16]>``, ``wield.cache.entry_beside``; those of an earlier content are deleted when
the base is rebuilt), one file per configuration named by a hash of the SQLite version and the configuration's
``CREATE INDEX`` statements in creation order (``kept_key``), with a record of its own sha256 and size
beside it (``<file>.json``), as the base database has. A copy is written under a temporary name and renamed
after its record, so a reader never sees half of one; a file that does not match its record, or whose
indexes are not the configuration's, is not used (the caller builds instead). At most ``KEPT_BYTES`` are kept
per base database: after each new copy the least recently used go first. ``wield cache clear`` removes the
directory with the base database's other entries.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Sequence

from wield.cache import remove_stale_partial_files
from wield.errors import DataError
from wield.io import MAX_INPUT_BYTES, atomic_write_json, read_bytes, read_json

KIND = "kept"  # the kind of entry beside the base database (wield.cache.entry_beside)
KEPT_BYTES = 4 << 30  # kept copies per base database (a comparison's five full-index and five random-policy
# copies of 1,000,000 documents fit: about 380 and 350 MB each)
PARTIAL_PREFIX = ".loading-"  # a copy being written (with the writer's pid: removed once it is gone)
_SUFFIX = ".sqlite"


def kept_key(statements: Sequence[str]) -> str:
    """The name of the copy whose indexes are made by ``statements`` (in creation order) on this SQLite."""
    body = {"sqlite": sqlite3.sqlite_version, "indexes": list(statements)}
    return hashlib.sha256(json.dumps(body).encode("utf-8")).hexdigest()[:32]


def kept_image(directory: Path, key: str) -> bytes | None:
    """The kept copy ``key``'s content when it is there and matches its record, else None. A copy read is
    marked as used (its modification time), so eviction keeps it longest."""
    path = directory / f"{key}{_SUFFIX}"
    image = verified_image(path, KEPT_BYTES)
    if image is not None:
        try:
            os.utime(path)
        except OSError:
            pass
    return image


def verified_image(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes | None:
    """The content of the cached database file ``path`` (a base database or a kept copy) when it matches its
    record (``record_path``: its bytes and sha256), else None: the file or its record missing or unreadable,
    a symbolic link (never followed: a cache directory may hold a planted one), anything not a regular file,
    or over ``max_bytes``."""
    try:
        record = read_json(record_path(path))
        image = read_bytes(path, follow_symlinks=False, max_bytes=max_bytes)
    except (OSError, ValueError, DataError):
        return None
    if not isinstance(record, dict) or record.get("bytes") != len(image) or \
            record.get("sha256") != hashlib.sha256(image).hexdigest():
        return None
    return image


def keep_copy(directory: Path, key: str, conn: sqlite3.Connection, limit: int = KEPT_BYTES) -> bool:
    """Write the database of ``conn`` (an in-memory one: its serialization is what a backup to disk would
    write) out as the kept copy ``key`` (replacing one that did not load), then evict the least recently used
    copies beyond ``limit`` bytes. False where nothing was kept: the copy alone exceeds ``limit``, or the
    directory cannot be written (a cache that cannot be written costs later trials time, never results)."""
    path = directory / f"{key}{_SUFFIX}"
    try:
        image = conn.serialize()
    except sqlite3.Error:
        return False
    if len(image) > limit:
        return False
    try:
        directory.mkdir(parents=True, exist_ok=True)
        remove_stale_partial_files(directory, PARTIAL_PREFIX)
        fd, partial = tempfile.mkstemp(prefix=f"{PARTIAL_PREFIX}{os.getpid()}-", suffix=_SUFFIX, dir=directory)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(image)
        atomic_write_json(record_path(path), {"sha256": hashlib.sha256(image).hexdigest(), "bytes": len(image)})
        os.replace(partial, path)
    except OSError:
        return False
    finally:
        Path(partial).unlink(missing_ok=True)
    _evict(directory, limit, keep=path)
    return True


def _evict(directory: Path, limit: int, keep: Path) -> None:
    """Remove the least recently used kept copies (and their records) until at most ``limit`` bytes are kept."""
    copies = []
    for path in directory.glob(f"*{_SUFFIX}"):
        if path.name.startswith("."):
            continue
        try:
            status = path.lstat()
        except OSError:
            continue
        copies.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in copies)
    for _, size, path in sorted(copies):
        if total <= limit:
            break
        if path == keep:
            continue
        record_path(path).unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        total -= size


def record_path(path: Path) -> Path:
    """The record of a cached database file's content (sha256, bytes) beside it: ``<file>.json``."""
    return path.with_name(path.name + ".json")
