"""`kestrel-release publish` against a real loopback pypiserver, through the real CLI.

What a user sees: exit codes, the one `error:` line, the files the index holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import CANARY_PREFIX, make_dist, make_project
from tests.helpers import ROOT, assert_one_line_error, need_pythons, run_cli
from tests.schemas import fits

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _creds(box: PypiSandbox) -> dict[str, str]:
    return {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST}


def _publish(project: Path, box: PypiSandbox, *extra: str, env=None):
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
        env={**_creds(box), **(env or {})},
        timeout=300,
    )


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(root / "dist-all", pythons=("3.12", "3.13"))
    return root


def _wheels(project: Path) -> list[str]:
    return sorted(p.name for p in (project / "dist-all").glob("*.whl"))


def test_publish_uploads_the_verified_bytes_and_a_rerun_skips_them(project, tmp_path):
    with PypiSandbox(directory=tmp_path / "index") as box:
        first = _publish(project, box)
        assert first.code == 0, first.output
        assert box.files() == _wheels(project)
        for name in box.files():  # the exact bytes that were built
            assert (box.directory / name).read_bytes() == (project / "dist-all" / name).read_bytes()
        assert "2 uploaded, 0 skipped, 0 failed" in first.stderr
        mtimes = {p.name: p.stat().st_mtime_ns for p in box.directory.iterdir()}
        second = _publish(project, box)
        assert second.code == 0, second.output
        assert "0 uploaded, 2 skipped, 0 failed" in second.stderr
        assert {p.name: p.stat().st_mtime_ns for p in box.directory.iterdir()} == mtimes


def test_json_output_lists_uploaded_files_with_urls(project, tmp_path):
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, "--json")
        assert result.code == 0, result.output
        doc = fits("publish-index", result.stdout)
        assert doc["ok"] is True and sorted(r["filename"] for r in doc["uploaded"]) == _wheels(project)
        assert all(r["url"].startswith(box.url + "/packages/") for r in doc["uploaded"])


def test_an_interrupted_publish_completes_on_rerun_without_duplicates(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.11", "3.12", "3.13"))
    make_dist(project / "dist-all", pythons=("3.11", "3.12", "3.13"))
    env = {"KESTREL_RELEASE_PUBLISH_PARALLEL": "1"}
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        box.faults(exit_after_uploads=1)  # the server dies right after the first file
        cut = _publish(project, box, env=env)
        assert_one_line_error(cut, 6, "upload(s) to sandbox failed", "re-run")
        assert len(box.files()) == 1
        box.start()  # same port, same directory
        rerun = _publish(project, box, env=env)
        assert rerun.code == 0, rerun.output
        assert "2 uploaded, 1 skipped, 0 failed" in rerun.stderr
        assert box.files() == _wheels(project)
        assert box.faults()["accepted"] == 2  # only the missing files were sent


def test_a_tampered_wheel_is_refused_naming_the_file_and_both_hashes(project, tmp_path):
    wheel = project / "dist-all" / _wheels(project)[0]
    recorded = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    actual = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box)
        assert_one_line_error(result, 6, wheel.name, recorded, actual)
        assert box.files() == []


def test_a_conflicting_file_on_the_index_stops_everything(project, tmp_path):
    with PypiSandbox(directory=tmp_path / "index") as box:
        name = _wheels(project)[1]
        (box.directory / name).write_bytes(b"other bytes")
        result = _publish(project, box)
        assert_one_line_error(result, 6, name, hashlib.sha256(b"other bytes").hexdigest(), "nothing was uploaded")
        assert box.files() == [name]


def test_a_wheel_pypi_would_refuse_is_stopped_before_anything_is_sent(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",), plat="linux_x86_64")
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(project, box)
        assert_one_line_error(result, 5, "verify found")
        assert box.files() == [] and box.faults()["uploads"] == 0


def test_sdists_are_refused(project, tmp_path):
    sdist = project / "dist-all" / "kestrel_kernels-0.1.0.tar.gz"
    sdist.write_bytes(b"not really")
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, str(sdist))
        assert result.code == 2 and "Traceback" not in result.output, result.output
        assert box.files() == []


def test_missing_credentials_is_one_line_without_prompting(project, tmp_path):
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = run_cli(
            ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", box.upload_url, "--yes"],
            env={"HOME": str(tmp_path), **FAST},
            timeout=120,
        )
        assert_one_line_error(result, 6, "no credentials", "--token-env")
        assert box.files() == []


def test_pypi_target_needs_yes_when_there_is_no_terminal(project, tmp_path):
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = run_cli(
            ["publish", "--project", str(project), "--target", "pypi", "--repository-url", box.upload_url],
            env=_creds(box),
            timeout=120,
        )
        assert_one_line_error(result, 2, "--yes")
        assert box.files() == []


def test_smoke_test_installs_the_published_version_from_the_index_alone(project, tmp_path):
    need_pythons("3.12", "3.13")  # the smoke test installs each wheel into a venv of its Python
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, "--smoke-test", "--json")
        assert result.code == 0, result.output
        smoke = json.loads(result.stdout)["smoke"]
        assert [(r["python"], r["ok"]) for r in smoke] == [("3.12", True), ("3.13", True)], smoke
        assert all("kestrel_kernels 0.1.0" in r["detail"] for r in smoke)


def test_smoke_test_failure_is_reported_per_python(tmp_path):
    need_pythons("3.12", "3.13")
    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(project / "dist-all", pythons=("3.12", "3.13"), module_version="9.9.9")
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, "--smoke-test")
        assert_one_line_error(result, 6, "smoke test failed on Python 3.12, 3.13", "'9.9.9', expected 0.1.0")
        assert box.files() == _wheels(project)  # the upload itself went through


def test_a_wheel_whose_module_says_another_version_is_never_uploaded(tmp_path):
    """METADATA 0.2.0, `kestrel_kernels.__version__ = "0.1.0"` (an old copy from an in-tree build/):
    verify's version rule stops publish before the first byte, naming the wheel, the file and both versions."""
    project = make_project(tmp_path / "kernels", version="0.2.0", pythons=("3.12", "3.13"))
    make_dist(project / "dist-all", version="0.2.0", pythons=("3.12", "3.13"), init=b'__version__ = "0.1.0"\n')
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box)
        assert_one_line_error(
            result,
            5,
            "kestrel_kernels-0.2.0-cp312-cp312-manylinux_2_34_x86_64.whl: kestrel_kernels/__init__.py "
            "says __version__ = '0.1.0', but the release is 0.2.0 (and 1 more error(s)",
        )
        assert "rebuild" in result.stderr
        assert box.files() == []


def _scan_cmdlines(needle: bytes, stop: threading.Event, found: list[str]) -> None:
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if needle in cmdline:
                found.append(cmdline.decode(errors="replace"))
        time.sleep(0.002)


def test_a_token_never_appears_in_output_logs_or_any_child_argv(project, tmp_path):
    need_pythons("3.12", "3.13")  # --smoke-test: the token must not reach the install children either
    canary = CANARY_PREFIX + secrets.token_hex(20)
    with PypiSandbox(directory=tmp_path / "index", username="__token__", password=canary) as box:
        env = {
            **os.environ,
            "KESTREL_CANARY": canary,
            "TWINE_NON_INTERACTIVE": "1",
            "COLUMNS": "200",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            **FAST,
        }
        stop, found = threading.Event(), []
        scanner = threading.Thread(target=_scan_cmdlines, args=(canary.encode(), stop, found), daemon=True)
        scanner.start()
        outputs = []
        for before, after in ((["-v"], []), ([], ["--json"])):  # verbose human output, then JSON
            args = [
                *before,
                "publish",
                "--project",
                str(project),
                "--target",
                "sandbox",
                "--repository-url",
                box.upload_url,
                "--token-env",
                "KESTREL_CANARY",
                "--yes",
                "--smoke-test",
                *after,
            ]
            proc = subprocess.run(
                [sys.executable, "-m", "kestrel_release", *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            outputs.append(proc.stdout + proc.stderr)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        stop.set()
        scanner.join()
        assert box.files() == _wheels(project)  # the token really was used
        assert found == []
        for text in outputs:
            assert canary not in text and CANARY_PREFIX not in text
        assert canary not in box.log.read_text(errors="replace")
        for log in tmp_path.rglob("*.log"):
            assert canary not in log.read_text(errors="replace")


@pytest.mark.slow
def test_real_kernel_wheels_publish_to_strict_sandbox_and_install_everywhere(built_wheels, tmp_path):
    from tests.helpers import KERNELS

    dist = tmp_path / "dist-all"
    shutil.copytree(built_wheels, dist)  # the fixture is shared and read-only
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = run_cli(
            [
                "publish",
                str(dist),
                "--project",
                str(KERNELS),
                "--target",
                "sandbox",
                "--repository-url",
                box.upload_url,
                "--yes",
                "--smoke-test",
                "--json",
            ],
            env=_creds(box),
            timeout=900,
        )
        assert result.code == 0, result.output
        doc = json.loads(result.stdout)
        wheels = sorted(p.name for p in dist.glob("*.whl"))
        assert box.files() == wheels and sorted(r["filename"] for r in doc["uploaded"]) == wheels
        assert [r["python"] for r in doc["smoke"] if r["ok"]] == ["3.10", "3.11", "3.12", "3.13"], doc["smoke"]
        again = run_cli(
            [
                "publish",
                str(dist),
                "--project",
                str(KERNELS),
                "--target",
                "sandbox",
                "--repository-url",
                box.upload_url,
                "--yes",
                "--json",
            ],
            env=_creds(box),
            timeout=900,
        )
        assert again.code == 0 and len(json.loads(again.stdout)["skipped"]) == len(wheels), again.output


def _index_reads(box: PypiSandbox, before: dict[str, int]) -> dict[str, int]:
    after = box.faults()["requests"]
    return {k: v - before.get(k, 0) for k, v in after.items() if k.startswith("GET ") and v > before.get(k, 0)}


def test_a_release_of_many_files_costs_one_index_read_of_each_kind(tmp_path):
    """The skip check (simple page), the quota forecast (project JSON) and the 14-day rule (release JSON)
    cost one request each per release, whatever the number of files; the read-back after the uploads one more."""
    pythons = ("3.10", "3.11", "3.12", "3.13", "3.14")
    project = make_project(tmp_path / "kernels", pythons=pythons)
    make_dist(project / "dist-all", pythons=pythons)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        for run, simple_reads in (("first", 2), ("identical re-run", 1)):  # the first reads its uploads back
            before = box.faults()["requests"]
            result = _publish(project, box)
            assert result.code == 0, result.output
            reads = _index_reads(box, before)
            print(run, reads)
            assert sum(v for k, v in reads.items() if "/simple/" in k) == simple_reads, (run, reads)
            assert all(v == 1 for k, v in reads.items() if "/simple/" not in k), (run, reads)
            assert len(reads) <= 3, (run, reads)
        assert len(box.files()) == len(pythons)
