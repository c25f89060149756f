"""Collections: named, typed columns of documents (generated or loaded from CSV / JSON files)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from wield.errors import ConfigError, DataError

KINDS = ("int", "float", "text")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class FieldSpec:
    """One field of a collection: its name and kind (int, float or text)."""

    name: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError("field.kind", self.kind, KINDS)
        if not _IDENTIFIER.match(self.name):
            raise ConfigError("field.name", self.name,
                              reason="field names must be letters, digits and underscores, not starting with a digit")


class Collection:
    """Documents stored column-wise: ``columns[name]`` is a numpy array, all of the same length."""

    def __init__(self, name: str, fields: Sequence[FieldSpec], columns: Mapping[str, np.ndarray],
                 source: Mapping[str, Any] | None = None) -> None:
        if not _IDENTIFIER.match(name):
            raise ConfigError("collection.name", name, reason="letters, digits and underscores only")
        self.name = name
        self.fields = tuple(fields)
        self.columns = {f.name: np.asarray(columns[f.name]) for f in self.fields}
        lengths = {len(c) for c in self.columns.values()}
        if len(lengths) > 1:
            raise DataError(f"collection {name!r}: columns have different lengths {sorted(lengths)}")
        self.source = dict(source or {})
        self._by_name = {f.name: f for f in self.fields}
        self._fingerprint: str | None = None
        self._distinct: dict[str, int] = {}

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> FieldSpec:
        if name not in self._by_name:
            raise ConfigError("field", name, self.field_names)
        return self._by_name[name]

    def rows(self) -> Iterator[tuple]:
        """Documents as tuples of Python values in field order."""
        return zip(*(self.columns[f.name].tolist() for f in self.fields))

    def distinct_count(self, name: str) -> int:
        if name not in self._distinct:
            self._distinct[name] = int(len(np.unique(self.columns[self.field(name).name])))
        return self._distinct[name]

    def sample_rows(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(0, len(self), size=n)

    def fingerprint(self) -> str:
        """sha256 over the field specs and every column's content (stable across runs and machines)."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            digest.update(json.dumps([[f.name, f.kind] for f in self.fields]).encode())
            for f in self.fields:
                column = self.columns[f.name]
                if f.kind == "text":
                    digest.update("\x00".join(column.tolist()).encode("utf-8"))
                else:
                    digest.update(np.ascontiguousarray(column.astype("<i8" if f.kind == "int" else "<f8")).tobytes())
            self._fingerprint = digest.hexdigest()[:20]
        return self._fingerprint


def _infer_column(name: str, values: list, where: str) -> tuple[FieldSpec, np.ndarray]:
    for i, value in enumerate(values):
        if value is None or value == "":
            raise DataError(f"{where}: record {i + 1} has no value for field {name!r} (empty values are not allowed)")
    if all(isinstance(v, bool) or isinstance(v, int) for v in values):
        return FieldSpec(name, "int"), np.array([int(v) for v in values], dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return FieldSpec(name, "float"), np.array(values, dtype=np.float64)
    if all(isinstance(v, str) for v in values):
        for parse, kind, dtype in ((int, "int", np.int64), (float, "float", np.float64)):
            try:
                return FieldSpec(name, kind), np.array([parse(v) for v in values], dtype=dtype)
            except ValueError:
                continue
        return FieldSpec(name, "text"), np.array(values, dtype=object)
    kinds = sorted({type(v).__name__ for v in values})
    raise DataError(f"{where}: field {name!r} mixes value types {kinds}; use one type per field")


def _check_names(names: Sequence[str], where: str) -> None:
    for name in names:
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise DataError(f"{where}: field name {name!r} is not a valid identifier "
                            "(letters, digits and underscores, not starting with a digit)")
    if len(set(names)) != len(names):
        raise DataError(f"{where}: repeated field names in {list(names)}")


def _read_csv(path: Path) -> tuple[list[str], list[list]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header:
            raise DataError(f"{path}: the file is empty (expected a header row)")
        _check_names(header, str(path))
        records = []
        for line_number, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(f"{path}: line {line_number} has {len(row)} values, the header has {len(header)}")
            records.append(row)
    return header, records


def _read_json(path: Path) -> tuple[list[str], list[list]]:
    text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise DataError(f"{path}: the file is empty")
    try:
        documents = json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON or JSON lines ({exc})") from exc
    if not documents:
        raise DataError(f"{path}: no documents")
    header = None
    records = []
    for i, document in enumerate(documents, start=1):
        if not isinstance(document, dict):
            raise DataError(f"{path}: record {i} is a {type(document).__name__}, expected an object")
        if header is None:
            header = list(document)
            _check_names(header, str(path))
        if set(document) != set(header):
            missing = sorted(set(header) - set(document))
            extra = sorted(set(document) - set(header))
            raise DataError(f"{path}: record {i} has different fields than record 1"
                            f" (missing {missing}, extra {extra})")
        records.append([document[k] for k in header])
    return header, records


def load_collection(path: str | Path, name: str | None = None) -> Collection:
    """Load documents from a CSV file with a header row, a JSON array of objects, or JSON lines."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        header, records = _read_csv(path)
    elif suffix in (".json", ".jsonl", ".ndjson"):
        header, records = _read_json(path)
    else:
        raise ConfigError("collection", str(path), (".csv", ".json", ".jsonl"), reason="unknown file type")
    if not records:
        raise DataError(f"{path}: the file has a header but no documents")
    fields, columns = [], {}
    for j, field_name in enumerate(header):
        spec, column = _infer_column(field_name, [r[j] for r in records], str(path))
        fields.append(spec)
        columns[field_name] = column
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:20]
    stem = re.sub(r"\W", "_", name or path.stem) or "collection"
    if stem[0].isdigit():
        stem = "c_" + stem
    return Collection(stem, fields, columns, {"file": str(path), "sha256": digest})
