"""The package's module structure: no import cycles among the ccsim modules
(counting imports inside functions and under ``TYPE_CHECKING``), no module
reaching into another's private names, and the exception classes coming
from the extension module."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

import ccsim
from ccsim import _native, errors

PACKAGE = Path(ccsim.__file__).resolve().parent


def _imports(path: Path) -> List[Tuple[str, List[str]]]:
    """``(module, names)`` of every relative import in ``path`` (anywhere in
    the file); ``from . import x`` counts as importing module ``x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [a.name for a in node.names]
            if node.module:
                out.append((node.module, names))
            else:
                out += [(n, []) for n in names]
    return out


def _graph() -> Dict[str, Set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {p.stem: {m for m, _ in _imports(p) if m in modules} for p in PACKAGE.glob("*.py")}


def test_the_package_has_no_import_cycles():
    graph = _graph()
    assert graph["experiment"] >= {"report", "plot"}, graph["experiment"]
    done: Set[str] = set()

    def visit(node: str, stack: List[str]) -> None:
        if node in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, stack + [node])
        done.add(node)

    for module in sorted(graph):
        visit(module, [])


def test_no_module_imports_another_modules_private_names():
    bad = []
    for p in PACKAGE.glob("*.py"):
        for module, names in _imports(p):
            bad += [f"{p.name}: from .{module} import {n}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
    assert not bad, bad


def test_the_exception_classes_are_the_extension_modules():
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls is getattr(_native, name) is getattr(ccsim.errors, name)
        assert issubclass(cls, errors.CcsimError) and cls.__module__ == "ccsim.errors"
    assert issubclass(errors.ConfigError, ValueError) and issubclass(errors.SpecError, ValueError)
    assert not issubclass(errors.ViolationFound, ValueError)
    assert (errors.CcsimError.exit_code, errors.ConfigError.exit_code, errors.ViolationFound.exit_code) == (2, 2, 1)


def test_the_bindings_look_up_no_python_class_by_name():
    src = Path(__file__).resolve().parents[2] / "crates" / "py" / "src"
    for f in src.glob("*.rs"):
        text = f.read_text()
        assert ".import(" not in text and "import_bound(" not in text, f"{f.name} imports a Python module"
