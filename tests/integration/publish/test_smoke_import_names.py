"""The smoke test imports what the installed distribution provides, not its project name: MarkupSafe's
wheel holds `markupsafe`, PyYAML's `yaml`; a package without __version__ is checked by its metadata."""

from __future__ import annotations

import json

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_project, write_wheel
from tests.helpers import assert_one_line_error, python_version, run_cli

PY = python_version()  # py3-none-any wheels: the Python running the tests is the one every machine has
FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _publish(project, box, wheel, *extra):
    env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, "KESTREL_RELEASE_PYTHON": PY, **FAST}
    return run_cli(
        [
            "publish",
            str(wheel),
            "--project",
            str(project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
            "--smoke-test",
            *extra,
        ],
        env=env,
        timeout=300,
    )


def _wheel(tmp_path, files):
    return write_wheel(tmp_path / "w", "kestrel-kernels", "0.1.0", "py3-none-any", files=files)


def test_import_names_come_from_the_wheel_not_the_project_name(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=(PY,))
    wheel = _wheel(
        tmp_path,
        {"kk_impl/__init__.py": b"from kk_impl import _core\n", "kk_impl/_core.py": b"X = 1\n", "kk_util.py": b""},
    )
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, "--json")
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["detail"] == "installed and imported kk_impl kk_util 0.1.0", row


def test_a_module_that_fails_to_import_fails_the_smoke_test(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=(PY,))
    wheel = _wheel(tmp_path, {"kk_impl/__init__.py": b"import kk_missing_dependency\n"})
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel)
    assert_one_line_error(result, 6, f"smoke test failed on Python {PY}", "No module named 'kk_missing_dependency'")


def test_dependencies_come_from_the_default_index_the_release_from_the_target(tmp_path):
    # Levenshtein needs rapidfuzz, which neither the sandbox nor TestPyPI holds; an extra's
    # requirement is not installed (it does not exist anywhere).
    project = make_project(tmp_path / "kernels", pythons=(PY,))
    wheel = write_wheel(
        tmp_path / "w",
        "kestrel-kernels",
        "0.1.0",
        "py3-none-any",
        files={"kk_impl/__init__.py": b"import six\n"},
        metadata_extra="Requires-Dist: six\nRequires-Dist: kk-no-such-package; extra == 'dev'\n",
    )
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, "--json")
        assert [f.rsplit("/", 1)[-1] for f in box.files()] == [wheel.name]  # six was never on the target
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["detail"] == "installed and imported kk_impl 0.1.0", row
