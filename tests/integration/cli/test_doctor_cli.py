"""doctor: the table/JSON a user sees and its exit code, on this GPU-less machine and faked ones."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from kestrel_release.adapters import gpu
from kestrel_release.config_loader import load as config
from kestrel_release.flows import doctor
from tests.helpers import KERNELS, assert_one_line_error, python_version, run_in_process
from tests.schemas import fits

HAS_H100 = gpu.has_arch(gpu.detect()[0], "90a")
ONE_PY = {"KESTREL_RELEASE_PYTHON": python_version()}  # checks that are not about interpreters probe only one
no_gpu_only = pytest.mark.skipif(HAS_H100, reason="this machine has an sm_90 GPU")


def _by_name(payload: dict) -> dict[str, dict]:
    return {c["name"]: c for c in payload["checks"]}


def _fake_smi(tmp_path: Path, line: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{line}'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    return bin_dir


@no_gpu_only
def test_no_gpu_is_a_warning_by_default():
    result = run_in_process(["doctor", "--project", str(KERNELS), "--json"], env=ONE_PY)
    checks = _by_name(fits("doctor", result.stdout))
    assert checks["GPU"]["status"] == "warn"
    assert "cross-compiled" in checks["GPU"]["detail"]
    assert result.code == 0, result.output


@no_gpu_only
def test_no_gpu_fails_when_required():
    result = run_in_process(
        ["doctor", "--project", str(KERNELS)], env={**ONE_PY, "KESTREL_RELEASE_REQUIRES_GPU": "true"}
    )
    assert_one_line_error(result, 3, "GPU: no sm_80/sm_90a/sm_100f/sm_120f GPU")
    assert "run on an H100 host" in result.stderr


def test_missing_nvcc_fails_with_the_fix():
    result = run_in_process(["doctor", "--project", str(KERNELS)], env={**ONE_PY, "CUDACXX": "/nonexistent/nvcc"})
    assert_one_line_error(result, 3, "CUDA toolkits", "CUDACXX=/nonexistent/nvcc", "set CUDACXX=")


def test_missing_interpreter_named():
    result = run_in_process(
        ["doctor", "--project", str(KERNELS), "--json"], env={"KESTREL_RELEASE_PYTHON": f"{python_version()},3.99"}
    )
    assert result.code == 3
    doc = fits("doctor", result.stdout)  # the report, then the failure's error in the same document
    assert doc["ok"] is False and doc["error"]["exit_code"] == 3 and "3.99" in doc["error"]["message"], doc["error"]
    checks = _by_name(doc)
    assert checks["Python 3.99"]["status"] == "fail"
    assert "uv python install 3.99" in checks["Python 3.99"]["fix"]
    assert checks[f"Python {python_version()}"]["status"] == "ok"


def test_credentials_present_but_never_shown(tmp_path):
    secret_pw, secret_gh = "pypi-" + "A" * 40, "s3cr3t-gh-value-123456"
    rc = tmp_path / "pypirc"
    rc.write_text(f"[testpypi]\nusername = __token__\npassword = {secret_pw}\n")
    result = run_in_process(
        ["doctor", "--project", str(KERNELS), "--json"],
        env={**ONE_PY, "PYPIRC": str(rc), "GH_TOKEN": secret_gh, "TWINE_PASSWORD": ""},
    )
    checks = _by_name(json.loads(result.stdout))
    assert checks["credentials: testpypi"]["status"] == "ok"
    assert checks["credentials: pypi"]["status"] == "warn"
    assert checks["credentials: github"] == {
        "name": "credentials: github",
        "status": "ok",
        "detail": "GH_TOKEN is set",
        "fix": "",
    }
    assert secret_pw not in result.output and secret_gh not in result.output


def test_nvidia_smi_fallback_finds_h100(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "_from_nvml", lambda: ([], "NVML: not found"))
    bin_dir = _fake_smi(tmp_path, "NVIDIA H100 80GB HBM3, 9.0, 550.54.15")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    gpus, why = gpu.detect()
    assert why is None
    assert [g.to_json() for g in gpus] == [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "capability": "9.0",
            "driver": "550.54.15",
            "source": "nvidia-smi",
            "sm": "sm_90",
        }
    ]
    cfg = config.load(KERNELS, env={**ONE_PY, "KESTREL_RELEASE_REQUIRES_GPU": "1"})
    check = next(c for c in doctor.run(cfg).checks if c.name == "GPU")
    assert check.status == "ok" and "H100" in check.detail


def test_wrong_gpu_fails_when_required(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "_from_nvml", lambda: ([], "NVML: not found"))
    bin_dir = _fake_smi(tmp_path, "Tesla V100-SXM2-32GB, 7.0, 550.54.15")  # below every configured arch
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cfg = config.load(KERNELS, env={**ONE_PY, "KESTREL_RELEASE_REQUIRES_GPU": "1"})
    report = doctor.run(cfg)
    check = next(c for c in report.checks if c.name == "GPU")
    assert check.status == "fail" and "V100-SXM2-32GB (sm_70," in check.detail
    assert not report.ok


def test_glibc_too_old_for_plat(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "demo"
        version = "1.0"
        [tool.kestrel-release]
        python = ["PY"]
        [tool.kestrel-release.build]
        plat = "manylinux_2_99_x86_64"
        """).replace("PY", python_version())
    )
    result = run_in_process(["doctor", "--project", str(tmp_path)])
    assert_one_line_error(result, 3, "glibc", "older than manylinux_2_99_x86_64")


def test_doctor_lists_each_configured_toolkit_with_its_version_and_archs(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "demo"
        version = "0.1"
        [tool.kestrel-release]
        python = ["3.12"]
        cuda_arch = ["80", "90a", "110@13.0"]
        cuda = ["13.0", "12.9"]
        """)
    )
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    env = {"CUDACXX": str(nvcc), "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    result = run_in_process(["doctor", "--project", str(project), "--json"], env=env)
    checks = _by_name(json.loads(result.stdout))
    assert checks["CUDA 13.0"]["status"] == "ok"
    assert checks["CUDA 13.0"]["detail"] == f"13.0.88 (CUDACXX: nvcc {nvcc}); builds sm_80, sm_90a, sm_110"
    if not Path("/usr/local/cuda-12.9").exists():
        assert checks["CUDA 12.9"]["status"] == "warn"
        assert checks["CUDA 12.9"]["detail"].startswith("not on this machine; build installs it from PyPI")
        assert checks["CUDA 12.9"]["detail"].endswith("builds sm_80, sm_90a")


def _torch_project(root: Path) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools", "torch>=2.4"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "torch-ext"\nversion = "0.1.0"\n\n[tool.kestrel-release]\n'
    )
    (root / "csrc").mkdir()
    (root / "csrc" / "k.cu").write_text("__global__ void k() {}\n")  # CUDA code: torch's CUDA_HOME matters
    return root


def test_a_wrapper_nvcc_gives_torch_a_cuda_home_without_headers(tmp_path):
    """An nvcc wrapper script in <dir>/bin: torch alone would take <dir> as CUDA_HOME (no headers, no lib64:
    a build compiled for minutes, then failed with `cannot find -lcudart`). build sets CUDA_HOME to the
    toolkit behind the wrapper, and doctor says so."""
    real = shutil.which("nvcc")
    if real is None:
        pytest.skip("needs nvcc")
    # the toolkit behind this machine's nvcc (itself a wrapper script on some hosts), as nvcc reports it
    dry = subprocess.run([real, "--dryrun", "-E", "-x", "cu", os.devnull], capture_output=True, text=True)
    top = next(ln.split("=", 1)[1] for ln in (dry.stdout + dry.stderr).splitlines() if ln.startswith("#$ TOP="))
    toolkit = Path(os.path.normpath(top.strip()))
    assert (toolkit / "include" / "cuda_runtime_api.h").is_file()
    wrapper = tmp_path / "local" / "bin" / "nvcc"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    project = _torch_project(tmp_path / "ext")
    env = {**ONE_PY, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}", "CUDA_HOME": "", "CUDA_PATH": ""}
    result = run_in_process(["doctor", "--project", str(project), "--json"], env=env)
    row = _by_name(json.loads(result.stdout))["CUDA_HOME (as torch derives it)"]
    assert row["status"] == "ok", row
    assert row["detail"] == (
        f"{toolkit}: torch alone would take {tmp_path / 'local'} (from nvcc on PATH ({wrapper})); "
        f"build sets CUDA_HOME={toolkit}"
    )
    from kestrel_release.stages.build_wheels import cuda_tools

    assert cuda_tools.cuda_home_env(project, env) == {"CUDA_HOME": str(toolkit)}  # what each Python's build gets
    assert cuda_tools.cuda_home_env(project, {**env, "CUDA_HOME": "/opt/mine"}) == {}  # the user's own stays
    # A wrapper whose toolkit cannot be found: doctor fails with the export to make.
    stray = tmp_path / "stray" / "bin" / "nvcc"
    stray.parent.mkdir(parents=True)
    stray.write_text("#!/bin/sh\nexit 1\n")
    stray.chmod(0o755)
    broken = run_in_process(
        ["doctor", "--project", str(project), "--json"], env={**env, "PATH": f"{stray.parent}:/usr/bin:/bin"}
    )
    row = _by_name(json.loads(broken.stdout))["CUDA_HOME (as torch derives it)"]
    assert row["status"] == "fail" and row["fix"].startswith("export CUDA_HOME="), row
    assert broken.code == 3
    fixed = run_in_process(["doctor", "--project", str(project), "--json"], env={**env, "CUDA_HOME": str(toolkit)})
    row = _by_name(json.loads(fixed.stdout))["CUDA_HOME (as torch derives it)"]
    assert row["status"] == "ok" and row["detail"].startswith(f"{toolkit} (from CUDA_HOME)"), row
    # A C++-only torch extension never runs nvcc: the same machine is no problem for it.
    (project / "csrc" / "k.cu").unlink()
    cpp_only = run_in_process(["doctor", "--project", str(project), "--json"], env=env)
    assert "CUDA_HOME (as torch derives it)" not in _by_name(json.loads(cpp_only.stdout))


def test_a_compiler_with_a_private_libstdcxx_is_named_before_any_torch_build(tmp_path):
    """A torch extension (setup.py importing torch's cpp_extension, no build-system table) and a CXX that links
    libstdc++ statically, as a custom GCC whose lib dir holds only libstdc++.a does: doctor fails the row
    with the setting that fixes it, before a build that verify's cxx-runtime rule would refuse."""
    project = tmp_path / "ext"
    project.mkdir()
    (project / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CppExtension\n"
        "setup(name='ext', version='0.1.0', ext_modules=[CppExtension('ext._C', ['ext/a.cpp'])])\n"
    )
    (project / "pyproject.toml").write_text("[tool.kestrel-release]\nbuild.isolation = false\n")
    static = tmp_path / "bin" / "g++-static"
    static.parent.mkdir()
    static.write_text('#!/bin/sh\nexec g++ -static-libstdc++ "$@"\n')
    static.chmod(0o755)
    result = run_in_process(["doctor", "--project", str(project), "--json"], env={**ONE_PY, "CXX": str(static)})
    row = _by_name(json.loads(result.stdout))["C++ runtime for torch"]
    assert row["status"] == "fail" and "private static libstdc++" in row["detail"], row
    assert row["fix"].startswith('set build.env = {CXX = "/usr/bin/g++"}')
    assert result.code == 3
    fixed = run_in_process(["doctor", "--project", str(project), "--json"], env={**ONE_PY, "CXX": "g++"})
    row = _by_name(json.loads(fixed.stdout))["C++ runtime for torch"]
    assert row == {**row, "status": "ok", "detail": "g++ links the shared libstdc++"}


def test_a_torch_of_another_cuda_major_than_the_builds_nvcc_fails_its_python_row(tmp_path):
    """build.isolation off: the build uses this Python's torch, and torch's cpp_extension refuses an nvcc of
    another CUDA major minutes into the build; doctor compares the two first (a stand-in torch built for 12.8,
    this machine's CUDA 13 toolkit as CUDA_HOME)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc")
    dry = subprocess.run([nvcc, "--dryrun", "-E", "-x", "cu", os.devnull], capture_output=True, text=True)
    top = next(ln.split("=", 1)[1] for ln in (dry.stdout + dry.stderr).splitlines() if ln.startswith("#$ TOP="))
    toolkit = Path(os.path.normpath(top.strip()))
    fake = tmp_path / "site" / "torch"
    (fake / "_C").mkdir(parents=True)
    (fake / "__init__.py").write_text("from torch import version, _C\n__version__ = '2.9.1+cu128'\n")
    (fake / "version.py").write_text("cuda = '12.8'\n")
    (fake / "_C" / "__init__.py").write_text("_GLIBCXX_USE_CXX11_ABI = True\n")
    project = tmp_path / "ext"
    project.mkdir()
    (project / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    (project / "pyproject.toml").write_text("[tool.kestrel-release]\nbuild.isolation = false\n")
    env = {**ONE_PY, "PYTHONPATH": str(tmp_path / "site"), "CUDA_HOME": str(toolkit)}
    result = run_in_process(["doctor", "--project", str(project), "--json"], env=env)
    row = _by_name(json.loads(result.stdout))[f"Python {python_version()}"]
    assert row["status"] == "fail", row
    assert "torch was built with CUDA 12.8, the build's nvcc" in row["detail"] and "is CUDA 13." in row["detail"]
    assert row["fix"].startswith("point CUDA_HOME at a CUDA 12.x toolkit")
    assert result.code == 3


@no_gpu_only
def test_a_torch_extension_that_cannot_build_here_is_named_with_the_edit_that_fixes_it(tmp_path):
    """chamferdist's shape on a GPU-less build host whose Pythons have no torch: setup.py imports an
    undeclared torch (build.isolation off then fails at its first line) and compiles CUDAExtension only where
    torch sees a GPU or FORCE_CUDA=1 (else the wheel has no CUDA code). Both rows say so before any build."""
    project = tmp_path / "ext"
    project.mkdir()
    (project / "setup.py").write_text(
        "import os\nimport torch\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension\n"
        "cuda = torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1'\n"
        "Ext = CUDAExtension if cuda else CppExtension\n"
        "setup(name='ext', version='0.1.0', ext_modules=[Ext('ext._C', ['ext/a.cpp', 'ext/a.cu'])])\n"
    )
    (project / "pyproject.toml").write_text(
        '[project]\nname = "ext"\nversion = "0.1.0"\n'
        '[tool.kestrel-release]\ncuda_arch = "90a"\n[tool.kestrel-release.build]\nisolation = false\n'
    )
    result = run_in_process(["doctor", "--project", str(project), "--json"], env=ONE_PY)
    rows = _by_name(json.loads(result.stdout))
    py = rows[f"Python {python_version()}"]
    assert py["status"] == "fail" and "no torch to import, which setup.py imports" in py["detail"], py
    assert py["fix"] == (
        f"in {project / 'pyproject.toml'} [tool.kestrel-release.build], replace isolation = false with "
        'requires = ["torch"] (each build env installs it), or install torch into this Python'
    )
    gate = rows["CUDA build gate"]
    assert gate["status"] == "fail" and gate["detail"] == (
        "setup.py:5 compiles CUDA only where torch sees a GPU, and this host has none: the wheel would carry "
        "no CUDA code"
    )
    assert gate["fix"].startswith('set FORCE_CUDA = "1" in build.env')
    assert result.code == 3
    forced = run_in_process(["doctor", "--project", str(project), "--json"], env={**ONE_PY, "FORCE_CUDA": "1"})
    assert _by_name(json.loads(forced.stdout))["CUDA build gate"]["status"] == "ok"
