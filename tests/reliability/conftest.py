"""Fixtures of the reliability suite: a publishable project, and the end-state checks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.factories import make_dist, make_project

PYTHONS = ("3.12", "3.13")
# Small, fast retry settings; every fault test finishes in seconds.
FAST = {
    "KESTREL_RELEASE_PUBLISH_RETRIES": "2",
    "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05",
    "KESTREL_RELEASE_PUBLISH_MAX_BACKOFF": "0.2",
    "KESTREL_RELEASE_PUBLISH_TIMEOUT": "5",
    "KESTREL_RELEASE_PUBLISH_RATE_LIMIT_WAIT_CAP": "5",
}


def sha256s(paths) -> dict[str, str]:
    return {Path(p).name: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}


@pytest.fixture
def dist_project(tmp_path: Path) -> Path:
    """A kernel-package dir with build-like output: 2 tiny verified-able wheels + manifest + SHA256SUMS."""
    root = make_project(tmp_path / "kernels", pythons=PYTHONS)
    make_dist(root / "dist-all", pythons=PYTHONS, payload_size=256 * 1024)  # big enough to cut mid-body
    return root


def local_wheels(project: Path) -> dict[str, str]:
    return sha256s(sorted((project / "dist-all").glob("*.whl")))
