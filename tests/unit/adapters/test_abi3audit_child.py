"""The fast DLL import reader gives abi3audit exactly the symbols abi3audit's own (slow) reader gives."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kestrel_release.adapters import _abi3audit_child
from kestrel_release.artifacts import pe

PE_DIR = Path(__file__).resolve().parents[2] / "data" / "pe"
RELEASE = Path(__file__).resolve().parents[2] / "data" / "cuda" / "release"
PYD = PE_DIR / "psutil_windows_abi3.pyd"


def _abi3audit_own(path: Path) -> list[tuple[str, str]]:
    _object = pytest.importorskip("abi3audit._object")
    dll = _object._Dll(SimpleNamespace(path=path, parent=None))
    return [(s.name, s.visibility) for s in dll]


def test_same_symbols_as_abi3audits_reader():
    assert list(_abi3audit_child.dll_imports(str(PYD))) == _abi3audit_own(PYD)


@pytest.mark.parametrize("name", ["kernel_sm90a.dll", "rdata_sm90a.dll"])
def test_a_dll_without_imports_has_no_symbols(name):
    # abi3audit's own reader fails on it (AttributeError: no DIRECTORY_ENTRY_IMPORT), so the audit gave no report.
    with pytest.raises(AttributeError):
        _abi3audit_own(RELEASE / name)
    assert list(_abi3audit_child.dll_imports(str(RELEASE / name))) == []


def test_an_abi3_extension_shows_its_python_imports():
    names = [name for name, _ in _abi3audit_child.dll_imports(str(PYD))]
    assert "PyModule_Create2" in names and "PyErr_SetFromWindowsErr" in names
    assert pe.parse(PYD.read_bytes(), PYD.name).machine == "x86_64"


def test_the_patch_lands_on_abi3audits_dll_class():
    _object = pytest.importorskip("abi3audit._object")
    original = _object._Dll.__iter__
    try:
        _object._Dll.__iter__ = _abi3audit_child._fast_iter  # what main() does before running the CLI
        dll = _object._Dll(SimpleNamespace(path=PYD, parent=None))
        assert [s.name for s in dll] == [name for name, _ in _abi3audit_child.dll_imports(str(PYD))]
    finally:
        _object._Dll.__iter__ = original
