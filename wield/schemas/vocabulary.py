"""Vocabulary: a fixed, ordered mapping of tokens to integers for tokenised states."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from wield.errors import ConfigError

PAD = "<pad>"


class Vocabulary:
    """Tokens in a fixed order; index 0 is always padding."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens: tuple[str, ...] = (PAD,) + tuple(dict.fromkeys(t for t in tokens if t != PAD))
        self._index = {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._index

    def id(self, token: str) -> int:
        try:
            return self._index[token]
        except KeyError:
            raise ConfigError("token", token, self.tokens[1:]) from None

    def encode(self, tokens: Sequence[str], length: int) -> np.ndarray:
        """Token ids padded (or refused if too long) to ``length``."""
        if len(tokens) > length:
            raise ConfigError("tokens", len(tokens), reason=f"sequence longer than the schema's {length}")
        ids = np.zeros(length, dtype=np.int64)
        ids[: len(tokens)] = [self.id(t) for t in tokens]
        return ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids if i != 0]
