"""The house rules of the import graph: layers import downwards only, and no two modules import each other.

Layers, lowest first: ``wield`` (the core), ``workloads`` (generators), ``case_studies`` and
``wield_examples`` (systems built on both), then ``benchmarks`` and ``tests`` (which nothing imports). An
import inside a function counts like one at the top of a module (a lazy import that breaks a circle at run
time is still a circle). Imports under ``if TYPE_CHECKING:`` are for type checkers only: they do not count
for the layers, but they may not close a circle either (a reader, and a tool drawing the import graph,
sees the circle all the same).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"wield": 0, "workloads": 1, "case_studies": 2, "wield_examples": 2}


def _modules() -> dict[str, Path]:
    modules = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for statement in node.body for child in ast.walk(statement)}
    return skipped


def _imports(name: str, path: Path, modules: dict[str, Path], type_checking: bool = False) -> set[str]:
    def known(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    tree = ast.parse(path.read_text())
    skipped = set() if type_checking else _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {target for target in map(known, targets) if target and target != name}
    return found


def _graph(type_checking: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, type_checking) for name, path in modules.items()}


def test_layers_import_downwards_only():
    upward = sorted((module, target) for module, targets in _graph().items() for target in targets
                    if LAYERS[target.split(".")[0]] > LAYERS[module.split(".")[0]])
    assert not upward, upward


@pytest.mark.parametrize("type_checking", [False, True], ids=["run-time", "with-type-checking"])
def test_no_module_imports_itself_through_others(type_checking):
    graph = _graph(type_checking)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not circles, circles
