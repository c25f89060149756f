"""The indexing search space for optimisers (OpenTuner, random search): a whole index set at once.

docs/design.md section 5: integer parameters choose the attributes of each compound index. There are ``slots``
compound indexes (by default one per workload query, as in the study, where OpenTuner built about one
index per query) of up to ``k`` keys each:

- ``index{s}_key{j}_field`` in ``0..F``: 0 ends index ``s`` at key ``j`` (so a slot whose first key is 0
  builds no index); ``1..F`` names the collection's ``F`` fields in order;
- ``index{s}_key{j}_desc`` in ``0..1`` for ``j >= 1``: the key's direction relative to the first key.
  The first key has none: an index and its fully inverted twin serve the same queries (index_spec.py).

A field repeated within one index is skipped; identical indexes are built once. Unlike the learner's
positional actions (relative to the current query) the space names fields absolutely, so one index set
can be tuned across a training distribution of workloads and applied to unseen ones.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from case_studies.indexing.index_spec import IndexSpec
from wield.errors import ConfigError
from wield.schemas import IntegerParameter, SearchSpace


def field_parameter(slot: int, key: int) -> str:
    return f"index{slot:02d}_key{key}_field"


def direction_parameter(slot: int, key: int) -> str:
    return f"index{slot:02d}_key{key}_desc"


class IndexSetSpace:
    """The search space of index sets over ``fields`` and its decoding into ``IndexSpec`` lists."""

    def __init__(self, fields: Sequence[str], slots: int, k: int) -> None:
        if slots < 1:
            raise ConfigError("slots", slots, reason="must be >= 1 (compound indexes to tune)")
        if k < 1:
            raise ConfigError("k", k, reason="must be >= 1 (keys per index)")
        self.fields = tuple(fields)
        self.slots = int(slots)
        self.k = int(k)
        parameters = []
        for slot in range(self.slots):
            for key in range(self.k):
                parameters.append(IntegerParameter(field_parameter(slot, key), 0, len(self.fields)))
                if key > 0:
                    parameters.append(IntegerParameter(direction_parameter(slot, key), 0, 1))
        self.space = SearchSpace(parameters)

    def decode(self, configuration: Mapping[str, Any]) -> list[IndexSpec]:
        """The index set a configuration names (canonical, without duplicates, in slot order)."""
        configuration = self.space.validate(configuration)
        indexes = []
        for slot in range(self.slots):
            keys: list[tuple[str, str]] = []
            for key in range(self.k):
                choice = configuration[field_parameter(slot, key)]
                if choice == 0:
                    break
                field = self.fields[choice - 1]
                if field in (f for f, _ in keys):
                    continue
                descending = key > 0 and configuration[direction_parameter(slot, key)] == 1
                keys.append((field, "desc" if descending else "asc"))
            if keys:
                indexes.append(IndexSpec(tuple(keys)).canonical())
        return list(dict.fromkeys(indexes))

    def encode(self, indexes: Sequence[IndexSpec]) -> dict[str, int]:
        """A configuration naming ``indexes`` (at most ``slots`` of them; keys beyond ``k`` are an error)."""
        if len(indexes) > self.slots:
            raise ConfigError("indexes", len(indexes), reason=f"at most {self.slots} slots")
        configuration = {name: 0 for name in self.space.names}
        for slot, spec in enumerate(indexes):
            spec = spec.canonical()
            if len(spec.keys) > self.k:
                raise ConfigError("index", str(spec), reason=f"has more than k = {self.k} keys")
            for key, (field, direction) in enumerate(spec.keys):
                if field not in self.fields:
                    raise ConfigError("index.field", field, self.fields)
                configuration[field_parameter(slot, key)] = self.fields.index(field) + 1
                if key > 0:
                    configuration[direction_parameter(slot, key)] = int(direction == "desc")
        return configuration
