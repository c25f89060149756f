"""Collection: an immutable, column-oriented document collection (generated or imported) with typed fields.

Every column is a numpy array of one kind: ``int`` (int64), ``float`` (float64) or ``text`` (object array of
``str``). There are no missing values. A collection knows how it was made (``source``) and has a stable
content fingerprint, so caches of loaded databases and serialised workloads can refer to it exactly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

import numpy as np

from wield.errors import ConfigError, DataError

FIELD_KINDS = ("int", "float", "text")
MAX_IDENTIFIER = 63  # PostgreSQL keeps 63 bytes of a name (NAMEDATALEN - 1) and cuts the rest silently
IDENTIFIER_RULE = f"letters, digits and underscores, not starting with a digit, at most {MAX_IDENTIFIER} characters"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: "$" would let a trailing newline through
# The most fields a collection may have: PostgreSQL's 1,600 columns a table, SQLite's 2,000 by default.
MAX_FIELDS = 1600


def is_identifier(name: object) -> bool:
    """True when ``name`` can be a SQL column/table name: letters, digits, underscore, no leading digit, at
    most ``MAX_IDENTIFIER`` characters."""
    return isinstance(name, str) and len(name) <= MAX_IDENTIFIER and bool(_IDENTIFIER.fullmatch(name))


def case_clash(names: Iterable[str]) -> tuple[str, str] | None:
    """The first two of ``names`` that differ only in case (``a`` and ``A``: one column to SQLite, whose names
    ignore case), else None."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            return other, name
    return None


@dataclass(frozen=True)
class FieldSpec:
    """A field of a collection: its name (a valid identifier) and kind ("int", "float" or "text")."""

    name: str
    kind: str

    def __post_init__(self) -> None:
        if not is_identifier(self.name):
            raise ConfigError("field.name", self.name, reason=f"a field name must be {IDENTIFIER_RULE}")
        if self.kind not in FIELD_KINDS:
            raise ConfigError(f"field '{self.name}'.kind", self.kind, FIELD_KINDS)


class Collection:
    """Named, typed, equal-length columns. Columns are read-only views; treat a collection as immutable."""

    def __init__(self, name: str, fields: Iterable[FieldSpec], columns: Mapping[str, np.ndarray],
                 source: dict | None = None) -> None:
        if not is_identifier(name):
            raise ConfigError("collection.name", name, reason=f"a collection name must be {IDENTIFIER_RULE}")
        self.name = name
        self.fields: tuple[FieldSpec, ...] = tuple(fields)
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise ConfigError("collection.fields", duplicate, reason="field names must be unique")
        clash = case_clash(names)
        if clash:
            raise ConfigError("collection.fields", list(clash), reason="field names must differ in more than case "
                                                                       "(SQL engines ignore the case of names)")
        if len(names) > MAX_FIELDS:
            raise ConfigError("collection.fields", len(names), reason=f"a collection has at most {MAX_FIELDS:,} "
                                                                      "fields (PostgreSQL's columns per table)")
        if set(columns) != set(names):
            unknown = sorted(set(columns) ^ set(names))
            raise ConfigError("collection.columns", unknown, names, reason="columns must match the fields exactly")
        self.columns: dict[str, np.ndarray] = {}
        length = None
        for spec in self.fields:
            column = np.asarray(columns[spec.name])
            if column.ndim != 1:
                raise ConfigError(f"column '{spec.name}'", column.shape, reason="columns must be one-dimensional")
            column = self._typed(spec, column)
            if length is not None and len(column) != length:
                raise ConfigError(f"column '{spec.name}'", len(column),
                                  reason=f"every column must have {length} values")
            length = len(column)
            view = column.view()
            view.flags.writeable = False
            self.columns[spec.name] = view
        self.source: dict = dict(source or {})
        self._length = length or 0
        self._distinct: dict[str, int] = {}
        self._fingerprint: str | None = None

    @staticmethod
    def _typed(spec: FieldSpec, column: np.ndarray) -> np.ndarray:
        accepted = {"text": "OU", "int": "iub", "float": "iuf"}[spec.kind]
        if column.dtype.kind not in accepted:
            raise ConfigError(f"column '{spec.name}'.dtype", str(column.dtype),
                              reason=f"a {spec.kind} column cannot hold {column.dtype} values")
        if spec.kind == "text":
            return column.astype(object, copy=False)
        if spec.kind == "int":
            return column.astype(np.int64, copy=False)
        column = column.astype(np.float64, copy=False)
        if not np.isfinite(column).all():
            raise DataError(f"column '{spec.name}' holds NaN or infinite values (missing values are not allowed)")
        return column

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        kinds = ", ".join(f"{f.name}:{f.kind}" for f in self.fields)
        return f"Collection({self.name!r}, {self._length} documents, [{kinds}])"

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> FieldSpec:
        """The spec of field ``name``; an unknown name raises ConfigError listing the fields."""
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise ConfigError("field", name, self.field_names, reason=f"not a field of collection '{self.name}'")

    def rows(self) -> Iterator[tuple]:
        """Rows as tuples of Python int/float/str in field order (fast: one ``tolist`` per column)."""
        return zip(*(self.columns[name].tolist() for name in self.field_names))

    def distinct_count(self, name: str) -> int:
        """Number of distinct values of field ``name`` (cached)."""
        self.field(name)
        if name not in self._distinct:
            import pandas as pd  # here: the command line's option lists import this module, not pandas

            self._distinct[name] = int(pd.unique(self.columns[name]).size)
        return self._distinct[name]

    def fingerprint(self) -> str:
        """SHA-256 (hex) over field specs and column contents; stable across runs and platforms."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            digest.update(f"rows={self._length};".encode())
            for spec in self.fields:
                digest.update(f"{spec.name}:{spec.kind};".encode())
                column = self.columns[spec.name]
                if spec.kind == "text":
                    values = column.tolist()
                    digest.update(np.fromiter(map(len, values), dtype="<i8", count=len(values)).tobytes())
                    digest.update("".join(values).encode("utf-8", "surrogatepass"))
                else:
                    digest.update(column.astype("<i8" if spec.kind == "int" else "<f8", copy=False).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint
