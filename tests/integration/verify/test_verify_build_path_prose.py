"""build-path: example paths in prose (the README in METADATA, shipped docs) are not a leaked build dir;
the project's own directory, or a home path in code, RECORD or direct_url.json, still is (exit 5)."""

from __future__ import annotations

import json

import pytest

from tests.factories import make_verify_project, make_wheel
from tests.helpers import assert_one_line_error, run_in_process

PKG = "kestrel_kernels"
README = "Description-Content-Type: text/markdown\n\n# usage\n\n    python /home/user/x.py\n"


@pytest.fixture
def project(tmp_path):
    return make_verify_project(tmp_path / "proj")


def _findings(result) -> list[dict]:
    return [f for w in json.loads(result.stdout)["wheels"] for f in w["findings"] if f["rule"] == "build-path"]


def test_example_paths_in_the_description_and_docs_pass(project, tmp_path):
    wheel = make_wheel(
        tmp_path,
        {
            f"{PKG}/__init__.py": b"",
            f"{PKG}/README.md": b"see /home/user/x.py\n",
            f"{PKG}/LICENSE": b"C:\\Users\\me\\x.py\n",
        },
        extra_metadata=README,
    )
    result = run_in_process(["verify", str(wheel), "--project", str(project), "--json"])
    assert result.code == 0, result.output
    assert _findings(result) == []


@pytest.mark.parametrize(
    "member, data",
    [
        (f"{PKG}/_paths.py", "BUILD_DIR = '{project}/build'\n"),
        (f"{PKG}/_home.py", "SRC = '/home/user/x.py'\n"),
        (f"{PKG}-0.1.0.dist-info/direct_url.json", '{{"url": "file:///home/user/src"}}'),
        (f"{PKG}/README.md", "built in {project}/build\n"),
    ],
)
def test_build_paths_outside_prose_or_of_this_project_fail(project, tmp_path, member, data):
    wheel = make_wheel(
        tmp_path, {f"{PKG}/__init__.py": b"", member: data.format(project=project).encode()}, extra_metadata=README
    )
    result = run_in_process(["verify", str(wheel), "--project", str(project), "--json"])
    assert_one_line_error(result, 5, "verify found 1 error(s) in 1 of 1 wheel(s)")
    (finding,) = _findings(result)
    assert finding["member"] == member and finding["severity"] == "error"
    assert "absolute build path" in finding["message"]


def test_this_projects_directory_in_the_description_fails(project, tmp_path):
    wheel = make_wheel(tmp_path, extra_metadata=f"\nbuilt from {project}/src\n")
    result = run_in_process(["verify", str(wheel), "--project", str(project), "--json"])
    assert_one_line_error(result, 5, "verify found 1 error(s)")
    (finding,) = _findings(result)
    assert finding["member"].endswith(".dist-info/METADATA") and str(project) in finding["message"]


def test_a_generated_build_config_module_warns_with_the_whole_path(project, tmp_path):
    """contourpy's util/_build_config.py records meson's build_dir: a warning naming it whole, not an error."""
    long = "/home/alice/.cache/kestrel-release/builds/contourpy-1.3.3-3f9c2e1a/build/cp311/lib/contourpy/util"
    wheel = make_wheel(
        tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/util/_build_config.py": f'dict(build_dir=r"{long}")\n'.encode()}
    )
    result = run_in_process(["verify", str(wheel), "--project", str(project), "--json"])
    assert result.code == 0, result.output
    (finding,) = _findings(result)
    assert finding["severity"] == "warning" and f"'{long}'" in finding["message"]
