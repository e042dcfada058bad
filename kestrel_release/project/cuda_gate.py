"""Whether a setup.py compiles its CUDA code only where torch sees a GPU.

Many torch extensions choose `CUDAExtension` under `if torch.cuda.is_available()` (chamferdist,
torch-spline-conv, torch-scatter; warp-rnnt raises instead). On a build host without a GPU (a CI runner,
a CPU build machine with nvcc) such a build silently falls back to its C++ extension, and a wheel whose
table promises sm_90a carries no CUDA code at all. The usual way out is a variable the same setup.py
reads (`FORCE_CUDA=1`); without one, the package builds its CUDA code on a GPU host only.

Reading only (setup.py as text, never executed), so init and doctor say it before any build.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_GATE = re.compile(r"\btorch\.cuda\.is_available\s*\(\s*\)")
# os.getenv("FORCE_CUDA"), os.environ.get('FORCE_CUDA', '0'), os.environ["FORCE_CUDA"]
_VARIABLE = re.compile(r"""(?:getenv|environ\.get|environ)\s*[(\[]\s*["']([A-Za-z0-9_]+)["']""")


@dataclass(frozen=True)
class Gate:
    line: int  # setup.py's line of the first torch.cuda.is_available()
    force: str  # the variable setup.py reads to compile CUDA anyway ("FORCE_CUDA"); "" when none

    def opened(self, env: Mapping[str, str]) -> bool:
        """Whether `env` forces the CUDA build (the variable set, and not to 0)."""
        return bool(self.force) and env.get(self.force, "").strip().lower() not in ("", "0", "false", "no")


def read(setup_py: str) -> Gate | None:
    """The gate of a setup.py's CUDA build; None when it compiles CUDA whatever the host has."""
    found = _GATE.search(setup_py)
    if found is None:
        return None
    line = setup_py.count("\n", 0, found.start()) + 1
    names = [n for n in dict.fromkeys(_VARIABLE.findall(setup_py)) if "CUDA" in n.upper() and "FORCE" in n.upper()]
    # FORCE_CUDA itself first; FORCE_ONLY_CUDA and the like drop the CPU extension, so they come after.
    names.sort(key=lambda n: (n.upper() != "FORCE_CUDA", "ONLY" in n.upper()))
    return Gate(line, names[0] if names else "")


def check(gate: Gate, env: Mapping[str, str], has_gpu: bool) -> tuple[str, str, str]:
    """doctor's row (status, detail, fix) for a gated CUDA build on a host with or without a GPU."""
    where = f"setup.py:{gate.line} compiles CUDA only where torch sees a GPU"
    if gate.opened(env):
        return "ok", f"{where}; {gate.force} is set, so this build compiles it", ""
    fix = (
        f'set {gate.force} = "1" in build.env ([tool.kestrel-release.build] of pyproject.toml): setup.py reads it'
        if gate.force
        else "build on a GPU host: setup.py reads no variable that forces its CUDA build"
    )
    if has_gpu:  # compiled here, but the same release built on a GPU-less runner would not be
        return "warn", f"{where}: this host has one; a build host without a GPU would ship no CUDA code", fix
    return "fail", f"{where}, and this host has none: the wheel would carry no CUDA code", fix
