"""`publish --python 3.12` uploads only the wheels for 3.12 (against a real loopback pypiserver)."""

from __future__ import annotations

import json

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _publish(project, box: PypiSandbox, *extra: str):
    env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST}
    return run_cli(
        [
            "publish",
            "--project",
            str(project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
            *extra,
        ],
        env=env,
        timeout=300,
    )


def test_python_selection_uploads_only_its_wheels_and_says_so(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.11", "3.12", "3.13"))
    wheels = make_dist(project / "dist-all", pythons=("3.11", "3.12", "3.13"))
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, "--python", "3.12", "--json")
        assert result.code == 0, result.output
        assert box.files() == [wheels[1].name]
        doc = json.loads(result.stdout)
        assert [r["filename"] for r in doc["uploaded"]] == [wheels[1].name]
        assert sorted(r["filename"] for r in doc["left_out"]) == sorted([wheels[0].name, wheels[2].name])
        assert "leaving out 2 for other Pythons" in result.stderr


def test_python_without_a_wheel_is_one_usage_error(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(project / "dist-all", pythons=("3.12", "3.13"))
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, "--python", "3.11")
        assert_one_line_error(result, 2, "no wheel for Python 3.11")
        assert box.files() == []
