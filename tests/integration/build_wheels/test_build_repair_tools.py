"""The configured platforms: what a tag means, what a host can build, what is left for others,
and which repair tool each platform gets (with the argv it runs)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from kestrel_release.adapters import repair
from kestrel_release.errors import BuildError


def test_linux_repair_is_the_real_auditwheel_with_the_exclude_list(tmp_path: Path) -> None:
    tool = repair.for_system("linux")
    assert tool.version() is not None and tool.missing() == []  # installed with the tool here
    argv = tool.command(tmp_path / "w.whl", tmp_path / "out", "manylinux_2_28_x86_64", ("libtorch*",))
    assert argv[:3] == [sys.executable, "-m", "auditwheel"]
    assert argv[3:] == [
        "repair",
        "--plat",
        "manylinux_2_28_x86_64",
        "--only-plat",
        "-w",
        str(tmp_path / "out"),
        "--exclude",
        "libtorch*",
        str(tmp_path / "w.whl"),
    ]


FAKE = """#!{python}
# A stand-in for a repair tool that cannot run on this Linux machine (delvewheel is a Windows-only
# dependency, delocate a macOS-only one): it records its argv and writes the wheel into -w OUT.
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as fh:
    fh.write(json.dumps([os.path.basename(sys.argv[0]), *args]) + "\\n")
out = args[args.index("-w") + 1]
os.makedirs(out, exist_ok=True)
shutil.copy(args[-1], out)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


@pytest.mark.parametrize(
    ("system", "script", "wheel"),
    [
        ("windows", "delvewheel", "k-0.1.0-cp312-cp312-win_amd64.whl"),
        ("macos", "delocate-wheel", "k-0.1.0-cp312-cp312-macosx_14_0_arm64.whl"),
    ],
)
def test_build_repairs_through_the_platform_tool_on_path(
    tmp_path: Path, monkeypatch, system: str, script: str, wheel: str
) -> None:
    """Fake tool on PATH: the real delvewheel/delocate cannot run here (Linux)."""
    from kestrel_release.stages.build_wheels import repair as _repair

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / script).write_text(FAKE.format(python=sys.executable))
    (bindir / script).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.log"))
    raw = tmp_path / wheel
    raw.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    tool = repair.for_system(system)
    assert tool.missing() == [] and tool.version() == "unknown"
    with _repair.Repairer(0, tool) as repairer:
        repairer.repair(
            raw,
            tmp_path / "fixed",
            "auto",
            ("libtorch*",),
            log=tmp_path / "repair.log",
            what=f"{tool.name} repair for Python 3.12",
        )
    assert (tmp_path / "fixed" / wheel).is_file()
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == 1 and script in calls[0] and str(raw) in calls[0]
    monkeypatch.setenv("FAKE_EXIT", "3")
    with (
        pytest.raises(BuildError, match=f"{tool.name} repair for Python 3.12 failed with exit code 3"),
        _repair.Repairer(0, tool) as repairer,
    ):
        repairer.repair(
            raw,
            tmp_path / "fixed2",
            "auto",
            (),
            log=tmp_path / "repair2.log",
            what=f"{tool.name} repair for Python 3.12",
        )
