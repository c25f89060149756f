"""Computation graphs of real PyTorch training steps (forward and backward), traced with torch.fx.

``FAMILIES`` holds the seeded graph families (``nmt``, ``transformer``, ``convnet``); a family's
``build(params)`` returns a ``TracedGraph`` whose ``graph`` is a serialisable ``ComputationGraph``. The names
are imported on first use (``wield.lazy``) and torch only when a graph is traced, so listing the families
(``wield run placement --help``) does not import it.
"""

from typing import TYPE_CHECKING

from wield.lazy import lazy_exports

if TYPE_CHECKING:
    from workloads.graphs.families import FAMILIES, GraphFamily, get_family
    from workloads.graphs.graph import ComputationGraph
    from workloads.graphs.trace import TracedGraph, trace_training_step

_EXPORTS = {"FAMILIES": "workloads.graphs.families", "GraphFamily": "workloads.graphs.families",
            "get_family": "workloads.graphs.families", "ComputationGraph": "workloads.graphs.graph",
            "TracedGraph": "workloads.graphs.trace", "trace_training_step": "workloads.graphs.trace"}

__all__ = ["FAMILIES", "GraphFamily", "get_family", "ComputationGraph", "TracedGraph", "trace_training_step"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
