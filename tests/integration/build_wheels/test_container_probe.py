"""The image probe of build.container finds free-threaded Pythons as such (run here by bash, as in an image).

Before: it compared each candidate's "3.14" with the configured "3.14t" and looked for manylinux's
/opt/python/cp314t-cp314t (the image's directory is cp314-cp314t), so no image ever had a free-threaded Python.
The candidates are on PATH: the CPython running the tests (a GIL build) and the same interpreter answering as
a free-threaded build does (sysconfig's Py_GIL_DISABLED = 1), under the name a free-threaded build has.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kestrel_release.adapters import container as container_adapter
from kestrel_release.stages.build_wheels import container

HERE = "{}.{}".format(*sys.version_info[:2])
FREE_THREADED = """#!/bin/sh
[ "$1" = "-c" ] || exit 2
exec {python} -c 'import sys, sysconfig
real = sysconfig.get_config_var
sysconfig.get_config_var = lambda name: 1 if name == "Py_GIL_DISABLED" else real(name)
exec(sys.argv[1])' "$2"
"""


def _found(bin_dir: Path, wanted: list[str]) -> dict[str, str]:
    script = container._PROBE.format(versions=" ".join(wanted))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True)
    engine = container_adapter.Engine("chroot", "/usr/sbin/chroot")
    return container._parse_probe(engine, "root", out.stdout).pythons


@pytest.mark.parametrize("free_threaded", [True, False])
def test_a_free_threaded_python_is_found_and_a_gil_build_under_its_name_is_not(tmp_path: Path, free_threaded: bool):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / f"python{HERE}").symlink_to(sys.executable)
    named = bin_dir / f"python{HERE}t"
    if free_threaded:
        named.write_text(FREE_THREADED.format(python=sys.executable))
        named.chmod(0o755)
    else:
        named.symlink_to(sys.executable)
    found = _found(bin_dir, [HERE, f"{HERE}t"])
    expected = {HERE: str(bin_dir / f"python{HERE}")}
    if free_threaded:
        expected[f"{HERE}t"] = str(named)
    assert found == expected
