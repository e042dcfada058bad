"""Which wheel a machine installs: by Python/ABI tags (abi3 aware, packaging's own tag order) and
platform (platforms.covers), the newest version first, as an installer would. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kestrel_release import platforms
from kestrel_release.facts import pyversions


@dataclass(frozen=True)
class Python:
    major: int
    minor: int
    free_threaded: bool = False

    @property
    def name(self) -> str:
        return f"{self.major}.{self.minor}{'t' if self.free_threaded else ''}"


def parse_python(text: str) -> Python | None:
    """'3.12', '312', 'cp312', '3.13t' -> Python; None otherwise."""
    py = pyversions.parse(text, loose=True)
    return Python(3, py.minor, py.free_threaded) if py else None


def python_tags(python: Python) -> list[tuple[str, str]]:
    """(interpreter, abi) pairs the interpreter installs, best first (packaging's order: cpXY, abi3 or
    abi3t for a free-threaded build, none): pyversions.tag_pairs."""
    return list(pyversions.tag_pairs(pyversions.Py(python.minor, python.free_threaded)))


def platform_accepts(wheel_platform: str, machine: str) -> int | None:
    """How well a wheel's platform tag fits a machine of platform `machine` (higher is better), None if not."""
    if wheel_platform == "any":
        return 0
    if wheel_platform == machine:
        return 3
    if platforms.covers(wheel_platform, machine):
        return 2
    w, m = platforms.parse(wheel_platform), platforms.parse(machine)
    if w is not None and m is not None and w.family == "linux" and m.system == "linux" and w.arches == m.arches:
        return 1  # linux_x86_64: installers take it on any Linux of that CPU
    return None


@dataclass(frozen=True)
class Candidate:
    filename: str
    name: str
    version: str
    tags: tuple[tuple[str, str, str], ...]  # (interpreter, abi, platform)


def parse_filename(filename: str) -> Candidate | None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    rows = tuple(sorted((t.interpreter, t.abi, t.platform) for t in tags))
    return Candidate(filename, str(name), str(version), rows)


def choose(candidates: list[Candidate], python: Python, machine: str) -> tuple[Candidate | None, str, str]:
    """(the wheel installed, "", "") or (None, why, fix): no wheel for this Python or platform."""
    from packaging.version import InvalidVersion, Version

    order = python_tags(python)
    best: tuple | None = None
    chosen: Candidate | None = None
    for cand in candidates:
        for interp, abi, plat in cand.tags:
            fit = platform_accepts(plat, machine)
            if fit is None or (interp, abi) not in order:
                continue
            try:
                version = Version(cand.version)
            except InvalidVersion:
                continue
            key = (version, -order.index((interp, abi)), fit, _floor(plat))
            if best is None or key > best:
                best, chosen = key, cand
    if chosen is not None:
        return chosen, "", ""
    return None, *_why_none(candidates, python, machine)


def _floor(plat: str) -> tuple[int, int]:
    parsed = platforms.parse(plat)
    return parsed.floor if parsed is not None and parsed.floor else (0, 0)


def describe_pythons(candidates: list[Candidate]) -> list[str]:
    """The Pythons `candidates` install on, as a user reads them: 3.12, 3.13, 3.10+ (abi3), any Python 3."""
    out: dict[str, None] = {}
    for cand in candidates:
        for interp, abi, _plat in cand.tags:
            m = re.fullmatch(r"(cp|py)(\d)(\d*)", interp)
            if not m:
                out.setdefault(interp, None)
                continue
            version = f"{m.group(2)}.{m.group(3)}" if m.group(3) else m.group(2)
            if abi == "abi3t":  # the free-threaded stable ABI: 3.15t and later free-threaded builds
                out.setdefault(f"{version}t+ (abi3t)", None)
            elif abi == "abi3":
                out.setdefault(f"{version}+ (abi3)", None)
            elif abi == "none" and m.group(1) == "py":
                out.setdefault(f"any Python {version}" if not m.group(3) else f"{version}+ (pure)", None)
            else:
                out.setdefault(version + ("t" if abi.endswith("t") else ""), None)
    return sorted(out, key=_version_order)


def _version_order(text: str) -> tuple:
    nums = [int(n) for n in re.findall(r"\d+", text)]
    return [*nums, 0, 0][:2], text


def _why_none(candidates: list[Candidate], python: Python, machine: str) -> tuple[str, str]:
    if not candidates:
        return "there are no wheels to choose from", "build the wheels first, or point at the directory holding them"
    here = [c for c in candidates if any(platform_accepts(p, machine) is not None for _i, _a, p in c.tags)]
    if not here:
        platforms = sorted({p for c in candidates for _i, _a, p in c.tags})
        return (
            f"no wheel installs on {machine}: the wheels are for {', '.join(platforms)}",
            "build for this platform (platforms = [...]), or pass the target machine's tag with --platform",
        )
    pythons = describe_pythons(here)
    return (
        f"no wheel for Python {python.name} on {machine}: the wheels are for Python {', '.join(pythons)}",
        f'use one of those Pythons (--python), or build for {python.name} (python = [..., "{python.name}"])',
    )
