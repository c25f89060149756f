"""The indexing schema: query tokens, selectivities and k positional action heads.

State (a gymnasium Dict):
- ``tokens``: the tokenised query padded to ``max_tokens``: for each predicate its attribute and operator,
  the logical aggregation (AND / OR) when there are several predicates, SORT_ASC / SORT_DESC and the sort
  attribute, COUNT and LIMIT; an IDX_ASC / IDX_DESC token follows every attribute that an existing index
  already covers, with that key's direction.
- ``selectivity``: per collection field, 1 / distinct values (taken when training starts).
- ``attributes``: 0/1 per collection field, 1 if the query uses it.
- ``query_selectivity``: per query attribute position (first k), the estimated fraction of rows its
  predicate matches (1 for a sort-only or absent position). This extends the study's state: column
  selectivity cannot tell a narrow range from a wide one on the same column.

Action: k heads ``key_1`` .. ``key_k`` of 1 + 2k values each (the study's positional model): 0 is no-op,
1 + 2(i-1) puts the query's i-th attribute ascending at that key position, 2 + 2(i-1) descending. The
layout depends on k, not on how many fields the collection has.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from wield.errors import ConfigError
from wield.schemas import Schema, Vocabulary

OPERATORS = ("eq", "lt", "lte", "gt", "gte", "between", "in")
STRUCTURE_TOKENS = ("AND", "OR", "SORT_ASC", "SORT_DESC", "COUNT", "LIMIT", "IDX_ASC", "IDX_DESC")


def attribute_token(field: str) -> str:
    return f"attr:{field}"


class IndexingSchema(Schema):
    """Layout of the compound-indexing task for one collection and a maximum index width ``k``."""

    name = "indexing"

    def __init__(self, fields: Sequence[str], k: int = 3, max_tokens: int = 16,
                 column_selectivity: Mapping[str, float] | None = None) -> None:
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise ConfigError("k", k, reason="the maximum index width must be an integer >= 1")
        if max_tokens < 4:
            raise ConfigError("max_tokens", max_tokens, reason="must be at least 4")
        if not fields:
            raise ConfigError("fields", list(fields), reason="the collection has no fields")
        self.fields = tuple(fields)
        self.k = int(k)
        self.max_tokens = int(max_tokens)
        self.vocabulary = Vocabulary([*OPERATORS, *STRUCTURE_TOKENS, *map(attribute_token, self.fields)])
        selectivity = column_selectivity or {}
        self.column_selectivity = np.array([float(selectivity.get(f, 1.0)) for f in self.fields],
                                           dtype=np.float32)
        self.head_names = tuple(f"key_{i + 1}" for i in range(self.k))
        self._state_space = gym.spaces.Dict({
            "tokens": gym.spaces.MultiDiscrete(np.full(self.max_tokens, len(self.vocabulary))),
            "selectivity": gym.spaces.Box(0.0, 1.0, (len(self.fields),), np.float32),
            "attributes": gym.spaces.MultiBinary(len(self.fields)),
            "query_selectivity": gym.spaces.Box(0.0, 1.0, (self.k,), np.float32),
        })
        self._action_space = gym.spaces.Dict({name: gym.spaces.Discrete(self.values_per_head)
                                              for name in self.head_names})

    @property
    def values_per_head(self) -> int:
        return self.valid_values(self.k)

    @property
    def state_space(self) -> gym.spaces.Dict:
        return self._state_space

    @property
    def action_space(self) -> gym.spaces.Dict:
        return self._action_space

    def layout(self) -> Mapping[str, Any]:
        return {"fields": list(self.fields), "k": self.k, "max_tokens": self.max_tokens,
                "vocabulary": list(self.vocabulary.tokens), "heads": list(self.head_names)}

    def addressable_attributes(self, query) -> list[str]:
        """The query attributes the heads can name: the first k in query order."""
        return query.attributes()[: self.k]

    # -- the 1 + 2k head encoding: every reader and writer of head values goes through these three ------
    @staticmethod
    def encode_key(position: int, direction: str) -> int:
        """The head value that puts the query's attribute number ``position`` (0-based) in ``direction``."""
        return 1 + 2 * position + (1 if direction == "desc" else 0)

    @staticmethod
    def decode_key(value: int) -> tuple[int, str] | None:
        """(attribute position, direction) of a head value; None for the no-op 0."""
        if value == 0:
            return None
        position, descending = divmod(int(value) - 1, 2)
        return position, "desc" if descending else "asc"

    @staticmethod
    def valid_values(n_attributes: int) -> int:
        """How many head values (from 0) a query with ``n_attributes`` addressable attributes allows."""
        return 1 + 2 * n_attributes

    def action_mask(self, context: Any = None) -> dict[str, np.ndarray]:
        """No-op is always valid; a key value only if the query has an attribute at its position."""
        n_attributes = len(self.addressable_attributes(context["item"])) if context else self.k
        mask = np.zeros(self.values_per_head, dtype=bool)
        mask[: self.valid_values(n_attributes)] = True
        return {name: mask.copy() for name in self.head_names}
