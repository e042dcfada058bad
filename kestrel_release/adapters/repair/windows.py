"""Windows: delvewheel (a dependency of this tool on Windows only: `delvewheel; sys_platform == 'win32'`).

`delvewheel repair --no-dll PATTERN ... --add-path DIRS -w OUT WHEEL`: --no-dll takes names with
`*` wildcards, case-insensitive; torch and the CUDA runtime DLLs (c10.dll, torch_cpu.dll,
cudart64_12.dll, nvcuda.dll) must never be vendored, so the Linux exclude list is translated.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kestrel_release.adapters.repair import _stems, _which

# The CUDA driver is libcuda.so on Linux and nvcuda.dll on Windows; every other library keeps its stem.
_RENAMED = {"cuda": "nvcuda.dll"}


def no_dll(exclude: tuple[str, ...]) -> list[str]:
    """build.exclude as delvewheel --no-dll patterns: 'libcudart*' -> 'cudart*.dll' (cudart64_12.dll),
    'libtorch*' -> 'torch*.dll', 'libcuda.so*' -> 'nvcuda.dll'; a '.dll' entry is kept as written."""
    out: list[str] = []
    for pattern in exclude:
        if pattern.lower().endswith(".dll"):
            name: str | None = pattern
        else:
            stem = _stems.linux_stem(pattern)
            name = None if stem is None else _RENAMED.get(stem, f"{stem}*.dll")
        if name and name not in out:
            out.append(name)
    return out


class Delvewheel(_which.ScriptTool):
    name, script, system, not_found = "delvewheel", "delvewheel", "Windows", "not found"

    def command(
        self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...], env: dict[str, str] | None = None
    ) -> list[str]:
        argv = [_which.which("delvewheel") or "delvewheel", "repair", "-w", str(out_dir)]
        for pattern in no_dll(exclude):
            argv += ["--no-dll", pattern]
        paths = add_paths(os.environ if env is None else env)
        if paths:
            argv += ["--add-path", os.pathsep.join(paths)]
        return [*argv, str(wheel)]


def add_paths(env: Mapping[str, str]) -> list[str]:
    """Where the DLLs a wheel's extension links are found besides PATH: the CUDA toolkit's bin dir
    (CUDA_PATH, set by the CUDA installer), so a project DLL linked against it resolves."""
    cuda = env.get("CUDA_PATH") or env.get("CUDA_HOME")
    return [str(Path(cuda) / "bin")] if cuda else []


TOOL = Delvewheel()
