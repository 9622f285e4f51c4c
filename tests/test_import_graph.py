"""The project's modules import each other without a circle.

Every module of simulator/, executor/, topologies/ and experiments/ is parsed (not imported) with ast;
its module-level imports (those that run when it is imported: not inside a function, not under
``if TYPE_CHECKING:``) of the project's own modules are the edges of a graph that must be acyclic.
``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``, and to the packages
Python initialises first to reach it (``a.b``), other than the importer's own. A function-level
import is allowed to close a circle (the function runs after both modules are loaded); that is the
first reason an import may stay inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("simulator", "executor", "topologies", "experiments")


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``PACKAGES`` (a package by its ``__init__``)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _runs_at_import(tree: ast.Module):
    """The import statements of ``tree`` that run when the module is imported."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        todo.extend(ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The project modules an import statement of ``module`` loads by name."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    found = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known}
    if base in known and len(found) < len(node.names):
        found.add(base)
    return found


def _with_packages(target: str, importer: str, known: set[str]) -> list[str]:
    """``target`` and the packages Python runs first to load it, less ``importer``'s own (already loading)."""
    parts = target.split(".")
    own = {".".join(importer.split(".")[:n]) for n in range(1, importer.count(".") + 2)}
    loaded = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return [m for m in loaded if m in known and m not in own]


def import_graph() -> nx.DiGraph:
    """Module -> module it imports at module level, over the project's own modules."""
    modules = project_modules()
    known = set(modules)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in _runs_at_import(tree):
            for target in _targets(node, name, path.name == "__init__.py", known):
                for loaded in _with_packages(target, name, known):
                    graph.add_edge(name, loaded, line=node.lineno)
    return graph


def test_the_graph_sees_the_known_imports() -> None:
    """The parser finds what the modules plainly import (so an empty graph cannot pass by accident)."""
    graph = import_graph()
    assert graph.has_edge("simulator.ir.serialize", "simulator.files")
    assert graph.has_edge("simulator.compare.measured", "simulator.files")
    assert not graph.has_edge("simulator.compare.measured", "simulator.compare")  # its own package
    assert graph.number_of_edges() > 100


def test_module_level_imports_have_no_circle() -> None:
    graph = import_graph()
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    steps = " -> ".join(f"{a} (line {graph.edges[a, b]['line']})" for a, b in cycle) + f" -> {cycle[0][0]}"
    raise AssertionError(f"import circle: {steps}")
