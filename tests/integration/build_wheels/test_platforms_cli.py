"""Platforms x Pythons as a user sees them: `build` makes what this machine can and lists the pairs
left for others; `verify`'s matrix names each missing (platform, Python) pair; `--partial` and
`--platform` check one machine's output (and never record it for publish)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kestrel_release.adapters import host
from kestrel_release.output_dir import manifest
from tests import factories
from tests.helpers import assert_one_line_error, python_version, run_cli, run_in_process
from tests.schemas import fits

X86 = "manylinux_2_28_x86_64"
ARM = "manylinux_2_28_aarch64"
WIN = "win_amd64"


def _project(root: Path, platforms: list[str], pythons=("3.12", "3.13")) -> Path:
    root.mkdir(parents=True)
    plats = ", ".join(f'"{p}"' for p in platforms)
    pys = ", ".join(f'"{p}"' for p in pythons)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n\n[tool.kestrel-release]\n'
        f"python = [{pys}]\nplatforms = [{plats}]\n"
    )
    return root


def _wheels(out: Path, *tags: str) -> Path:
    for tag in tags:
        factories.write_wheel(out, tag=tag)
    return out


def _matrix(doc: dict) -> list[tuple[str, str]]:
    return [(f["severity"], f["message"].split(":")[0]) for f in doc["findings"] if f["rule"] == "matrix"]


def test_a_missing_platform_python_pair_is_named(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, ARM, WIN])
    out = _wheels(
        tmp_path / "w",
        f"cp312-cp312-{X86}",
        f"cp313-cp313-{X86}",
        f"cp312-cp312-{ARM}",
        f"cp312-cp312-{WIN}",
        f"cp313-cp313-{WIN}",
    )
    result = run_in_process(["verify", str(out), "--project", str(project), "--json"])
    assert_one_line_error(result, 5, "verify found 1 error(s)")
    assert _matrix(json.loads(result.stdout)) == [("error", f"no wheel for Python 3.13 on {ARM}")]


def test_abi3_wheels_cover_pythons_per_platform(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, ARM, WIN])
    # win: one cp312-abi3 wheel covers 3.12 and 3.13; aarch64: cp313-abi3 starts above 3.12.
    out = _wheels(tmp_path / "w", f"cp312-abi3-{X86}", f"cp312-abi3-{WIN}", f"cp313-abi3-{ARM}")
    result = run_in_process(["verify", str(out), "--project", str(project), "--json"])
    assert result.code == 5, result.output
    assert _matrix(json.loads(result.stdout)) == [
        ("error", f"no wheel for Python 3.12 on {ARM} (cp313-abi3 starts above it)")
    ]
    (out / factories.wheel_name(tag=f"cp313-abi3-{ARM}")).unlink()
    factories.write_wheel(out, tag=f"cp312-abi3-{ARM}")
    result = run_in_process(["verify", str(out), "--project", str(project)])
    assert result.code == 0, result.output
    assert "3 wheel(s) pass verify" in result.stderr


def test_one_machines_output_fails_whole_and_passes_partial_unrecorded(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, ARM, WIN])
    out = project / "dist-all"
    _wheels(out, f"cp312-cp312-{X86}", f"cp313-cp313-{X86}")
    rows = [{"filename": p.name, "sha256": "", "size": 0} for p in sorted(out.glob("*.whl"))]
    factories.save_manifest(out, {"package": "kestrel-kernels", "version": "0.1.0", "wheels": rows})

    whole = run_in_process(["verify", "--project", str(project), "--json"])
    assert_one_line_error(whole, 5, "verify found 4 error(s)")
    assert _matrix(json.loads(whole.stdout)) == [
        ("error", f"no wheel for Python {py} on {plat}") for plat in (ARM, WIN) for py in ("3.12", "3.13")
    ]
    assert "verify --partial" in whole.stderr  # how to check one machine's build alone

    partial = run_in_process(["verify", "--project", str(project), "--partial", "--json"])
    assert partial.code == 0, partial.output
    doc = json.loads(partial.stdout)
    assert doc["ok"] is True
    assert _matrix(doc) == [
        ("warning", f"no wheel for Python {py} on {plat}") for plat in (ARM, WIN) for py in ("3.12", "3.13")
    ]
    assert "expected before `kestrel-release assemble`" in doc["findings"][0]["message"]
    narrowed = run_in_process(["verify", "--project", str(project), "--platform", X86, "--json"])
    assert narrowed.code == 0, narrowed.output
    assert _matrix(json.loads(narrowed.stdout)) == []
    assert manifest.verified_hashes(out) == {}  # publish needs the whole matrix: neither was recorded

    bad = run_in_process(["verify", "--project", str(project), "--platform", "win_arm64"])
    assert_one_line_error(bad, 2, "--platform win_arm64 is not one of the configured platforms")


def test_a_bad_platform_name_is_a_config_error(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, "win_amd46"])
    result = run_in_process(["verify", "--project", str(project)])
    assert_one_line_error(result, 2, "platforms: 'win_amd46' is not a wheel platform tag")


@pytest.mark.slow
def test_build_makes_the_local_platform_and_lists_the_other_as_left(tmp_path: Path) -> None:
    me = host.current()
    if me.system != "linux" or me.libc != "glibc" or me.libc_version < (2, 28):
        pytest.skip("needs a glibc >= 2.28 Linux host")
    local = f"manylinux_2_28_{me.arch}"
    py = python_version()
    tag = "cp" + py.replace(".", "")
    project = factories.make_c_ext_project(tmp_path / "p", pythons=(py,))
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('out_dir = "dist-all"', f'out_dir = "dist-all"\nplatforms = ["{local}", "{WIN}"]')
    )

    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], timeout=600)
    assert result.code == 0, result.output
    assert f"built for {local}" in result.stderr
    assert f"left: {WIN} x Python {py} (needs a windows x86_64 machine)" in result.stderr
    assert "run `kestrel-release build` on such a machine" in result.stderr
    assert "then `kestrel-release assemble`" in result.stderr
    out = project / "dist-all"
    (wheel,) = out.glob("*.whl")
    assert wheel.name.endswith(f"-{tag}-{tag}-{local}.whl")  # the platform is its own repair target
    data = manifest.load(out)
    assert data is not None
    assert data.platforms == {
        "configured": [local, WIN],
        "built": local,
        "left_for_others": [{"platform": WIN, "python": py, "why": "needs a windows x86_64 machine"}],
    }
    assert data.wheels[0].platform == local

    again = run_cli(["build", "--project", str(project), "--no-gpu-check", "--json"], timeout=600)
    assert again.code == 0, again.output
    doc = fits("build", again.stdout)
    assert doc["left_for_others"] == [{"platform": WIN, "python": py, "why": "needs a windows x86_64 machine"}]
    assert doc["platforms"]["built"] == local

    refused = run_in_process(["build", "--project", str(project), "--no-gpu-check", "--platform", WIN])
    assert_one_line_error(refused, 3, f"cannot build {WIN} on this linux-")
    assert [p.name for p in out.glob("*.whl")] == [wheel.name]  # the earlier output is untouched

    verify = run_in_process(["verify", "--project", str(project)])
    assert_one_line_error(verify, 5, "verify found 1 error(s)")
    assert f"no wheel for Python {py} on {WIN}" in verify.stderr
    assert run_in_process(["verify", "--project", str(project), "--partial"]).code == 0


def test_release_of_platforms_this_machine_cannot_build_is_refused_before_any_bump(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, WIN])
    before = (project / "pyproject.toml").read_bytes()
    result = run_in_process(["release", "--project", str(project), "--bump", "patch", "--rehearse", "--yes"])
    assert_one_line_error(result, 2, f"`platforms` also lists {WIN}", "release --from OUT")
    assert (project / "pyproject.toml").read_bytes() == before
    assert not (project / "dist-all").exists()


def test_publish_of_one_machines_output_is_refused_naming_the_missing_platform(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, WIN], pythons=("3.12",))
    out = _wheels(tmp_path / "w", f"cp312-cp312-{X86}")
    result = run_in_process(["publish", str(out), "--project", str(project), "--target", "testpypi", "--dry-run"])
    assert_one_line_error(result, 5, "configured platforms have no wheels", "kestrel-release assemble")


def test_a_pure_wheel_covers_every_configured_platform(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", [X86, ARM, WIN])
    out = _wheels(tmp_path / "w", "py3-none-any")
    result = run_in_process(["verify", str(out), "--project", str(project), "--json"])
    assert result.code == 0, result.output
    assert _matrix(json.loads(result.stdout)) == []


def test_two_machines_outputs_assemble_into_a_complete_release(tmp_path: Path) -> None:
    """Each machine's output alone is one platform short; assembled, the matrix is whole and recorded."""
    from tests.factories import make_project
    from tests.integration.build_wheels.test_assemble import machine_output

    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace("[tool.kestrel-release]\n", f'[tool.kestrel-release]\nplatforms = ["{X86}", "{WIN}"]\n', 1)
    )
    linux = machine_output(tmp_path, "linux", ("3.12", "3.13"), plat=X86)
    windows = machine_output(tmp_path, "windows", ("3.12", "3.13"), plat=WIN)

    alone = run_in_process(["verify", str(linux), "--project", str(project), "--json"])
    assert alone.code == 5, alone.output
    assert _matrix(json.loads(alone.stdout)) == [
        ("error", f"no wheel for Python {py} on {WIN}") for py in ("3.12", "3.13")
    ]

    out = tmp_path / "release"
    assert (
        run_in_process(["assemble", str(linux), str(windows), "--out", str(out), "--project", str(project)]).code == 0
    )
    whole = run_in_process(["verify", str(out), "--project", str(project), "--json"])
    assert whole.code == 0, whole.output
    assert _matrix(json.loads(whole.stdout)) == []
    assert len(manifest.verified_hashes(out, "pypi")) == 4  # a whole release is recorded for publish
