"""The project's code standards, checked: every public function, class and method of the package has a
docstring (an override may inherit its base's) and type hints, and no source file (package, tests, benchmarks) reaches 500 lines."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "canter"
MAX_LINES = 500


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _public_defs(tree: ast.Module) -> list[tuple[str | None, ast.FunctionDef | ast.ClassDef]]:
    """``(class name or None, node)`` for public module-level functions and classes and the public
    methods of public classes."""
    found: list[tuple[str | None, ast.FunctionDef | ast.ClassDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            found.append((None, node))
            if isinstance(node, ast.ClassDef):
                found += [(node.name, m) for m in node.body
                          if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")]
    return found


def test_no_source_file_reaches_the_line_limit():
    root = PACKAGE.parent
    files = [p for d in ("canter", "tests", "benchmarks") for p in (root / d).rglob("*.py")]
    long = [f"{p.relative_to(root)}: {n}" for p in files if (n := len(p.read_text().splitlines())) >= MAX_LINES]
    assert not long, f"files of {MAX_LINES}+ lines (split them): {long}"


def test_public_functions_have_type_hints():
    missing = []
    for path in _sources():
        for owner, node in _public_defs(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            args = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                    if a.arg not in ("self", "cls")]
            bad = [a.arg for a in args if a.annotation is None] + ([] if node.returns else ["return"])
            if bad:
                missing.append(f"{path.name}:{node.lineno} {owner or ''}{'.' if owner else ''}{node.name} {bad}")
    assert not missing, f"public functions without type hints: {missing}"


def test_public_functions_and_classes_have_docstrings():
    """Runtime docstrings (``inspect.getdoc``), so a method overriding a documented base method passes."""
    missing = []
    for path in _sources():
        name = _module_name(path)
        if name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # an optional extra not installed: its module cannot be checked here
            pytest.skip(f"{name} needs an optional package: {exc}")
        for owner, node in _public_defs(ast.parse(path.read_text())):
            parent = module if owner is None else getattr(module, owner, None)
            obj = getattr(parent, node.name, None)
            if obj is None or not inspect.getdoc(obj):
                missing.append(f"{path.name}:{node.lineno} {owner or ''}{'.' if owner else ''}{node.name}")
    assert not missing, f"public functions/classes without a docstring: {missing}"
