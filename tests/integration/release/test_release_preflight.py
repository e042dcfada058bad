"""release's preflight, the rehearsal's honesty, verify findings on publish, credentials, resume advice.

Issue 16 points 2, 3, 11 and 13, through the real CLI as a user meets them: the exit code, the one
`error:` line, what stderr lists, and what is (not) changed on disk and on the index. No wheel is
built: projects are tiny, their output is written the way build writes it (tests/factories.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import importable_wheel_bytes, make_dist, make_project
from tests.helpers import assert_one_line_error, need_pythons, python_version, run_in_process

PY = python_version()  # a rehearsal runs on the configured Pythons this machine has: this one it has
NO_CREDENTIALS = {
    "TWINE_USERNAME": "",
    "TWINE_PASSWORD": "",
    "TWINE_REPOSITORY": "",
    "GH_TOKEN": "",
    "GITHUB_TOKEN": "",
    "KESTREL_RELEASE_PUBLISH_RETRIES": "0",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


def _committed(project: Path, origin: str | None = None) -> Path:
    (project / "NOTES.txt").write_text("notes\n")
    _git(project, "init", "-q", "-b", "main")
    if origin:
        _git(project, "remote", "add", "origin", origin)
    _git(project, "add", "pyproject.toml", "NOTES.txt")
    _git(project, "commit", "-q", "-m", "init")
    return project


def _env(tmp_path: Path, box: PypiSandbox | None = None, creds: bool = False, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)  # no ~/.pypirc
    env = {**NO_CREDENTIALS, "HOME": str(home), **extra}
    if box is not None:  # every index target resolves to the sandbox (twine's own override)
        env["TWINE_REPOSITORY_URL"] = box.upload_url
        if creds:
            env.update(TWINE_USERNAME=box.username, TWINE_PASSWORD=box.password)
    return env


def test_real_release_stops_at_preflight_listing_every_problem_before_any_bump(tmp_path):
    project = _committed(make_project(tmp_path / "kernels", pythons=("3.12",)))
    (project / "NOTES.txt").write_text("edited, not committed\n")
    before = (project / "pyproject.toml").read_bytes()
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = run_in_process(
            ["release", "--project", str(project), "--bump", "patch", "--yes", "--no-gpu-check"],
            env=_env(tmp_path, box),
        )
    assert_one_line_error(
        result,
        3,
        "release stopped at step 'preflight'",
        "uncommitted changes",
        "--allow-dirty",
        "no credentials for testpypi",
        "no credentials for pypi",
        "github: no repository configured",
        "targets.github.repo",
        "github: no GitHub token",
    )
    assert "m87-labs" not in result.output
    # Each problem also has its own line, and nothing was bumped or built.
    assert result.stderr.count("  ✗ ") >= 5, result.stderr
    assert (project / "pyproject.toml").read_bytes() == before
    assert not list(project.glob("dist-all/*.whl"))


def test_preflight_refuses_a_version_the_index_already_has(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        tag = "cp312-cp312-manylinux_2_34_x86_64"
        (box.directory / f"kestrel_kernels-0.1.0-{tag}.whl").write_bytes(importable_wheel_bytes("0.1.0", tag))
        result = run_in_process(
            ["release", "--project", str(project), "--targets", "testpypi", "--yes", "--no-gpu-check"],
            env=_env(tmp_path, box, creds=True),
        )
        assert_one_line_error(result, 3, "kestrel-kernels 0.1.0 is already on", "--bump patch")
        assert box.files() == [f"kestrel_kernels-0.1.0-{tag}.whl"]
        assert not list(project.glob("dist-all/*.whl"))


def test_release_from_output_refuses_other_bytes_on_the_index(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    (wheel,) = make_dist(project / "dist-all", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        (box.directory / wheel.name).write_bytes(
            importable_wheel_bytes("0.1.0", wheel.name.split("-", 2)[2][:-4], payload=b"other")
        )
        result = run_in_process(
            [
                "release",
                "--project",
                str(project),
                "--from",
                str(project / "dist-all"),
                "--targets",
                "testpypi",
                "--yes",
            ],
            env=_env(tmp_path, box, creds=True),
        )
    assert_one_line_error(result, 3, f"{wheel.name} is already on", "with other bytes")


def test_preflight_forecasts_the_quota_from_the_largest_earlier_release(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    tag = "cp312-cp312-manylinux_2_34_x86_64"
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:  # serves PyPI's JSON API
        (box.directory / f"kestrel_kernels-0.0.9-{tag}.whl").write_bytes(
            importable_wheel_bytes("0.0.9", tag, payload=bytes(range(256)) * 16)
        )
        env = _env(tmp_path, box, creds=True, KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET="6144")
        result = run_in_process(
            ["release", "--project", str(project), "--targets", "pypi", "--yes", "--no-gpu-check"], env=env
        )
    assert_one_line_error(result, 3, "6.0 KiB project limit", "would go over it", "project_size_budget")


def test_release_from_output_refuses_new_files_for_a_release_older_than_14_days(tmp_path):
    import os
    import time

    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    old, new = make_dist(project / "dist-all", pythons=("3.12", "3.13"))
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        there = box.directory / old.name
        there.write_bytes(old.read_bytes())  # the same bytes: fine; the new 3.13 file is what PyPI refuses
        weeks_ago = time.time() - 20 * 86400
        os.utime(there, (weeks_ago, weeks_ago))
        result = run_in_process(
            ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "pypi", "--yes"],
            env=_env(tmp_path, box, creds=True),
        )
    assert_one_line_error(result, 3, new.name, "14 days")


def test_real_release_preflight_opens_the_github_repository_with_the_token(tmp_path):
    from kestrel_release.sandbox.github.emulator import GithubEmulator

    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",))
    args = ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "github", "--yes"]
    with GithubEmulator(repos=("acme/widgets",)) as gh:
        env = _env(tmp_path, KESTREL_RELEASE_GITHUB_API_URL=gh.api_url, GH_TOKEN=gh.token)
        missing = run_in_process(args, env={**env, "KESTREL_RELEASE_GITHUB_REPO": "acme/gadgets"})
        assert_one_line_error(missing, 3, "github: repository acme/gadgets not found")
        bad_token = run_in_process(
            args, env={**env, "KESTREL_RELEASE_GITHUB_REPO": "acme/widgets", "GH_TOKEN": "ghp_wrong"}
        )
        assert_one_line_error(bad_token, 3, "GitHub rejected the token")
        fine = run_in_process(
            args, env={**env, "KESTREL_RELEASE_GITHUB_REPO": "acme/widgets", "KESTREL_RELEASE_FAIL_AT": "verify"}
        )
        assert_one_line_error(fine, 5, "release stopped at step 'verify'")  # preflight passed


def test_rehearsal_without_a_repository_fails_where_the_real_release_would(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=(PY,))
    make_dist(project / "dist-all", pythons=(PY,))
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--rehearse",
            "--targets",
            "github",
            "--yes",
        ],
        env=_env(tmp_path),
    )
    assert_one_line_error(result, 3, "github: no repository configured", "targets.github.repo")
    assert "m87-labs" not in result.output


def test_rehearsal_fails_on_a_dirty_tree_too(tmp_path):
    project = _committed(make_project(tmp_path / "kernels", pythons=(PY,)), "https://github.com/acme/widgets.git")
    (project / "NOTES.txt").write_text("edited\n")
    make_dist(project / "dist-all", pythons=(PY,))
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--rehearse",
            "--targets",
            "github",
            "--yes",
        ],
        env=_env(tmp_path),
    )
    assert_one_line_error(result, 3, "uncommitted changes")


def test_rehearsal_takes_the_repository_from_origin_and_lists_what_it_could_not_check(tmp_path):
    project = _committed(make_project(tmp_path / "kernels", pythons=(PY,)), "git@github.com:acme/widgets.git")
    make_dist(project / "dist-all", pythons=(PY,))
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--rehearse",
            "--targets",
            "github",
            "--yes",
            "--json",
        ],
        env=_env(tmp_path),
    )
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert "GitHub repository: acme/widgets (from git remote 'origin')" in result.stderr
    assert "m87-labs" not in result.output
    assert doc["pythons"] == [PY] and doc["skipped_pythons"] == []
    assert any("Trusted Publishing" in line for line in doc["not_checked"])
    assert any("credentials" in line for line in doc["not_checked"])
    human = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--rehearse",
            "--targets",
            "github",
            "--yes",
        ],
        env=_env(tmp_path),
    )
    assert human.code == 0, human.output
    assert "not checked by a rehearsal" in human.stderr and f"rehearsed on Python {PY}" in human.stderr


def test_rehearsal_skips_configured_pythons_this_machine_lacks_and_says_so(tmp_path):
    project = _committed(make_project(tmp_path / "kernels", pythons=(PY, "3.2")), "git@github.com:acme/w.git")
    make_dist(project / "dist-all", pythons=(PY,))
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--rehearse",
            "--targets",
            "github",
            "--yes",
            "--json",
        ],
        env=_env(tmp_path),
    )
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pythons"] == [PY] and doc["skipped_pythons"] == ["3.2"]
    assert "without Python 3.2" in result.stderr


# ----------------------------------------------------------------- point 3: findings and --python


def test_publish_lists_the_findings_it_stops_on_and_python_narrows_the_matrix(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(project / "dist-all", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        base = [
            "publish",
            "--project",
            str(project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
        ]
        refused = run_in_process(base, env=_env(tmp_path, box, creds=True))
        assert_one_line_error(refused, 5, "verify found 1 error(s)", "listed above")
        listed = [line for line in refused.stderr.splitlines() if "[matrix]" in line]
        assert listed and "no wheel for Python 3.13" in listed[0], refused.stderr
        assert box.files() == []
        narrowed = run_in_process([*base, "--python", "3.12"], env=_env(tmp_path, box, creds=True))
        assert narrowed.code == 0, narrowed.output
        assert len(box.files()) == 1
    assert run_in_process(["verify", "--project", str(project), "--python", "3.12"]).code == 0


def test_publish_lists_errors_and_with_verbose_every_finding(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.11", "3.12"))
    make_dist(project / "dist-all", pythons=("3.12", "3.13"))  # 3.11 missing (error), 3.13 unlisted (warning)
    base = [
        "publish",
        "--project",
        str(project),
        "--target",
        "sandbox",
        "--repository-url",
        "http://127.0.0.1:9/",
        "--dry-run",
    ]
    plain = run_in_process(base, env=_env(tmp_path))
    assert_one_line_error(plain, 5, "errors only; -v lists every finding")
    listed = [line for line in plain.stderr.splitlines() if line.startswith("  error [matrix] ")]
    assert listed and "no wheel for Python 3.11" in listed[0], plain.stderr
    assert "Python 3.13, which" not in plain.stderr
    verbose = run_in_process(["-v", *base], env=_env(tmp_path))
    assert verbose.code == 5
    assert "no wheel for Python 3.11" in verbose.stderr and "Python 3.13, which" in verbose.stderr


# ----------------------------------------------------------------- point 11: credentials


def test_a_refused_token_gets_a_token_hint_not_a_scope_hint(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        base = [
            "publish",
            "--project",
            str(project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
        ]
        wrong = _env(tmp_path, TWINE_USERNAME="__token__", TWINE_PASSWORD="pypi-wrong")
        result = run_in_process(base, env=wrong)
        assert_one_line_error(result, 6, "rejected the API token", "wrong, revoked or expired")
        assert "scoped" not in result.stderr
        user = run_in_process(base, env=_env(tmp_path, TWINE_USERNAME="alice", TWINE_PASSWORD="nope"))
        assert_one_line_error(user, 6, "rejected user 'alice'", "username and password")
        assert box.files() == []
        assert run_in_process(base, env=_env(tmp_path, box, creds=True)).code == 0
        # Every file is on the index now: the credentials are still checked, and refused ones fail.
        again = run_in_process([*base, "--json"], env=_env(tmp_path, box, creds=True))
        assert again.code == 0, again.output
        doc = json.loads(again.stdout)
        assert doc["uploaded"] == [] and doc["credentials_checked"] is True
        refused = run_in_process(base, env=wrong)
        assert_one_line_error(refused, 6, "rejected the API token")


# ----------------------------------------------------------------- point 13: resume


def test_resume_accepts_fewer_pythons_before_the_build_and_refuses_other_options_in_one_line(tmp_path):
    need_pythons("3.12", "3.13")  # the matrix must want a Python the output lacks, so both must be here
    project = _committed(make_project(tmp_path / "kernels", pythons=("3.12", "3.13")), "git@github.com:acme/w.git")
    make_dist(project / "dist-all", pythons=("3.12",))
    base = [
        "release",
        "--project",
        str(project),
        "--from",
        str(project / "dist-all"),
        "--rehearse",
        "--yes",
        "--targets",
        "github",
    ]
    failed = run_in_process(base, env=_env(tmp_path))  # the matrix wants 3.13, which this output lacks
    assert_one_line_error(failed, 5, "release stopped at step 'verify'", "--resume")
    assert "[matrix]" in failed.stderr and "no wheel for Python 3.13" in failed.stderr  # what it stopped on
    other = run_in_process([*base[:-1], "testpypi,github", "--resume"], env=_env(tmp_path))
    assert_one_line_error(other, 2, "cannot resume", "--targets was github, now testpypi,github")
    assert "{" not in other.stderr
    narrowed = run_in_process([*base, "--resume", "--python", "3.12"], env=_env(tmp_path))
    assert narrowed.code == 0, narrowed.output


@pytest.mark.parametrize("flag", ["--python"])
def test_verify_and_publish_help_name_the_python_flag(flag):
    for command in ("verify", "publish"):
        assert flag in run_in_process([command, "--help"]).stdout
