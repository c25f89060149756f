"""System adapters: the contract between Wield and a live system or simulator."""

from wield.systems.base import SystemAdapter

__all__ = ["SystemAdapter"]
