"""`assemble`: build outputs of several machines become one release, or nothing is written."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from kestrel_release.files import statedir
from kestrel_release.output_dir import manifest, outputs
from kestrel_release.records.manifest import Builder, GitState, Wheel
from tests.factories import NAME, importable_wheel_bytes, make_dist, make_project
from tests.helpers import assert_one_line_error, need_pythons, python_version, run_cli
from tests.schemas import fits

PYTHONS = ("3.12", "3.13")


def machine_output(
    root: Path,
    label: str,
    pythons: tuple[str, ...],
    *,
    commit: str = "a" * 40,
    version: str = "0.1.0",
    payload_size: int = 0,
    plat: str = "manylinux_2_34_x86_64",
) -> Path:
    """A build output as one machine's `build` writes it, with its builder recorded."""
    out = root / label
    make_dist(out, version=version, pythons=pythons, payload_size=payload_size, plat=plat)
    data = manifest.load(out)
    assert data is not None
    ci = {"job": "build", "run_id": "4242", "runner": f"runner-{label}"}
    builder = Builder(f"host-{label}", "linux-x86_64", "x86_64", label, ci)
    toolchain = {"nvcc": "12.8", "auditwheel": "6.8.0", "uv": "0.13.0", "pythons": {}}
    manifest.save(out, replace(data, git=GitState(commit, False), toolchain=toolchain, builder=builder))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "kernels", pythons=PYTHONS)


def assemble(project: Path, *args: str):
    return run_cli(["assemble", *args, "--project", str(project)])


def snapshot(path: Path) -> dict[str, bytes] | None:
    if not path.exists():
        return None
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_two_machines_combine_into_one_release(project: Path, tmp_path: Path) -> None:
    a = machine_output(tmp_path, "linux-x86_64-a", ("3.12",))
    b = machine_output(tmp_path, "linux-x86_64-b", ("3.13",))
    out = tmp_path / "release"
    result = assemble(project, str(a), str(b), "--out", str(out), "--json")
    assert result.code == 0, result.output
    report = fits("assemble", result.stdout)
    assert report["ok"] is True and report["version"] == "0.1.0" and report["commit"] == "a" * 40
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert wheels == sorted(p.name for p in [*a.glob("*.whl"), *b.glob("*.whl")]) and len(wheels) == 2
    # One SHA256SUMS covering every wheel, in `sha256sum -c` format, true to the bytes.
    sums = dict(reversed(line.split("  ")) for line in (out / "SHA256SUMS").read_text().splitlines())
    assert sums == {w: hashlib.sha256((out / w).read_bytes()).hexdigest() for w in wheels}
    data = json.loads((out / "release-manifest.json").read_text())
    assert data["package"] == NAME and data["version"] == "0.1.0" and data["git"]["commit"] == "a" * 40
    by_wheel = {w["filename"]: w for w in data["wheels"]}
    assert {w["built_by"]["label"] for w in by_wheel.values()} == {"linux-x86_64-a", "linux-x86_64-b"}
    for wheel in by_wheel.values():
        py = wheel["python"]
        assert wheel["filename"].split("-")[2] == f"cp{py.replace('.', '')}"
        assert wheel["built_by"]["host"] == f"host-{wheel['built_by']['label']}"
        assert wheel["built_by"]["ci"] == {
            "job": "build",
            "run_id": "4242",
            "runner": f"runner-{wheel['built_by']['label']}",
        }
        assert wheel["toolchain"] == {"python": py, "nvcc": "12.8", "auditwheel": "6.8.0", "uv": "0.13.0"}
        assert wheel["commit"] == "a" * 40 and wheel["sha256"] == sums[wheel["filename"]]
    assert [i["input"] for i in data["assembled"]["inputs"]] == ["linux-x86_64-a", "linux-x86_64-b"]
    assert "verified" not in data
    # verify reads the assembled output like a local build's, and records what it passed.
    verified = run_cli(["verify", str(out), "--project", str(project), "--target", "pypi"])
    assert verified.code == 0, verified.output
    assert set(manifest.verified_hashes(out, "pypi")) == set(wheels)
    # A second assemble may replace an earlier assembled output (only our files are in it).
    again = assemble(project, str(a), str(b), "--out", str(out))
    assert again.code == 0, again.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*wheels, ".gitignore", "SHA256SUMS", "release-manifest.json"]
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staging left behind"


def _other_commit(tmp: Path) -> list[Path]:
    return [machine_output(tmp, "a", ("3.12",)), machine_output(tmp, "b", ("3.13",), commit="b" * 40)]


def _other_version(tmp: Path) -> list[Path]:
    return [machine_output(tmp, "a", ("3.12",)), machine_output(tmp, "b", ("3.13",), version="0.1.1")]


def _same_name_other_bytes(tmp: Path) -> list[Path]:
    return [machine_output(tmp, "a", ("3.12",)), machine_output(tmp, "b", ("3.12",), payload_size=512)]


def _tampered_wheel(tmp: Path) -> list[Path]:
    b = machine_output(tmp, "b", ("3.13",))
    wheel = next(b.glob("*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    return [machine_output(tmp, "a", ("3.12",)), b]


def _unlisted_wheel(tmp: Path) -> list[Path]:
    b = machine_output(tmp, "b", ("3.13",))
    shutil.copy(next(machine_output(tmp, "x", ("3.11",)).glob("*.whl")), b)
    return [machine_output(tmp, "a", ("3.12",)), b]


def _other_package(tmp: Path) -> list[Path]:
    b = machine_output(tmp, "b", ("3.13",))
    data = importable_wheel_bytes("0.1.0", "cp313-cp313-manylinux_2_34_x86_64", name="other-pkg")
    name = "other_pkg-0.1.0-cp313-cp313-manylinux_2_34_x86_64.whl"
    (b / name).write_bytes(data)
    meta = manifest.load(b)
    assert meta is not None
    meta = replace(meta, wheels=(*meta.wheels, Wheel(name, len(data), hashlib.sha256(data).hexdigest(), python="3.13")))
    manifest.save(b, meta)
    manifest.write_sums(b, meta.wheels)
    return [machine_output(tmp, "a", ("3.12",)), b]


def _no_manifest(tmp: Path) -> list[Path]:
    b = machine_output(tmp, "b", ("3.13",))
    (b / "release-manifest.json").unlink()
    return [machine_output(tmp, "a", ("3.12",)), b]


def _nested_manifest(tmp: Path) -> list[Path]:
    b = machine_output(tmp, "b", ("3.13",))
    (b / "release-manifest.json").write_bytes(b'{"schema": 1, "wheels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    return [machine_output(tmp, "a", ("3.12",)), b]


@pytest.mark.parametrize(
    ("make_inputs", "needles"),
    [
        (_other_commit, ["inputs disagree", "built from commit aaaaaaaaaaaa", "/a", "/b"]),
        (_other_version, ["inputs disagree", "version 0.1.0", "0.1.1", "/a", "/b"]),
        (_same_name_other_bytes, ["inputs disagree", "cp312-cp312", "has other contents", "/a", "/b"]),
        (_tampered_wheel, ["refused", "/b", "does not match its manifest"]),
        (_unlisted_wheel, ["refused", "/b", "manifest does not match its files", "cp311"]),
        (_other_package, ["refused", "/b", "package 'other-pkg'", "not this project's 'kestrel-kernels'"]),
        (_no_manifest, ["refused", "/b", "no release-manifest.json"]),
        (_nested_manifest, ["refused", "/b", "release-manifest.json is nested deeper than 64 levels"]),
    ],
    ids=[
        "commit",
        "version",
        "same-filename-other-bytes",
        "sha256-mismatch",
        "unlisted-wheel",
        "other-package",
        "no-manifest",
        "nested-manifest",
    ],
)
@pytest.mark.parametrize("earlier", [False, True], ids=["fresh-out", "earlier-release"])
def test_disagreeing_inputs_are_refused_and_nothing_is_written(
    project: Path, tmp_path: Path, make_inputs, needles: list[str], earlier: bool
) -> None:
    out = tmp_path / "release"
    if earlier:  # an earlier release in OUT stays exactly as it was
        first = [machine_output(tmp_path / "old", "x", ("3.12",)), machine_output(tmp_path / "old", "y", ("3.13",))]
        assert assemble(project, *map(str, first), "--out", str(out)).code == 0
    before = snapshot(out)
    inputs = make_inputs(tmp_path / "in")
    result = assemble(project, *map(str, inputs), "--out", str(out))
    assert_one_line_error(result, 5, *needles)
    assert snapshot(out) == before
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("kernels", "in", "old", "release")]
    assert leftovers == [], "no staging directory left behind"


def test_json_failure_is_one_document(project: Path, tmp_path: Path) -> None:
    inputs = _other_commit(tmp_path)
    result = assemble(project, *map(str, inputs), "--out", str(tmp_path / "release"), "--json")
    assert result.code == 5
    doc = fits("failure", result.stdout)
    assert doc["ok"] is False and doc["error"]["exit_code"] == 5 and "inputs disagree" in doc["error"]["message"]


def test_user_files_in_out_are_never_replaced(project: Path, tmp_path: Path) -> None:
    a, b = machine_output(tmp_path, "a", ("3.12",)), machine_output(tmp_path, "b", ("3.13",))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert_one_line_error(
        assemble(project, str(a), str(b), "--out", str(out)), 2, "is not empty and holds no release manifest of ours"
    )
    assert snapshot(out) == {"notes.txt": b"keep me"}
    # An earlier release of ours with a user's file added is refused too, naming the file.
    release = tmp_path / "release"
    assert assemble(project, str(a), str(b), "--out", str(release)).code == 0
    (release / "notes.txt").write_text("mine")
    before = snapshot(release)
    assert_one_line_error(
        assemble(project, str(a), str(b), "--out", str(release)), 2, "files the tool did not write", "notes.txt"
    )
    assert snapshot(release) == before
    (release / "notes.txt").unlink()
    (release / ".gitignore").write_text("my own rules\n")  # a user's .gitignore is never the tool's
    assert_one_line_error(assemble(project, str(a), str(b), "--out", str(release)), 2, ".gitignore")
    assert (release / ".gitignore").read_text() == "my own rules\n"
    assert_one_line_error(assemble(project, str(a), "--out", str(a / "sub")), 2, "overlaps the input")


def test_assemble_into_an_earlier_build_output_of_ours(project: Path, tmp_path: Path) -> None:
    # `build` leaves its wheels, manifest, SHA256SUMS and our `*` .gitignore in the output dir
    # (outputs.install); assembling into that dir replaces it, keeping it out of `git status`.
    a, b = machine_output(tmp_path, "a", ("3.12",)), machine_output(tmp_path, "b", ("3.13",))
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    dist = repo / "dist-all"
    outputs.install(machine_output(tmp_path, "built-here", ("3.12",), version="0.0.9"), dist)
    assert (dist / ".gitignore").read_text() == statedir.GITIGNORE_TEXT
    result = assemble(project, str(a), str(b), "--out", str(dist))
    assert result.code == 0, result.output
    wheels = sorted(p.name for p in [*a.glob("*.whl"), *b.glob("*.whl")])
    assert sorted(p.name for p in dist.iterdir()) == sorted(
        [*wheels, ".gitignore", "SHA256SUMS", "release-manifest.json"]
    )
    assert (dist / ".gitignore").read_text() == statedir.GITIGNORE_TEXT
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""  # the assembled release never shows as untracked files
    # A user's own .gitignore there is theirs: refused, kept byte for byte.
    (dist / ".gitignore").write_text("*.whl\n")
    assert_one_line_error(assemble(project, str(a), str(b), "--out", str(dist)), 2, ".gitignore")
    assert (dist / ".gitignore").read_text() == "*.whl\n"


@pytest.mark.slow
def test_release_from_assembled_output_rehearses_publish(project: Path, tmp_path: Path) -> None:
    need_pythons(*PYTHONS)  # the rehearsal's smoke test installs each Python's wheel
    a, b = machine_output(tmp_path, "a", ("3.12",)), machine_output(tmp_path, "b", ("3.13",))
    out = tmp_path / "release"
    assert assemble(project, str(a), str(b), "--out", str(out)).code == 0
    refused = run_cli(
        ["release", "--project", str(project), "--from", str(out), "--bump", "patch", "--rehearse", "--yes"]
    )
    assert_one_line_error(refused, 2, "--bump cannot be used with --from")
    result = run_cli(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(out),
            "--rehearse",
            "--yes",
            "--json",
            "--targets",
            "pypi,github",
        ],
        env={"KESTREL_RELEASE_GITHUB_REPO": "acme/kernels"},
    )
    assert result.code == 0, result.output
    steps = {s["name"]: s for s in fits("release", result.stdout)["steps"]}
    assert list(steps) == ["preflight", "verify", "publish-pypi", "smoke-test", "publish-github"]
    assert all(s["status"] == "done" for s in steps.values())
    assert "2 prebuilt wheels" in steps["preflight"]["detail"]
    built = {p.name: p.read_bytes() for p in out.glob("*.whl")}
    published = {p.name: p.read_bytes() for p in (tmp_path / "release.rehearsal" / "pypi").glob("*.whl")}
    assert published == built and len(built) == 2
    assert "2 uploaded" in steps["publish-pypi"]["detail"]


def test_assembled_outputs_assemble_again_keeping_each_builder(project: Path, tmp_path: Path) -> None:
    """Per-platform releases combined later: each wheel keeps the machine that built it."""
    first = tmp_path / "first"
    a = machine_output(tmp_path, "a", ("3.12",))
    assert assemble(project, str(a), "--out", str(first)).code == 0
    b = machine_output(tmp_path, "b", ("3.13",))
    out = tmp_path / "all"
    result = assemble(project, str(first), str(b), "--out", str(out))
    assert result.code == 0, result.output
    data = json.loads((out / "release-manifest.json").read_text())
    assert {w["python"]: w["built_by"]["label"] for w in data["wheels"]} == {"3.12": "a", "3.13": "b"}


def test_release_from_refuses_a_directory_without_manifest(project: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    # --python: a Python this machine has, or the rehearsal stops before it looks at --from
    result = run_cli(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(missing),
            "--rehearse",
            "--yes",
            "--python",
            python_version(),
        ]
    )
    assert_one_line_error(result, 2, f"--from {missing} holds no release-manifest.json")
    assert not missing.exists()


def test_other_versions_in_a_shared_wheelhouse_are_left_out(project: Path, tmp_path: Path) -> None:
    """A build output that is a shared wheelhouse keeps older versions' wheels: not part of this release."""
    a, b = machine_output(tmp_path, "a", ("3.12",)), machine_output(tmp_path, "b", ("3.13",))
    old = make_dist(tmp_path / "old", version="0.0.9", pythons=("3.12",))[0]
    shutil.copy(old, a / old.name)
    out = tmp_path / "release"
    result = assemble(project, str(a), str(b), "--out", str(out))
    assert result.code == 0, result.output
    assert sorted(p.name.split("-")[1] for p in out.glob("*.whl")) == ["0.1.0", "0.1.0"]
    assert_one_line_error(assemble(project, str(a), str(b), "--out", str(project)), 2, "project directory")


def test_two_platforms_assemble_into_one_verified_release(project: Path, tmp_path: Path) -> None:
    """Each platform's machine builds every Python; the release holds both platforms, complete per platform."""
    x86 = machine_output(tmp_path, "x86", PYTHONS)
    arm = machine_output(tmp_path, "arm", PYTHONS, plat="manylinux_2_28_aarch64")
    out = tmp_path / "release"
    assert assemble(project, str(x86), str(arm), "--out", str(out)).code == 0
    assert len(list(out.glob("*.whl"))) == 4
    verified = run_cli(["verify", str(out), "--project", str(project), "--target", "pypi"])
    assert verified.code == 0, verified.output
    # A platform missing a Python is still caught by verify after assembling.
    partial = machine_output(tmp_path, "arm-partial", ("3.12",), plat="manylinux_2_28_aarch64")
    out2 = tmp_path / "release2"
    assert assemble(project, str(x86), str(partial), "--out", str(out2)).code == 0
    result = run_cli(["verify", str(out2), "--project", str(project), "--target", "pypi"])
    assert result.code == 5 and "no wheel for Python 3.13 on manylinux_2_28_aarch64" in result.output


def test_builder_records_the_ci_job_only_on_ci() -> None:
    ci_env = {
        "GITHUB_JOB": "build-manylinux_2_34_x86_64",
        "GITHUB_RUN_ID": "99",
        "GITHUB_RUN_ATTEMPT": "2",
        "RUNNER_NAME": "gpu-7",
        "KESTREL_RELEASE_BUILDER": "manylinux_2_34_x86_64-py3.12",
    }
    on_ci = manifest.builder(ci_env)
    assert on_ci.ci == {"job": "build-manylinux_2_34_x86_64", "run_id": "99", "run_attempt": "2", "runner": "gpu-7"}
    assert on_ci.label == "manylinux_2_34_x86_64-py3.12" and on_ci.host
    local = manifest.builder({"GITHUB_JOB": "stale"})  # no run id: not a CI job
    assert local.ci is None and local.label is None and local.host == on_ci.host
