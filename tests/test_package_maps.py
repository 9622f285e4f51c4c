"""Every package's ``__init__`` is a true map: a table naming each of its modules, and ``__all__``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(path.parent for top in ("simulator", "executor", "topologies", "experiments")
                  for path in (ROOT / top).rglob("__init__.py"))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_package_docstring_names_every_module_and_all_is_declared(package):
    tree = ast.parse((package / "__init__.py").read_text())
    doc = ast.get_docstring(tree) or ""
    members = sorted([p.stem for p in package.glob("*.py") if p.stem != "__init__"]
                     + [p.name for p in package.iterdir() if (p / "__init__.py").exists()])
    missing = [m for m in members if f"``{m}``" not in doc and f"``{m}/``" not in doc]
    assert not missing, f"{package}/__init__.py's table does not name {missing}"
    assert any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
               for node in tree.body), f"{package}/__init__.py declares no __all__"
