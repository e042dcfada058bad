"""Where a project's list of CUDA architectures really comes from, so that explain's fix for a GPU the
wheel lacks names the setting or file the user must edit.

torch's cpp_extension ignores TORCH_CUDA_ARCH_LIST when the nvcc flags already carry `-gencode`/`-arch`
(`_get_cuda_arch_flags`), so a setup.py with its own list wins over build.env, and build.env over
cuda_arch (which only reaches a build that reads KESTREL_KERNELS_CUDA_ARCH).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

_NVCC_ARCH = re.compile(r"-gencode|--generate-code|-arch[= ]+(?:sm|compute)_\d|--gpu-architecture")
_CMAKE_ARCH = re.compile(r"CMAKE_CUDA_ARCHITECTURES|CUDA_ARCHITECTURES")


@dataclass(frozen=True)
class ArchSource:
    """`kind`: setup.py, cmake, env:<NAME> or cuda_arch; `path`: the file to edit."""

    kind: str = "cuda_arch"
    path: str = "pyproject.toml"

    def add(self, device: tuple[int, int]) -> str:
        """The edit that makes the build compile SASS for `device`."""
        major, minor = device
        if self.kind == "setup.py":
            return (
                f"add -gencode=arch=compute_{major}{minor},code=sm_{major}{minor} to the nvcc flags in {self.path} "
                "(its -gencode list is what nvcc compiles; torch then ignores TORCH_CUDA_ARCH_LIST)"
            )
        if self.kind == "cmake":
            return f'add "{major}{minor}" to CUDA_ARCHITECTURES in {self.path}'
        if self.kind.startswith("env:"):
            name = self.kind[4:]
            value = f"{major}.{minor}" if name == "TORCH_CUDA_ARCH_LIST" else f"{major}{minor}"
            return f'add "{value}" to {name} in build.env ([tool.kestrel-release.build] env in {self.path})'
        return f'add "{major}{minor}" to cuda_arch ([tool.kestrel-release] in {self.path})'


def _reads(path: Path, pattern: re.Pattern[str]) -> bool:
    try:
        return bool(pattern.search(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


def find(cfg: Config) -> ArchSource:
    """The setting or file that holds the arch list the project's build compiles for."""
    root = cfg.project_dir
    if _reads(root / "setup.py", _NVCC_ARCH):
        return ArchSource("setup.py", "setup.py")
    if _reads(root / "CMakeLists.txt", _CMAKE_ARCH):
        return ArchSource("cmake", "CMakeLists.txt")
    for name in ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS", "CMAKE_CUDA_ARCHITECTURES"):
        if name in cfg.build.env:
            return ArchSource(f"env:{name}")
    return ArchSource()
