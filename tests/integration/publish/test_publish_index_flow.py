"""publish_index's flow against a real loopback sandbox, with verify replaced by a fake.

The fake isolates publish's own decisions (integrity, skip/conflict, retries, summary)
from verify's rules; tests/integration/ runs the same paths through the real CLI.
"""

from __future__ import annotations

import hashlib
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.errors import PublishError, UsageError, VerifyError
from kestrel_release.output_dir import manifest
from kestrel_release.sandbox.pypi.server import PypiSandbox
from kestrel_release.targets.pypi import publish as publish_index
from kestrel_release.ui import console
from tests.factories import make_dist, make_project


@dataclass
class _Wheel:
    path: Path
    filename: str
    sha256: str
    size: int
    name: str
    version: str
    tags: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)


@dataclass
class _Report:
    wheels: list
    ok: bool = True
    findings: list = field(default_factory=list)


def _fake_verify(fail: bool = False):
    mod = types.ModuleType("kestrel_release.stages.verify")

    def resolve_wheels(cfg, paths):
        paths = paths or [cfg.out_path]
        out = []
        for p in paths:
            if p.is_dir():
                out += sorted(p.glob("*.whl"))
            elif p.name.endswith(".tar.gz"):
                raise UsageError(f"{p.name} is an sdist")
            else:
                out.append(p)
        return out

    def run(cfg, paths, target=None, record=True):
        wheels = []
        for p in paths:
            name, version = p.name.split("-")[:2]
            data = p.read_bytes()
            wheels.append(
                _Wheel(p, p.name, hashlib.sha256(data).hexdigest(), len(data), name.replace("_", "-"), version)
            )
        if record and paths:
            manifest.record_verified(paths[0].parent, target, {w.filename: w.sha256 for w in wheels})
        return _Report(wheels, ok=not fail)

    def raise_for(report, show=False):  # the real signature: publish asks verify to print what it stops on
        mod.shown.append(show)
        if not report.ok:
            raise VerifyError("verify found 1 error")

    # publish also asks verify's real PyPI module (the 14-day rule); keep it reachable from the fake
    # whatever imported it first.
    from kestrel_release.stages.verify import pypi as real_pypi

    mod.resolve_wheels, mod.run, mod.raise_for = resolve_wheels, run, raise_for
    mod.pypi = real_pypi
    mod.shown = []
    return mod


@pytest.fixture
def fake_verify(monkeypatch):
    from kestrel_release import stages

    mod = _fake_verify()
    monkeypatch.setitem(sys.modules, "kestrel_release.stages.verify", mod)
    monkeypatch.setattr(stages, "verify", mod, raising=False)
    console.configure(json_mode=True)  # no tables in the test output
    yield mod
    console.configure(json_mode=False)


@pytest.fixture(scope="module")
def box():
    with PypiSandbox(strict=True) as sandbox:
        yield sandbox


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(root / "dist-all")
    return config.load(root, env={})


def _publish(cfg, box, **kw):
    return publish_index.run(
        cfg,
        [],
        target="sandbox",
        repository_url=box.upload_url,
        yes=True,
        credentials=(box.username, box.password),
        **kw,
    )


def test_publish_then_rerun_skips_everything(fake_verify, project, box):
    first = _publish(project, box)
    assert sorted(r["filename"] for r in first.uploaded) == sorted(p.name for p in project.out_path.glob("*.whl"))
    assert all(r["url"].startswith(box.url) for r in first.uploaded)
    second = _publish(project, box)
    assert second.uploaded == [] and len(second.skipped) == 2


def _project(tmp_path, version, **dist):
    root = make_project(tmp_path / "kernels", version=version)
    make_dist(root / "dist-all", version=version, **dist)
    return config.load(root, env={})


def test_same_filename_with_other_bytes_stops_before_any_upload(fake_verify, tmp_path, box):
    cfg = _project(tmp_path / "a", "0.2.0")
    _publish(cfg, box)
    other = _project(tmp_path / "b", "0.2.0", payload_size=1024)  # same names, other bytes
    before = box.faults()["accepted"]
    with pytest.raises(PublishError) as info:
        _publish(other, box)
    message = str(info.value)
    assert "already on sandbox with other bytes" in message and "nothing was uploaded" in message
    local = manifest.load(other.out_path).wheels[0].sha256
    assert local in message
    assert box.faults()["accepted"] == before


def test_a_wheel_changed_after_build_is_refused_with_both_hashes(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.3.0")
    wheel = min(cfg.out_path.glob("*.whl"))
    recorded = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    actual = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with pytest.raises(PublishError) as info:
        _publish(cfg, box)
    assert info.value.exit_code == 6
    assert wheel.name in str(info.value) and recorded in str(info.value) and actual in str(info.value)
    assert not [f for f in box.files() if "0.3.0" in f]


def test_5xx_is_retried_with_backoff_and_twine_does_not_multiply_attempts(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.4.0")
    before = box.faults()
    box.faults(status=503, count=2)
    result = _publish(cfg, box)
    after = box.faults()
    assert len(result.uploaded) == 2
    assert sorted(r["attempts"] for r in result.uploaded) in ([1, 3], [2, 2])
    # exactly 2 extra POSTs reached the server: one per answered 503, none resent by twine
    assert after["uploads"] - before["uploads"] == 4
    assert after["faults_served"] - before["faults_served"] == 2


def test_connection_reset_is_retried(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.5.0")
    box.faults(reset=1)
    result = _publish(cfg, box)
    assert len(result.uploaded) == 2 and sum(r["attempts"] for r in result.uploaded) == 3


def test_exhausted_retries_report_what_failed_and_what_to_do(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.6.0", pythons=("3.12",))
    box.faults(status=502, count=3)  # retries = 2 in the test project: 3 attempts
    with pytest.raises(PublishError) as info:
        _publish(cfg, box)
    assert "1 of 1 upload(s) to sandbox failed" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value) and "re-run" in str(info.value)
    result = _publish(cfg, box)  # the re-run finishes the job
    assert len(result.uploaded) == 1


def test_wrong_password_is_one_line_about_credentials(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.7.0", pythons=("3.12",))
    with pytest.raises(PublishError) as info:
        publish_index.run(
            cfg,
            [],
            target="sandbox",
            repository_url=box.upload_url,
            yes=True,
            credentials=(box.username, "wrong-password"),
        )
    said = str(info.value)
    # the sandbox is no PyPI and the user is no __token__: the refusal names the user and asks to check
    # the username and password, never echoing the password
    assert "kestrel_kernels-0.7.0-cp312-" in said, said  # which file was refused
    assert f"sandbox ({box.upload_url}) rejected user {box.username!r} (HTTP 40" in said, said
    assert "check the username and password for this index" in said and "\n" not in said
    assert "wrong-password" not in said and "token" not in said


def test_dry_run_plans_without_credentials_or_uploads(fake_verify, tmp_path, box):
    cfg = _project(tmp_path, "0.8.0")
    result = publish_index.run(cfg, [], target="sandbox", repository_url=box.upload_url, dry_run=True)
    assert len(result.planned) == 2 and result.uploaded == []
    assert not [f for f in box.files() if "0.8.0" in f]


def test_pypi_without_yes_and_without_a_terminal_is_refused(fake_verify, tmp_path, box, monkeypatch):
    cfg = _project(tmp_path, "0.9.0")
    with open("/dev/null") as no_tty, pytest.raises(UsageError, match="pass --yes"):
        monkeypatch.setattr(sys, "stdin", no_tty)
        publish_index.run(
            cfg,
            [],
            target="pypi",
            repository_url=box.upload_url,
            confirm=True,
            credentials=(box.username, box.password),
        )
    assert not [f for f in box.files() if "0.9.0" in f]


def test_verify_failure_stops_publish(tmp_path, box, monkeypatch):
    mod = _fake_verify(fail=True)
    monkeypatch.setitem(sys.modules, "kestrel_release.stages.verify", mod)
    from kestrel_release import stages

    monkeypatch.setattr(stages, "verify", mod, raising=False)
    cfg = _project(tmp_path, "0.10.0")
    with pytest.raises(VerifyError):
        _publish(cfg, box)
    assert mod.shown == [True]  # publish renders no report itself: verify must list the findings it stops on
    assert not [f for f in box.files() if "0.10.0" in f]
