"""`kestrel-release verify` as a user runs it: exit codes, the one error line, --json, the manifest."""

from __future__ import annotations

import json
import shutil

import pytest

from kestrel_release.output_dir import manifest
from tests.factories import make_verify_project, make_wheel, save_manifest
from tests.helpers import KERNELS, assert_one_line_error, run_cli

PKG = "kestrel_kernels"


@pytest.fixture
def project(tmp_path):
    return make_verify_project(tmp_path / "proj")


def test_clean_wheels_in_the_default_output_dir(project):
    out = project / "dist-all"
    out.mkdir()
    save_manifest(out, {"package": "kestrel-kernels", "version": "0.1.0", "wheels": []})
    wheel = make_wheel(out)
    result = run_cli(["verify", "--project", str(project)])
    assert result.code == 0, result.output
    assert "1 wheel(s) pass verify for pypi" in result.stderr
    assert list(manifest.verified_hashes(out, "pypi")) == [wheel.name]


def test_json_has_the_documented_shape_and_failure_exits_5(project, tmp_path):
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/csrc/a.cu": b"//"})
    result = run_cli(["verify", str(wheel), "--project", str(project), "--json"])
    assert_one_line_error(result, 5, "verify found 1 error(s) in 1 of 1 wheel(s) for pypi")
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["findings"] == []
    # README: --json prints one document, also on failure, with the error object (the report kept beside it).
    assert doc["error"]["exit_code"] == 5 and doc["error"]["kind"] == "verify"
    assert doc["error"]["message"].startswith("verify found 1 error(s)") and doc["error"]["message"] in result.stderr
    (w,) = doc["wheels"]
    assert set(w) == {
        "path",
        "filename",
        "sha256",
        "size",
        "name",
        "version",
        "tags",
        "cuda",
        "native",
        "cuda_sizes",
        "coverage",
        "findings",
    }
    assert w["tags"] == ["cp311-cp311-manylinux_2_34_x86_64"] and w["version"] == "0.1.0"
    assert w["findings"] == [
        {
            "rule": "source-leak",
            "severity": "error",
            "member": f"{PKG}/csrc/a.cu",
            "message": "matches the forbidden pattern '*.cu': exclude it from the wheel, or drop "
            "'*.cu' from verify.forbid if it ships on purpose",
        }
    ]


def test_failed_verify_records_nothing(project):
    out = project / "dist-all"
    out.mkdir()
    save_manifest(out, {"package": "kestrel-kernels", "version": "0.1.0", "wheels": []})
    make_wheel(out, tag="cp311-cp311-linux_x86_64")
    result = run_cli(["verify", "--project", str(project), "--target", "testpypi"])
    assert_one_line_error(result, 5, "for testpypi")
    assert "platform-tag" in result.stderr
    assert manifest.verified_hashes(out) == {}


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, code, needle",
    [
        (lambda d: d / "missing.whl", 2, "does not exist"),
        (lambda d: _write(d / "x-1.0.tar.gz", b""), 2, "is an sdist"),
        (lambda d: _write(d / "junk.whl", b"not a zip at all"), 5, "in 1 of 1 wheel(s)"),
        (lambda d: _write(d / "empty.whl", b""), 5, "in 1 of 1 wheel(s)"),
    ],
)
def test_bad_inputs_end_in_one_line(project, tmp_path, make, code, needle):
    result = run_cli(["verify", str(make(tmp_path)), "--project", str(project)])
    assert_one_line_error(result, code, needle)


def test_unknown_target_is_a_usage_error(project, tmp_path):
    result = run_cli(["verify", str(make_wheel(tmp_path)), "--project", str(project), "--target", "conda"])
    assert_one_line_error(result, 2, "unknown verify target 'conda'")


def test_traversal_wheel_is_reported_not_extracted(project, tmp_path):
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", "../../escape.py": b"x"})
    result = run_cli(["verify", str(wheel), "--project", str(project)])
    assert_one_line_error(result, 5)
    assert "unsafe-path" in result.stderr
    assert not (tmp_path.parent / "escape.py").exists()


@pytest.mark.slow
def test_kernels_wheels_verify_clean_with_every_generation(built_wheels, tmp_path):
    out = tmp_path / "dist-all"
    shutil.copytree(built_wheels, out)
    result = run_cli(["verify", str(out), "--project", str(KERNELS), "--json"])
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] and len(doc["wheels"]) == 4
    for wheel in doc["wheels"]:
        assert wheel["findings"] == []
        fatbins = [c for c in wheel["cuda"] if c["member"].endswith(".fatbin")]
        assert {s for c in fatbins for s in c["sass"]} == {"sm_80", "sm_90a", "sm_100f", "sm_120f"}
        assert all(len(c["sass"]) == 1 and c["ptx"] == [] for c in fatbins)  # one arch per fat binary, no PTX
        assert len(wheel["coverage"]["matrix"]) == 8 and all(c["sass"] for c in wheel["coverage"]["matrix"])
    assert set(manifest.verified_hashes(out, "pypi")) == {w["filename"] for w in doc["wheels"]}


def test_identical_kernels_are_tabled_once_for_the_whole_set(built_wheels, tmp_path):
    out = tmp_path / "dist-all"
    shutil.copytree(built_wheels, out)
    result = run_cli(["verify", str(out), "--project", str(KERNELS)])
    assert result.code == 0, result.output
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert result.stderr.count("topk_f32_k8.fatbin") == 8  # one table (8 toolkit x arch pairs), not four
    lines = result.stderr.splitlines()
    for later in wheels[1:]:
        line = next(line for line in lines if line.startswith(later))
        assert line.endswith(f"MiB  ok  104 CUDA binaries, as in {wheels[0]}"), line
