"""Example systems built on Wield's public API only (see docs/new-system.md)."""
