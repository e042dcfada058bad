"""scripts/precompile.py: complete, consistent, incremental, and nvcc-free when up to date."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAMILIES, KERNELS, all_variant_names, nvcc_path, requires_nvcc
from cubin import read_cubin

sys.path.insert(0, str(KERNELS))
from scripts import precompile as pc


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A private copy of the build inputs, so tests can edit templates and headers."""
    root = tmp_path_factory.mktemp("proj")
    shutil.copytree(KERNELS / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(KERNELS / "csrc", root / "csrc")
    shutil.copytree(KERNELS / "python", root / "python", ignore=shutil.ignore_patterns("precompiled", "__pycache__"))
    return root


@pytest.fixture(scope="module")
def counting_nvcc(tmp_path_factory) -> tuple[Path, Path]:
    """A CUDACXX wrapper that logs every invocation, then runs the real nvcc."""
    d = tmp_path_factory.mktemp("nvcc")
    log = d / "calls.log"
    wrapper = d / "nvcc"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{nvcc_path()}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper, log


def run_precompile(project: Path, nvcc: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CMAKE_ARGS", "TORCH_CUDA_ARCH_LIST", "KESTREL_KERNELS_CUDA_ARCH")
    }
    env.update(CUDACXX=str(nvcc), PYTHONDONTWRITEBYTECODE="1", **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "scripts.precompile", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def manifest_of(project: Path) -> dict:
    return json.loads((project / "python/kestrel_kernels/precompiled/manifest.json").read_text())


# ---- the incremental story, in order ---------------------------------------------


@requires_nvcc
def test_cold_precompile_builds_every_variant(project, counting_nvcc):
    nvcc, log = counting_nvcc
    proc = run_precompile(project, nvcc, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    n = len(all_variant_names())
    assert f"{n} compiled, 0 up to date" in proc.stdout
    compiles = [c for c in calls(log) if "-cubin" in c]
    assert len(compiles) == n
    for c in compiles:  # the flags the issue requires, and none that leak
        assert "-gencode arch=compute_90a,code=sm_90a" in c and "-DNDEBUG" in c
        assert " -G" not in c and "-lineinfo" not in c and "compute_90a,code=compute" not in c


@requires_nvcc
def test_manifest_is_complete_and_consistent(project):
    out = project / "python/kestrel_kernels/precompiled"
    m = manifest_of(project)
    assert m["arch"] == "90a" and m["format"] == pc.MANIFEST_FORMAT
    assert set(m["variants"]) == all_variant_names()
    assert {p.name for p in out.glob("*.cubin")} == {e["cubin"] for e in m["variants"].values()}
    for name, entry in m["variants"].items():
        data = (out / entry["cubin"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert entry["arch"] == "sm_90a" and entry["family"] in FAMILIES
        assert len(entry["input_hash"]) == 64 and entry["kernels"]
        info = read_cubin(data)
        assert info.arch == "sm_90a", (name, info.arch)
        leaks = [s for s in info.sections if s.startswith((".debug_info", ".debug_line", ".nv_debug"))]
        assert not leaks, (name, leaks)
        for kernel in entry["kernels"]:  # every entry point the dispatchers launch exists
            assert f".text.{kernel}" in info.sections, (name, kernel)
        assert str(project).encode() not in data and b"/tmp/" not in data


@requires_nvcc
def test_up_to_date_run_spawns_no_nvcc(project, counting_nvcc):
    nvcc, log = counting_nvcc
    before = len(calls(log))
    manifest_before = (project / "python/kestrel_kernels/precompiled/manifest.json").read_bytes()
    proc = run_precompile(project, nvcc)
    assert proc.returncode == 0, proc.stderr
    assert f"0 compiled, {len(all_variant_names())} up to date" in proc.stdout
    assert calls(log)[before:] == []  # not even `nvcc --version`
    assert (project / "python/kestrel_kernels/precompiled/manifest.json").read_bytes() == manifest_before


@requires_nvcc
def test_corrupt_cubin_is_rebuilt_alone(project, counting_nvcc):
    nvcc, log = counting_nvcc
    target = project / "python/kestrel_kernels/precompiled/silu_and_mul_f16.cubin"
    target.write_bytes(b"garbage")
    before = len(calls(log))
    proc = run_precompile(project, nvcc)
    assert proc.returncode == 0, proc.stderr
    assert "1 compiled" in proc.stdout
    assert [c for c in calls(log)[before:] if "-cubin" in c] == [
        c for c in calls(log)[before:] if c.endswith("silu_and_mul_f16.cu")
    ]
    assert len([c for c in calls(log)[before:] if "-cubin" in c]) == 1
    assert (
        hashlib.sha256(target.read_bytes()).hexdigest()
        == manifest_of(project)["variants"]["silu_and_mul_f16"]["sha256"]
    )


@requires_nvcc
def test_template_edit_rebuilds_only_its_family(project, counting_nvcc):
    nvcc, log = counting_nvcc
    tpl = project / "python/kestrel_kernels/moe_align/kernel.py"
    tpl.write_text(tpl.read_text() + "\n# edited\n")
    before = len(calls(log))
    proc = run_precompile(project, nvcc)
    assert proc.returncode == 0, proc.stderr
    rebuilt = sorted(Path(c.split()[-1]).stem for c in calls(log)[before:] if "-cubin" in c)
    assert rebuilt == ["moe_align_i32", "moe_align_i64"]


@requires_nvcc
def test_subset_run_keeps_other_families(project, counting_nvcc):
    nvcc, log = counting_nvcc
    hdr = project / "csrc/kestrel/common.cuh"
    hdr.write_text(hdr.read_text() + "\n// edited\n")
    before = len(calls(log))
    proc = run_precompile(project, nvcc, "--kernels", "silu_and_mul")
    assert proc.returncode == 0, proc.stderr
    assert "3 variants" in proc.stdout and "3 compiled" in proc.stdout
    assert len([c for c in calls(log)[before:] if "-cubin" in c]) == 3
    assert set(manifest_of(project)["variants"]) == all_variant_names()  # others kept, still listed


def test_unknown_family_is_a_usage_error(project):
    proc = run_precompile(project, Path("/nonexistent/nvcc"), "--kernels", "topkk")
    assert proc.returncode == 2
    assert "unknown kernel family 'topkk' (did you mean 'topk'?)" in proc.stderr


def test_missing_nvcc_is_reported(project, tmp_path):
    proc = run_precompile(project, Path("/nonexistent/nvcc"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 3
    assert "nvcc not found" in proc.stderr


# ---- architecture resolution (the seed's knobs) ------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "90a"),
        ({"TORCH_CUDA_ARCH_LIST": "9.0a"}, "90a"),
        ({"TORCH_CUDA_ARCH_LIST": "8.0"}, "80"),
        ({"CMAKE_ARGS": "-DFOO=1 -DKESTREL_KERNELS_CUDA_ARCH=100a"}, "100a"),
        ({"CMAKE_ARGS": "-DKESTREL_KERNELS_CUDA_ARCH:STRING=90a", "TORCH_CUDA_ARCH_LIST": "8.0"}, "90a"),
        ({"KESTREL_KERNELS_CUDA_ARCH": "sm_90a", "CMAKE_ARGS": "-DKESTREL_KERNELS_CUDA_ARCH=80"}, "90a"),
    ],
)
def test_arch_resolution(env, expected):
    assert pc.resolve_arch(None, env)[0] == expected


@pytest.mark.parametrize("value", ["9.0a+PTX", "8.0;9.0a", "hopper"])
def test_bad_torch_arch_list(value):
    with pytest.raises(pc.PrecompileError):
        pc.resolve_arch(None, {"TORCH_CUDA_ARCH_LIST": value})


def test_version_line_matches_pyproject():
    """The release tool bumps pyproject and this exact line together."""
    import re

    init = (KERNELS / "python/kestrel_kernels/__init__.py").read_text()
    pyproject = (KERNELS / "pyproject.toml").read_text()
    version = re.search(r'(?m)^version = "([^"]+)"', pyproject).group(1)
    assert re.findall(r'(?m)^__version__ = "([^"]+)"$', init) == [version]
