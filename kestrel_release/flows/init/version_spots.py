"""Every other place a project writes its version down, so that `version bump` rewrites them all.

A package states its version in more places than the one its backend reads: PyYAML's setup.py and
`lib/yaml/__init__.py`, msgpack's `__version__` and `version = (1, 1, 2)`, contourpy's meson.build and
`lib/contourpy/_version.py`, PyWavelets' meson.build and `util/version_utils.py` (MAJOR/MINOR/MICRO),
bitarray's `#define BITARRAY_VERSION "3.12.3"` (its only place). A place left out keeps the old
version in the next wheel (`yaml.__version__` 6.0.3 in a 6.0.4 wheel).

What counts (read, never executed):
- in the package's own .py files: `__version__ = "X"` anywhere, `version`/`VERSION = "X"` in a
  version file, version tuples (`version = (1, 1, 2)`, `__version_info__ = (...)`);
- a .py file named for the version anywhere in the tree (`util/version_utils.py`): those and
  MAJOR/MINOR/MICRO lines;
- VERSION files, meson.build's `project(..., version: 'X')`, CMake's `project(x VERSION X)`;
- C/C++ headers and sources: `#define <NAME>VERSION "X"` (bitarray.h, cffi's _cffi_backend.c).
A value that differs from the project's version is kept only where the file is about this project's
version by its name (a version file, the project's own macro prefix, meson/CMake's project()): that is
a stale copy `version` then warns about, not another library's version (a vendored module's
`__version__`, a dependency's header).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kestrel_release.flows.init.detected import Detected
from kestrel_release.project import version_pattern

# Never this project's own version: tests, docs, vendored or bundled code.
_FOREIGN = {
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "benchmark",
    "third_party",
    "thirdparty",
    "vendor",
    "_vendor",
    "vendored",
    "_vendored",
    "extern",
    "external",
    "deps",
    "subprojects",
    "node_modules",
}
C_FILES = (".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx")  # a define in a source counts too (cffi's)
PLAIN_FILES = ("VERSION", "VERSION.txt", "version.txt")
_V = r"[0-9][0-9A-Za-z.+!_-]*"
_STRING = re.compile(
    r"^(?P<head>(?P<name>__version__|version|VERSION|__VERSION__)[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*)"
    r"(?P<q>[\"'])(?P<v>" + _V + r")(?P=q)",
    re.MULTILINE,
)
_TUPLE = re.compile(
    r"^(?P<head>(?P<name>__version_info__|version_info|VERSION_INFO|__version_tuple__|version_tuple|VERSION_TUPLE"
    r"|__version__|version|VERSION)[ \t]*=[ \t]*\([ \t]*)(?P<t>[0-9]+(?:[ \t]*,[ \t]*[0-9]+)+)(?P<tail>[ \t]*,?[ \t]*\))",
    re.MULTILINE,
)
_SPLIT = re.compile(
    r"^(?P<n1>\w*MAJOR\w*)(?P<e1>[ \t]*=[ \t]*)(?P<major>[0-9]+)\r?\n"
    r"(?P<n2>\w*MINOR\w*)(?P<e2>[ \t]*=[ \t]*)(?P<minor>[0-9]+)\r?\n"
    r"(?P<n3>\w*(?:MICRO|PATCH)\w*)(?P<e3>[ \t]*=[ \t]*)(?P<micro>[0-9]+)$",
    re.MULTILINE,
)
_DEFINE = re.compile(r"^(?P<head>[ \t]*#[ \t]*define[ \t]+(?P<name>\w*VERSION\w*)[ \t]+\")(?P<v>" + _V + r")\"", re.M)
# `#define DEMO_VERSION_MAJOR 0` ... MINOR ... PATCH/MICRO, with other lines between them.
_DEFINE_PART = re.compile(
    r"^(?P<head>[ \t]*#[ \t]*define[ \t]+(?P<name>\w*?(?P<part>MAJOR|MINOR|PATCH|MICRO)\w*)[ \t]+)(?P<n>[0-9]+)[ \t]*$",
    re.M,
)
_MESON_VERSION = re.compile(r"""\bversion\s*:\s*(['"])(""" + _V + r")\1")
_CMAKE = re.compile(r"\bproject\s*\(\s*[\w${}.-]+[^)]*?\bVERSION\s+(?P<v>[0-9]+(?:\.[0-9]+){0,3})\b", re.I)
MAX_READ = 512 * 1024  # a version is near the top; a huge generated file is not read whole


@dataclass(frozen=True)
class Spot:
    path: str  # relative to the project, "/"-separated
    pattern: str  # for version_files
    value: str  # the version it states now
    own: bool  # about this project's version by its name (kept even when it differs)


def find(d: Detected, files: list[Path]) -> list[Spot]:
    """Every spot in `files` (the project's walk) in a stable order: package files first."""
    root = d.project_dir
    packages = [root / rel for rel in d.packages.values()]
    prefixes = _macro_prefixes(d)
    spots: list[Spot] = []
    for path in sorted(files, key=lambda p: (not any(p.is_relative_to(pkg) for pkg in packages), p.as_posix())):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if any(part in _FOREIGN for part in parts[:-1]):
            continue
        in_package = any(path.is_relative_to(pkg) for pkg in packages)
        name = parts[-1]
        versiony = "version" in name.lower() or name == "__about__.py"
        if name.endswith(".py") and (in_package or versiony):
            # A top-level package's __init__.py speaks for the package; a subpackage's may be bundled code.
            top_init = name == "__init__.py" and path.parent in packages
            spots += _python(rel, _read(path), named=versiony, init=top_init)
        elif name.endswith(C_FILES):
            spots += _defines(rel, _read(path), prefixes)
        elif name in PLAIN_FILES and (len(parts) == 1 or in_package):
            text = _read(path).strip()
            if re.fullmatch(_V, text):
                spots.append(Spot(rel, "{version}", text, True))
        elif rel == "meson.build":
            spots += _meson(_read(path))
        elif rel == "CMakeLists.txt":
            spots += _cmake(_read(path))
    return [s for s in spots if _unique(root / s.path, s.pattern)]


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_READ).decode("utf-8", "replace")
    except OSError:
        return ""


def _python(rel: str, text: str, *, named: bool, init: bool) -> list[Spot]:
    """`named`: a file named for the version; `init`: a top-level package's __init__.py. Anywhere else
    only `__version__` counts, and only when it agrees (a bundled module's own `__version__` is not ours)."""
    out = []
    for m in _STRING.finditer(text):
        if m.group("name") == "__version__" or named or init:
            pattern = m.group("head") + m.group("q") + "{version}" + m.group("q")
            own = named or (init and m.group("name") == "__version__")
            out.append(Spot(rel, pattern, m.group("v"), own))
    for m in _TUPLE.finditer(text):
        if m.group("name").lower().startswith("__version") or named or init:
            pattern = m.group("head") + "{version_tuple}" + m.group("tail")
            out.append(Spot(rel, pattern, ".".join(n.strip() for n in m.group("t").split(",")), own=named))
    if named:
        for m in _SPLIT.finditer(text):
            pattern = "\n".join(
                m.group(f"n{i}") + m.group(f"e{i}") + "{" + key + "}"
                for i, key in ((1, "major"), (2, "minor"), (3, "micro"))
            )
            out.append(Spot(rel, pattern, f"{m.group('major')}.{m.group('minor')}.{m.group('micro')}", own=True))
    return out


def _defines(rel: str, text: str, prefixes: tuple[str, ...]) -> list[Spot]:
    return [
        Spot(rel, m.group("head") + '{version}"', m.group("v"), own=m.group("name").startswith(prefixes))
        for m in _DEFINE.finditer(text)
        if "ABI" not in m.group("name") and "API" not in m.group("name")  # an interface's version, not the release
    ] + _split_defines(rel, text, prefixes)


def _split_defines(rel: str, text: str, prefixes: tuple[str, ...]) -> list[Spot]:
    """A version held in three defines (`<X>_VERSION_MAJOR`, `_MINOR`, `_PATCH`/`_MICRO`, one name
    stem): one spot whose pattern holds the three, written as three version_files entries (`entries`)
    that `version` reads and rewrites together."""
    found: dict[str, dict[str, re.Match[str]]] = {}
    for m in _DEFINE_PART.finditer(text):
        name = m.group("name")
        if "ABI" in name or "API" in name or ("VERSION" not in name and not name.startswith(prefixes)):
            continue
        stem = name.replace(m.group("part"), "", 1)
        key = {"MAJOR": "major", "MINOR": "minor", "PATCH": "micro", "MICRO": "micro"}[m.group("part")]
        found.setdefault(stem, {}).setdefault(key, m)
    out = []
    for stem, parts in found.items():
        if "major" not in parts or "minor" not in parts:
            continue
        ordered = sorted(parts.items(), key=lambda kv: kv[1].start())
        pattern = version_pattern.merge([m.group("head") + "{" + key + "}" for key, m in ordered])
        value = ".".join(parts[k].group("n") for k in ("major", "minor", "micro") if k in parts)
        out.append(Spot(rel, pattern, value, own=stem.startswith(prefixes)))
    return out


def entries(path: str, pattern: str) -> list[tuple[str, str]]:
    """The version_files entries of a spot: a spread one (_split_defines) is one entry per define."""
    return [(path, part) for part in pattern.split(version_pattern.GAP)]


def _macro_prefixes(d: Detected) -> tuple[str, ...]:
    names = [d.name or "", *d.packages]
    return tuple({re.sub(r"[^A-Za-z0-9]+", "_", n).upper() + "_" for n in names if n})


def _meson(text: str) -> list[Spot]:
    call = _call(text, "project")
    m = _MESON_VERSION.search(call) if call else None
    if not m:
        return []
    pattern = m.group(0).replace(m.group(2), "{version}")
    if not _finds_one_value(text, pattern):  # another version: '...' in the file: anchor at project(
        pattern = call[: m.end()].replace(m.group(2), "{version}")
    return [Spot("meson.build", pattern, m.group(2), True)]


def _cmake(text: str) -> list[Spot]:
    m = _CMAKE.search(text)
    if not m:
        return []
    pattern = m.group(0)[: m.start("v") - m.start()] + "{release}"
    return [Spot("CMakeLists.txt", pattern, m.group("v"), True)]


def _call(text: str, func: str) -> str:
    """`func(...)` as written (balanced parentheses), "" when absent."""
    m = re.search(r"\b" + func + r"\s*\(", text)
    if not m:
        return ""
    depth = 0
    for i in range(m.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[m.start() : i + 1]
    return ""


def _finds_one_value(text: str, pattern: str) -> bool:
    regex = version_pattern.compile_pattern(pattern)
    return len({version_pattern.value(m) for m in regex.finditer(text)}) == 1


def _unique(path: Path, pattern: str) -> bool:
    """`version bump` refuses a pattern that finds several values (or none) in its file: such a spot is left out."""
    return _finds_one_value(_read(path), pattern)


def agrees(spot: Spot, version: str) -> bool:
    return version_pattern.holds(spot.pattern, spot.value, version)


def record(d: Detected, files: list[Path], setup_py: str) -> None:
    """d.version_files: the backend's own place first, then every other spot that states the version.

    Without a version from anywhere else, the spot setup.py reads (bitarray's header) or the one all
    spots agree on is the version. A spot of this project that states another version is kept and
    named in d.version_notes: `version` warns about it until the files agree.
    """
    if d.vcs:
        return  # the tag is the version; files a VCS plugin writes are generated
    spots = find(d, files)
    if d.version is None and not _adopt(d, spots, setup_py):
        return
    version = d.version or ""
    chosen = [d.version_file] if d.version_file else []
    for spot in spots:
        if (spot.path, spot.pattern) in chosen:
            continue
        if agrees(spot, version):
            chosen.append((spot.path, spot.pattern))
        elif spot.own:
            chosen.append((spot.path, spot.pattern))
            d.version_notes.append(
                f"{spot.path} states {spot.value}, not {version}: `kestrel-release version` warns until they "
                f"agree (`kestrel-release version set {version} --force` writes {version} everywhere)"
            )
    d.version_files = [entry for path, pattern in chosen for entry in entries(path, pattern)]
    spread = sorted({path for path, pattern in chosen if version_pattern.GAP in pattern})
    for path in spread:
        d.version_notes.append(
            f"{path} holds the version in several defines: their version_files entries move together "
            "(`kestrel-release version` reads and rewrites them as one)"
        )


def _adopt(d: Detected, spots: list[Spot], setup_py: str) -> bool:
    # The version is a spot setup.py reads, or the one this project's own spots agree on; never a spot
    # that merely looks like a version (orjson's vendored include/yyjson/yyjson.h is yyjson's).
    read_by_setup = [s for s in spots if s.path in setup_py or (s.own and Path(s.path).name in setup_py)]
    own = [s for s in spots if s.own]
    whole = [s for s in own if not version_pattern.release_only(s.pattern)]
    pick = next(iter(read_by_setup), None)
    if pick is None and whole and all(agrees(s, whole[0].value) for s in own):
        pick = whole[0]
    if pick is None and own and not whole and all(agrees(s, own[0].value) for s in own):
        pick = own[0]  # only release numbers (three defines): the version is those
    if pick is None:
        return False
    d.version, d.version_file, d.version_source = pick.value, (pick.path, pick.pattern), pick.path
    return True
