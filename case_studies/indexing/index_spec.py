"""IndexSpec: an engine-neutral compound index, a sequence of (field, direction) keys.

Every engine of the study can scan a B-tree index backwards, so an index and its fully inverted twin
([(a, asc), (b, desc)] and [(a, desc), (b, asc)]) serve the same queries. ``canonical()`` picks one of the
two (first key ascending), so the workbench never builds both and caches treat them as one.
``canonical_switch`` orders index *creation* canonically (sorted), because planners break ties between
equally good indexes by the order in which they were created.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

from wield.errors import ConfigError

DIRECTIONS = ("asc", "desc")
_KEY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(asc|desc)\s*$")  # one key as str() prints it


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

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.keys)

    def canonical(self) -> "IndexSpec":
        """The representative of {self, inverted self}: the one whose first key is ascending."""
        if self.keys[0][1] == "asc":
            return self
        return IndexSpec(tuple((f, "desc" if d == "asc" else "asc") for f, d in self.keys))

    @cached_property
    def name(self) -> str:
        """A deterministic engine identifier (fields are validated identifiers); computed once."""
        body = "__".join(f"{f}_{d[0]}" for f, d in self.keys)
        name = f"wix__{body}"
        if len(name) > 60:
            name = "wix__" + hashlib.sha256(body.encode()).hexdigest()[:20]
        return name

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
