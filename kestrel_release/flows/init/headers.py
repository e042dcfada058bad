"""Headers a package ships on purpose, so that init's forbid list does not refuse the unmodified package.

The default forbid list has `*.h`: a kernel package's sources must not leak into its wheel. But some
packages install their headers for downstream builds: bitarray's setup.py lists `"*.h"` in
package_data, numpy-style packages install an `include/` directory inside the package. What counts
as "on purpose" is what the package's own build configuration says it installs inside the package:
- an `include/` directory inside a package;
- setuptools package_data (setup.py, setup.cfg [options.package_data], [tool.setuptools.package-data]);
- meson's `install_sources(...)` naming a header, or `install_subdir('include', ...)`;
- CMake's `install(FILES|DIRECTORY ...)` naming a header or an include directory (when CMake builds);
- hatch's wheel `include`/`artifacts`/`force-include`.
A header that only MANIFEST.in lists is for the sdist, not the wheel: it stays forbidden.

The same holds for Cython sources (`.pyx`, `.pxd`, `.pxi`), which packages ship so that others can
`cimport` them: declared in package_data, [tool.setuptools.package-data], hatch's wheel include, or
MANIFEST.in with include_package_data (setuptools then installs what MANIFEST.in lists inside a
package), they are not forbidden (d.shipped_sources).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kestrel_release.flows.init.detected import Detected
from kestrel_release.flows.init.version_sources import read, table

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh")
_SUFFIX = re.compile(r"\.(h|hh|hpp|hxx|cuh)\b")
_CYTHON = re.compile(r"\.(pyx|pxd|pxi|c|cc|cpp|cxx|cu)(?![\w+])")


def find(
    d: Detected, setup_py: str, pyproject: dict[str, Any], cfg: dict[str, dict[str, str]], files: list[Path]
) -> None:
    """d.shipped_headers: {suffix: why} for each header suffix the build installs inside the package."""
    root = d.project_dir
    found: dict[str, str] = {}

    def add(suffixes: Iterable[str], why: str) -> None:
        for suffix in suffixes:
            found.setdefault(suffix, why)

    for rel in d.packages.values():
        include = root / rel / "include"
        if include.is_dir():
            inside = {p.suffix for p in files if p.is_relative_to(include) and p.suffix in HEADER_SUFFIXES}
            add(sorted(inside or {".h"}), f"{rel}/include/")
    add(_named(_package_data(setup_py)), "setup.py package_data")
    add(_named(list(cfg.get("options.package_data", {}).values())), "setup.cfg [options.package_data]")
    add(_named(_strings(table(pyproject, "tool", "setuptools", "package-data"))), "[tool.setuptools.package-data]")
    wheel = table(pyproject, "tool", "hatch", "build", "targets", "wheel")
    add(_named(_strings({k: wheel.get(k) for k in ("include", "artifacts", "force-include")})), "hatch wheel include")
    for path in files:
        if path.name == "meson.build":
            text = read(path)
            lists = _meson_lists(text)
            calls = [
                c + " ".join(lists.get(word, "") for word in re.findall(r"\b\w+\b", c))
                for c in _calls(text, "install_sources")
            ] + [c for c in _calls(text, "install_subdir") if "include" in c]
            suffixes = _named(calls) or ([".h"] if any("include" in c for c in calls) else [])
            add(suffixes, f"{path.relative_to(root).as_posix()} installs them")
        elif d.cmake and (path.name == "CMakeLists.txt" or path.suffix == ".cmake"):
            installs = [
                c for c in _calls(read(path), "install") if re.match(r"install\s*\(\s*(FILES|DIRECTORY)", c, re.I)
            ]
            suffixes = _named(installs) or ([".h"] if any("include" in c.lower() for c in installs) else [])
            add(suffixes, f"{path.relative_to(root).as_posix()} installs them")
    d.shipped_headers = found
    d.ships_headers = bool(found)
    _cython(d, setup_py, pyproject, cfg)


def _cython(d: Detected, setup_py: str, pyproject: dict[str, Any], cfg: dict[str, dict[str, str]]) -> None:
    """d.shipped_sources: {".pyx": why, ...} for the Cython and C/C++ sources the wheel installs on purpose
    (CUDA kernel sources stay forbidden in a CUDA package: choose._forbid)."""
    wheel = table(pyproject, "tool", "hatch", "build", "targets", "wheel")
    declared = [
        (_package_data(setup_py), "setup.py package_data"),
        (list(cfg.get("options.package_data", {}).values()), "setup.cfg [options.package_data]"),
        (_strings(table(pyproject, "tool", "setuptools", "package-data")), "[tool.setuptools.package-data]"),
        (_strings({k: wheel.get(k) for k in ("include", "artifacts", "force-include")}), "hatch wheel include"),
        (_strings(table(pyproject, "tool", "hatch", "build").get("include")), "hatch build include"),
    ]
    if _includes_package_data(setup_py, pyproject, cfg):
        declared.append((_manifest_lines(read(d.project_dir / "MANIFEST.in")), "MANIFEST.in with include_package_data"))
        declared.append((_package_ext_sources(d, setup_py), _EXT_SOURCES_WHY))
    for texts, why in declared:
        for suffix in _named(texts, _CYTHON):
            d.shipped_sources.setdefault(suffix, why)


_EXT_SOURCES_WHY = "setup.py's extension sources inside the package, which include_package_data installs"
_SOURCE_PATH = re.compile(r"""["']([\w./-]+\.(?:c|cc|cpp|cxx|cu))["']""")
_JOINED_PATH = re.compile(r"""join\(\s*["']([\w.-]+)["']\s*,\s*["']([\w./-]+\.(?:c|cc|cpp|cxx|cu))["']""")


def _package_ext_sources(d: Detected, setup_py: str) -> list[str]:
    """setup.py's extension sources that sit inside a package directory: setuptools' file manifest always lists
    ext_modules' sources, and include_package_data installs every listed file inside a package (torchsort 0.1.10
    ships torchsort/isotonic_cpu.cpp so, with only `*.cu` in its MANIFEST.in)."""
    paths = _SOURCE_PATH.findall(setup_py) + [f"{a}/{b}" for a, b in _JOINED_PATH.findall(setup_py)]
    dirs = tuple(f"{rel.rstrip('/')}/" for rel in d.packages.values() if rel not in ("", "."))
    return [p for p in paths if p.lstrip("./").startswith(dirs)]


def _includes_package_data(setup_py: str, pyproject: dict[str, Any], cfg: dict[str, dict[str, str]]) -> bool:
    """setuptools installs MANIFEST.in's files inside packages: include_package_data=True in setup.py or
    setup.cfg, or a [project] table (setuptools' pyproject default) unless include-package-data = false."""
    if re.search(r"include_package_data\s*=\s*True", setup_py):
        return True
    if cfg.get("options", {}).get("include_package_data", "").strip().lower() in ("true", "1", "yes"):
        return True
    flag = table(pyproject, "tool", "setuptools").get("include-package-data")
    return isinstance(pyproject.get("project"), dict) and flag is not False


def _manifest_lines(text: str) -> list[str]:
    """The patterns MANIFEST.in adds (include, recursive-include, global-include), not those it excludes."""
    return [line for line in text.splitlines() if re.match(r"\s*(include|recursive-include|global-include)\s", line)]


def _named(texts: Iterable[object], pattern: re.Pattern[str] = _SUFFIX) -> list[str]:
    """Header suffixes (or those of `pattern`) named in `texts` ("*.h", "include/*.hpp", "x.cuh")."""
    out = {"." + m.group(1) for text in texts for m in pattern.finditer(str(text))}
    return sorted(out)


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(k) + _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def _package_data(setup_py: str) -> list[str]:
    """The strings inside setup()'s package_data value (a keyword or a dict entry), as an AST."""
    try:
        tree = ast.parse(setup_py)
    except (SyntaxError, ValueError, RecursionError):
        return []
    values: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "package_data":
            values.append(node.value)
        elif isinstance(node, ast.Dict):
            values += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "package_data"
            ]
    return [n.value for v in values for n in ast.walk(v) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _calls(text: str, func: str) -> list[str]:
    """Every `func(...)` call as written (balanced parentheses), e.g. meson's install_sources."""
    out = []
    for m in re.finditer(r"\b" + func + r"\s*\(", text, re.IGNORECASE):
        depth = 0
        for i in range(m.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                out.append(text[m.start() : i + 1])
                break
    return out


def _meson_lists(text: str) -> dict[str, str]:
    """meson.build's `name = [...]` and `name += [...]` lists, by name (install_sources(python_sources, ...))."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^[ \t]*(\w+)[ \t]*\+?=[ \t]*\[", text, re.MULTILINE):
        depth = 0
        for i in range(m.end() - 1, len(text)):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            if depth == 0:
                out[m.group(1)] = out.get(m.group(1), "") + text[m.end() - 1 : i + 1]
                break
    return out
