"""NVIDIA's rules, as data: which SASS/PTX runs on which GPU, which toolkit compiles which arch,
and which driver a binary needs. Pure (no I/O), shared by config validation, build, doctor and verify.

Sources (late 2026, in our words): the CUDA Programming Guide's binary-compatibility section (SASS
for X.Y runs on X.z with z >= Y; `a` only on X.Y; `f` on the same family, minor >= Y), the CUDA 12.9
and 13.0 release notes (family-specific targets since 12.9; CUDA 13 compiles only sm_75+, sm_101 was
renamed sm_110), `nvcc --list-gpu-code` of each toolkit, and the CUDA compatibility guide (minor
version compatibility: a CUDA 12.x binary runs on any r525+ driver, 13.x on r580+; compressed fat
binaries need CUDA 12.4's driver; PTX JIT needs a driver at least as new as the PTX).
docs/gpu-generations.md keeps the facts this encodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Compute capabilities of shipped GPUs: what "every device an arch targets" ranges over.
DEVICES: tuple[tuple[int, int], ...] = (
    (5, 0), (5, 2), (5, 3), (6, 0), (6, 1), (6, 2), (7, 0), (7, 2), (7, 5),
    (8, 0), (8, 6), (8, 7), (8, 8), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip

# Real architectures each toolkit line compiles (`nvcc --list-gpu-code`), by (major, minor) of the
# toolkit; a toolkit newer than the last row of its major uses that row.
_BASE_11 = (35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90)
_BASE_12 = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90)
_TOOLKIT_SASS: dict[tuple[int, int], tuple[int, ...]] = {
    (11, 8): _BASE_11,
    (12, 0): _BASE_12,
    (12, 8): (*_BASE_12, 100, 101, 120),
    (12, 9): (*_BASE_12, 100, 101, 103, 120, 121),
    (13, 0): (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121),
}
# Which of those take an `a` (arch-specific, since 12.0 for sm_90) or an `f` (family, since 12.9).
_SUFFIXED: dict[str, dict[tuple[int, int], tuple[int, ...]]] = {
    "a": {(12, 0): (90,), (12, 8): (90, 100, 101, 120), (12, 9): (90, 100, 101, 103, 120, 121),
          (13, 0): (90, 100, 103, 110, 120, 121)},
    "f": {(12, 9): (100, 101, 103, 120, 121), (13, 0): (100, 103, 110, 120, 121)},
}  # fmt: skip

# Oldest Linux driver that runs code of a CUDA major (minor version compatibility), of compressed fat
# binaries, and the driver each toolkit shipped with (PTX JIT needs at least that one).
DRIVER_FOR_MAJOR = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
DRIVER_FOR_COMPRESSED = "550.54.14"  # CUDA 12.4's driver
DRIVER_OF_TOOLKIT = {
    (12, 0): "525.60.13", (12, 1): "530.30.02", (12, 2): "535.54.03", (12, 3): "545.23.06",
    (12, 4): "550.54.14", (12, 5): "555.42.02", (12, 6): "560.28.03", (12, 8): "570.86.10",
    (12, 9): "575.51.03", (13, 0): "580.65.06", (13, 1): "590.44.01",
}  # fmt: skip

_ARCH_RE = re.compile(r"(?:sm_|compute_)?(\d+)(?:\.(\d))?([af]?)")


class ArchError(ValueError):
    pass


@dataclass(frozen=True, order=True)
class Arch:
    """A CUDA architecture: sm_90a is Arch(9, 0, "a"), sm_100f Arch(10, 0, "f")."""

    major: int
    minor: int
    suffix: str = ""  # "" plain, "a" arch-specific, "f" family-specific

    @classmethod
    def parse(cls, text: str) -> Arch:
        """'90a', 'sm_90a', 'compute_90a', '9.0a', '100f', '120' -> Arch; ArchError otherwise."""
        m = _ARCH_RE.fullmatch(text.strip().lower())
        if not m:
            raise ArchError(f"'{text}' is not a CUDA architecture like 80, 90a, 100f or 9.0a")
        digits, dotted, suffix = m.groups()
        major, minor = (int(digits), int(dotted)) if dotted is not None else (int(digits[:-1] or 0), int(digits[-1]))
        if major < 1:
            raise ArchError(f"'{text}' is not a CUDA architecture like 80, 90a, 100f or 9.0a")
        if suffix == "a" and major < 9:
            raise ArchError(f"'{text}': arch-specific ('a') targets start at sm_90a")
        if suffix == "f" and major < 10:
            raise ArchError(f"'{text}': family-specific ('f') targets start at sm_100f")
        return cls(major, minor, suffix)

    @property
    def number(self) -> int:
        return self.major * 10 + self.minor

    @property
    def name(self) -> str:
        return f"{self.number}{self.suffix}"

    @property
    def sm(self) -> str:
        return f"sm_{self.name}"

    @property
    def compute(self) -> str:
        return f"compute_{self.name}"

    def __str__(self) -> str:
        return self.sm


def parse_toolkit(text: str) -> tuple[int, int]:
    """'12.9', '13.0', '13.0.88', '13' (= 13.0) -> (major, minor); ArchError otherwise."""
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.\d+)*", text.strip())
    if not m or not 11 <= int(m.group(1)) <= 99:
        raise ArchError(f"'{text}' is not a CUDA toolkit version like 12.9 or 13.0")
    return int(m.group(1)), int(m.group(2) or 0)


def toolkit_name(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def sass_runs_on(arch: Arch, device: tuple[int, int]) -> bool:
    """SASS for `arch` runs on a GPU of compute capability `device`."""
    if arch.suffix == "a":
        return device == (arch.major, arch.minor)
    return device[0] == arch.major and device[1] >= arch.minor  # plain and family: same major, minor >= Y


def ptx_runs_on(arch: Arch, device: tuple[int, int]) -> bool:
    """PTX for `arch` JIT-compiles on `device` (driver permitting): any newer GPU, `a`/`f` PTX
    only where its SASS would run (it uses features other families lack)."""
    if arch.suffix:
        return sass_runs_on(arch, device)
    return device >= (arch.major, arch.minor)


def targets(arch: Arch) -> list[tuple[int, int]]:
    """The known GPUs a configured arch stands for (its SASS runs there)."""
    return [d for d in DEVICES if sass_runs_on(arch, d)]


def serves(built: Arch, wanted: Arch, ptx: bool = False) -> bool:
    """Whether built code (SASS, or PTX with `ptx`) serves a configured arch: it runs on every GPU
    the arch stands for and keeps its features (`a` needs the same `a`; `f` needs `f` or the same `a`
    on a one-GPU family). Plain wanted archs are served by plain or family code (sm_80 serves 86)."""
    runs = ptx_runs_on if ptx else sass_runs_on
    devices = targets(wanted) or [(wanted.major, wanted.minor)]
    if not all(runs(built, d) for d in devices):
        return False
    if wanted.suffix == "a":
        return built == wanted
    if wanted.suffix == "f":
        return built.suffix in ("f", "a") and built.major == wanted.major
    return built.suffix in ("", "f")


def _row(table: dict[tuple[int, int], tuple[int, ...]], toolkit: tuple[int, int]) -> tuple[int, ...]:
    rows = [k for k in table if k[0] == toolkit[0] and k <= toolkit]
    return table[max(rows)] if rows else ()


def cannot_compile(toolkit: tuple[int, int], arch: Arch) -> str | None:
    """Why `toolkit` cannot compile `arch` ("" never); None when it can."""
    name = toolkit_name(toolkit)
    known = _row(_TOOLKIT_SASS, toolkit)
    if not known:
        return f"CUDA {name} is not a toolkit this tool knows (11.8, 12.x, 13.x)"
    if arch.number not in known:
        if toolkit[0] >= 13 and arch.number < 75:
            return f"CUDA {name} dropped sm_{arch.number} (CUDA 13 compiles sm_75 and newer)"
        if toolkit[0] >= 13 and arch.number == 101:
            return f"CUDA {name} renamed sm_101 to sm_110"
        if arch.number == 110:
            return f"CUDA {name} has no sm_110 (it came with CUDA 13.0; CUDA 12 calls Thor sm_101)"
        return f"CUDA {name} does not compile sm_{arch.number} (it knows {', '.join(f'sm_{k}' for k in known)})"
    if arch.suffix and arch.number not in _row(_SUFFIXED[arch.suffix], toolkit):
        kind = "arch-specific" if arch.suffix == "a" else "family-specific"
        return f"CUDA {name} has no {kind} {arch.sm}"
    return None


@dataclass(frozen=True)
class Target:
    """One configured arch and the toolkits that build it (all configured ones unless pinned)."""

    arch: Arch
    toolkits: tuple[str, ...] = ()  # () = every configured toolkit
    text: str = ""


def parse_target(text: str) -> Target:
    """'90a' or '110@13.0' (built by CUDA 13.0 only) or '87@12.9@13.0'."""
    head, *pins = text.split("@")
    arch = Arch.parse(head)
    for pin in pins:
        parse_toolkit(pin)
    return Target(arch, tuple(p.strip() for p in pins), text.strip())


def same_toolkit(configured: str, version: tuple[int, int] | str) -> bool:
    """'13.0' matches 13.0.x; '13' matches any 13.x."""
    have = parse_toolkit(version) if isinstance(version, str) else version
    parts = configured.strip().split(".")
    want = parse_toolkit(configured)
    return have[0] == want[0] and (len(parts) == 1 or have[1] == want[1])


def pairs(toolkits: tuple[str, ...], arch_texts: tuple[str, ...]) -> tuple[list[tuple[str, Arch]], list[str]]:
    """(every (toolkit, arch) to build, the problems): each arch by every configured toolkit, or
    by those it is pinned to; an unpinned arch a toolkit cannot compile is a problem naming both."""
    out: list[tuple[str, Arch]] = []
    problems: list[str] = []
    for text in arch_texts:
        try:
            target = parse_target(text)
        except ArchError as exc:
            problems.append(str(exc))
            continue
        for pin in target.toolkits:
            if not any(same_toolkit(pin, t) for t in toolkits):
                problems.append(f"'{text}' names CUDA {pin}, which is not in cuda ({', '.join(toolkits) or 'empty'})")
        chosen = [t for t in toolkits if not target.toolkits or any(same_toolkit(p, t) for p in target.toolkits)]
        for toolkit in chosen:
            why = cannot_compile(parse_toolkit(toolkit), target.arch)
            if why:
                able = [t for t in toolkits if not cannot_compile(parse_toolkit(t), target.arch)]
                fix = (
                    f'pin it to the toolkits that can: "{target.arch.name}@{"@".join(able)}"'
                    if able and not target.toolkits
                    else "drop it or add a toolkit that compiles it"
                )
                problems.append(f"{target.arch.sm} cannot be built by CUDA {toolkit}: {why}; {fix}")
                continue
            out.append((toolkit, target.arch))
    return out, problems


def driver_floor(cuda_majors: set[int], compressed: bool = False, ptx_toolkits: tuple = ()) -> str:
    """The oldest driver that loads everything: the newest of each CUDA major's floor, compressed fat
    binaries' (CUDA 12.4's driver) and, for PTX, the driver of the toolkit that wrote it."""
    floors = [DRIVER_FOR_MAJOR[m] for m in cuda_majors if m in DRIVER_FOR_MAJOR]
    if compressed:
        floors.append(DRIVER_FOR_COMPRESSED)
    for toolkit in ptx_toolkits:
        row = [k for k in DRIVER_OF_TOOLKIT if k <= toolkit]
        if row:
            floors.append(DRIVER_OF_TOOLKIT[max(row)])
    return max(floors, key=driver_key) if floors else ""


def driver_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


_DRIVER_RE = re.compile(r"[rR]?(\d{3,4})((?:\.\d{1,3}){0,2})")


def parse_driver(text: str) -> str | None:
    """An NVIDIA driver version as given: a branch (580, r580) or a full version (580.65.06);
    the branch's `r` is dropped. None when it is not one."""
    match = _DRIVER_RE.fullmatch(text.strip())
    return match.group(1) + match.group(2) if match else None


def driver_older(driver: str, floor: str) -> bool:
    """`driver` is older than `floor`, compared as versions to the precision given: a branch (580)
    stands for its releases, so r580 meets a floor of 580.65.06 and r575 does not."""
    have = driver_key(driver)
    return have < driver_key(floor)[: len(have)]
