"""Computation graphs of real PyTorch training steps (forward and backward), traced with torch.fx.

``FAMILIES`` holds the seeded graph families (``nmt``, ``transformer``, ``convnet``); a family's
``build(params)`` returns a ``TracedGraph`` whose ``graph`` is a serialisable ``ComputationGraph``.
"""

from workloads.graphs.families import FAMILIES, GraphFamily, get_family
from workloads.graphs.graph import ComputationGraph
from workloads.graphs.trace import TracedGraph, trace_training_step

__all__ = ["FAMILIES", "GraphFamily", "get_family", "ComputationGraph", "TracedGraph", "trace_training_step"]
