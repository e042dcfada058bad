"""Publish at scale against real loopback indexes: parallel uploads, progress in logs, the quota forecast.

What a user sees: exit codes, the one `error:` line, the lines of the log, what the index holds.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _publish(project: Path, box: PypiSandbox, *extra: str, env: dict[str, str] | None = None):
    creds = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST}
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
        env={**creds, **(env or {})},
        timeout=300,
    )


def _project(tmp_path: Path, version: str = "0.2.0", payload: int = 64 * 1024) -> Path:
    root = make_project(tmp_path / "kernels", version=version, pythons=PYTHONS)
    make_dist(root / "dist-all", version=version, pythons=PYTHONS, payload_size=payload)
    return root


def _seed_index(directory: Path, version: str = "0.1.0", payload: int = 64 * 1024) -> int:
    """An earlier release already on the index (its files placed as the index stores them); its bytes."""
    scratch = directory.parent / "seed"
    paths = make_dist(scratch, version=version, pythons=PYTHONS, payload_size=payload)
    directory.mkdir(parents=True, exist_ok=True)
    for path in paths:
        shutil.copy(path, directory / path.name)
    return sum(p.stat().st_size for p in paths)


def _wheels(project: Path) -> list[Path]:
    return sorted((project / "dist-all").glob("*.whl"))


def test_parallel_publish_lands_every_file_once_and_a_rerun_skips_all(tmp_path):
    project = _project(tmp_path)
    env = {"KESTREL_RELEASE_PUBLISH_PARALLEL": "4"}
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        first = _publish(project, box, env=env)
        assert first.code == 0, first.output
        assert box.files() == [p.name for p in _wheels(project)]
        for path in _wheels(project):
            assert (box.directory / path.name).read_bytes() == path.read_bytes()
        state = box.faults()
        assert (state["uploads"], state["accepted"], state["refused"]) == (4, 4, 0)  # each file sent once
        assert "4 uploaded, 0 skipped, 0 failed" in first.stderr
        mtimes = {p.name: p.stat().st_mtime_ns for p in box.directory.iterdir()}
        again = _publish(project, box, env=env)
        assert again.code == 0, again.output
        assert "0 uploaded, 4 skipped, 0 failed" in again.stderr
        # no file sent again (a re-run may still prove its credentials with a file-less request)
        assert box.faults()["accepted"] == 4
        assert {p.name: p.stat().st_mtime_ns for p in box.directory.iterdir()} == mtimes


def test_progress_off_a_terminal_is_one_line_per_event(tmp_path):
    project = _project(tmp_path, payload=512 * 1024)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(project, box, env={"KESTREL_RELEASE_PUBLISH_PARALLEL": "3"})
    assert result.code == 0, result.output
    log = result.stderr
    assert "\r" not in log and "\x1b[" not in log  # no redraws, no cursor control
    assert not re.search(r"\d+(\.\d+)?/\d+(\.\d+)? [kMG]?B", log)  # no bar's bytes-done/total fragments
    for path in _wheels(project):
        started = [ln for ln in log.splitlines() if ln.startswith(f"uploading {path.name} (")]
        done = [ln for ln in log.splitlines() if ln.startswith(f"✓ sent {path.name} (") and "MB/s)" in ln]
        assert len(started) == 1 and len(done) == 1, log


def test_quota_forecast_counts_what_the_project_holds(tmp_path):
    project = _project(tmp_path)
    held = _seed_index(tmp_path / "index")
    adding = sum(p.stat().st_size for p in _wheels(project))
    limit = 100 * adding + held
    env = {"KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET": str(limit)}
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(project, box, "--json", env=env)
        assert result.code == 0, result.output
        quota = json.loads(result.stdout)["quota"]
        assert quota["checked"] is True
        assert (quota["used"], quota["adding"], quota["releases"]) == (held, adding, 1)
        assert quota["releases_left"] == (limit - held - adding) // adding == 99
        human = _publish(_project(tmp_path / "v3", version="0.3.0"), box, env=env)
    assert human.code == 0, human.output
    line = next(ln for ln in human.stderr.splitlines() if ln.startswith("quota: "))
    assert "kestrel-kernels holds" in line and "in 2 release(s) on sandbox" in line
    assert "about 98 more release(s) of this size left" in line


def test_over_quota_is_refused_before_the_first_byte(tmp_path):
    project = _project(tmp_path)
    held = _seed_index(tmp_path / "index")
    adding = sum(p.stat().st_size for p in _wheels(project))
    env = {"KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET": str(held + adding - 1)}  # the release alone fits
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        before = box.files()
        result = _publish(project, box, env=env)
        assert_one_line_error(result, 6, "over its", "project limit", "nothing was uploaded")
        assert box.faults()["uploads"] == 0 and box.files() == before
    for remedy in ("delete old releases", "github.com/pypi/support", "abi3 or py3 wheel"):
        assert remedy in result.stderr
    as_json = None
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        as_json = _publish(project, box, "--json", env=env)
        assert box.faults()["uploads"] == 0
    assert as_json.code == 6 and json.loads(as_json.stdout)  # one JSON document even on failure


@pytest.mark.parametrize(("share", "warned"), [(0.95, True), (0.80, False)])
def test_file_margin_warns_above_ninety_percent(tmp_path, share, warned):
    project = _project(tmp_path)
    largest = max(p.stat().st_size for p in _wheels(project))
    env = {"KESTREL_RELEASE_VERIFY_MAX_FILE_SIZE": str(int(largest / share))}
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(project, box, "--dry-run", env=env)
    assert result.code == 0, result.output
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning: ") and "per-file limit" in ln]
    assert bool(warnings) is warned, result.stderr
    if warned:
        assert f"{round(share * 100)}% of the" in warnings[0] and "to spare" in warnings[0]


def test_an_index_without_the_json_api_is_a_warning_not_a_failure(tmp_path):
    project = _project(tmp_path)
    _seed_index(tmp_path / "index")
    with PypiSandbox(directory=tmp_path / "index") as box:  # plain pypiserver: no /pypi/<name>/json
        result = _publish(project, box)
        assert result.code == 0, result.output
        assert len(box.files()) == 8
    assert "warning: could not check kestrel-kernels's project quota" in result.stderr
    assert not any(ln.startswith("quota: ") for ln in result.stderr.splitlines())
