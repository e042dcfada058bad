"""mypy's per-module list of modules allowed unannotated functions (pyproject.toml) only shrinks.

The list must be exactly the modules that have a function without full annotations, found here on the
source (the same rule as mypy's disallow_untyped_defs): annotate a listed module's last function and
this test says to take it off the list, so the check then keeps it annotated.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kestrel_release._compat import tomllib
from tests.helpers import ROOT


def _listed() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    overrides = config["tool"]["mypy"]["overrides"]
    return {m for o in overrides if o.get("disallow_untyped_defs") is False for m in o["module"]}


def _untyped(func: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> bool:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
    if method and not static and positional:
        positional = positional[1:]  # self / cls
    params = [*positional, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
    if any(p.annotation is None for p in params):
        return True
    # mypy accepts __init__ without `-> None` once one argument is annotated
    return func.returns is None and not (func.name == "__init__" and params)


def _methods(tree: ast.Module) -> set[int]:
    """The functions defined in a class body, also under an `if` there (`if TYPE_CHECKING:` declarations)."""
    out: set[int] = set()
    for c in ast.walk(tree):
        if isinstance(c, ast.ClassDef):
            body = list(c.body)
            while body:
                node = body.pop()
                if isinstance(node, ast.If):
                    body += [*node.body, *node.orelse]
                out.add(id(node))
    return out


def _has_untyped_def(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    methods = _methods(tree)
    return any(
        _untyped(node, id(node) in methods)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_untyped_list_is_exactly_the_modules_with_unannotated_functions():
    untyped = {_module(p) for p in (ROOT / "kestrel_release").rglob("*.py") if _has_untyped_def(p)}
    listed = _listed()
    assert not sorted(listed - untyped), f"fully annotated now: remove from pyproject.toml: {sorted(listed - untyped)}"
    assert not sorted(untyped - listed), f"unannotated functions (annotate them): {sorted(untyped - listed)}"
