"""verify's verdict cache: an unchanged wheel under unchanged rules is not read again; anything else is."""

from __future__ import annotations

import json
import os

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.stages import verify
from kestrel_release.stages.verify import verdicts
from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _cfg(tmp_path, verify_table=""):
    return config.load(make_verify_project(tmp_path / "proj", verify=verify_table), env={})


def _wheel(tmp_path, body=b"__version__ = '0.1.0'\n"):
    return make_wheel(tmp_path / "dist", {f"{PKG}/__init__.py": body, f"{PKG}/data.bin": b"x" * 4096})


class Reads:
    """Counts the wheels verify reads member by member."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        real = verify.read_wheel

        def counting(path, *args):
            self.names.append(path.name)
            return real(path, *args)

        monkeypatch.setattr(verify, "read_wheel", counting)


def _hit(cfg, wheel, monkeypatch, **kw):
    """Verify again and assert the wheel was served from the cache (the premise of each miss below)."""
    reads = Reads(monkeypatch)
    verify.run(cfg, [wheel], record=False, **kw)
    assert reads.names == []


def test_an_unchanged_wheel_is_not_read_again_and_gets_the_same_report(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    first = verify.run(cfg, [wheel], record=False)
    reads = Reads(monkeypatch)
    again = verify.run(cfg, [wheel], record=False)
    assert first.ok and again.ok
    assert reads.names == []
    assert again.to_json() == first.to_json()
    assert again.wheels[0].kernels == first.wheels[0].kernels and again.wheels[0].binaries == first.wheels[0].binaries


def test_changed_bytes_under_the_same_name_are_read_again(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    first = verify.run(cfg, [wheel], record=False)
    _hit(cfg, wheel, monkeypatch)
    _wheel(tmp_path, body=b"__version__ = '0.1.0'  # edited\n")  # same filename, other bytes
    reads = Reads(monkeypatch)
    report = verify.run(cfg, [wheel], record=False)
    assert reads.names == [wheel.name]
    assert report.wheels[0].sha256 != first.wheels[0].sha256


def test_other_bytes_behind_an_unchanged_stat_are_caught_by_the_hash(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    first = verify.run(cfg, [wheel], record=False)
    _hit(cfg, wheel, monkeypatch)
    _wheel(tmp_path, body=b"__version__ = '0.1.0'  # edited\n")
    index, signature = verdicts._stat_entry(cache / "verify", wheel)  # forge: the stat index vouches for it
    stored = json.loads(index.read_text())
    index.write_text(json.dumps({**stored, "stat": signature}))
    reads = Reads(monkeypatch)
    report = verify.run(cfg, [wheel], record=False)
    assert reads.names == [wheel.name]
    assert report.wheels[0].sha256 != first.wheels[0].sha256


def test_a_touched_wheel_is_read_again(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    verify.run(cfg, [wheel], record=False)
    _hit(cfg, wheel, monkeypatch)
    st = wheel.stat()
    os.utime(wheel, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    reads = Reads(monkeypatch)
    verify.run(cfg, [wheel], record=False)
    assert reads.names == [wheel.name]


def test_another_config_target_or_tool_code_is_a_miss(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    verify.run(cfg, [wheel], record=False)
    _hit(cfg, wheel, monkeypatch)
    reads = Reads(monkeypatch)
    verify.run(cfg, [wheel], target="github", record=False)  # another target's rules
    assert reads.names == [wheel.name]
    forbid = _cfg(tmp_path / "other", 'forbid = ["*.bin"]')  # another config: now the data file is a leak
    report = verify.run(forbid, [wheel], record=False)
    assert not report.ok and [f.rule for f in report.wheels[0].findings if f.severity == "error"] == ["source-leak"]
    verdicts._tool_code.cache_clear()
    monkeypatch.setattr(verdicts, "_tool_code", lambda: "edited rules")  # an edited or upgraded tool
    verify.run(cfg, [wheel], record=False)
    assert reads.names == [wheel.name] * 3


def test_a_wheel_with_errors_is_read_every_time(tmp_path, cache, monkeypatch):
    cfg = _cfg(tmp_path, 'forbid = ["*.bin"]')
    bad = _wheel(tmp_path)  # ships data.bin, which this config forbids
    good = make_wheel(tmp_path / "good", None)
    assert not verify.run(cfg, [bad, good], record=False).ok
    reads = Reads(monkeypatch)
    report = verify.run(cfg, [bad, good], record=False)
    assert [w.ok for w in report.wheels] == [False, True]
    assert reads.names == [bad.name]  # the clean one came from the cache, the failing one was read again


def test_an_unusable_cache_dir_only_turns_the_cache_off(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(blocker / "cache"))
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    assert verify.run(cfg, [wheel], record=False).ok
    assert verify.run(cfg, [wheel], record=False).ok


def test_a_cut_short_entry_is_a_miss_not_an_error(tmp_path, cache, monkeypatch):
    cfg, wheel = _cfg(tmp_path), _wheel(tmp_path)
    verify.run(cfg, [wheel], record=False)
    _hit(cfg, wheel, monkeypatch)
    for entry in (cache / "verify" / "verdicts").glob("*.json"):
        entry.write_text('{"filename": "kestrel')  # what a crash mid-write could leave
    reads = Reads(monkeypatch)
    assert verify.run(cfg, [wheel], record=False).ok
    assert reads.names == [wheel.name]
