"""Schemas: deployment parameters -> gymnasium state and action layouts, and optimisers' search spaces."""

from wield.schemas.base import Schema, full_mask
from wield.schemas.search_space import CategoricalParameter, IntegerParameter, SearchSpace
from wield.schemas.vocabulary import PAD, Vocabulary

__all__ = ["Schema", "full_mask", "Vocabulary", "PAD", "SearchSpace", "IntegerParameter", "CategoricalParameter"]
