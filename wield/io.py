"""Atomic, durable file writes and checked JSON reads.

A writer replaces a file through a temporary file in the same directory, ``fsync`` and an atomic rename
(then ``fsync`` of the directory), so a reader sees the old file or the new one, never a torn one, and a
renamed file survives a power cut. ``read_json`` / ``parse_json`` turn malformed, truncated or absurdly
nested JSON into a ``DataError`` naming the file and the line instead of a decoder traceback.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from wield.errors import DataError


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


def parse_json(text: str, where: str) -> Any:
    """``json.loads(text)``; malformed or truncated JSON, or nesting too deep to parse, is a ``DataError``
    naming ``where`` (a file name, "line 3 of FILE", ...)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None


def read_text(path: str | os.PathLike) -> tuple[bytes, str]:
    """The bytes of a file and its UTF-8 text (a byte-order mark dropped); a file that cannot be read, is
    not UTF-8 or holds only white space is a ``DataError`` naming it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise DataError(f"{path}: the file is empty")
    return data, text


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; a file that is not UTF-8 JSON is a ``DataError`` naming it."""
    return parse_json(read_text(path)[1], str(path))
