"""Network faults during publish, against the strict sandbox PyPI and the GitHub emulator.

For every fault: publish either completes by retrying, or stops with exit 6 and
one clear line; afterwards the index / release holds exactly the intended files
(sha256-checked, never a partial or foreign file), and a re-run completes.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.helpers import assert_one_line_error, run_cli
from tests.reliability.conftest import FAST, local_wheels, sha256s
from tests.reliability.faultproxy import BlackHole, FaultProxy


def _publish(project: Path, url: str, box: PypiSandbox, **env: str):
    return run_cli(
        ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", url, "--yes"],
        env={"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST, **env},
        timeout=180,
    )


def _index(box: PypiSandbox) -> dict[str, str]:
    return sha256s(p for p in box.directory.iterdir() if p.is_file())


def _assert_subset_of_intended(box: PypiSandbox, project: Path) -> None:
    """After a failed publish: only whole, intended files on the index (no partial, no stray)."""
    index, local = _index(box), local_wheels(project)
    assert all(local.get(name) == digest for name, digest in index.items()), (index, local)


# (fault spec for the sandbox, whether retrying must absorb it)
PYPI_FAULTS = {
    "503-burst-within-retries": ({"status": 503, "count": 2}, True),
    "502-burst-within-retries": ({"status": 502, "count": 1}, True),
    "429-with-retry-after": ({"status": 429, "count": 1, "retry_after": 1}, True),
    "reset-before-body": ({"reset": 1}, True),
    "503-past-retries": ({"status": 503, "count": 100}, False),
}


@pytest.mark.parametrize("case", sorted(PYPI_FAULTS))
def test_pypi_fault_is_retried_or_stops_cleanly_and_a_rerun_completes(
    dist_project: Path, tmp_path: Path, case: str
) -> None:
    spec, absorbed = PYPI_FAULTS[case]
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        box.faults(**spec)
        first = _publish(dist_project, box.upload_url, box)
        if absorbed:
            assert first.code == 0, first.output
        else:
            assert_one_line_error(first, 6)
            _assert_subset_of_intended(box, dist_project)
            box.faults(status=0, count=0, reset=0)
            rerun = _publish(dist_project, box.upload_url, box)
            assert rerun.code == 0, rerun.output
        assert _index(box) == local_wheels(dist_project)
        assert box.faults()["accepted"] == len(local_wheels(dist_project))  # each file sent once, no duplicate


def test_pypi_connection_reset_mid_upload(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box, FaultProxy(box.port) as proxy:
        proxy.queue("reset", 2)  # the first two uploads are cut after 4 KiB of the body
        first = _publish(dist_project, proxy.url + "/", box)
        assert "reset" in proxy.served
        if first.code != 0:
            assert_one_line_error(first, 6)
            _assert_subset_of_intended(box, dist_project)
            first = _publish(dist_project, proxy.url + "/", box)
        assert first.code == 0, first.output
        assert _index(box) == local_wheels(dist_project)


def test_pypi_server_killed_between_files_then_restarted(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        box.faults(exit_after_uploads=1)  # the server process exits right after the first accepted file
        cut = _publish(dist_project, box.upload_url, box, KESTREL_RELEASE_PUBLISH_PARALLEL="1")
        assert_one_line_error(cut, 6)
        assert len(_index(box)) == 1
        _assert_subset_of_intended(box, dist_project)
        box.stop()
        box.start()  # same port, same packages dir
        rerun = _publish(dist_project, box.upload_url, box)
        assert rerun.code == 0, rerun.output
        assert _index(box) == local_wheels(dist_project)
        assert box.faults()["accepted"] == 1  # the restarted server got only the missing file


def test_pypi_slow_server_past_the_timeout_stops_in_bounded_time(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box, FaultProxy(box.port) as proxy:
        proxy.queue("stall", 100)  # every upload hangs; page reads still answer
        start = time.monotonic()
        slow = _publish(
            dist_project, proxy.url + "/", box, KESTREL_RELEASE_PUBLISH_TIMEOUT="1", KESTREL_RELEASE_PUBLISH_RETRIES="1"
        )
        assert time.monotonic() - start < 60
        assert_one_line_error(slow, 6)
        assert _index(box) == {}
        rerun = _publish(dist_project, box.upload_url, box)
        assert rerun.code == 0, rerun.output
        assert _index(box) == local_wheels(dist_project)


def test_pypi_index_that_never_answers_stops_with_exit_6(dist_project: Path) -> None:
    with BlackHole() as hole:
        start = time.monotonic()
        result = run_cli(
            [
                "publish",
                "--project",
                str(dist_project),
                "--target",
                "sandbox",
                "--repository-url",
                hole.url + "/",
                "--yes",
            ],
            env={
                "TWINE_USERNAME": "u",
                "TWINE_PASSWORD": "p4ssw0rd",
                **FAST,
                "KESTREL_RELEASE_PUBLISH_TIMEOUT": "1",
                "KESTREL_RELEASE_PUBLISH_RETRIES": "1",
            },
            timeout=120,
        )
        assert time.monotonic() - start < 60
        assert_one_line_error(result, 6)


# --- GitHub ------------------------------------------------------------------------------------

from kestrel_release.sandbox.github.emulator import GithubEmulator  # noqa: E402
from tests.factories import build_output, make_github_project  # noqa: E402
from tests.integration.github_support import REPO, TAG, Poller  # noqa: E402

GH_TOKEN = "ghp_" + "R3liab1l1ty" * 3 + "xyz"


@pytest.fixture
def gh():
    with GithubEmulator(repos=(REPO,), token=GH_TOKEN) as emulator:
        yield emulator


def _gh_publish(gh, project: Path, api_url: str | None = None, **env: str):
    args = ["publish", "--target", "github", "--project", str(project), "--api-url", api_url or gh.api_url, "--yes"]
    return run_cli(args, env={"GH_TOKEN": GH_TOKEN, "GITHUB_TOKEN": "", **env}, timeout=180)


def _release(gh) -> dict[str, str]:
    import hashlib

    return {n: hashlib.sha256(a.data).hexdigest() for n, a in gh.assets(REPO, TAG).items()}


def _intended(out: Path) -> dict[str, str]:
    return sha256s(
        p for p in sorted(out.iterdir()) if p.name.endswith(".whl") or p.name in ("SHA256SUMS", "release-manifest.json")
    )


class WheelWatcher(threading.Thread):
    """Watches the release as a user would see it: for every Python, a complete wheel (old or new).

    Fixed-name assets (SHA256SUMS, the manifest) are replaced by upload-under-a-temp-name,
    delete, rename: GitHub refuses a rename onto an existing name, so a gap of one
    request there is the floor (github-contract.md). Wheels have versioned names and
    must never be missing: the old version stays until the new one is complete.
    """

    def __init__(self, gh, pythons=("cp312", "cp313")) -> None:
        super().__init__(daemon=True)
        self.gh, self.pythons, self.looks, self.gaps = gh, pythons, 0, []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                assets = self.gh.assets(REPO, TAG)
            except Exception:
                self.gaps.append("release missing")
                continue
            complete = {n for n, a in assets.items() if n.endswith(".whl") and a.state == "uploaded"}
            for py in self.pythons:
                if not any(f"-{py}-" in n for n in complete):
                    self.gaps.append(f"no complete {py} wheel: {sorted(assets)}")
            self.looks += 1
            time.sleep(0.001)

    def stop(self) -> WheelWatcher:
        self._halt.set()
        self.join(10)
        return self


def _nightly_then_update(gh, tmp_path: Path):
    """Publish nightly 0.1.0, then stage 0.2.0; returns (project, out, watchers already running)."""
    project = make_github_project(tmp_path / "kernels", "0.1.0", retries=3)
    build_output(project, "0.1.0", gh.add_commit(REPO))
    assert _gh_publish(gh, project).code == 0
    out = build_output(project, "0.2.0", gh.add_commit(REPO))
    old_wheel = next(n for n in _release(gh) if n.endswith(".whl"))
    base = f"{gh.url}/{REPO}/releases/download/{TAG}"
    # Over HTTP too: an old wheel a user is downloading stays downloadable until the new set is complete.
    pollers = [WheelWatcher(gh), Poller(f"{base}/{old_wheel}")]
    for p in pollers:
        p.start()
    return project, out, pollers


def _pollers_saw_no_gap(pollers) -> None:
    watcher, http = pollers
    watcher.stop()
    assert watcher.gaps == [] and watcher.looks > 0, watcher.gaps[:3]
    http.stop()
    # The old wheel is pruned at the very end (after the tag moved): misses are allowed only then.
    assert http.errors == 0 and http.ok > 0, (http.ok, http.missing, http.errors)


GH_FAULTS = {
    "502-burst": lambda gh: gh.fail_next_upload(status=502, count=2),
    "503-burst": lambda gh: gh.fail_next_upload(status=503, count=2),
    "answer-lost-after-upload": lambda gh: gh.drop_next_upload(count=1),
    "rate-limit-403-with-reset": lambda gh: gh.rate_limit_next(reset_in=1, status=403),
    "429-with-retry-after": lambda gh: gh.rate_limit_next(reset_in=1, status=429, retry_after=1),
}


@pytest.mark.parametrize("case", sorted(GH_FAULTS))
def test_github_fault_is_absorbed_and_the_asset_is_never_missing(gh, tmp_path: Path, case: str) -> None:
    project, out, pollers = _nightly_then_update(gh, tmp_path)
    GH_FAULTS[case](gh)
    result = _gh_publish(gh, project)
    _pollers_saw_no_gap(pollers)
    assert result.code == 0, result.output
    assert _release(gh) == _intended(out)
    assert all(a.state == "uploaded" for a in gh.assets(REPO, TAG).values())


def test_github_faults_past_retries_stop_with_exit_6_and_a_rerun_completes(gh, tmp_path: Path) -> None:
    project, out, pollers = _nightly_then_update(gh, tmp_path)
    before = _release(gh)
    gh.fail_next_upload(status=502, count=1000)
    failed = _gh_publish(gh, project)
    assert_one_line_error(failed, 6)
    gh.clear_faults()
    assert {n: d for n, d in _release(gh).items() if n in before} == before  # nothing published was lost
    rerun = _gh_publish(gh, project)
    _pollers_saw_no_gap(pollers)
    assert rerun.code == 0, rerun.output
    assert _release(gh) == _intended(out)


def test_github_server_killed_and_restarted_mid_publish(gh, tmp_path: Path) -> None:
    project, out, pollers = _nightly_then_update(gh, tmp_path)
    for p in pollers:  # the server goes away on purpose: the poller cannot tell us anything here
        p.stop()
    mark = len(gh.requests())

    def bounce() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            r["method"] == "POST" and "/assets" in r["path"] for r in gh.requests()[mark:]
        ):
            time.sleep(0.005)
        gh.stop()
        time.sleep(1.0)
        gh.start()

    killer = threading.Thread(target=bounce, daemon=True)
    killer.start()
    first = _gh_publish(gh, project)
    killer.join(70)
    if first.code != 0:
        assert_one_line_error(first, 6)
    rerun = _gh_publish(gh, project)
    assert rerun.code == 0, rerun.output
    assert _release(gh) == _intended(out)
    assert all(a.state == "uploaded" for a in gh.assets(REPO, TAG).values())


def test_github_api_that_never_answers_stops_with_exit_6(gh, tmp_path: Path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0", retries=1)
    build_output(project, "0.1.0", gh.add_commit(REPO))
    with BlackHole() as hole:
        start = time.monotonic()
        result = _gh_publish(gh, project, api_url=hole.url + "/api/v3", KESTREL_RELEASE_PUBLISH_TIMEOUT="1")
        assert time.monotonic() - start < 90
    assert_one_line_error(result, 6)
    assert gh.requests() == []  # the real (emulated) GitHub never saw a request
