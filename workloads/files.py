"""Reading user collections from files: CSV/TSV with a header row, a JSON array of objects, or JSON lines.

The readers return field specs and typed numpy columns; ``load_collection`` wraps them in a Collection. Every problem is a DataError naming the file, the line (or record) and the field, because a
user will fix the file, not the code. Kinds are inferred per column: ``int`` when every value is an integer,
``float`` when every value is numeric, ``text`` otherwise. Missing values (empty, ``null``, ``\\N``) are
errors: the collection becomes a SQL table whose columns hold no NULLs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wield.errors import DataError, shown
from wield.io import parse_json, read_text
from workloads.collection import IDENTIFIER_RULE, MAX_FIELDS, MAX_IDENTIFIER, Collection, FieldSpec, case_clash, is_identifier

MISSING_MARKERS = ("", "\\N")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INT = r"\s*[+-]?[0-9]+\s*"
_NUMBER = r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)\s*"
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


class _Records:
    """Parsed rows (lists of raw values in header order) and a human label ("line 7") for each."""

    def __init__(self, path: Path, header: list[str], rows: list[list[Any]], labels: list[str]) -> None:
        self.path, self.header, self.rows, self.labels = path, header, rows, labels

    def error(self, index: int, field: str, problem: str) -> DataError:
        return DataError(f"{self.path}: {self.labels[index]}, field {field!r}: {problem}")


def read_collection_file(path: Path) -> tuple[list[FieldSpec], dict[str, np.ndarray], dict[str, str]]:
    """Fields, typed columns and ``{"format": "csv"|"tsv"|"json"|"jsonl", "sha256": ...}`` of a file."""
    data, text = read_text(path)
    suffix = path.suffix.lower()
    if suffix in _JSON_SUFFIXES or (suffix not in (".csv", ".tsv") and text.lstrip()[:1] in "[{"):
        fmt = "json" if text.lstrip().startswith("[") else "jsonl"
        records = _read_json_array(path, text) if fmt == "json" else _read_json_lines(path, text)
    else:
        fmt = "tsv" if suffix == ".tsv" else "csv"
        records = _read_delimited(path, text, "\t" if fmt == "tsv" else ",")
    fields, columns = [], {}
    for j, name in enumerate(records.header):
        kind, column = _infer_column(records, j)
        fields.append(FieldSpec(name, kind))
        columns[name] = column
    return fields, columns, {"format": fmt, "sha256": hashlib.sha256(data).hexdigest()}


def _check_header(path: Path, header: list, where: str) -> None:
    if len(header) > MAX_FIELDS:
        raise DataError(f"{path}: {where}: {len(header):,} fields; a collection has at most {MAX_FIELDS:,} "
                        "(PostgreSQL's columns per table)")
    seen: set[str] = set()
    for name in header:
        if not is_identifier(name):
            raise DataError(f"{path}: {where}: field name {shown(name)} is not a valid identifier ({IDENTIFIER_RULE})")
        if name in seen:
            raise DataError(f"{path}: {where}: field name {shown(name)} appears twice")
        seen.add(name)
    clash = case_clash(header)
    if clash:
        raise DataError(f"{path}: {where}: field names {clash[0]!r} and {clash[1]!r} differ only in case, which SQL "
                        "engines ignore; rename one")


def _read_delimited(path: Path, text: str, delimiter: str) -> _Records:
    # strict: a quote that is never closed is an error, not a field that swallows the rest of the file
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    started = 1  # the line the record being read starts on (a quoted field may span lines)
    try:
        header = [name.strip(" \t") for name in next(reader)]  # spaces after commas; a newline is refused
        _check_header(path, header, "line 1 (header)")
        rows, labels = [], []
        started = reader.line_num + 1
        for row in reader:
            label = f"line {started}"
            started = reader.line_num + 1
            if not row:
                continue  # a blank line
            if len(row) != len(header):
                raise DataError(f"{path}: {label} has {len(row)} value(s), "
                                f"the header has {len(header)} ({', '.join(header)})")
            rows.append(row)
            labels.append(label)
    except csv.Error as exc:
        problem = ("a quoted value is never closed (unterminated quote)" if "unexpected end of data" in str(exc)
                   else f"malformed CSV ({exc})")
        raise DataError(f"{path}: line {started}: {problem}") from None
    if not rows:
        raise DataError(f"{path}: the file has a header but no rows")
    return _Records(path, header, rows, labels)


def _read_json_array(path: Path, text: str) -> _Records:
    documents = parse_json(text, str(path))
    if not isinstance(documents, list):
        raise DataError(f"{path}: expected a JSON array of objects, found a {type(documents).__name__}")
    return _records_from_documents(path, documents, [f"record {i}" for i in range(1, len(documents) + 1)])


def _read_json_lines(path: Path, text: str) -> _Records:
    documents, labels = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {number}: invalid JSON ({exc.msg}); expected one object per line "
                            "or a JSON array of objects") from None
        except RecursionError:
            raise DataError(f"{path}: line {number}: JSON nested too deeply to read") from None
        labels.append(f"line {number}")
    return _records_from_documents(path, documents, labels)


def _records_from_documents(path: Path, documents: list, labels: list[str]) -> _Records:
    if not documents:
        raise DataError(f"{path}: no documents")
    header: list[str] = []
    rows = []
    for document, label in zip(documents, labels):
        if not isinstance(document, dict):
            raise DataError(f"{path}: {label} is a {type(document).__name__}, expected an object "
                            "(files hold a JSON array of objects, or one object per line)")
        if not header:
            header = list(document)
            if not header:
                raise DataError(f"{path}: {label} is an empty object")
            _check_header(path, header, label)
        elif document.keys() != set(header):
            missing = [k for k in header if k not in document]
            extra = [k for k in document if k not in header]
            raise DataError(f"{path}: {label} has different fields than {labels[0]}: "
                            f"missing {missing}, extra {extra}")
        rows.append([document[k] for k in header])
    return _Records(path, header, rows, labels)


def _infer_column(records: _Records, j: int) -> tuple[str, np.ndarray]:
    name = records.header[j]
    values = [row[j] for row in records.rows]
    for i, value in enumerate(values):
        if value is None or (isinstance(value, str) and value.strip() in MISSING_MARKERS):
            raise records.error(i, name, "missing value (every field needs a value; NULLs are not allowed)")
        if isinstance(value, (list, dict)):
            raise records.error(i, name, f"nested {type(value).__name__} values are not supported")
    if all(isinstance(v, str) for v in values):
        strings = pd.Series(values, dtype=object)
        if strings.str.fullmatch(_INT).all():
            integers = [int(v) for v in values]
            _check_int64(records, j, integers)
            return "int", np.array(integers, dtype=np.int64)
        if strings.str.fullmatch(_NUMBER, case=False).all():
            return "float", _finite(records, j, np.array(values).astype(np.float64))
        return "text", np.array(values, dtype=object)
    if all(isinstance(v, (int, float)) for v in values):  # JSON numbers (bools count as 0/1)
        if all(isinstance(v, int) for v in values):
            _check_int64(records, j, values)
            return "int", np.array(values, dtype=np.int64)
        return "float", _finite(records, j, np.array(values, dtype=np.float64))
    return "text", np.array([v if isinstance(v, str) else json.dumps(v) for v in values], dtype=object)


def _check_int64(records: _Records, j: int, values: list[int]) -> None:
    """Integers must fit in 64 bits (the engines' integer columns): a larger one is an error, not a float
    that silently loses digits."""
    for i, value in enumerate(values):
        if not INT64_MIN <= value <= INT64_MAX:
            raise records.error(i, records.header[j], f"{value} is beyond the 64-bit integer range "
                                                      f"({INT64_MIN} to {INT64_MAX}), which integer columns hold")


def _finite(records: _Records, j: int, column: np.ndarray) -> np.ndarray:
    bad = np.flatnonzero(~np.isfinite(column))
    if len(bad):
        raise records.error(int(bad[0]), records.header[j],
                            f"{records.rows[bad[0]][j]!r} is not a finite number (missing values are not allowed)")
    return column


def collection_name(path: Path, name: str | None) -> str:
    """``name``, or the file's stem made into an identifier ("my-data.csv" -> "my_data")."""
    if name is not None:
        return name
    stem = re.sub(r"\W", "_", path.stem, flags=re.ASCII) or "collection"
    return (f"c_{stem}" if stem[0].isdigit() else stem)[:MAX_IDENTIFIER]


def load_collection(path: str | os.PathLike, name: str | None = None) -> Collection:
    """A collection from a CSV/TSV file with a header row, a JSON array of objects, or JSON lines.

    ``name`` (the table name in SQL engines) defaults to the file's stem made into an identifier. Malformed
    files raise DataError naming the file, line or record, and field.
    """
    path = Path(path)
    fields, columns, details = read_collection_file(path)
    return Collection(collection_name(path, name), fields, columns, {"file": str(path), **details})
