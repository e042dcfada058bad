"""A real `release` (not a rehearsal) against an index of the user's choosing (TWINE_REPOSITORY_URL, a
[tool.kestrel-release.targets] entry): the plan names it, and the smoke test installs from it, with the upload's
credentials, and nowhere else. `--from` keeps these fast: the wheels are prebuilt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True
    )


def _project(tmp_path: Path, module_version: str = "") -> Path:
    root = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(root / "dist-all", pythons=("3.12",), module_version=module_version)
    (root / ".gitignore").write_text("dist-all*/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return root


def _env(box: PypiSandbox, **extra: str) -> dict[str, str]:
    return {
        "TWINE_REPOSITORY_URL": box.upload_url,
        "TWINE_USERNAME": box.username,
        "TWINE_PASSWORD": box.password,
        **FAST,
        **extra,
    }


def _release(root: Path, env: dict[str, str], *extra: str):
    return run_cli(
        [
            "release",
            "--project",
            str(root),
            "--from",
            str(root / "dist-all"),
            "--targets",
            "testpypi",
            "--no-gpu-check",
            *extra,
        ],
        env=env,
        timeout=600,
    )


def test_the_plan_names_each_index_url_and_where_it_came_from(tmp_path):
    root = _project(tmp_path)
    env = {
        "TWINE_REPOSITORY_URL": "",
        "KESTREL_RELEASE_TARGETS_TESTPYPI_REPOSITORY_URL": "http://127.0.0.1:9/up/",
        "KESTREL_RELEASE_TARGETS_TESTPYPI_SIMPLE_URL": "http://127.0.0.1:9/read/",
    }
    plan = run_cli(["release", "--project", str(root), "--targets", "testpypi,pypi"], env=env)
    assert_one_line_error(plan, 2, "not a terminal")
    assert "testpypi (http://127.0.0.1:9/up/), pypi (https://upload.pypi.org/legacy/)" in plan.stderr
    assert (
        "testpypi: upload URL http://127.0.0.1:9/up/ (from [tool.kestrel-release.targets]), simple URL "
        "http://127.0.0.1:9/read/"
    ) in plan.stderr
    assert (
        "pypi: upload URL https://upload.pypi.org/legacy/ (from built-in), simple URL https://pypi.org/simple/"
        in plan.stderr
    )
    assert "the real indexes" not in plan.stderr


def _steps(result) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads(result.stdout)["steps"]}


def test_a_real_release_smoke_tests_the_index_it_uploaded_to(tmp_path):
    """Before: `smoke test: kestrel-kernels==0.1.0 from None`, and uv installed another 0.1.0 from PyPI."""
    root = _project(tmp_path)
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _release(root, _env(box), "--yes", "--json")
    assert result.code == 0, result.output
    assert _steps(result)["smoke-test"]["status"] == "done"
    assert f"smoke test: kestrel-kernels==0.1.0 from {box.simple_url} on Python 3.12" in result.stderr
    assert "from None" not in result.stderr


def test_an_index_that_needs_credentials_to_read_is_read_with_the_uploads(tmp_path):
    """Before: the install went without credentials (401) and the smoke test blamed the package."""
    root = _project(tmp_path)
    with PypiSandbox(directory=tmp_path / "index", private=True) as box:
        published = run_cli(
            ["publish", "--project", str(root), "--repository-url", box.upload_url, "--yes", "--smoke-test", "--json"],
            env=_env(box),
            timeout=300,
        )
        assert published.code == 0, published.output
        assert [r["ok"] for r in json.loads(published.stdout)["smoke"]] == [True]
        released = _release(root, _env(box), "--yes", "--json")
        assert released.code == 0, released.output
        assert _steps(released)["smoke-test"]["status"] == "done"
    for result in (published, released):
        assert box.password not in result.output  # the credentials travel in the child's environment only
