"""IndexSpec: an engine-neutral compound index, a sequence of (field, direction) keys.

Every engine of the study can scan a B-tree index backwards, so an index and its fully inverted twin
([(a, asc), (b, desc)] and [(a, desc), (b, asc)]) serve the same queries. ``canonical()`` picks one of the
two (first key ascending), so the workbench never builds both and caches treat them as one.
``canonical_switch`` orders index *creation* canonically (sorted), because planners break ties between
equally good indexes by the order in which they were created.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

from wield.errors import ConfigError
from workloads.queries import remembered_hash, state_without_hash

DIRECTIONS = ("asc", "desc")
_KEY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(asc|desc)\s*$")  # one key as str() prints it
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_NAME = 60  # characters of an index name spelled out; longer ones are hashed (PostgreSQL's limit is 63 bytes)


@dataclass(frozen=True, order=True)
class IndexSpec:
    """A compound index: ``keys`` is a tuple of (field, "asc" | "desc"), without repeated fields."""

    keys: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise ConfigError("index.keys", [], reason="an index needs at least one key")
        seen = set()
        for field, direction in self.keys:
            if direction not in DIRECTIONS:
                raise ConfigError("index.direction", direction, DIRECTIONS)
            if field in seen:
                raise ConfigError("index.keys", field, reason="a field appears twice in one index")
            seen.add(field)

    @classmethod
    def of(cls, keys: Iterable[Sequence[str]]) -> "IndexSpec":
        return cls(tuple((str(f), str(d)) for f, d in keys))

    @cached_property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.keys)

    def __hash__(self) -> int:
        """The hash a frozen dataclass gives, ``hash((keys,))``, computed once (indexes are dictionary keys of
        every estimate)."""
        return remembered_hash(self, (self.keys,))

    def __getstate__(self) -> dict:
        """The state a copy or another process gets: without the hash (strings hash differently per process)."""
        return state_without_hash(self)

    def canonical(self) -> "IndexSpec":
        """The representative of {self, inverted self}: the one whose first key is ascending."""
        if self.keys[0][1] == "asc":
            return self
        return IndexSpec(tuple((f, "desc" if d == "asc" else "asc") for f, d in self.keys))

    def starts_with(self, prefix: "IndexSpec") -> bool:
        """Whether this index begins with ``prefix``'s keys, in the same or the fully inverted order (a B-tree
        is read either way), so it serves what ``prefix`` would."""
        width = len(prefix.keys)
        return len(self.keys) >= width and IndexSpec(self.keys[:width]).canonical() == prefix.canonical()

    @cached_property
    def name(self) -> str:
        """A deterministic engine identifier, one per index (computed once): ``wix__`` and the keys as
        ``FIELD_a`` / ``FIELD_d`` joined by ``__``, every underscore of a field written ``_0``, so no two
        indexes share a name (``(p asc, q asc)`` is ``wix__p_a__q_a``, ``(p_a__q asc)`` is
        ``wix__p_0a_0_0q_a``; read left to right, ``_0`` is a field's underscore, ``_a`` / ``_d`` ends a
        key and ``__`` follows it). A name beyond ``MAX_NAME`` characters (PostgreSQL keeps 63 bytes of an
        identifier), or of a field that is not an identifier, is ``wixh_`` and 40 hex digits of a SHA-256 of
        the keys instead."""
        if all(_FIELD.match(f) for f, _ in self.keys):
            name = "wix__" + "__".join(f"{f.replace('_', '_0')}_{d[0]}" for f, d in self.keys)
            if len(name) <= MAX_NAME:
                return name
        digest = hashlib.sha256(json.dumps(self.to_list()).encode("utf-8")).hexdigest()
        return f"wixh_{digest[:40]}"

    def to_list(self) -> list[list[str]]:
        return [[f, d] for f, d in self.keys]

    def __str__(self) -> str:
        return "(" + ", ".join(f"{f} {d}" for f, d in self.keys) + ")"

    @classmethod
    def parse(cls, text: str) -> "IndexSpec":
        """The IndexSpec written as ``str(spec)``, e.g. ``(genre asc, start_year desc)``."""
        body = text.strip()
        if not (body.startswith("(") and body.endswith(")")):
            raise ConfigError("index", text, reason="expected '(field asc|desc, ...)'")
        keys = []
        for part in body[1:-1].split(","):
            match = _KEY.match(part)
            if not match:
                raise ConfigError("index", text, reason="expected '(field asc|desc, ...)'")
            keys.append((match.group(1), match.group(2)))
        return cls.of(keys)


def full_index(query) -> IndexSpec:
    """The full-index baseline for one query: all its fields in query order, sort keys in sort order.

    Predicate fields come first in the order the query names them, ascending; sort fields follow (or keep
    their place, when also a predicate field) with the sort's direction.
    """
    sort_direction = {key.field: key.direction for key in query.sort}
    return IndexSpec(tuple((field, sort_direction.get(field, "asc")) for field in query.attributes()))


def canonical_switch(created: Sequence[IndexSpec], target: Iterable[IndexSpec]) -> tuple[list[IndexSpec],
                                                                                           list[IndexSpec]]:
    """(indexes to drop, indexes to build) that turn ``created`` (in creation order) into exactly ``target``
    created in sorted order, keeping the longest prefix that already is."""
    wanted = sorted(set(target))
    keep = 0
    while keep < min(len(created), len(wanted)) and created[keep] == wanted[keep]:
        keep += 1
    return list(created[keep:]), wanted[keep:]
