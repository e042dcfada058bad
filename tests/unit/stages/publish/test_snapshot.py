"""The copies publish sends: read once, private and read-only, and a source changed since is refused."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from kestrel_release.errors import PublishError, UsageError
from kestrel_release.stages.publish.snapshot import Snapshots
from tests.factories import make_dist


@pytest.fixture
def out(tmp_path):
    make_dist(tmp_path / "dist-all", pythons=("3.12",))
    return tmp_path / "dist-all"


def test_a_copy_holds_the_bytes_read_with_their_manifest_and_is_read_only(out, tmp_path) -> None:
    (wheel,) = out.glob("*.whl")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.root.mkdir()
    (copy,) = snaps.take([wheel])
    assert copy.read_bytes() == wheel.read_bytes() and copy.name == wheel.name
    assert snaps.copies[copy].sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert stat.S_IMODE(copy.stat().st_mode) == 0o400
    assert copy.parent.name == "dist-all"
    assert (copy.parent / "release-manifest.json").read_bytes() == (out / "release-manifest.json").read_bytes()
    assert snaps.source_of(copy) == wheel
    wheel.write_bytes(b"other bytes")  # the copy does not follow its source
    assert copy.read_bytes() != b"other bytes"


@pytest.mark.parametrize("change", ["rewritten", "removed", "symlinked"])
def test_a_source_changed_since_it_was_read_is_named_and_refused(out, tmp_path, change) -> None:
    (wheel,) = out.glob("*.whl")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.root.mkdir()
    snaps.take([wheel])
    snaps.check_sources()  # unchanged: nothing to say
    if change == "rewritten":
        wheel.write_bytes(wheel.read_bytes() + b"x")
    elif change == "removed":
        wheel.unlink()
    else:
        (tmp_path / "private").write_bytes(b"secret")
        wheel.unlink()
        wheel.symlink_to(tmp_path / "private")
    with pytest.raises(PublishError, match="changed after it was verified") as caught:
        snaps.check_sources()
    assert str(wheel) in str(caught.value) and "nothing was uploaded" in str(caught.value)


def test_a_touched_but_identical_source_is_not_refused(out, tmp_path) -> None:
    (wheel,) = out.glob("*.whl")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.root.mkdir()
    snaps.take([wheel])
    os.utime(wheel, ns=(1, 1))
    snaps.check_sources()


def test_a_fifo_named_like_a_wheel_is_refused_without_blocking(tmp_path) -> None:
    fifo = tmp_path / "x-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    snaps = Snapshots(tmp_path / "snaps")
    snaps.root.mkdir()
    with pytest.raises(UsageError, match="not a regular file"):
        snaps.take([fifo])
