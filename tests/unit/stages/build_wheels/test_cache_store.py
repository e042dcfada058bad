"""The wheel and precompile caches stage each store in an owned dir beside their entries: a build killed
mid-store (SIGKILL runs no cleanup) left `.<key>.tmp-<pid>` with a full copy of the wheel for ever; now the
next store there removes a dead owner's staging dir, and a store leaves nothing beside its entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.files import statedir
from kestrel_release.stages.build_wheels import precompile, wheelcache
from tests.factories import write_wheel


def _dead_pid() -> int:
    limit = int(Path("/proc/sys/kernel/pid_max").read_text()) if Path("/proc/sys/kernel/pid_max").exists() else 99999
    return next(pid for pid in range(limit - 1, 1, -1) if not Path(f"/proc/{pid}").exists())


def _killed_store(folder: Path) -> Path:
    """What a build SIGKILLed mid-store leaves: its staging dir, marker and a wheel copy."""
    pid = _dead_pid()
    left = folder / f".kestrel-store-{pid}-a1b2c3"
    (left / "work").mkdir(parents=True)
    (left / statedir.OWNER).write_text(f"{pid} 12345 ?\n")
    (left / "work" / "big.whl").write_bytes(b"x" * 1024)
    return left


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_wheel_store_collects_a_killed_store_and_leaves_only_its_entry(cache: Path, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "w")
    killed = _killed_store(cache / "wheels")
    wheelcache.put("k1", wheel, {"cc": "gcc 12"})
    assert not killed.exists()
    assert sorted(p.name for p in (cache / "wheels").iterdir()) == ["k1"]
    assert sorted(p.name for p in (cache / "wheels" / "k1").iterdir()) == ["inputs.json", wheel.name]
    wheelcache.put("k1", wheel, {"cc": "gcc 13"})  # a refreshed entry replaces the old one
    assert sorted(p.name for p in (cache / "wheels").iterdir()) == ["k1"]
    assert "gcc 13" in (cache / "wheels" / "k1" / "inputs.json").read_text()


def test_a_precompile_store_collects_a_killed_store_and_leaves_only_its_entry(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    (outputs / "k.cubin").write_bytes(b"cubin")
    entries = tmp_path / "cache" / "precompile"
    killed = _killed_store(entries)
    precompile.store(outputs, entries / "key")
    assert not killed.exists()
    assert sorted(p.name for p in entries.iterdir()) == ["key"]
    assert (entries / "key" / "k.cubin").read_bytes() == b"cubin"
