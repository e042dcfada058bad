"""verify on wheels holding real binaries of several platforms: `binary-platform` when a binary does not
match the wheel's platform tag, `arch-name` when a file named for an architecture lacks its SASS."""

from __future__ import annotations

from pathlib import Path

from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"
RELEASE = Path(__file__).resolve().parents[2] / "data" / "cuda" / "release"


def test_cli_dll_in_a_linux_wheel_exits_5_with_the_finding_in_json(tmp_path):
    import json

    from tests.helpers import assert_one_line_error, run_cli

    project = make_verify_project(tmp_path / "proj", verify='required_sass = ["sm_90a"]\nallow_ptx = true')
    member = f"{PKG}/kernels_sm90a.dll"
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", member: (RELEASE / "kernel_sm90a.dll").read_bytes()})
    result = run_cli(["verify", str(wheel), "--project", str(project), "--json"])
    assert_one_line_error(result, 5, "verify found 1 error(s) in 1 of 1 wheel(s) for pypi")
    (w,) = json.loads(result.stdout)["wheels"]
    assert [(f["rule"], f["member"]) for f in w["findings"]] == [("binary-platform", member)]
    assert "a PE/COFF DLL for x86_64" in w["findings"][0]["message"]
    (cuda,) = w["cuda"]
    assert (cuda["format"], cuda["machine"], cuda["sass"], cuda["ptx"]) == ("pe", "x86_64", ["sm_90a"], ["compute_90a"])
