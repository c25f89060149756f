"""Wield: a system-agnostic workbench for reinforcement learning in computer systems.

The core package defines the abstractions (schemas, converters, system adapters, environments, agents,
task graphs, workflows). Case studies and workload generators live outside it and use only its public API.
"""

__version__ = "0.1.0"
