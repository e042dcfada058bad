"""Does the configured build compile CUDA, and will it find the nvcc preflight found?

Preflight must answer for the build it precedes: a release once passed preflight on a machine whose
nvcc sat in /usr/local/cuda/bin (found by our search) but not on PATH, and the precompile step, which
looks only at CUDACXX and PATH, failed with "nvcc not found" after the bump. So nvcc is required
whenever the configuration says CUDA will be compiled (a precompile step, CUDA hints in build.env,
.cu sources in the project), and a precompile step's nvcc must be one it can see.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.adapters import toolchain
from kestrel_release.errors import PreflightError

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

# build.env keys that mean the build compiles CUDA (CMake's, torch.utils.cpp_extension's, the toolkit's).
HINTS = (
    "CUDACXX",
    "CMAKE_CUDA_COMPILER",
    "CMAKE_CUDA_ARCHITECTURES",
    "TORCH_CUDA_ARCH_LIST",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
)
SOURCES = (".cu", ".cuh")
# Never the project's own sources: environments, build trees, VCS data (bounded walk on big trees).
_SKIP = {"build", "dist", "node_modules", "site-packages", "__pycache__", "third_party", "3rdparty", "external"}
_MAX_DIRS = 5000


def why_needed(cfg: Config) -> str:
    """What in the configuration needs nvcc ("" when nothing does)."""
    if cfg.precompile:
        return "the precompile step"
    hint = next((k for k in HINTS if cfg.build.env.get(k)), None)
    if hint:
        return f"build.env {hint}"
    source = first_cuda_source(cfg.project_dir, skip={cfg.out_dir})
    return f"the CUDA source {source}" if source else ""


def gpu_relevant(cfg: Config) -> bool:
    """Whether the GPU check means anything: the build makes CUDA code (kernels to check for
    required_sass, a precompile step, CUDA sources or hints) or the config demands a GPU. A plain C
    extension (psutil: required_sass = []) gets no "kernels are cross-compiled" warning."""
    return bool(cfg.requires_gpu or cfg.verify.required_sass or why_needed(cfg))


def first_cuda_source(root: Path, skip: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The first *.cu/*.cuh under `root` (relative, POSIX), skipping hidden dirs, envs and build trees."""
    for seen, (here, dirs, files) in enumerate(os.walk(root), start=1):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIP
            and d not in skip
            and not (Path(here) / d / "pyvenv.cfg").exists()
        )
        hit = next((f for f in sorted(files) if f.endswith(SOURCES)), None)
        if hit:
            return (Path(here) / hit).relative_to(root).as_posix()
        if seen >= _MAX_DIRS:
            return None
    return None


def find(cfg: Config) -> Path:
    """The nvcc the build will use; PreflightError saying what needs it and how to provide it."""
    env = {**os.environ, **cfg.build.env}
    why = why_needed(cfg) or "the build"
    try:
        nvcc = toolchain.find_nvcc(env)
    except PreflightError as exc:
        raise PreflightError(f"{exc.message}; {why} needs it", exc.hint) from None
    if cfg.precompile and not env.get("CUDACXX") and shutil.which("nvcc", path=env.get("PATH")) is None:
        # The step is the project's own command: it sees only CUDACXX and PATH, not our fallbacks.
        raise PreflightError(
            f"nvcc is not on PATH (found {nvcc} outside it); the precompile step looks only at CUDACXX and PATH",
            f"export PATH={nvcc.parent}{os.pathsep}$PATH, or set CUDACXX={nvcc} "
            "(or [tool.kestrel-release.build] env CUDACXX)",
        )
    return nvcc


def builds_with_torch(project_dir: Path) -> bool:
    """Whether the project's build uses torch (declared in build-system.requires, or setup.py importing
    torch.utils.cpp_extension): torch.utils.cpp_extension then picks the toolkit and the compiler."""
    import re

    from kestrel_release._compat import tomllib

    try:  # setup.py projects often import torch's cpp_extension without declaring torch (build.isolation off)
        if re.search(
            r"torch\.utils\.cpp_extension|from\s+torch\.utils\s+import\s+cpp_extension",
            (project_dir / "setup.py").read_text(encoding="utf-8", errors="replace"),
        ):
            return True
    except OSError:
        pass
    try:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    requires = data.get("build-system", {}).get("requires", [])
    return any(re.match(r"\s*torch\s*($|[<>=!~\[;( ])", r) for r in requires if isinstance(r, str))


def builds_cuda_with_torch(project_dir: Path) -> bool:
    """A torch build that compiles CUDA code (a CUDAExtension, or .cu sources): only then does the toolkit
    torch derives (CUDA_HOME, its nvcc) matter; a CppExtension never runs nvcc."""
    if not builds_with_torch(project_dir):
        return False
    try:
        if "CUDAExtension" in (project_dir / "setup.py").read_text(encoding="utf-8", errors="replace"):
            return True
    except OSError:
        pass
    return first_cuda_source(project_dir) is not None


def torch_cuda_home(env: dict[str, str]) -> tuple[Path | None, str]:
    """The CUDA_HOME torch.utils.cpp_extension will use, and where it comes from: CUDA_HOME, else CUDA_PATH,
    else two folders above `which nvcc` (the PATH entry itself, symlinks and wrapper scripts NOT resolved:
    a wrapper in /usr/local/bin gives /usr/local), else /usr/local/cuda when it exists."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            return Path(env[var]), var
    nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
    if nvcc:
        return Path(os.path.dirname(os.path.dirname(nvcc))), f"nvcc on PATH ({nvcc})"
    if os.path.isdir("/usr/local/cuda"):
        return Path("/usr/local/cuda"), "the default /usr/local/cuda"
    return None, "no CUDA_HOME, CUDA_PATH or nvcc on PATH"


def headers_home(nvcc: str | None) -> Path | None:
    """The toolkit folder that really holds cuda_runtime_api.h behind `nvcc`, if any: through symlinks,
    else as nvcc itself reports it (`TOP=` of a dry run), which sees through a wrapper script."""
    import re

    from kestrel_release.process import proc

    if not nvcc:
        return None
    homes = [Path(os.path.realpath(nvcc)).parent.parent]
    out = proc.run([nvcc, "--dryrun", "-E", "-x", "cu", os.devnull], check=False, timeout=30)
    top = re.search(r"^#\$ TOP=(.+)$", out.output, re.M)
    if top:
        homes.append(Path(os.path.normpath(top.group(1).strip())))
    return next((h for h in homes if (h / "include" / "cuda_runtime_api.h").is_file()), None)


def cuda_home_env(project_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """CUDA_HOME for a torch CUDA build whose CUDA_HOME torch would derive wrongly: with neither CUDA_HOME nor
    CUDA_PATH set, torch takes two folders above `which nvcc` as it is on PATH, so a wrapper script or a
    link in /usr/local/bin gives /usr/local, and the build compiles for minutes, then fails to link with
    `cannot find -lcudart` (no /usr/local/lib64). The toolkit behind that nvcc (headers_home) is what the
    user meant; {} when torch's own answer holds the headers, the user set either variable, or none is found."""
    full = {**os.environ, **env}
    if full.get("CUDA_HOME") or full.get("CUDA_PATH") or not builds_cuda_with_torch(project_dir):
        return {}
    home, _source = torch_cuda_home(full)
    if home is not None and (home / "include" / "cuda_runtime_api.h").is_file():
        return {}
    real = headers_home(shutil.which("nvcc", path=full.get("PATH", "")))
    return {"CUDA_HOME": str(real)} if real else {}


# torch's ATen/cuda/CUDAContextLight.h (included by any extension that takes the current stream or a cuBLAS
# handle) includes these library headers; a toolkit of nvcc and the runtime alone lacks them.
TORCH_LIBRARY_HEADERS = ("cusparse.h", "cublas_v2.h", "cublasLt.h")


def library_headers_env(python: Path | None, project_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """CPATH naming the CUDA library headers of the nvidia-* wheels torch installed beside itself in the build's
    env, when the toolkit torch compiles against (CUDA_HOME) lacks them: chamferdist's knn.cu failed on
    `cusparse.h: No such file or directory` with a CUDA 13.0 toolkit of nvcc and cudart. gcc (nvcc's
    preprocessor too) reads CPATH after the -I folders, so a toolkit that has the headers still wins."""
    if python is None or not builds_cuda_with_torch(project_dir):
        return {}
    home, _source = torch_cuda_home({**os.environ, **env})
    missing = [h for h in TORCH_LIBRARY_HEADERS if home is None or not (home / "include" / h).is_file()]
    root = python.parent.parent  # the env (or interpreter) prefix; a venv's python is a symlink: not resolved
    dirs = sorted(
        str(d)
        for d in root.glob("lib/python3*/site-packages/nvidia/*/include")
        if any((d / h).is_file() for h in missing)
    )
    if not missing or not dirs:
        return {}
    # Each Python's env holds these headers at its own path, which the preprocessed output (what the compile
    # cache keys on) carries: read through one copy named by their bytes, a kernel is one compile for every
    # Python (shared_include.py; without it chamferdist's knn.cu missed for each of four Pythons).
    from kestrel_release.stages.build_wheels import shared_include

    dirs = [str(shared_include.shared_copy(Path(d)) or d) for d in dirs]
    before = env.get("CPATH", os.environ.get("CPATH", ""))
    return {"CPATH": os.pathsep.join([*dirs, *([before] if before else [])])}
