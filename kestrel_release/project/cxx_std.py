"""The C++ standard a torch extension compiles with, against the one its build env's torch headers require.

A package that pins `-std=c++17` (setup.py's extra_compile_args, CMake's CMAKE_CXX_STANDARD, build.env
CXXFLAGS) builds against whatever torch its isolated build env resolves: the newest one. torch 2.14's
headers stop at `#error C++20 or later compatible compiler is required`, after a build of many minutes.
Both sides are read, never assumed: the package's flags from its build files (setup.py as an AST, never
executed), torch's requirement from the `#error` its installed headers guard with `__cplusplus < NNNNNNL`,
so a new torch that raises the bar again is caught without a table here to update.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kestrel_release.project import package_cuda
from kestrel_release.project.package_cuda import Place

# `-std=c++17`, `--std=gnu++2a`, MSVC's `/std:c++17`; the value alone when the flag is its own argument.
_FLAG = re.compile(r"(?:^|\s)(?P<flag>(?:--?std[=\s]+|/std:)(?:c|gnu)\+\+(?P<ver>\w+))")
_CMAKE = re.compile(r"\b(?P<flag>(?:CMAKE_CXX_STANDARD|CXX_STANDARD)\s+\"?(?P<ver>\d+)|cxx_std_(?P<feat>\d+))")
_GUARD = re.compile(r"(?:__cplusplus|_MSVC_LANG)\s*<\s*(\d{6})L?")
_ALIASES = {"0x": 2011, "1y": 2014, "1z": 2017, "2a": 2020, "2b": 2023, "2c": 2026}  # GCC's draft names
_SUFFIXES = (".h", ".hpp", ".hh", ".cuh")


@dataclass(frozen=True)
class Asked:
    """The lowest standard the package's build files ask for."""

    year: int  # 2017
    flag: str  # "-std=c++17"
    place: Place

    def __str__(self) -> str:
        return f"{self.place} passes {self.flag}" if self.place.path != "build.env" else f"build.env sets {self.flag}"


@dataclass(frozen=True)
class Required:
    """The highest standard an installed header refuses to compile below."""

    year: int
    headers: tuple[str, ...]  # ("ATen/ATen.h:9", "torch/csrc/api/include/torch/all.h:9"), under the include dir

    def __str__(self) -> str:
        verb = "stops" if len(self.headers) == 1 else "stop"
        return f"{' and '.join(self.headers)} {verb} with #error below it"


def name(year: int) -> str:
    return f"C++{year % 100:02d}"


def _year(ver: str) -> int | None:
    if ver in _ALIASES:
        return _ALIASES[ver]
    if not ver.isdigit() or len(ver) != 2:
        return None  # "latest": no ceiling to compare
    return (1900 if int(ver) >= 90 else 2000) + int(ver)


def asked(project_dir: Path, env: dict[str, str]) -> Asked | None:
    """The lowest -std the package passes (setup.py, else its CMake files; build.env CXXFLAGS); None: it pins none."""
    found = _setup_py(project_dir / "setup.py")
    # A root CMakeLists.txt beside a setup.py is often for libtorch users, never run by the wheel build.
    for path in [] if (project_dir / "setup.py").is_file() else package_cuda.cmake_files(project_dir):
        found += _cmake(path, path.relative_to(project_dir).as_posix())
    for m in _FLAG.finditer(env.get("CXXFLAGS", "")):
        found += _asked(m.group("ver"), m.group("flag"), Place("build.env"))
    return min(found, key=lambda a: (a.year, a.place.path, a.place.line), default=None)


def _asked(ver: str, flag: str, place: Place) -> list[Asked]:
    year = _year(ver)
    return [Asked(year, " ".join(flag.split()), place)] if year else []


def _setup_py(path: Path) -> list[Asked]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    strings = package_cuda.string_constants(tree)
    found: list[Asked] = []
    for i, (text, line, _gated) in enumerate(strings):
        following = strings[i + 1][0] if i + 1 < len(strings) else ""
        if text.strip() in ("-std", "--std"):  # nvcc's ["-std", "c++17"]
            text = f"{text.strip()}={following.strip()}"
        for m in _FLAG.finditer(text):
            found += _asked(m.group("ver"), m.group("flag"), Place("setup.py", line))
    return found


def _cmake(path: Path, rel: str) -> list[Asked]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Asked] = []
    for regex in (_CMAKE, _FLAG):
        for m in regex.finditer(text):
            ver = m.group("ver") or m.group("feat") if regex is _CMAKE else m.group("ver")
            place = Place(rel, text.count("\n", 0, m.start()) + 1)
            found += _asked(ver, m.group("flag").replace('"', ""), place)
    return found


def required(include: Path) -> Required | None:
    """The highest `#if __cplusplus < NNNNNNL` followed by `#error` in the headers under `include`, and
    every header that guards with it."""
    best: Required | None = None
    for root, dirs, files in os.walk(include):
        dirs.sort()
        for file in sorted(files):
            if not file.endswith(_SUFFIXES):
                continue
            path = Path(root, file)
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if b"#error" not in data or (b"__cplusplus" not in data and b"_MSVC_LANG" not in data):
                continue  # most headers: no guard to parse
            for year, line in _guards(data.decode("utf-8", errors="replace")):
                where = f"{path.relative_to(include).as_posix()}:{line}"
                if best is None or year > best.year:
                    best = Required(year, (where,))
                elif year == best.year:  # all of them: the one the compiler names is among them
                    best = Required(year, (*best.headers, where))
    return best


def _guards(text: str) -> list[tuple[int, int]]:
    """(year, line of the #error) of each `#if ... __cplusplus < NNNNNNL` whose branch is an #error."""
    logical: list[tuple[int, str]] = []  # directives continue over backslash-ended lines
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        start = start if pending else n
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        directive = (pending + raw).strip()
        pending = ""
        if directive and not directive.startswith("//"):
            logical.append((start, directive))
    found = []
    for (_n, cond), (line, nxt) in itertools.pairwise(logical):
        if re.match(r"#\s*(?:el)?if\b", cond) and re.match(r"#\s*error\b", nxt):
            values = [int(v) for v in _GUARD.findall(cond)]
            if values:
                found.append((max(values) // 100, line))
    return found


def compare(want: Asked, torch_version: str, need: Required | None) -> tuple[str, str, str]:
    """(status, detail, fix) of a doctor row: fail when torch's headers require more than the package asks."""
    if need is None:
        return "ok", f"{want}; torch {torch_version}'s headers state no minimum standard", ""
    if want.year >= need.year:
        return "ok", f"{want}; torch {torch_version}'s headers need {name(need.year)} ({', '.join(need.headers)})", ""
    return (
        "fail",
        f"{want}, but the build env's torch {torch_version} requires {name(need.year)} "
        f"({need}): the compile would fail",
        f"raise the flag at {want.place} to {name(need.year)}, or pin a torch whose headers accept "
        f'{name(want.year)} with build.requires = ["torch==X.Y.*"]',
    )


def check(project_dir: Path, env: dict[str, str], python: Path | None) -> tuple[str, str, str] | None:
    """The comparison for the torch `python` (a build env, or the interpreter with isolation off) has;
    None when the package pins no standard or `python` has no torch."""
    from kestrel_release.adapters import torch_probe

    want = asked(project_dir, env)
    if want is None or python is None:
        return None
    found = torch_probe.headers(python)
    if found is None:
        return None
    version, include = found
    return compare(want, version, required(include))


def refuse(project_dir: Path, env: dict[str, str], python: Path | None) -> None:
    """build, once the env is ready and before the compile: PreflightError (exit 3) on doctor's fail row."""
    from kestrel_release.errors import PreflightError

    row = check(project_dir, env, python)
    if row is not None and row[0] == "fail":
        raise PreflightError(f"build preflight: C++ standard: {row[1]}", row[2])
