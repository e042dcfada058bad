"""verify's dedupe hint: per-Python wheels of one platform holding byte-identical binaries, and the saving."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from tests.factories import write_wheel
from tests.helpers import compile_shared, run_cli

ARCH = platform.machine()  # the compiled objects are this machine's: so are the wheels' tags
PLAT = f"manylinux_2_34_{ARCH}"


@pytest.fixture
def elf(tmp_path):
    """A real ELF shared object per name, compiled here (never an interpreter's module: Debian builds
    `array`, `select` and `_struct` into its python3, so they have no file)."""

    def compile_one(name: str) -> bytes:
        return compile_shared(tmp_path / "so", name, f"int {name}_value(int x) {{ return x + {len(name)}; }}\n")

    return compile_one


def _wheels(out: Path, binaries: dict[str, bytes], extra: dict[str, dict[str, bytes]] | None = None) -> None:
    """One wheel per Python (key), each holding its binary under its own per-Python name."""
    for py, data in binaries.items():
        tag = f"cp{py}-cp{py}-{PLAT}"
        files = {
            "kestrel_kernels/__init__.py": b"__version__ = '0.1.0'\n",
            f"kestrel_kernels/_ops.cpython-{py}-{ARCH}-linux-gnu.so": data,
            **(extra or {}).get(py, {}),
        }
        write_wheel(out, tag=tag, files=files)


def _verify(out: Path, cwd: Path):
    result = run_cli(["verify", str(out), "--json"], cwd=cwd, timeout=120)
    doc = json.loads(result.stdout)
    return result, [f for f in doc["findings"] if f["rule"] == "dedupe"]


def test_identical_binaries_across_pythons_say_what_one_wheel_saves(tmp_path, elf):
    so = elf("array")
    _wheels(tmp_path / "w", {"310": so, "311": so, "312": so})
    result, found = _verify(tmp_path / "w", tmp_path)
    assert result.code == 0, result.output
    assert len(found) == 1 and found[0]["severity"] == "warning"
    message = found[0]["message"]
    assert f"the 3 per-Python wheels for {PLAT} (cp310, cp311, cp312) hold byte-identical binaries" in message
    assert f"py3-none-{PLAT} or cp310-abi3-{PLAT}" in message
    sizes = sorted(p.stat().st_size for p in (tmp_path / "w").glob("*.whl"))
    saving = sum(sizes) - sizes[-1]  # two of three wheels
    assert f"save {saving / 2**20:.1f} MiB" in message or f"save {saving / 1024:.1f} KiB" in message
    assert f"({100 * saving / sum(sizes):.0f}% of the release)" in message
    plain = run_cli(["verify", str(tmp_path / "w")], cwd=tmp_path, timeout=120)
    assert "byte-identical binaries" in plain.stderr


def test_partly_shared_binaries_count_only_the_shared_ones(tmp_path, elf):
    shared = elf("select")
    _wheels(
        tmp_path / "w",
        {"311": elf("array"), "312": elf("struct")},
        extra={py: {"kestrel_kernels/libkernels.so": shared} for py in ("311", "312")},
    )
    _result, found = _verify(tmp_path / "w", tmp_path)
    assert len(found) == 1
    assert "(1 of 2: libkernels.so)" in found[0]["message"]
    assert "one py3 wheel for the platform" in found[0]["message"]


def test_different_binaries_give_no_dedupe_message(tmp_path, elf):
    _wheels(tmp_path / "w", {"311": elf("array"), "312": elf("select")})
    result, found = _verify(tmp_path / "w", tmp_path)
    assert found == [] and "byte-identical" not in result.output
