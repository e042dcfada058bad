"""The import contract: DEVELOPING.md's layer rules, checked on the source of every module.

The modules are parsed, not imported, so imports inside functions count as much as those at the top
(a lazy import that runs back up is still an arrow the wrong way). The violations that exist today are
listed in ALLOWED with why; the list may only shrink: a new violation fails, and so does an allowed one
that has gone without its line being removed.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import HEAVY_MODULES, ROOT

PACKAGE = "kestrel_release"

# Layers, highest first; a module may import its own layer and those below it, never one above.
# Each layer is whole packages, so the structure drawn from the imports has the same floors:
# - the CLI: the entry points, the command modules (commands/) and reference (the docs site's pages);
# - flows/ (release, ci, doctor, explain, init: they choose targets by name) and config_loader/ (it asks
#   each target kind to parse its own table);
# - targets/, one package per kind;
# - stages/: the pipeline's stages, among them the shared publish library every kind calls (stages/publish);
# - everything else (config's declarations, adapters, artifacts, sandbox, the helpers) at the bottom.
ENTRY = {"__main__", "entry", "cli", "commands", "reference"}
FLOWS = {"flows", "config_loader"}
LAYER_NAMES = {
    4: "cli",
    3: "flows/config_loader",
    2: "targets",
    1: "stages (the publish library among them)",
    0: "helpers/adapters/artifacts/sandbox/config",
}
# A stage or a target reads the Config dataclasses from config.model, never from the loader: config
# loading reaches every target, so that arrow would close a cycle.
CONFIG_LOADERS = {"config_loader.load", "config_loader.parse"}

# Third-party packages cheap enough to import when a module is imported (`--help` stays fast); every
# other one is imported inside the function that needs it.
LIGHT_AT_IMPORT = {"packaging", "rich", "typer", "tomli"}

# Modules documented as pure (rules, arithmetic, proposals, formatting): they print nothing and touch
# nothing outside, so they import neither the console nor a process, progress or adapter module.
PURE = {"stages.verify.rules", "stages.version.pep440", "flows.init.choose", "ui.sizes"}
IMPURE = ("ui.console", "ui.progress", "process.proc", "adapters")

# Private modules anyone may import (documented in DEVELOPING.md); any other `_name` module is for its
# own package only.
PUBLIC_PRIVATE_MODULES = {f"{PACKAGE}._compat"}

# Today's violations: each key is what `violations()` reports, each value why it is still there.
# Remove a line when its violation is fixed (the test fails until you do); never add one.
ALLOWED: dict[str, str] = {}

# An import whose module name is computed (`importlib.import_module(type(x).__module__)`): an arrow that no
# rule here can see, so it is a violation of its own; name the module, or dispatch through a table.
COMPUTED = "<computed>"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # a module, or the module a name is taken from
    name: str | None  # the name taken from `target` (None: the module itself)
    lazy: bool  # inside a function or class, so it runs when that code runs
    type_only: bool  # under `if TYPE_CHECKING:`


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under `root` (its parent directory is the import root)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(nodes: list[ast.stmt], *, lazy: bool, type_only: bool):
    """Yield (node, lazy, type_only) for every node below `nodes`."""
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            for child in ast.walk(node):
                yield child, True, type_only
        elif isinstance(node, ast.If) and _is_type_checking(node):
            yield from _walk(node.body, lazy=lazy, type_only=True)
            yield from _walk(node.orelse, lazy=lazy, type_only=type_only)
        else:
            yield node, lazy, type_only
            children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
            yield from _walk(children, lazy=lazy, type_only=type_only)
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.stmt):
                    for sub in ast.walk(child):
                        yield sub, lazy, type_only


def _dynamic_import(node: ast.Call) -> str | None:
    """The module named by `importlib.import_module("x")`, `import_module("x")` or `__import__("x")`
    (COMPUTED when the name is not written out), else None."""
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )
    if not named or not node.args:
        return None
    arg = node.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else COMPUTED


def parse_imports(module: str, path: Path, modules: dict[str, Path]) -> tuple[list[Import], list[str]]:
    """The imports of one module (`importlib.import_module("x")` counts as `import x` where it runs), and
    the private names it reads from other modules: `alias._name`, `pkg.mod._name`, `Imported._name`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imports: list[Import] = []
    aliases: dict[str, str] = {}
    for node, lazy, type_only in _walk(tree.body, lazy=False, type_only=False):
        if isinstance(node, ast.Call) and (named := _dynamic_import(node)) is not None:
            imports.append(Import(module, named, None, lazy, type_only))
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.append(Import(module, alias.name, None, lazy, type_only))
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:  # `import a.b` binds `a`: `a.b._name` reads b's private name
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:  # `from pkg import submodule`
                    imports.append(Import(module, f"{target}.{alias.name}", None, lazy, type_only))
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
                else:
                    imports.append(Import(module, target, alias.name, lazy, type_only))
                    if target in modules and target != module:  # a class or function of another module
                        aliases[alias.asname or alias.name] = f"{target}:{alias.name}"
    private_reads = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            value, dotted = node.value, list[str]()
            while isinstance(value, ast.Attribute):
                dotted.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                owner = ".".join([aliases[value.id], *dotted])
                if ":" in owner:  # `Imported._name` (or `Imported.attr._name`): a member of another module's name
                    private_reads.append(f"{owner.replace(':', '.')}.{node.attr}")
                elif owner in modules and owner != module and f"{owner}.{node.attr}" not in modules:
                    private_reads.append(f"{owner}.{node.attr}")  # (a `_module` itself: the private-module rule)
    return imports, private_reads


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) < 2:
        return 0
    if parts[1] in ENTRY:
        return 4
    if parts[1] in FLOWS:
        return 3
    if parts[1] == "stages":
        return 1
    if parts[1] == "targets":
        return 2
    return 0


def _is_github_adapter(module: str) -> bool:
    parts = module.split(".")
    return parts[1:3] == ["adapters", "github"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative enough for ~150 modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(root: Path) -> set[str]:
    """Every break of the layer rules in the package at `root`, one line each."""
    modules = module_names(root)
    package = root.name
    stdlib = set(sys.stdlib_module_names)
    found: set[str] = set()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in sorted(modules.items()):
        imports, private_reads = parse_imports(module, path, modules)
        for owner_name in private_reads:
            found.add(f"private name: {module} uses {owner_name}")
        for imp in imports:
            top = imp.target.split(".")[0]
            if imp.target == COMPUTED:
                found.add(f"computed import: {module} imports a module by a computed name")
            elif top == package:
                if imp.target != module:
                    graph[module].add(imp.target)
                if layer(imp.target) > layer(module):
                    found.add(
                        f"upward: {module} ({LAYER_NAMES[layer(module)]}) imports {imp.target} "
                        f"({LAYER_NAMES[layer(imp.target)]})"
                    )
                relative = [imp.target.split(".", 1)[-1], f"{imp.target}.{imp.name}".split(".", 1)[-1]]
                if module.split(".", 1)[-1] in PURE and any(
                    r == i or r.startswith(i + ".") for r in relative for i in IMPURE
                ):
                    found.add(f"pure module does output: {module} imports {imp.target}")
                if imp.target.split(".", 1)[-1] in CONFIG_LOADERS and module.split(".")[1:2] in (
                    ["stages"],
                    ["targets"],
                ):
                    found.add(f"config loader: {module} imports {imp.target} (read the dataclasses from config.model)")
                if imp.name and _is_private(imp.name) and imp.target != module:
                    found.add(f"private name: {module} uses {imp.target}.{imp.name}")
                last = imp.target.rpartition(".")
                if (
                    _is_private(last[2])
                    and imp.target not in {p.replace(PACKAGE, package, 1) for p in PUBLIC_PRIVATE_MODULES}
                    and module != last[0]
                    and not module.startswith(last[0] + ".")
                ):
                    found.add(f"private module: {module} imports {imp.target}")
            elif top == "github" and not _is_github_adapter(module):
                found.add(f"PyGithub outside adapters/github/: {module}")
            elif not (imp.lazy or imp.type_only or top in stdlib or top == "__future__") and (
                top not in LIGHT_AT_IMPORT or imp.target in HEAVY_MODULES
            ):
                found.add(f"heavy at import time: {module} imports {imp.target}")
    for component in _cycles(graph):
        found.add("cycle: " + " <-> ".join(component))
    return found


def test_layer_rules_hold_except_the_listed_violations():
    found = violations(ROOT / PACKAGE)
    new = sorted(found - set(ALLOWED))
    gone = sorted(set(ALLOWED) - found)
    assert not new, "new import-contract violations (DEVELOPING.md, Layout):\n" + "\n".join(new)
    assert not gone, "fixed: remove these lines from ALLOWED in tests/unit/test_layers.py:\n" + "\n".join(gone)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "adapters/__init__.py": "",
                "adapters/git.py": "def f():\n    from pkg.flows import release\n",
                "flows/__init__.py": "",
                "flows/release.py": "",
            },
            "upward: pkg.adapters.git (helpers/adapters/artifacts/sandbox/config) imports pkg.flows.release (flows/config_loader)",
        ),
        (
            {
                "helper.py": "def f():\n    from pkg.config_loader import load\n",
                "config_loader/__init__.py": "",
                "config_loader/load.py": "",
            },
            "upward: pkg.helper",
        ),
        (
            {"stages/__init__.py": "", "stages/run.py": "from pkg import cli\n", "cli.py": ""},
            "upward: pkg.stages.run (stages",
        ),
        (
            {
                "stages/__init__.py": "",
                "stages/publish/__init__.py": "",
                "targets/__init__.py": "",
                "stages/publish/snapshot.py": "def f():\n    from pkg import targets\n",
            },
            "upward: pkg.stages.publish.snapshot (stages (the publish library among them)) imports pkg.targets",
        ),
        (
            {
                "flows/__init__.py": "",
                "flows/release.py": "",
                "targets/__init__.py": "",
                "targets/x.py": "from pkg.flows import release\n",
            },
            "upward: pkg.targets.x (targets) imports pkg.flows.release (flows/config_loader)",
        ),
        (
            {
                "stages/__init__.py": "",
                "stages/run.py": "from pkg.config_loader.load import Config\n",
                "config_loader/__init__.py": "",
                "config_loader/load.py": "",
            },
            "config loader: pkg.stages.run imports pkg.config_loader.load",
        ),
        (
            {
                "targets/__init__.py": "",
                "targets/x.py": "def f():\n    from pkg.config_loader import load as config\n",
                "config_loader/__init__.py": "",
                "config_loader/load.py": "",
            },
            "config loader: pkg.targets.x imports pkg.config_loader.load",
        ),
        (
            {"stages/__init__.py": "", "stages/a.py": "import github\n"},
            "PyGithub outside adapters/github/: pkg.stages.a",
        ),
        (
            {"ui/__init__.py": "", "ui/sizes.py": "from pkg.ui import console\n", "ui/console.py": ""},
            "pure module does output: pkg.ui.sizes",
        ),
        ({"a.py": "import twine.commands\n"}, "heavy at import time: pkg.a imports twine.commands"),
        ({"a.py": "from rich.live import Live\n"}, "heavy at import time: pkg.a imports rich.live"),
        ({"a.py": "from pkg.b import _hidden\n", "b.py": "_hidden = 1\n"}, "private name: pkg.a uses pkg.b._hidden"),
        (
            {"a.py": "from pkg import b\nx = b._hidden\n", "b.py": "_hidden = 1\n"},
            "private name: pkg.a uses pkg.b._hidden",
        ),
        ({"a.py": "def f():\n    from pkg import b\n", "b.py": "from pkg import a\n"}, "cycle: pkg.a <-> pkg.b"),
        (
            {"sub/__init__.py": "", "sub/_x.py": "", "a.py": "from pkg.sub import _x\n"},
            "private module: pkg.a imports pkg.sub._x",
        ),
        (
            {"sub/__init__.py": "", "sub/b.py": "", "a.py": "import pkg.sub.b\nx = pkg.sub.b._hidden\n"},
            "private name: pkg.a uses pkg.sub.b._hidden",
        ),
        (
            {"a.py": "from pkg.b import Thing\nx = Thing._hidden()\n", "b.py": "class Thing: ...\n"},
            "private name: pkg.a uses pkg.b.Thing._hidden",
        ),
        (
            {
                "a.py": "def f():\n    import importlib\n    importlib.import_module('pkg.b')\n",
                "b.py": "import pkg.a\n",
            },
            "cycle: pkg.a <-> pkg.b",
        ),
        (
            {
                "adapters/__init__.py": "",
                "adapters/git.py": "from importlib import import_module\nimport_module('pkg.stages.build_wheels')\n",
                "stages/__init__.py": "",
                "stages/build_wheels.py": "",
            },
            "upward: pkg.adapters.git",
        ),
        (
            {"a.py": "import importlib\ndef f(r):\n    return importlib.import_module(type(r).__module__)\n"},
            "computed import: pkg.a",
        ),
    ],
)
def test_each_rule_catches_its_violation(tmp_path, files, expected):
    found = violations(_write(tmp_path, {"__init__.py": "", **files}))
    assert any(line.startswith(expected) for line in found), found


def test_allowed_shapes_are_not_violations(tmp_path):
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "_compat.py": "",
            "cli.py": "def f():\n    from pkg.stages import build_wheels\n",
            "stages/__init__.py": "",
            "stages/build_wheels.py": "from pkg import _compat\nfrom pkg.config import model\nfrom rich.table import Table\n"
            "def f():\n    import twine\n",
            "config/__init__.py": "",
            "config/model.py": "",
            "config_loader/__init__.py": "",
            "config_loader/load.py": "from pkg import helper\ndef load():\n    from pkg.config_loader import parse\n",
            "config_loader/parse.py": "from pkg import targets\nfrom pkg.config import model\n",
            "targets/__init__.py": "def publish():\n    from pkg.stages.publish import snapshot\n",
            "stages/publish/__init__.py": "",
            "stages/publish/snapshot.py": "from pkg.stages import build_wheels\n",
            "flows/__init__.py": "",
            "flows/release.py": "from pkg import targets\nfrom pkg.config_loader import parse\n",
            "helper.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rich.live import Live\n",
            "adapters/__init__.py": "",
            "adapters/_deadline.py": "",
            "adapters/github/client.py": "from pkg.adapters import _deadline\ndef f():\n    import github\n",
        },
    )
    assert violations(root) == set()
