"""targets/github/confirm: a release counts as published only when its read-back holds each file's bytes."""

from __future__ import annotations

import hashlib

import pytest

from kestrel_release.adapters.github.models import Asset, Release
from kestrel_release.adapters.retry import RetryPolicy
from kestrel_release.errors import PublishError
from kestrel_release.targets.github import confirm
from kestrel_release.targets.github.files import LocalFile

REL = Release(1, "v1", "v1", True, False, False, "", "")


class Listing:
    """A client whose asset listings are given one per read (the last one repeats)."""

    def __init__(self, *listings: list[Asset]) -> None:
        self.listings, self.reads = list(listings), 0
        self.policy = RetryPolicy(retries=2, backoff=0.0, max_backoff=0.0, sleep=lambda s: None)

    def list_assets(self, rel: Release) -> list[Asset]:
        self.reads += 1
        return self.listings[min(self.reads, len(self.listings)) - 1]


def local(tmp_path, name: str, data: bytes) -> LocalFile:
    path = tmp_path / name
    path.write_bytes(data)
    return LocalFile.of(path, wheel=name.endswith(".whl"))


def asset(name: str, data: bytes, state: str = "uploaded") -> Asset:
    return Asset(1, name, "", state, len(data), "sha256:" + hashlib.sha256(data).hexdigest(), "")


def test_an_asset_stored_late_is_waited_for(tmp_path) -> None:
    f = local(tmp_path, "a.whl", b"wheel")
    client = Listing([], [asset("a.whl", b"wheel")])
    assert confirm.confirm(client, REL, {"a.whl": f}, "after the upload")["a.whl"].size == 5  # type: ignore[arg-type]
    assert client.reads == 2


@pytest.mark.parametrize(
    ("held", "says"),
    [
        ([], "a.whl is missing"),
        ([asset("a.whl", b"other")], "a.whl holds 5 bytes sha256:"),
        ([asset("a.whl", b"wheel", state="starter")], "in state starter"),
    ],
)
def test_anything_else_is_one_line_saying_what_github_holds(tmp_path, held, says) -> None:
    f = local(tmp_path, "a.whl", b"wheel")
    client = Listing(held)
    with pytest.raises(PublishError) as caught:
        confirm.confirm(client, REL, {"a.whl": f}, "after the upload")  # type: ignore[arg-type]
    assert says in str(caught.value) and "not made public" in str(caught.value)
    assert client.reads == 3  # the policy's retries, then the verdict


def test_sha256sums_must_list_the_confirmed_wheels(tmp_path) -> None:
    wheel = local(tmp_path, "a.whl", b"wheel")
    good = local(tmp_path, "SHA256SUMS", f"{wheel.sha256}  a.whl\n".encode())
    confirm.check_sums([wheel, good])
    bad = local(tmp_path, "SHA256SUMS", f"{'0' * 64}  a.whl\n".encode())
    with pytest.raises(PublishError, match="SHA256SUMS does not list"):
        confirm.check_sums([wheel, bad])
