"""Atomic, durable file writes and checked JSON reads.

A writer replaces a file through a temporary file in the same directory, ``fsync`` and an atomic rename
(then ``fsync`` of the directory), so a reader sees the old file or the new one, never a torn one, and a
renamed file survives a power cut. ``read_json`` / ``parse_json`` turn malformed, truncated or absurdly
nested JSON, and an object that names a key twice, into a ``DataError`` naming the file and the line
instead of a decoder traceback or a silently dropped value.

Every reader opens the file without blocking (``O_NONBLOCK``), checks with ``fstat`` that it is a regular
file before reading a byte (a FIFO would hang the reader, ``/dev/zero`` would fill the memory, a directory
is not a file) and reads at most a size cap. A record's files (``read_json``, ``read_record_bytes``) are
never reached through a symbolic link: a link planted in a record is refused (``O_NOFOLLOW``), not
followed to whatever it names.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from wield.errors import DataError, shown

# The most a record's JSON file may hold (a summary or an evaluation is kilobytes; a 10,000-query
# evaluation a few megabytes) and the most an input file (a collection, a trace) may hold.
MAX_RECORD_BYTES = 64 * 2**20
MAX_INPUT_BYTES = 4 * 2**30


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the permissions open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_directory(path.parent)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def fsync_directory(directory: str | os.PathLike) -> None:
    """Make a rename in ``directory`` durable (best effort: some file systems cannot fsync a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, paths, sets and tuples to plain JSON types."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n")


def _refuse_duplicate_keys(where: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise DataError(f"{where}: the key {shown(key)} appears twice in one object (which one is "
                                "meant cannot be told; remove one)")
            result[key] = value
        return result
    return hook


def parse_json(text: str, where: str) -> Any:
    """``json.loads(text)``; malformed or truncated JSON, nesting too deep to parse, or an object naming a
    key twice is a ``DataError`` naming ``where`` (a file name, "line 3 of FILE", ...)."""
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicate_keys(where))
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def input_file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as an input file (a collection, a trace), for a ``ConfigError``'s reason:
    "no such file", "is a FIFO (named pipe), not a regular file", ...; None for a regular file. Links are
    followed (an input is the user's own file); nothing is opened, so a FIFO never blocks."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read the file ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), None)
    return f"is {kind}, not a regular file" if kind else "not a regular file"


def read_bytes(path: str | os.PathLike, *, follow_symlinks: bool = True, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, read without blocking on anything else: a FIFO, a device, a
    socket or a directory, a file over ``max_bytes``, a symbolic link when ``follow_symlinks`` is False, or a
    file that cannot be opened is a ``DataError`` naming it (nothing is read from it)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise DataError(f"{path}: is a symbolic link; a record's files are read only as the files "
                            "themselves, never through a link") from None
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise DataError(f"{path}: is {kind}, not a regular file")
        if info.st_size > max_bytes:
            raise DataError(f"{path}: {info.st_size:,} bytes, more than the {max_bytes:,} such a file may hold")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:  # it grew while being read
                raise DataError(f"{path}: more than the {max_bytes:,} bytes such a file may hold")
        return b"".join(chunks)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def sha256_record_file(path: str | os.PathLike) -> str:
    """The sha256 of one file of a record, read like ``read_record_bytes`` (a regular file, never through a
    symbolic link, without blocking on a FIFO or a device) but streamed, with no size cap (a model file may
    be large); anything else is a ``DataError`` naming it."""
    import hashlib

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(f"{path}: is a symbolic link; a record's files are read only as the files "
                            "themselves, never through a link") from None
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise DataError(f"{path}: is {kind}, not a regular file")
        os.set_blocking(fd, True)
        digest = hashlib.sha256()
        for chunk in iter(lambda: os.read(fd, 1 << 20), b""):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_record_bytes(path: str | os.PathLike, max_bytes: int = MAX_RECORD_BYTES) -> bytes:
    """The bytes of one file of a record (a run record, an experiment, a cache entry): a regular file,
    never reached through a symbolic link, at most ``max_bytes`` (see ``read_bytes``)."""
    return read_bytes(path, follow_symlinks=False, max_bytes=max_bytes)


def read_text(path: str | os.PathLike, *, follow_symlinks: bool = True,
              max_bytes: int = MAX_INPUT_BYTES) -> tuple[bytes, str]:
    """The bytes of a regular file and its UTF-8 text (a byte-order mark dropped); a file that cannot be
    read (see ``read_bytes``), is not UTF-8 or holds only white space is a ``DataError`` naming it."""
    data = read_bytes(path, follow_symlinks=follow_symlinks, max_bytes=max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise DataError(f"{path}: the file is empty")
    return data, text


def read_json(path: str | os.PathLike, *, follow_symlinks: bool = False, max_bytes: int = MAX_RECORD_BYTES) -> Any:
    """The JSON document in ``path``, a record's file by default (a regular file of at most
    ``MAX_RECORD_BYTES``, not a symbolic link); a file that is not UTF-8 JSON is a ``DataError`` naming it."""
    return parse_json(read_text(path, follow_symlinks=follow_symlinks, max_bytes=max_bytes)[1], str(path))
