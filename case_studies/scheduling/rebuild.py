"""Rebuilding a recorded workload from its generator name, params and seed.

Every workload family (``families``: low SLO, the SYNTHETIC Azure-like generator; ``azure_trace``: a real
trace file) records ``generator`` and ``params`` on its ``Workload``. This module sits above both, so neither
imports the other's dispatch (``azure_trace`` reads the Azure constants from ``families``, and nothing in
``families`` imports ``azure_trace``).
"""

from __future__ import annotations

from typing import Any

from case_studies.scheduling.azure_trace import AZURE_TRACE, rebuild_azure_trace_workload
from case_studies.scheduling.families import GENERATORS
from case_studies.scheduling.workload import Workload
from wield.errors import ConfigError

__all__ = ["build_workload"]


def build_workload(generator: str, params: dict[str, Any], seed: int) -> Workload:
    """Rebuild a family's workload from its recorded generator name, params and seed."""
    if generator == AZURE_TRACE:
        return rebuild_azure_trace_workload(params, seed)
    if generator not in GENERATORS:
        raise ConfigError("generator", generator, sorted(GENERATORS) + [AZURE_TRACE])
    values = {k: v for k, v in params.items() if k != "synthetic"}
    return GENERATORS[generator](**values, seed=seed)
