"""The guide's example (docs/new-system.md): buffer-pool page eviction, a stateful system added to Wield."""
