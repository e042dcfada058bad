"""What `init` found in a project (`Detected`), in a module of its own so that detect.py and
version_sources.py, which both fill it in, import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.project.cuda_gate import Gate
from kestrel_release.project.package_cuda import Compiled
from kestrel_release.records import documents


@dataclass
class Detected:
    """Everything init found, with the reason for each finding (shown to the user)."""

    project_dir: Path
    backend: str = "generic"
    backend_spec: str = ""
    build_requires: list[str] = field(default_factory=list)
    wraps_setuptools: bool = False  # an in-tree backend over setuptools (PyYAML): builds in-tree like it
    name: str | None = None
    name_source: str = "not found"
    version: str | None = None
    version_source: str = "not found"
    version_file: tuple[str, str] | None = None  # (path, pattern): where the backend reads the version
    version_files: list[tuple[str, str]] = field(default_factory=list)  # every place, version_file first
    version_notes: list[str] = field(default_factory=list)  # places that state another version
    vcs: str | None = None
    tag_prefix: str = "v"  # the repository's tag style: "" for bare tags (26.1.0)
    packages: dict[str, str] = field(default_factory=dict)  # import name -> directory (relative)
    native: list[str] = field(default_factory=list)  # why we think there is native code
    ext_modules: list[str] = field(default_factory=list)  # setup.py's extension modules ("demo_cuda", "pkg._C")
    cuda: list[str] = field(default_factory=list)  # why we think there is CUDA code
    torch: bool = False
    torch_unlisted: bool = False  # setup.py imports torch but [build-system].requires lacks it
    cuda_gate: Gate | None = None  # setup.py compiles CUDA only where torch sees a GPU (cuda_gate.py)
    pythons_with_torch: tuple[str, ...] = ()  # with torch_unlisted: the Pythons that have their own torch
    cmake: bool = False  # CMake builds it (a root CMakeLists.txt or a target in any)
    cmake_sets_arch: bool = False
    compiled: Compiled | None = None  # the archs and flags the package's own build files pass to nvcc
    abi3: str | None = None  # "cp39", "cp310", ..., "abi3" (floor computed by setup.py) or "py3"; None: per CPython
    requires_python: str | None = None
    shipped_tests: list[str] = field(default_factory=list)  # test dirs inside a package
    ships_headers: bool = False  # the build installs headers inside a package (for downstream builds)
    shipped_headers: dict[str, str] = field(default_factory=dict)  # header suffix -> where the build says so
    shipped_sources: dict[str, str] = field(default_factory=dict)  # Cython suffix -> where the build ships it
    top_dirs: list[str] = field(default_factory=list)
    configured: bool = False

    def document(self) -> documents.DetectedDocument:
        return documents.DetectedDocument(
            backend=self.backend,
            backend_spec=self.backend_spec,
            name=self.name,
            name_source=self.name_source,
            version=self.version,
            version_source=self.version_source,
            version_files=[documents.VersionFileDocument(p, pat) for p, pat in self.version_files],
            vcs=self.vcs,
            packages=self.packages,
            native=self.native,
            cuda=self.cuda,
            cuda_compiles=self.compiled.names() if self.compiled else [],
            torch=self.torch,
            abi3=self.abi3,
            requires_python=self.requires_python,
            shipped_tests=self.shipped_tests,
            configured=self.configured,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())
