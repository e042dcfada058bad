"""examples/c-ext-stub is what it claims to be, so tests built on it prove something.

A plain `uv build --wheel` (no kestrel-release) with each CPython gives the same single
cp310-abi3 wheel whose extension needs libtorch.so, libc10.so and libcudart.so.13, none of
which is in the wheel; the extension imports only where LD_LIBRARY_PATH reaches the stubs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from kestrel_release.artifacts import elf
from tests.helpers import ROOT, need_pythons

EXAMPLE = ROOT / "examples" / "c-ext-stub"
STUB_SONAMES = ["libtorch.so", "libc10.so", "libcudart.so.13"]


def interpreter(version: str) -> Path:
    return need_pythons(version)[version]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_uv_build_gives_one_abi3_wheel_linked_against_the_stubs(tmp_path, version):
    from uv import find_uv_bin

    python = interpreter(version)
    project = tmp_path / "c-ext-stub"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    out = tmp_path / "wheels"
    subprocess.run(
        [find_uv_bin(), "build", "--wheel", "--quiet", "--python", str(python), "--out-dir", str(out), str(project)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert wheels == ["c_ext_stub-0.1.0-cp310-abi3-linux_x86_64.whl"]
    with zipfile.ZipFile(out / wheels[0]) as zf:
        names = zf.namelist()
        sos = [n for n in names if ".so" in n]
        assert sos == ["c_ext_stub/_native.abi3.so"]  # the stub libraries are not in the wheel
        assert "c_ext_stub/tests/test_native.py" in names  # shipped on purpose
        assert not any(n.endswith(".c") for n in names)
        needed = elf.needed(elf.parse(zf.read(sos[0]), sos[0]))
        zf.extractall(tmp_path / "site")
    assert [n for n in needed if n in STUB_SONAMES] == STUB_SONAMES

    check = [str(python), "-c", "import c_ext_stub; print(c_ext_stub.versions())"]
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    found = subprocess.run(
        check,
        cwd=tmp_path / "site",
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "LD_LIBRARY_PATH": str(project / "build" / "stubs")},
    )
    assert found.returncode == 0 and found.stdout.strip() == "(211, 10, 13000)", found.stderr
    missing = subprocess.run(check, cwd=tmp_path / "site", capture_output=True, text=True, timeout=60, env=env)
    assert missing.returncode != 0 and "libtorch.so: cannot open shared object file" in missing.stderr
