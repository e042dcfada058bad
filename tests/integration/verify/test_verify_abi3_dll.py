"""verify's abi3 audit of a Windows abi3 wheel (a real MSVC-built .pyd, tests/data/pe): the audit reads the
DLL's imports (through adapters/_abi3audit_child), passes the real one and names a non-limited import."""

from __future__ import annotations

import json
from pathlib import Path

from tests.factories import make_wheel
from tests.helpers import run_cli

PYD = (Path(__file__).resolve().parents[2] / "data" / "pe" / "psutil_windows_abi3.pyd").read_bytes()


def _verify(tmp_path: Path, pyd: bytes) -> tuple[int, list[dict]]:
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, {"kestrel_kernels/__init__.py": b"", "kestrel_kernels/_ext.pyd": pyd}, tag="cp37-abi3-win_amd64")
    result = run_cli(["verify", str(dist), "--json"], cwd=tmp_path, timeout=120)  # standalone: no project here
    doc = json.loads(result.stdout)
    return result.code, [f for f in doc["wheels"][0]["findings"] if f["rule"] == "abi3"]


def test_a_real_abi3_pyd_passes_the_audit(tmp_path: Path) -> None:
    code, abi3 = _verify(tmp_path, PYD)
    assert (code, abi3) == (0, [])  # no "abi3audit gave no report" warning either


def test_a_pyd_importing_a_non_limited_symbol_is_named(tmp_path: Path) -> None:
    # Same length, so the import table stays valid: PyUnicode_New is not in the stable ABI.
    assert PYD.count(b"PyList_Append\0") == 1
    code, abi3 = _verify(tmp_path, PYD.replace(b"PyList_Append\0", b"PyUnicode_New\0"))
    assert len(abi3) == 1 and "PyUnicode_New" in abi3[0]["message"], abi3
    assert abi3[0]["severity"] == "warning" and code == 0  # standalone: a runtime policy, not PyPI's refusal
