"""macOS: delocate (a dependency of this tool on macOS only: `delocate; sys_platform == 'darwin'`).

`delocate-wheel --require-archs ARCHS --exclude STR ... -w OUT WHEEL`: --exclude is a substring of
the library's path, so the Linux exclude list becomes library stems ('libtorch*' -> 'libtorch').
--require-archs comes from the wheel's own tag (arm64, x86_64, universal2), so a thin binary in a
universal2 wheel fails here rather than at import.
"""

from __future__ import annotations

from pathlib import Path

from kestrel_release.adapters.repair import _stems, _which
from kestrel_release.platforms import macos as macos_platform


def excludes(exclude: tuple[str, ...]) -> list[str]:
    """build.exclude as delocate --exclude substrings: 'libc10*' -> 'libc10'; '.dylib' names kept."""
    out: list[str] = []
    for pattern in exclude:
        if pattern.endswith(".dylib"):
            name: str | None = pattern.rstrip("*")
        else:
            stem = _stems.linux_stem(pattern)
            name = None if stem is None or "*" in stem else f"lib{stem}"
        if name and name not in out:
            out.append(name)
    return out


def require_archs(wheel: Path) -> str | None:
    """The architectures the wheel's tag promises ('..._macosx_14_0_arm64.whl' -> 'arm64')."""
    return macos_platform.delocate_archs(wheel.name)


class Delocate(_which.ScriptTool):
    name, script, system, not_found = "delocate", "delocate-wheel", "macOS", "delocate-wheel not found"

    def command(self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
        argv = [_which.which("delocate-wheel") or "delocate-wheel", "-w", str(out_dir)]
        archs = require_archs(wheel)
        if archs:
            argv += ["--require-archs", archs]
        for name in excludes(exclude):
            argv += ["--exclude", name]
        return [*argv, str(wheel)]


TOOL = Delocate()
