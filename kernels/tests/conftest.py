"""Shared fixtures for kestrel-kernels tests.

CPU tests (the default) need nvcc and uv for the build tests; GPU tests
(marker ``gpu``) need torch with CUDA, an sm_90 device and kestrel_kernels
installed (a wheel: the source tree has no _C), and are skipped otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent
FAMILIES = ("silu_and_mul", "topk", "moe_align")


def pytest_configure(config):
    # Also registered in pyproject.toml; repeated so a run from another rootdir knows it.
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (sm_90), torch and an installed kestrel_kernels wheel")


def _gpu_skip_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    try:
        import kestrel_kernels._C  # noqa: F401
    except ImportError as exc:
        return f"kestrel_kernels with its _C extension is not installed ({exc}); pip install a built wheel"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if "gpu" in it.keywords]
    if not gpu_items:
        return
    reason = _gpu_skip_reason()
    if reason:
        for it in gpu_items:
            it.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


def nvcc_path() -> str | None:
    return os.environ.get("CUDACXX") or shutil.which("nvcc")


requires_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found (set CUDACXX or PATH)")


def load_template(family: str):
    path = KERNELS / "python" / "kestrel_kernels" / family / "kernel.py"
    spec = importlib.util.spec_from_file_location(f"_tpl_{family}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def all_variant_names() -> set:
    return {v["name"] for f in FAMILIES for v in load_template(f).variants()}


def uv_command() -> list | None:
    if shutil.which("uv"):
        return [shutil.which("uv")]
    if importlib.util.find_spec("uv"):
        return [sys.executable, "-m", "uv"]
    return None


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """One `uv build --wheel` of kernels/ for this interpreter, shared by the session."""
    uv = uv_command()
    if uv is None:
        pytest.skip("uv is not installed (python -m pip install uv)")
    if nvcc_path() is None:
        pytest.skip("nvcc not found: the build precompiles cubins")
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never")
    proc = subprocess.run(
        [*uv, "build", "--wheel", "--python", sys.executable, "--out-dir", str(out)],
        cwd=KERNELS,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"uv build failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="session")
def installed_wheel(built_wheel, tmp_path_factory) -> Path:
    """The session wheel unpacked into a directory usable as PYTHONPATH (an install, minus pip)."""
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(built_wheel) as zf:
        zf.extractall(target)
    return target
