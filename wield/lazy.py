"""Lazy package exports (PEP 562), so that importing a package does not import its heavy modules.

``wield --help`` and every ``wield ... --help`` must stay under a CPU-second (``benchmarks/cli_startup.py``):
a case study declares its options with names from ``wield.agents``, ``wield.demonstrations`` and
``workloads``, and importing those packages used to import torch (0.7-1.2 CPU-s) or pandas (0.2 CPU-s) with
them. A package built with ``lazy_exports`` keeps its public names (``from wield.agents import DQNAgent``
works as before) but imports the module behind a name only when the name is first used; the package's
``TYPE_CHECKING`` block keeps the names typed for mypy.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``) whose names ``exports`` maps to the
    modules defining them (``{"DQNAgent": "wield.agents.dqn"}``). The first use of a name imports its module
    and keeps the value in the package's namespace, so later uses cost nothing."""
    names = dict(exports)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__
