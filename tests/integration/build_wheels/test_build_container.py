"""build.container: Linux wheels built inside an older image carry that image's glibc floor.

Before: `build` only built on the host, so from this bookworm host (glibc 2.36) an extension calling
dlopen (moved into libc in glibc 2.34) came out manylinux_2_34 and never installed on Debian 11 /
RHEL 8-era systems; `--container` and build.container did not exist (exit 2, "No such option").

The image is a Debian bullseye root (glibc 2.31, Python 3.9) made once by `.ci/container-root` into a
cache outside the clone and imported into podman; under CI these tests never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import ROOT, assert_one_line_error, run_cli

pytestmark = pytest.mark.slow
IMAGE = "localhost/kestrel-release-ci/bullseye:1"  # made by .ci/container-root
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kestrel-release-ci"
BULLSEYE = CACHE / "bullseye-root"
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}: CI runs .ci/container-root first")
    pytest.skip(why)


@pytest.fixture(scope="module")
def bullseye() -> Path:
    if not (BULLSEYE / ".complete").exists():
        _missing(f"no bullseye root at {BULLSEYE} (run .ci/container-root as root)")
    if os.geteuid() != 0:
        _missing("the chroot engine and the test image need root")
    return BULLSEYE


@pytest.fixture(scope="module")
def podman_image(bullseye: Path) -> str:
    if shutil.which("podman") is None:
        _missing("podman is not installed")
    if subprocess.run(["podman", "image", "exists", IMAGE]).returncode != 0:
        _missing(f"podman has no image {IMAGE} (run .ci/container-root)")
    return IMAGE


def _project(tmp_path: Path, pythons: tuple[str, ...] = ("3.9",)) -> Path:
    project = factories.make_dlopen_ext_project(tmp_path / "p", pythons=pythons)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"],
        cwd=project,
        check=True,
    )
    return project


def _check_runs_in_root(root: Path, wheel: Path) -> None:
    """The wheel installs (uv checks its tags against bullseye's glibc and Python) and its dlopen works."""
    work = Path(root) / "tmp" / f"kestrel-release-test-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        shutil.copy2(ROOT / ".venv" / "bin" / "uv", work / "uv")
        shutil.copy2(wheel, work / wheel.name)
        inside = "/" + work.relative_to(root).as_posix()
        env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "UV_CACHE_DIR": f"{inside}/cache"}
        install = subprocess.run(
            [CHROOT, str(root), f"{inside}/uv", "pip", "install", "--offline", "--no-deps",
             "--python", "/usr/bin/python3.9", "--target", f"{inside}/site", f"{inside}/{wheel.name}"],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert install.returncode == 0, install.stderr
        run = subprocess.run(
            [CHROOT, str(root), "/usr/bin/python3.9", "-c",
             f"import sys; sys.path.insert(0, '{inside}/site'); import mini_ext._c as c; print(c.probe())"],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 0 and run.stdout.strip() == "True", run.stdout + run.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _assert_portable(project: Path, bullseye: Path, result) -> Path:
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    (row,) = doc["wheels"]
    floor = tuple(int(p) for p in row["glibc_floor"].split("."))
    assert floor <= (2, 31), row  # a host build here needs GLIBC_2.34 for dlopen
    wheel = project / "dist-all" / row["filename"]
    with zipfile.ZipFile(wheel) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        assert b"GLIBC_2.34" not in zf.read(so)
    _check_runs_in_root(bullseye, wheel)
    verified = run_cli(["verify", "--json"], cwd=project)
    assert verified.code == 0, verified.output
    return wheel


def test_podman_builds_in_the_image_a_wheel_that_runs_on_bullseye(tmp_path: Path, podman_image: str, bullseye: Path):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman"}
    result = run_cli(["build", "--json", "--container", podman_image], cwd=project, env=env)
    _assert_portable(project, bullseye, result)
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True).stdout in (
        "",
        "?? dist-all/\n",
    )


def test_chroot_engine_over_the_root_gives_the_same_portable_wheel(tmp_path: Path, bullseye: Path):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER": str(bullseye), "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "chroot"}
    result = run_cli(["build", "--json"], cwd=project, env=env)
    _assert_portable(project, bullseye, result)
    assert not list((bullseye / "tmp").glob("kestrel-release-*")), "the workspace inside the root is removed"


def test_preflight_names_a_python_the_image_lacks_before_building(tmp_path: Path, podman_image: str):
    project = _project(tmp_path, pythons=("3.9", "3.12"))
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman"}
    result = run_cli(["build", "--container", podman_image], cwd=project, env=env)
    assert_one_line_error(result, 3, f"the image {podman_image} has no Python 3.12")
    assert not (project / "dist-all").exists()


def test_preflight_names_an_image_that_cannot_be_pulled(tmp_path: Path, podman_image: str):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman"}
    result = run_cli(["build", "--container", "localhost/kestrel-release-ci/no-such-image:0"], cwd=project, env=env)
    assert_one_line_error(result, 3, "the image localhost/kestrel-release-ci/no-such-image:0 is not here")
    assert not (project / "dist-all").exists()


def test_preflight_names_a_chroot_root_that_is_not_one(tmp_path: Path, bullseye: Path):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "chroot"}
    result = run_cli(["build", "--container", str(tmp_path / "nothing")], cwd=project, env=env)
    assert_one_line_error(result, 3, "is not a root directory")


def test_docker_without_a_daemon_is_one_preflight_line(tmp_path: Path):
    if shutil.which("docker") is None:
        pytest.skip("docker client not installed")  # the argv is covered by tests/unit/adapters/test_container.py
    if subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True).returncode == 0:
        pytest.skip("a docker daemon answers here")
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "docker"}
    result = run_cli(["build", "--container", "debian:bullseye"], cwd=project, env=env)
    assert_one_line_error(result, 3, "docker cannot run containers here")


def test_doctor_shows_the_engine_what_it_needed_here_and_the_image_pythons(tmp_path: Path, podman_image: str):
    project = _project(tmp_path, pythons=("3.9", "3.12"))
    env = {"KESTREL_RELEASE_BUILD_CONTAINER": podman_image, "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman"}
    result = run_cli(["doctor", "--json"], cwd=project, env=env)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["container engine"]["status"] == "ok" and checks["container engine"]["detail"].startswith("podman ")
    assert checks["container image"]["status"] == "ok" and "glibc 2.31" in checks["container image"]["detail"]
    assert checks[f"Python 3.9 (in {podman_image})"] == {
        "name": f"Python 3.9 (in {podman_image})", "status": "ok", "detail": "/usr/bin/python3.9", "fix": ""
    }  # fmt: skip
    assert checks[f"Python 3.12 (in {podman_image})"]["status"] == "fail"
    assert result.code == 3


def test_doctor_names_an_image_not_present_locally_and_does_not_pull_it(tmp_path: Path, podman_image: str):
    project = _project(tmp_path)
    missing = "localhost/kestrel-release-ci/no-such-image:0"
    env = {"KESTREL_RELEASE_BUILD_CONTAINER": missing, "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman"}
    result = run_cli(["doctor", "--json"], cwd=project, env=env)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["container image"] == {
        "name": "container image", "status": "fail", "detail": f"{missing} is not present locally",
        "fix": f"podman pull {missing}",
    }  # fmt: skip
    assert result.code == 3
