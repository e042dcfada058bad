"""One output folder, several projects and versions: each project's own manifest, sums and wheels.

Before: two projects building into one folder replaced each other's `release-manifest.json` and
`SHA256SUMS`; the first project's rebuild was then refused ("which kestrel-release did not write")
and its publish picked the other project's wheels; the two builds were never serialised (locks
were per project). A version bump left the old version's wheels beside the release (only the
newest in SHA256SUMS).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests import factories
from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.slow
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
ENV = {"SOURCE_DATE_EPOCH": "1700000000"}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))  # the CLI children inherit it


def _project(root: Path, name: str) -> Path:
    project = factories.make_c_ext_project(root, pythons=(PY,))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('name = "mini-ext"', f'name = "{name}"'))
    return project


def _build(project: Path, out: Path, **env: str):
    return run_cli(
        ["build", "--project", str(project), "--no-gpu-check", "--out", str(out)], env={**ENV, **env}, timeout=600
    )


def _files(folder: Path, prefix: str) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name.startswith(prefix)
    }


def test_two_projects_share_one_output_folder(tmp_path: Path) -> None:
    first, second = _project(tmp_path / "a", "mini-ext"), _project(tmp_path / "b", "other-ext")
    house = tmp_path / "house"
    assert _build(first, house).code == 0
    assert (built := _build(second, house)).code == 0, built.output
    theirs = _files(house, "other_ext")
    assert sorted(n for n in theirs if not n.endswith(".whl")) == [
        "other_ext.SHA256SUMS",
        "other_ext.release-manifest.json",
    ]
    assert [n[:16] for n in theirs if n.endswith(".whl")] == ["other_ext-0.1.0-"]
    ours = json.loads((house / "release-manifest.json").read_text())
    assert ours["package"] == "mini-ext"  # the first project's manifest is untouched
    assert (house / "SHA256SUMS").read_text().split()[1].startswith("mini_ext-0.1.0-")

    # The first project's rebuild is its own business: accepted, and the other's files stay as they were.
    (first / "src" / "c.c").write_text(factories.C_EXT_SOURCE + "/* v2 */\n")
    again = _build(first, house)
    assert again.code == 0, again.output
    assert _files(house, "other_ext") == theirs
    check = subprocess.run(
        ["sha256sum", "-c", "other_ext.SHA256SUMS", "SHA256SUMS"], cwd=house, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr

    # Each project's verify and publish take only its own wheels.
    for project, prefix in ((first, "mini_ext-"), (second, "other_ext-")):
        checked = run_cli(["verify", "--project", str(project), "--json"], env={"KESTREL_RELEASE_OUT_DIR": str(house)})
        assert checked.code == 0, checked.output
        assert [Path(w["path"]).name[: len(prefix)] for w in json.loads(checked.stdout)["wheels"]] == [prefix]
    with PypiSandbox(directory=tmp_path / "index") as box:
        published = run_cli(
            ["publish", "--project", str(first), "--target", "sandbox", "--repository-url", box.upload_url, "--yes"],
            env={"KESTREL_RELEASE_OUT_DIR": str(house), "TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password},
            timeout=300,
        )
        assert published.code == 0, published.output
        assert [n.split("-")[0] for n in box.files()] == ["mini_ext"]


def test_a_superseded_version_leaves_the_output_folder(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p", pythons=(PY,))
    out = project / "dist-all"
    assert _build(project, out).code == 0
    (old,) = out.glob("*.whl")
    mine = out / old.name.replace("0.1.0", "0.0.9")
    mine.write_bytes(b"a wheel the tool never wrote")
    assert run_cli(["version", "bump", "patch", "--project", str(project)]).code == 0
    rebuilt = _build(project, out)
    assert rebuilt.code == 0, rebuilt.output
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert wheels == sorted([mine.name, old.name.replace("0.1.0", "0.1.1")])  # 0.1.0 is gone, the user's stays
    assert [line.split("  ")[1] for line in (out / "SHA256SUMS").read_text().splitlines()] == [wheels[1]]


def test_builds_of_two_projects_into_one_folder_are_serialised(tmp_path: Path) -> None:
    import fcntl

    first, second = _project(tmp_path / "a", "mini-ext"), _project(tmp_path / "b", "other-ext")
    house = tmp_path / "house"
    assert _build(first, house).code == 0
    before = _files(house, "")
    held = os.open(house, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a running install into the folder holds it
    try:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kestrel_release",
                "build",
                "--project",
                str(second),
                "--no-gpu-check",
                "--out",
                str(house),
            ],
            cwd=ROOT,
            env={**os.environ, **ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(child.stderr), daemon=True)  # type: ignore[arg-type]
        reader.start()
        deadline = time.monotonic() + 300  # a hang guard only
        while not any("waiting for another kestrel-release run" in line for line in lines):
            assert child.poll() is None, "the second build finished while the folder was locked:\n" + "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.2)
        assert child.poll() is None
        assert _files(house, "") == before  # nothing of the second project landed while it waited
    finally:
        os.close(held)
    child.wait(timeout=300)
    reader.join(timeout=60)
    assert child.returncode == 0, "".join(lines)
    assert (house / "other_ext.release-manifest.json").is_file()
    after = _files(house, "")
    assert {k: after.get(k) for k in before} == before  # the first project's files, byte for byte
