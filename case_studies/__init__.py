"""Case studies built on Wield's public API: each one is what a user would write for a new system."""
