"""Converters: the system view <-> the agent view."""

from wield.converters.base import Converter

__all__ = ["Converter"]
