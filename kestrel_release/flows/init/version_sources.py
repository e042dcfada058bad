"""Where `init` finds a project's name and version: [project], setup.py/setup.cfg, version
files the backend names, `__version__` in a package, or git tags (VCS plugins).

Helpers shared with init_detect.py live here too (reading files, setup.py keywords as an AST).
Nothing is executed: a setup.py that imports torch is read on a machine without torch.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from kestrel_release.flows.init.detected import Detected
from kestrel_release.project import version_pattern

VCS_REQUIRES = {
    "setuptools-scm": "setuptools-scm",
    "hatch-vcs": "hatch-vcs",
    "versioneer": "versioneer",
    "setuptools-git-versioning": "setuptools-git-versioning",
    "dunamai": "dunamai",
    "poetry-dynamic-versioning": "poetry-dynamic-versioning",
}
VERSION_FILES = ("version.py", "_version.py", "__about__.py", "__init__.py")
_VERSION_ASSIGN = re.compile(
    r"""^(?P<head>[ \t]*(?:__version__|version|VERSION)\s*(?::\s*str\s*)?=\s*)"""
    r"""(?P<q>["'])(?P<v>[0-9][0-9A-Za-z.+!_-]*)(?P=q)""",
    re.MULTILINE,
)


def norm(req: str) -> str:
    """The distribution name of a requirement string, normalized ('setuptools_scm>=8' -> 'setuptools-scm')."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else ""


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def table(tool: dict[str, Any], *keys: str) -> dict[str, Any]:
    node: Any = tool
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def setup_kw(text: str, key: str) -> str | None:
    """A setup() keyword given as a string (or a module-level name bound to one).

    setup(name=...) first; then the keyword arguments many setup.py files gather before
    the call: `kwargs = dict(name=...)` or `{"name": ...}` passed as setup(**kwargs).
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }

    def value(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            # version="0.1.10" + os.getenv("SUFFIX", ""): the literal is the part a release sets
            return value(node.left)
        return consts.get(node.id) if isinstance(node, ast.Name) else None

    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    named = [c for c in calls if getattr(c.func, "id", getattr(c.func, "attr", "")) == "setup"]
    gathered = [c for c in calls if getattr(c.func, "id", "") == "dict"]
    for call in named + gathered:
        found = next((value(kw.value) for kw in call.keywords if kw.arg == key), None)
        if found:
            return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key and value(v):
                    return value(v)
    return None


def name_version(
    d: Detected, pyproject: dict[str, Any], tool: dict[str, Any], setup_py: str, cfg: dict[str, dict[str, str]]
) -> None:
    project = raw if isinstance(raw := pyproject.get("project"), dict) else {}
    meta = cfg.get("metadata", {})
    if isinstance(project.get("name"), str):
        d.name, d.name_source = project["name"], "pyproject.toml [project]"
    elif setup_kw(setup_py, "name"):
        d.name, d.name_source = setup_kw(setup_py, "name"), "setup.py"
    elif meta.get("name"):
        d.name, d.name_source = meta["name"], "setup.cfg [metadata]"
    dynamic = raw if isinstance(raw := project.get("dynamic"), list) else []
    if isinstance(project.get("version"), str) and "version" not in dynamic:
        d.version, d.version_source = project["version"], "pyproject.toml [project]"
        # A package that also states its version in code keeps both in step through version_files.
        d.version_file = _version_in_packages(d, prefer=(), must_equal=d.version)
        return
    d.vcs = _vcs(d, tool, setup_py, cfg)
    if d.vcs:
        d.version_source = f"VCS tags ({d.vcs})"
        return
    hinted = _hinted_version_file(d, tool, setup_py, meta)
    if hinted:
        d.version_file, d.version = hinted
    elif setup_version := setup_kw(setup_py, "version"):
        d.version = setup_version
        d.version_file = _pattern_for(d.project_dir, "setup.py", setup_version)
    elif re.match(r"^[0-9]", meta.get("version", "")):
        d.version = meta["version"]
        d.version_file = ("setup.cfg", "version = {version}")
    else:
        found = _version_in_packages(d, prefer=(setup_py,), must_equal=None)
        if found:
            d.version_file = found
            d.version = _value_in(d.project_dir / found[0], found[1])
    if d.version_file and not _finds_one(d.project_dir, *d.version_file):
        # `version bump` refuses a pattern that finds several values (or none): do not write one.
        d.version_source = f"{d.version_file[0]} (no unique line to rewrite: add version_files by hand)"
        d.version_file = None
    elif d.version_file:
        d.version_source = d.version_file[0]


def _finds_one(root: Path, rel: str, pattern: str) -> bool:
    found = {version_pattern.value(m) for m in version_pattern.compile_pattern(pattern).finditer(read(root / rel))}
    return len(found) == 1


def _vcs(d: Detected, tool: dict[str, Any], setup_py: str, cfg: dict[str, dict[str, str]]) -> str | None:
    for req in d.build_requires:
        if norm(req) in VCS_REQUIRES:
            return VCS_REQUIRES[norm(req)]
    if "setuptools_scm" in tool or "use_scm_version" in setup_py:
        return "setuptools-scm"
    if (d.project_dir / "versioneer.py").is_file() or "versioneer" in cfg or "versioneer" in tool:
        return "versioneer"
    if table(tool, "hatch", "version").get("source") == "vcs":
        return "hatch-vcs"
    if table(tool, "pdm", "version").get("source") == "scm":
        return "pdm-backend (scm)"
    provider = str(table(tool, "scikit-build", "metadata", "version").get("provider", ""))
    return "setuptools-scm" if "setuptools_scm" in provider else None


def _hinted_version_file(
    d: Detected, tool: dict[str, Any], setup_py: str, meta: dict[str, str]
) -> tuple[tuple[str, str], str] | None:
    """A version file the configuration names: setuptools attr:/file:, hatch/pdm path, scikit-build
    regex input, meson.build's project(version:), or a VERSION file setup.py reads."""
    candidates: list[str] = []
    attr = table(tool, "setuptools", "dynamic", "version").get("attr")
    cfg_attr = meta.get("version", "")
    for spec in (attr, cfg_attr[5:].strip() if cfg_attr.startswith("attr:") else None):
        if isinstance(spec, str) and "." in spec:
            module = spec.rsplit(".", 1)[0].replace(".", "/")
            candidates += [f"{p}{module}.py" for p in ("", "src/")] + [f"{p}{module}/__init__.py" for p in ("", "src/")]
    for path in (
        table(tool, "hatch", "version").get("path"),
        table(tool, "pdm", "version").get("path"),
        table(tool, "scikit-build", "metadata", "version").get("input"),
    ):
        if isinstance(path, str):
            candidates.append(path)
    for rel in candidates:
        text = read(d.project_dir / rel)
        m = _VERSION_ASSIGN.search(text)
        if m:
            return (rel, m.group("head").lstrip() + m.group("q") + "{version}" + m.group("q")), m.group("v")
    return _plain_version_file(d, tool, setup_py, meta) or _meson_version(d)


def _plain_version_file(
    d: Detected, tool: dict[str, Any], setup_py: str, meta: dict[str, str]
) -> tuple[tuple[str, str], str] | None:
    """A file holding only the version (VERSION, version.txt): named by setuptools, or read by setup.py."""
    named = table(tool, "setuptools", "dynamic", "version").get("file")
    cfg_file = meta.get("version", "")
    files = (
        [named]
        if isinstance(named, str)
        else [f for f in named if isinstance(f, str)]
        if isinstance(named, list)
        else []
    )
    files += [cfg_file[5:].strip()] if cfg_file.startswith("file:") else []
    files += [n for n in ("VERSION", "VERSION.txt", "version.txt") if n in setup_py]
    for rel in files:
        text = read(d.project_dir / rel).strip()
        if re.fullmatch(r"[0-9][0-9A-Za-z.+!_-]*", text):
            return (rel, "{version}"), text
    return None


def _meson_version(d: Detected) -> tuple[tuple[str, str], str] | None:
    m = re.search(r"""\bversion\s*:\s*(['"])([0-9][0-9A-Za-z.+!_-]*)\1""", read(d.project_dir / "meson.build"))
    if m and d.backend == "meson-python":
        return ("meson.build", m.group(0).replace(m.group(2), "{version}")), m.group(2)
    return None


def _version_in_packages(d: Detected, prefer: tuple[str, ...], must_equal: str | None) -> tuple[str, str] | None:
    """The first `__version__ = "X"` in a package's version.py/_version.py/__init__.py.

    Files whose name setup.py mentions come first: that is the one it reads.
    """
    files = [f"{rel}/{name}" for rel in d.packages.values() for name in VERSION_FILES]
    files.sort(key=lambda f: not any(Path(f).name in text for text in prefer))
    for rel in files:
        m = _VERSION_ASSIGN.search(read(d.project_dir / rel))
        if m and (must_equal is None or m.group("v") == must_equal):
            return rel, m.group("head").lstrip() + m.group("q") + "{version}" + m.group("q")
    return None


def _pattern_for(root: Path, rel: str, version: str) -> tuple[str, str] | None:
    for m in _VERSION_ASSIGN.finditer(read(root / rel)):
        if m.group("v") == version:
            return rel, m.group("head").lstrip() + m.group("q") + "{version}" + m.group("q")
    kw = re.search(r"""\bversion\s*=\s*(["'])""" + re.escape(version) + r"\1", read(root / rel))
    if kw:  # setup(version="1.2.3"): the keyword with its quotes
        return rel, kw.group(0).replace(version, "{version}")
    return None


def _value_in(path: Path, pattern: str) -> str | None:
    m = version_pattern.compile_pattern(pattern).search(read(path))
    return version_pattern.value(m) if m else None


def scm_version(describe: str) -> tuple[str, str] | None:
    """(version, tag) from `git describe --tags --long` as setuptools-scm's default scheme (and so
    hatch-vcs) computes it: on the tag its version (v1.2.3 or 1.2.3 -> 1.2.3); N commits later the next
    patch's .devN with the commit as local part (1.2.4.dev3+gabc1234). None without a version tag."""
    from packaging.version import InvalidVersion, Version

    m = re.fullmatch(r"(?P<tag>.+)-(?P<n>\d+)-g(?P<sha>[0-9a-f]+)", describe.strip())
    if not m:
        return None
    tag = m.group("tag")
    try:
        v = Version(re.sub(r"^[A-Za-z_-]*?[vV]?(?=\d)", "", tag))
    except InvalidVersion:
        return None
    if m.group("n") == "0":
        return str(v), tag
    release = (*v.release[:-1], v.release[-1] + 1)
    return f"{'.'.join(map(str, release))}.dev{m.group('n')}+g{m.group('sha')}", tag


def pkg_info_version(text: str) -> str | None:
    """The Version: of a PKG-INFO (an unpacked sdist's core metadata)."""
    m = re.search(r"^Version:[ \t]*(\S+)", text, re.MULTILINE)
    return m.group(1) if m else None
