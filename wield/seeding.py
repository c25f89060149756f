"""Seed derivation: one base seed fans out into named, independent, reproducible streams."""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(base_seed: int, *names: object) -> int:
    """Return a 63-bit seed derived deterministically from ``base_seed`` and a path of names.

    Two different name paths give statistically independent seeds; the same path always gives the same
    seed, on every platform and Python version (it does not use ``hash()``).
    """
    text = "/".join([str(int(base_seed))] + [str(n) for n in names])
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def make_rng(seed: int, *names: object) -> np.random.Generator:
    """A numpy generator for the stream ``names`` under ``seed``."""
    return np.random.default_rng(derive_seed(seed, *names) if names else int(seed))
