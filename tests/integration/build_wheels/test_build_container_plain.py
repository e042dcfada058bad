"""build.container over a user's plain root: a Debian bullseye made by `debootstrap --variant=minbase` with
python3, python3-dev, python3-venv, python3-pip, gcc and libc6-dev, nothing of ours, and the chroot engine.

Before: the repair stopped with `auditwheel.error.InvalidLibc: couldn't detect libc for python extension`
(issue 33). bullseye's gcc links with --as-needed and Python 3.9 extensions link no libpython, so an
extension that calls no libc function needs no libc.so.6, and auditwheel's `--plat auto` takes the libc
from the extension's DT_NEEDED. Now the tag is resolved in the root (its libc, auditwheel's analysis there).

The root is made once by `.ci/container-root-plain` into a cache outside the clone; under CI this test
never skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from tests import factories
from tests.helpers import need, run_cli

pytestmark = pytest.mark.slow
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kestrel-release-ci"
PLAIN = CACHE / "bullseye-plain"  # made by .ci/container-root-plain


@pytest.fixture(scope="module")
def plain_root() -> Path:
    if not (PLAIN / ".complete").exists():
        need(f"a plain bullseye root at {PLAIN}", "run .ci/container-root-plain as root")
    if os.geteuid() != 0:
        need("root (the chroot engine runs as root)", "run the tests as root")
    return PLAIN


def _project(tmp_path: Path) -> Path:
    project = factories.make_c_ext_project(tmp_path / "p", pythons=("3.9",))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *argv], cwd=project, check=True)
    return project


def _needed(so: bytes) -> list[str]:
    """The extension's DT_NEEDED, read by the host's pyelftools (a dependency of auditwheel)."""
    import io

    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(so))
    return [t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection) for t in s.iter_tags("DT_NEEDED")]


def test_a_c_extension_built_in_a_plain_debootstrapped_root_is_repaired_to_manylinux(tmp_path: Path, plain_root: Path):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "chroot"}
    result = run_cli(["build", "--json", "--container", str(plain_root)], cwd=project, env=env)
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["wheels"]
    name = row["filename"]
    _, _, _, tags = parse_wheel_filename(name)
    assert {(t.interpreter, t.abi) for t in tags} == {("cp39", "cp39")}, name
    assert all(t.platform.startswith("manylinux") and t.platform.endswith(os.uname().machine) for t in tags), name
    with zipfile.ZipFile(project / "dist-all" / name) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        # what made auditwheel's own libc detection fail in this root: no libc.so.6 to read it from
        assert "libc.so.6" not in _needed(zf.read(so))
    assert not list((plain_root / "tmp").glob("kestrel-release-*")), "the workspace inside the root is removed"
    verified = run_cli(["verify", "--json"], cwd=project)
    assert verified.code == 0, verified.output
