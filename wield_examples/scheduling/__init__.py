"""Request scheduling: the guide's example of a new system (docs/new-system.md); `wield run scheduling`."""
