"""What `init` proposes for a detected project: the table's values, a comment per key, notes.

Pure: no files written, no processes (the Pythons found on this machine are passed in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.config import model as config_model
from kestrel_release.config_loader import parse as config_parse
from kestrel_release.errors import KestrelError
from kestrel_release.facts import pyversions
from kestrel_release.flows.init.detect import Detected
from kestrel_release.targets import github as github_target

# The source globs come from config_model.DEFAULT_FORBID (one list to keep current); headers are left
# out for a package that ships them on purpose. The defaults' kernel-template names (kernel.py,
# flash_*.py, ...) are this repository's own and are not suggested: in another package they name
# public code.
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh")
SOURCES = tuple(
    p for p in config_model.DEFAULT_FORBID if re.fullmatch(r"\*\.[^/*]+", p) and not p.endswith(HEADER_SUFFIXES)
)
HEADERS = tuple(
    p for p in config_model.DEFAULT_FORBID if re.fullmatch(r"\*\.[^/*]+", p) and p.endswith(HEADER_SUFFIXES)
)
# Repository directories that must not become top-level packages of the wheel. Anchored ("/tests/**"
# matches the wheel's top level only), so a package's own tests/ or examples/, shipped on purpose,
# stay allowed. csrc/ is sources wherever it is (extension-cpp keeps it inside the package).
NEVER_SHIPPED = (
    "tests",
    "test",
    "scripts",
    "benchmarks",
    "benchmark",
    "examples",
    "example",
    "tools",
    "third_party",
    "docs",
    "doc",
    "include",
)


@dataclass
class Plan:
    """The table init proposes: values (what config.py reads) and a comment per key."""

    values: dict[str, Any]
    comments: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # shown to the user, not written


def python_allowed(version: str, d: Detected) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    py = pyversions.parse(version)
    if py is None:
        return False
    if d.abi3 and d.abi3.startswith("cp3") and py.minor < int(d.abi3[3:]):
        return False
    try:
        # X.Y.99: any patch release of X.Y satisfies ">=X.Y.2"-style bounds.
        return not d.requires_python or f"3.{py.minor}.99" in SpecifierSet(d.requires_python)
    except InvalidSpecifier:
        return True


def choose(d: Detected, found_pythons: tuple[str, ...]) -> Plan:
    """The settings that fit the detected project (pure: no files, no processes)."""
    plan = Plan(values={})
    _choose_pythons(d, plan, found_pythons)
    _choose_abi(d, plan)
    _choose_version(d, plan)
    build = _choose_cuda(d, plan)
    _torch_build(d, plan, build)
    if build:
        plan.values["build"] = build
    plan.values["verify"] = _choose_verify(d, plan)
    return plan


def _choose_pythons(d: Detected, plan: Plan, found: tuple[str, ...]) -> None:
    if found:
        plan.values["python"] = list(found)
        plan.comments["python"] = "CPythons found on this machine that the package supports"
        return
    listed = [p for p in config_model.DEFAULT_PYTHONS if python_allowed(p, d)] or list(config_model.DEFAULT_PYTHONS)
    plan.values["python"] = listed
    plan.comments["python"] = "none of these was found on this machine: install them or edit the list"
    plan.notes.append(f"no supported CPython found on this machine; listed {', '.join(listed)}")


def _choose_abi(d: Detected, plan: Plan) -> None:
    # Left out (config's "auto") for per-CPython extensions: the first wheel's tag tells.
    if d.abi3 == "py3" or (not d.native and not d.cuda):
        plan.values["abi"], plan.comments["abi"] = "py3", "one py3 wheel serves every Python: built once per platform"
    elif d.abi3:
        tag = f"{d.abi3}-abi3" if d.abi3 != "abi3" else "abi3"
        plan.values["abi"], plan.comments["abi"] = "abi3", f"{tag}: one wheel per platform serves every listed Python"


def _choose_version(d: Detected, plan: Plan) -> None:
    places = d.version_files or ([d.version_file] if d.version_file else [])
    if places:
        plan.values["version_files"] = [{"path": path, "pattern": pattern} for path, pattern in places]
        plan.comments["version_files"] = "`kestrel-release version bump` rewrites the version " + (
            "in each" if len(places) > 1 else "here"
        )
    plan.notes += d.version_notes
    if d.vcs:
        tag = d.tag_prefix + _next_tag_version(d.version)
        plan.notes.append(
            f"the version comes from git tags ({d.vcs}): release by tagging, e.g. git tag -a {tag} -m {tag}"
        )
    elif not places and d.version_source == "not found":
        plan.notes.append("no version found: add version_files = [{path, pattern}] by hand")


def _next_tag_version(current: str | None) -> str:
    """The next patch release after the version git gives now (1.2.4.dev3+gabc -> 1.2.4; 1.2.3 -> 1.2.4)."""
    from packaging.version import InvalidVersion, Version

    from kestrel_release.stages.version.pep440 import next_version

    try:
        v = Version(current or "")
    except InvalidVersion:
        return "1.2.3"
    return v.base_version if v.dev is not None else next_version(v.public, "patch")


def _choose_cuda(d: Detected, plan: Plan) -> dict[str, Any]:
    """cuda_arch and the build environment that makes the backend compile for it; the build table.
    A package whose setup.py or CMake fixes its own arch list gets that list, and no variable its
    build would ignore (torch adds TORCH_CUDA_ARCH_LIST's flags only when setup.py passes none)."""
    if not d.cuda:
        return {}
    got = d.compiled
    _cuda_notes(d, plan)
    env = {}
    if got and got.archs:
        plan.values["cuda_arch"] = got.names()
        plan.comments["cuda_arch"] = f"what {got.at} compiles ({got.source}); edit that list to change it"
    else:
        plan.values["cuda_arch"] = "90a"
        plan.comments["cuda_arch"] = "H100 (sm_90a); add more arches in build.env as well"
        if d.torch and not (got and got.computed):
            env["TORCH_CUDA_ARCH_LIST"] = "9.0a"  # torch.utils.cpp_extension reads it
        if d.cmake and not d.cmake_sets_arch:
            env["CUDAARCHS"] = "90a"  # CMake's default for CMAKE_CUDA_ARCHITECTURES
    why = ["the CUDA architectures the build compiles for"] if env else []
    gate = d.cuda_gate
    if gate and gate.force:  # the same wheel on a GPU host and on a CPU build machine or CI runner
        env[gate.force] = "1"
        why.append(f"{gate.force}: setup.py:{gate.line} compiles CUDA only where torch sees a GPU, unless it is set")
    elif gate:
        plan.notes.append(
            f"setup.py:{gate.line} compiles CUDA only where torch sees a GPU (torch.cuda.is_available()) and reads "
            "no variable to force it: build on a GPU host, or the wheel carries no CUDA code"
        )
    if not env:
        return {}
    plan.comments["build.env"] = "; ".join(why)
    return {"env": env}


def _cuda_notes(d: Detected, plan: Plan) -> None:
    got = d.compiled
    if got is None:
        return
    later = [a for a in got.names() if a not in got.names(conditional=False)]
    if later and got.names(conditional=False):
        plan.notes.append(
            f"{got.at} adds {', '.join('sm_' + a for a in later)} only with newer toolkits (it tests the "
            "nvcc version): verify.required_sass lists the archs every toolkit builds"
        )
    if got.computed:
        plan.notes.append(
            f"{got.computed} builds its -gencode list from computed strings: set cuda_arch to the archs it "
            "compiles (TORCH_CUDA_ARCH_LIST is ignored when setup.py passes -gencode)"
        )
    for flag, place in got.debug:
        if flag == "-G":
            plan.notes.append(
                f"{place} passes -G (device debug code, slow kernels): verify fails on it; remove it "
                "for a release, or set verify.allow_debug = true"
            )
    if got.cuda_home:
        value, place = got.cuda_home
        plan.notes.append(f"{place} sets CUDA_HOME = {value}: the build uses that toolkit, not the nvcc on PATH")


def _required_sass(d: Detected) -> list[str]:
    got = d.compiled
    if not d.cuda:
        return []
    if got and got.archs:
        return [f"sm_{a}" for a in got.names(conditional=False) or got.names()]
    return ["sm_90a"]


def _choose_verify(d: Detected, plan: Plan) -> dict[str, Any]:
    verify: dict[str, Any] = {"required_sass": _required_sass(d), "forbid": _forbid(d)}
    plan.comments["verify.forbid"] = "sources and repository directories that must never ship"
    lineinfo = [place for flag, place in (d.compiled.debug if d.compiled else []) if flag == "-lineinfo"]
    if lineinfo:
        verify["allow_debug"] = True
        plan.comments["verify.allow_debug"] = f"{lineinfo[0]} passes -lineinfo (line tables for profilers)"
    shipped = {f"*{s}": why for s, why in d.shipped_headers.items() if not _header_forbidden(d, f"*{s}")}
    shipped |= {f"*{s}": why for s, why in d.shipped_sources.items() if f"*{s}" in SOURCES and _source_shipped(d, s)}
    if shipped:
        plan.comments["verify.forbid"] += "; " + ", ".join(
            f"{g} ships on purpose ({why})" for g, why in shipped.items()
        )
    kernels = sorted(g for g in shipped if g in ("*.cu", "*.cuh"))
    if d.cuda and kernels:  # the one case where a kernel package ships its kernel sources: say so
        plan.notes.append(
            f"the wheel ships CUDA sources ({', '.join(kernels)}: {shipped[kernels[0]]}), so verify does not "
            "forbid them; remove them from that list if they must not ship"
        )
    if d.shipped_tests:
        plan.comments["verify.forbid"] += (
            f"; {', '.join(d.shipped_tests)} ships on purpose (/tests/** is the top level only)"
        )
    if d.packages:
        verify["allow"] = [f"{pkg}/**" for pkg in d.packages]
        verify["allow"] += _extension_allow(d)
        if d.native:
            verify["allow"].append(f"{_dist(d)}.libs/*")  # libraries auditwheel grafts
        plan.comments["verify.allow"] = "nothing outside the package may ship (dist-info is always allowed)"
    return verify


def _extension_allow(d: Detected) -> list[str]:
    """Extension modules the backend puts outside the packages (`CUDAExtension("demo_cuda", ...)` is a
    top-level demo_cuda.cpython-312-x86_64-linux-gnu.so beside the package): their own entries."""
    out = []
    for name in d.ext_modules:
        top = name.split(".")[0]
        if top not in d.packages:
            out.append(f"/{name.replace('.', '/')}.*")
    return out


def _torch_build(d: Detected, plan: Plan, build: dict[str, Any]) -> None:
    """Which torch the extension is compiled against: it ties the wheel to that torch's C++ ABI."""
    if d.torch_unlisted and set(plan.values.get("python", ())) <= set(d.pythons_with_torch):
        # an isolated build would fail at `import torch` in setup.py; every Python has its own (a GPU host)
        build["isolation"] = False
        plan.comments["build.isolation"] = "setup.py imports torch, which [build-system].requires does not list"
        plan.notes.append("builds use the torch installed with each Python (build.isolation = false)")
    elif d.torch_unlisted:  # not every Python has torch: each build env gets it, the project's files unchanged
        build["requires"] = ["torch"]
        plan.comments["build.requires"] = "setup.py imports torch, which [build-system].requires does not list"
        plan.notes.append(
            "an isolated build compiles against the newest torch on the index: pin it in build.requires "
            "(torch==X.Y.*) to match the torch your users run"
        )
    elif d.torch:
        plan.notes.append(
            "an isolated build compiles against the newest torch on the index: pin it in "
            "[build-system].requires (torch==X.Y.*) to match the torch your users run"
        )


def _dist(d: Detected) -> str:
    return re.sub(r"[-_.]+", "_", d.name or next(iter(d.packages), "package")).lower()


def _header_forbidden(d: Detected, glob: str) -> bool:
    """A header glob stays forbidden unless the package's build installs such headers in the package.
    In a CUDA package, kernel headers (.cuh) that only sit in a shipped include/ directory stay forbidden:
    only a declaration that names them (package_data and the like) says they ship on purpose."""
    why = d.shipped_headers.get(glob[1:])
    return why is None or (d.cuda != [] and glob == "*.cuh" and why.endswith("/include/"))


def _source_shipped(d: Detected, suffix: str) -> bool:
    """A source kind the package's build configuration names as data to ship (package_data, hatch include,
    MANIFEST.in with include_package_data): what the package means to ship, CUDA sources included."""
    return suffix in d.shipped_sources


def _forbid(d: Detected) -> list[str]:
    out = [p for p in SOURCES if not _source_shipped(d, p[1:])] + [p for p in HEADERS if _header_forbidden(d, p)]
    if "csrc" in d.top_dirs or any((d.project_dir / pkg / "csrc").is_dir() for pkg in d.packages.values()):
        out.append("csrc/**")
    return out + [f"/{name}/**" for name in NEVER_SHIPPED if name in d.top_dirs]


def add_github_target(plan: Plan, repo: str | None) -> None:
    # Without a repository, a GitHub release would go to the tool's own default: say so instead.
    if repo:
        plan.values["targets"] = {github_target.NAME: {"repo": repo}}
        plan.comments["targets.github"] = "from the git remote 'origin'"
    else:
        plan.notes.append(
            "no github.com remote 'origin': set [tool.kestrel-release.targets.github] "
            'repo = "OWNER/NAME" before publishing to GitHub, or use --targets testpypi,pypi'
        )


def check_plan(plan: Plan) -> None:
    """The table must load: a key config.py does not know would break every later command."""
    errors: list[str] = []
    cfg = config_parse.build(Path("."), "x", "0", plan.values, {}, errors)  # the same parser `load` uses
    config_parse.validate(cfg, errors)
    if errors:  # a bug in init, not the user's doing
        raise KestrelError(f"init built a table config.py refuses: {'; '.join(errors)}")
