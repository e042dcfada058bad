"""CUDA toolkits: the ones on this machine, and the ones installed on demand from PyPI into the tool's cache.

Found: CUDACXX, $CUDA_HOME / $CUDA_PATH, nvcc on PATH, /usr/local/cuda-X.Y and /usr/local/cuda, and earlier
PyPI installs under `<cache>/toolkits/`. Installed: NVIDIA's wheels, by `uv pip install --target` (uv's
own cache keeps the downloads, so a second machine state or a CI run fetches nothing twice):
- CUDA 13: `nvidia-cuda-nvcc` is a whole nvcc (with `nvidia-cuda-crt`, `-runtime`, `-cccl`, `nvidia-nvvm`).
- CUDA 12: NVIDIA ships no nvcc driver on PyPI (`nvidia-cuda-nvcc-cu12` holds ptxas, libnvvm and the crt
  headers only), so a CUDA 12 toolkit from PyPI is NVRTC (`nvidia-cuda-nvrtc-cu12`, the same front end)
  plus ptxas and the runtime headers: it compiles device code (cubins, PTX), not host code. Its
  Toolkit has `nvcc=None` and `nvrtc` set; a precompile step gets both (`{nvcc}` is "" then).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.adapters import toolchain
from kestrel_release.errors import PreflightError
from kestrel_release.facts import cuda_rules
from kestrel_release.process import proc

MARKER = ".kestrel-toolkit.json"


@dataclass(frozen=True)
class Toolkit:
    version: str  # "13.0.88"
    source: str  # where it was found: "CUDA_HOME", "PATH", "/usr/local/cuda-12.9", "PyPI"
    root: Path  # what CUDA_HOME would be
    nvcc: Path | None = None
    nvrtc: Path | None = None  # libnvrtc, for toolkits without nvcc
    include: tuple[Path, ...] = field(default_factory=tuple)  # header dirs a PyPI layout splits up

    @property
    def short(self) -> str:
        return cuda_rules.toolkit_name(cuda_rules.parse_toolkit(self.version))

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "source": self.source,
            "root": str(self.root),
            "nvcc": str(self.nvcc) if self.nvcc else None,
            "nvrtc": str(self.nvrtc) if self.nvrtc else None,
            "include": [str(p) for p in self.include],
        }


def _nvcc_toolkit(nvcc: Path, source: str) -> Toolkit | None:
    try:
        version = toolchain.nvcc_version(nvcc)
    except PreflightError:
        return None
    root = nvcc.resolve().parent.parent
    if not (root / "include").is_dir():  # a wrapper script (/usr/local/bin/nvcc): the install of that version
        short = cuda_rules.toolkit_name(cuda_rules.parse_toolkit(version))
        if Path(f"/usr/local/cuda-{short}/bin/nvcc").is_file():
            root = Path(f"/usr/local/cuda-{short}")
    return Toolkit(version, source, root, nvcc.absolute())


def local(env: dict[str, str] | None = None) -> list[Toolkit]:
    """Every toolkit on this machine, in preference order (CUDACXX and CUDA_HOME first), one per nvcc."""
    env = dict(os.environ if env is None else env)
    candidates: list[tuple[str, str]] = []
    if env.get("CUDACXX"):  # the user's explicit choice: one that is not there is an error, never skipped
        chosen = shutil.which(env["CUDACXX"]) or env["CUDACXX"]
        if not Path(chosen).is_file():
            raise PreflightError(f"CUDACXX={env['CUDACXX']} is not an executable", toolchain.NVCC_FIX)
        candidates.append((chosen, "CUDACXX"))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            candidates.append((str(Path(env[var]) / "bin" / "nvcc"), var))
    on_path = shutil.which("nvcc", path=env.get("PATH"))
    if on_path:
        candidates.append((on_path, "PATH"))
    for home in [*sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/usr/local/cuda"]:
        candidates.append((str(Path(home) / "bin" / "nvcc"), home))
    seen: set[Path] = set()
    out = []
    for path, source in candidates:
        nvcc = Path(path)
        if not nvcc.is_file():
            continue
        real = nvcc.resolve()
        if real in seen:
            continue
        seen.add(real)
        found = _nvcc_toolkit(nvcc, source)
        if found:
            out.append(found)
    return out + cached()


def _install_dir(wanted: str) -> Path:
    return toolchain.cache_dir() / "toolkits" / f"cuda-{wanted}"


def cached() -> list[Toolkit]:
    """Toolkits installed from PyPI earlier (each dir holds a marker written last)."""
    base = toolchain.cache_dir() / "toolkits"
    out = []
    for marker in sorted(base.glob(f"*/{MARKER}")) if base.is_dir() else []:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            out.append(_from_layout(marker.parent, json.loads(marker.read_text())["version"]))
    return [t for t in out if t is not None]


def _from_layout(target: Path, version: str) -> Toolkit | None:
    """The Toolkit inside a `uv pip install --target` of NVIDIA's wheels."""
    cu13 = target / "nvidia" / "cu13"
    if (cu13 / "bin" / "nvcc").is_file():  # its nvcc.profile finds its own headers and cicc
        return Toolkit(version, "PyPI", cu13, cu13 / "bin" / "nvcc")
    nvidia = target / "nvidia"
    nvrtc = next(iter(sorted((nvidia / "cuda_nvrtc" / "lib").glob("libnvrtc.so.*"))), None)
    if nvrtc is None:
        return None
    include = tuple(
        p
        for p in (
            nvidia / "cuda_runtime" / "include",
            nvidia / "cuda_nvcc" / "include",
            nvidia / "cuda_cccl" / "include",
        )
        if p.is_dir()
    )
    return Toolkit(version, "PyPI", nvidia / "cuda_nvcc", None, nvrtc, include)


def pypi_requirements(wanted: str) -> list[str]:
    """NVIDIA's wheels that make toolkit `wanted` ("12.9", "13.0", "13")."""
    major, _minor = cuda_rules.parse_toolkit(wanted)
    pin = f"=={wanted}.*"
    if major >= 13:
        return [f"nvidia-cuda-nvcc{pin}", f"nvidia-cuda-crt{pin}", f"nvidia-cuda-runtime{pin}", "nvidia-cuda-cccl"]
    suffix = f"-cu{major}"
    return [f"nvidia-cuda-{p}{suffix}{pin}" for p in ("nvrtc", "nvcc", "runtime", "cccl")]


def install(wanted: str) -> Toolkit:
    """Install toolkit `wanted` from PyPI into the cache (once); PreflightError when that fails."""
    from kestrel_release.adapters import uv
    from kestrel_release.files import fsutil

    target = _install_dir(wanted)
    with contextlib.suppress(OSError, ValueError, KeyError):
        found = _from_layout(target, json.loads((target / MARKER).read_text())["version"])
        if found:
            return found
    requirements = pypi_requirements(wanted)
    staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    argv: list[str | os.PathLike] = [
        uv.find_uv(),
        "pip",
        "install",
        "--quiet",
        "--target",
        staging,
        "--python",
        sys.executable,
        "--",
        *requirements,
    ]
    result = proc.run(argv, check=False, timeout=1800, what=f"installing CUDA {wanted} from PyPI")
    version = _installed_version(staging, cuda_rules.parse_toolkit(wanted)[0])
    found = _from_layout(staging, version) if result.returncode == 0 and version else None
    if found is None:
        shutil.rmtree(staging, ignore_errors=True)
        tail = result.output.strip().splitlines()[-1:] if result.output.strip() else ["no output"]
        raise PreflightError(
            f"CUDA {wanted} is not on this machine and installing it from PyPI failed ({' '.join(requirements)}): "
            f"{tail[0]}",
            f"install CUDA {wanted} (set CUDA_HOME, or put it in /usr/local/cuda-{wanted}), or reach PyPI",
        )
    fsutil.atomic_write_text(staging / MARKER, json.dumps({"version": version, "requirements": requirements}))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    return _from_layout(target, version) or found


def _installed_version(target: Path, major: int) -> str:
    """The compiler package's version, from its dist-info name."""
    name = "nvidia_cuda_nvcc-" if major >= 13 else f"nvidia_cuda_nvrtc_cu{major}-"
    for info in target.glob(f"{name}*.dist-info"):
        return info.name[len(name) : -len(".dist-info")]
    return ""


def resolve(
    wanted: tuple[str, ...], *, allow_install: bool = True, env: dict[str, str] | None = None
) -> dict[str, Toolkit]:
    """configured toolkit ("12.9") -> the Toolkit that builds it: one on this machine (a full nvcc
    preferred), else installed from PyPI; PreflightError naming what was searched."""
    found = local(env)
    out: dict[str, Toolkit] = {}
    for want in wanted:
        matches = [t for t in found if cuda_rules.same_toolkit(want, t.version)]
        matches.sort(key=lambda t: t.nvcc is None)  # stable: keeps the search order among equals
        if matches:
            out[want] = matches[0]
        elif allow_install:
            out[want] = install(want)
        else:
            have = ", ".join(f"{t.version} ({t.source})" for t in found) or "none"
            raise PreflightError(
                f"CUDA {want} is not on this machine (found: {have})",
                f"install it (CUDA_HOME or /usr/local/cuda-{want}), or let build install it from PyPI",
            )
    return out
