"""version-mismatch: every version a wheel states must be the release's, before anything is uploaded.

A wheel can be named 5.11.2 and say 5.11.1 on import: setuptools copied a module from an in-tree
`build/` left by an earlier build, a generated `_version.py` was stale, or a file that holds the
version was never bumped (PyYAML's `yaml/__init__.py`, msgpack's `version = (1, 1, 2)`). Read from
the wheel without running it: METADATA's Version, and literal versions assigned at the top level
of the package's `__init__.py` and version modules (`__version__ = "x"`, `__version__ = version =
"x"`, setuptools-scm's `_version.py`, tuples such as `version = (1, 1, 2)` or `__version_info__`,
compared as dotted versions). A name also bound any other way (an import, a computed value, a
fallback inside try/if) is not a literal and is not compared.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kestrel_release.stages.verify.finding import Finding

if TYPE_CHECKING:
    from kestrel_release.artifacts.wheel import Member

RULE = "version-mismatch"
_VERSION_MODULES = {"_version.py", "version.py", "__version__.py", "__about__.py", "_about.py"}
_STRINGS = {"__version__"}
_STRINGS_IN_VERSION_MODULES = {"version", "full_version"}
_TUPLES = {"version", "version_info", "__version_info__", "version_tuple", "__version_tuple__"}
_LIMIT = 1024 * 1024  # a version module is small; larger .py files are not read
_SKIP_DIRS = {".git", "build", "dist", "dist-all", ".venv", "venv", "node_modules", "__pycache__", ".tox"}


@dataclass
class ModuleVersions:
    """A visitor for the wheel's single read pass: keeps the candidate modules' source (small .py only)."""

    sources: dict[str, bytes] = field(default_factory=dict)

    def fresh(self) -> ModuleVersions:
        return ModuleVersions()

    def merge(self, other: ModuleVersions) -> None:
        self.sources.update(other.sources)

    def visit(self, member: Member, data: bytes | memoryview) -> None:
        name = member.name
        parts = name.split("/")
        if not name.endswith(".py") or len(parts) > 3 or len(data) > _LIMIT:
            return
        if parts[0].endswith((".dist-info", ".data")):
            return
        if parts[-1] == "__init__.py" or parts[-1] in _VERSION_MODULES or len(parts) == 1:
            blob = bytes(data)
            if b"version" in blob:
                self.sources[name] = blob


def _candidates(sources: dict[str, bytes], names: set[str], dist: str | None) -> list[str]:
    """The package's own version modules: at the top of each top-level package (one level down in a
    namespace package without __init__.py), and a single-module distribution's module; never deeper,
    where vendored libraries carry their own versions."""
    out = []
    for name in sorted(sources):
        parts = name.split("/")
        if len(parts) == 1:
            if dist and canonicalize_name(parts[0][:-3]) == canonicalize_name(dist):
                out.append(name)
        elif len(parts) == 2 or f"{parts[0]}/__init__.py" not in names:
            out.append(name)
    return out


def literals(source: bytes, filename: str) -> dict[str, tuple[str, object]]:
    """{name: (as written, value)} for the version names bound only by top-level literal assignments."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    strings = _STRINGS | (_STRINGS_IN_VERSION_MODULES if filename in _VERSION_MODULES else set())
    top: dict[str, tuple[str, object]] = {}
    other: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue  # `version: str` declares, binds nothing (setuptools-scm's _version.py)
        targets, value = _assignment(node)
        literal = _literal(value) if value is not None else None
        if value is not None and literal is not None and targets:
            for target in targets:
                top[target] = (ast.unparse(value), literal)
        else:
            other |= _bindings(node)
    return {
        k: v for k, v in top.items() if k not in other and (k in strings if isinstance(v[1], str) else k in _TUPLES)
    }


def _bindings(node: ast.stmt) -> set[str]:
    """Every module-level name a statement binds (inside if/try/for/with too; not in function bodies)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    out: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(item.name)
            continue
        if isinstance(item, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in item.names}
        elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            out.add(item.id)
        todo.extend(ast.iter_child_nodes(item))
    return out


def _assignment(node: ast.stmt) -> tuple[list[str], ast.expr | None]:
    """The names and value of `a = b = VALUE` / `a: T = VALUE` (only plain names as targets)."""
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets if isinstance(t, ast.Name)], node.value
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return [node.target.id], node.value
    return [], None


def _literal(value: ast.expr) -> object | None:
    """A str, or a tuple of ints and strs starting with an int; None for anything else."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.Tuple) and len(value.elts) >= 2:
        items = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, (int, str))]
        if len(items) == len(value.elts) and isinstance(items[0], int) and not isinstance(items[0], bool):
            return tuple(items)
    return None


def as_version(value: object) -> Version | None:
    """A literal as a version: a string as written; a tuple dotted, the tail that is no release or
    pre/post/dev part taken as the local label (setuptools-scm's (1, 2, 'dev3', 'gabc') is 1.2.dev3+gabc)."""
    if isinstance(value, str):
        try:
            return Version(value)
        except InvalidVersion:
            return None
    if not isinstance(value, tuple):
        return None
    parts = [str(p) for p in value]
    for cut in range(len(parts), 0, -1):
        text = ".".join(parts[:cut]) + ("+" + ".".join(parts[cut:]) if cut < len(parts) else "")
        try:
            return Version(text)
        except InvalidVersion:
            continue
    return None


def same(stated: Version, expected: Version) -> bool:
    """Equal as versions (1.1 == 1.1.0); a local label (+cu124) only counts where both have one, as
    METADATA's is compared (a local version itself is the local-version rule's finding)."""
    if Version(stated.public) != Version(expected.public):
        return False
    return stated.local is None or expected.local is None or stated.local == expected.local


def check(
    sources: dict[str, bytes],
    member_names: set[str],
    dist: str | None,
    metadata_version: str | None,
    plan: str | None,
    project_dir: Path | None,
) -> list[Finding]:
    """The wheel's METADATA and modules against the release's version (`plan`; else METADATA's)."""
    out: list[Finding] = []
    expected_text = plan or metadata_version
    try:
        expected = Version(expected_text) if expected_text else None
    except InvalidVersion:
        return []  # the metadata rule reports an invalid version
    if expected is None:
        return []
    against = f"the release is {plan}" if plan else f"its METADATA says {metadata_version}"
    if plan and metadata_version:
        try:
            stated = Version(metadata_version)
        except InvalidVersion:
            stated = None
        if stated is not None and stated.public != expected.public:
            hint = "the wheel was built from another version of the project: rebuild it (kestrel-release build)"
            meta = next((n for n in sorted(member_names) if n.endswith(".dist-info/METADATA")), "METADATA")
            out.append(_finding(meta, f"says Version {metadata_version}, but {against}", hint))
    for name in _candidates(sources, member_names, dist):
        base = name.rsplit("/", 1)[-1]
        for var, (written, value) in literals(sources[name], base).items():
            stated = as_version(value)
            if stated is None or same(stated, expected):
                continue
            hint = _advice(project_dir, name, var, value, expected_text or "")
            out.append(_finding(name, f"says {var} = {written}, but {against}", hint))
    return out


def _finding(member: str, facts: str, hint: str) -> Finding:
    return Finding(RULE, "error", member, f"{facts}: {hint}", hint=hint)


def _advice(project_dir: Path | None, member: str, var: str, value: object, expected: str) -> str:
    """What to do, from what the project's own copy of the file says."""
    if project_dir is None:
        return "the wheel's copy is stale or was never bumped: rebuild the wheel from a clean tree"
    source = _source_of(project_dir, member)
    build = project_dir / "build"
    if source is None:
        return (
            f"the project has no {member} as written (generated at build time?), so the wheel got an old copy: "
            f"remove {build} and rebuild (kestrel-release build)"
        )
    rel = source.relative_to(project_dir).as_posix()
    now = literals(_read(source), source.name).get(var)
    stated = as_version(now[1]) if now else None
    if stated is not None and same(stated, Version(expected)):
        return (
            f"the project's {rel} says {expected}, so the in-tree build/ (or another stale copy) held an old "
            f"{member}: remove {build} and rebuild (kestrel-release build)"
        )
    if now and now[1] == value and not _ignored(project_dir, rel):
        return (
            f"the project's {rel} still says {now[0]}: add it to version_files in [tool.kestrel-release] "
            f"so kestrel-release version rewrites it (or set it to {expected}), then rebuild"
        )
    return (
        f"{rel} is generated at build time (or computed) and the wheel got an old one: remove {build} "
        f"and {rel} if git ignores it, then rebuild (kestrel-release build)"
    )


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()[:_LIMIT]
    except OSError:
        return b""


def _ignored(project_dir: Path, rel: str) -> bool:
    from kestrel_release.adapters import git

    return rel in (git.ignored(project_dir, [rel]) or set())


def _source_of(project_dir: Path, member: str) -> Path | None:
    """The project file the wheel's `member` was built from (flat, src/, lib/ or python/ layouts, or deeper)."""
    for base in ("", "src", "lib", "python"):
        path = project_dir / base / member
        if path.is_file():
            return path
    for root, dirs, files in os.walk(project_dir):
        depth = len(Path(root).relative_to(project_dir).parts)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".") and depth < 4)
        if member.rsplit("/", 1)[-1] in files:
            path = Path(root) / member.rsplit("/", 1)[-1]
            if path.relative_to(project_dir).as_posix().endswith(member):
                return path
    return None
