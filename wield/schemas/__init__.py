"""Schemas: deployment parameters -> gymnasium state and action layouts."""

from wield.schemas.base import Schema, full_mask
from wield.schemas.vocabulary import PAD, Vocabulary

__all__ = ["Schema", "full_mask", "Vocabulary", "PAD"]
