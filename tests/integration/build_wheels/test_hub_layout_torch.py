"""The kernels-hub layout with a real torch C++ op: `kernels.get_local_kernel(OUT)` picks our
build/torch213-cxx11-cu130-x86_64-linux for the torch it runs with (PyPI's torch 2.13, a CUDA 13.0 build
that imports without a GPU), imports the package and the op registered by its shared library runs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kestrel_release.output_dir import manifest
from tests.factories import NAME, make_project, save_manifest, write_wheel
from tests.helpers import c_compiler, need, run_cli

pytestmark = pytest.mark.slow

PKG = NAME.replace("-", "_")
TORCH = "2.13.0"  # PyPI's Linux torch 2.13 is its CUDA 13.0 build
OP = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
static at::Tensor twice(const at::Tensor& x) { return x * 2; }
TORCH_LIBRARY(kestrel_hub_test, m) {
  m.def("twice(Tensor x) -> Tensor");
  m.impl("twice", c10::DispatchKey::CPU, TORCH_FN(twice));
}
"""
INIT = b"""import os
import torch
torch.ops.load_library(os.path.join(os.path.dirname(__file__), "_C.so"))

def twice(x):
    return torch.ops.kestrel_hub_test.twice(x)
"""


@pytest.fixture(scope="module")
def torch_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of the test's Python with torch 2.13 and kernels from PyPI (uv's cache makes a re-run fast)."""
    from kestrel_release.adapters import uv

    venv = tmp_path_factory.mktemp("torch") / "venv"
    uv_bin = str(uv.find_uv())
    subprocess.run([uv_bin, "venv", "-q", "-p", sys.executable, str(venv)], check=True, timeout=300)
    done = subprocess.run(
        [uv_bin, "pip", "install", "-q", f"torch=={TORCH}", "kernels==0.17.2", "numpy"],
        env={**os.environ, "VIRTUAL_ENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        need(
            f"torch {TORCH} and kernels from PyPI (about 3 GB with its nvidia wheels)",
            f"network to PyPI, or a uv cache holding them: {done.stderr.strip().splitlines()[-1:]}",
        )
    return venv / "bin" / "python"


def _compile_op(python: Path, dest: Path) -> bytes:
    cxx = c_compiler().replace("gcc", "g++").replace("/cc", "/c++")
    torch_dir = (
        subprocess.run(
            [str(python), "-c", "import os, torch; print(os.path.dirname(torch.__file__))"],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    src = dest / "op.cpp"
    src.write_text(OP)
    out = dest / "_C.so"
    subprocess.run(
        [
            cxx,
            "-shared",
            "-fPIC",
            "-O0",
            "-std=c++20",
            "-D_GLIBCXX_USE_CXX11_ABI=1",
            str(src),
            f"-I{torch_dir}/include",
            f"-I{torch_dir}/include/torch/csrc/api/include",
            f"-L{torch_dir}/lib",
            "-ltorch_cpu",
            "-lc10",
            "-o",
            str(out),
        ],
        check=True,
        timeout=900,
    )
    return out.read_bytes()


def _row(wheel: Path, py: str, torch: str, cuda: str) -> dict:
    data = wheel.read_bytes()
    return {
        "filename": wheel.name,
        "python": py,
        "python_tag": "cp" + py.replace(".", ""),
        "platform_tag": "linux_x86_64",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "variant": {"torch": torch, "cuda": cuda, "cxx11_abi": True, "default": torch == "2.13"},
    }


def test_kernels_picks_the_variant_of_its_torch_and_runs_the_cpp_op(torch_env: Path, tmp_path: Path) -> None:
    so = _compile_op(torch_env, tmp_path)
    out = tmp_path / "in"
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    tag = f"cp{py.replace('.', '')}"
    right = write_wheel(
        out, NAME, "0.1.0", f"{tag}-{tag}-linux_x86_64", files={f"{PKG}/__init__.py": INIT, f"{PKG}/_C.so": so}
    )
    # Another torch minor's variant (a wheel of its own name): loading it would fail loudly.
    wrong = write_wheel(
        out,
        NAME,
        "0.1.0",
        "cp310-cp310-linux_x86_64",
        files={f"{PKG}/__init__.py": b"raise ImportError('the torch 2.12 variant was loaded')\n"},
    )
    rows = [_row(right, py, "2.13", "13.0"), _row(wrong, "3.10", "2.12", "12.6")]
    record = save_manifest(
        out,
        {
            "package": NAME,
            "version": "0.1.0",
            "git": {"commit": "d" * 40, "dirty": False},
            "toolchain": {},
            "wheels": rows,
            "kernels": [],
        },
    )
    manifest.write_sums(out, record.wheels)
    project = make_project(tmp_path / "kernels")
    result = run_cli(
        ["assemble", str(out), "--out", str(tmp_path / "rel"), "--project", str(project), "--layout", "kernels-hub"]
    )
    assert result.code == 0, result.output
    script = (
        "import sys, torch, kernels\nfrom pathlib import Path\n"
        "m = kernels.get_local_kernel(Path(sys.argv[1]))\n"
        "print('variant', kernels.get_loaded_kernels()[-1].metadata.id)\n"
        "print('twice', m.twice(torch.tensor([1.0, 2.5])).tolist())\n"
    )
    ran = subprocess.run(
        [str(torch_env), "-c", script, str(tmp_path / "rel")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "twice [2.0, 5.0]" in ran.stdout
    assert "variant _kestrel_kernels_cuda_" in ran.stdout
