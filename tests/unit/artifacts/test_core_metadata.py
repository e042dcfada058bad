"""METADATA is read within bounds: one linear pass, the core fields only, a finding beyond the limits."""

from __future__ import annotations

import time

from kestrel_release.artifacts import core_metadata
from kestrel_release.artifacts.pypi_rules import parse_metadata

HEAD = b"Metadata-Version: 2.4\nName: demo\nVersion: 1.0\n"


def _made_up(count: int) -> bytes:
    return HEAD + b"".join(b"X-H%d: v\n" % i for i in range(count)) + b"\nthe description\n"


def test_a_real_metadata_is_within_the_limits_and_reads_as_before():
    data = HEAD + b"Requires-Dist: torch>=2\nSummary: a\n  folded\nX-Other: kept out\n\nbody text\n"
    assert core_metadata.problem(data) is None
    raw = parse_metadata(data)
    assert raw["name"] == "demo" and raw["requires_dist"] == ["torch>=2"]
    assert raw["summary"] == "a\n  folded" and raw["description"] == "body text\n"
    assert core_metadata.headers(data).get("Version") == "1.0"


def test_100000_made_up_headers_are_a_finding_and_read_in_linear_time():
    data = _made_up(100_000)
    assert "more than 10,000 header lines" in (core_metadata.problem(data) or "")
    started = time.monotonic()
    raw = parse_metadata(data)  # quadratic in packaging alone: minutes
    assert time.monotonic() - started < 30  # generous for a busy machine; well under a second when quiet
    assert raw["name"] == "demo" and raw["version"] == "1.0"


def test_an_oversized_metadata_is_a_finding():
    data = HEAD + b"\n" + b"x" * (core_metadata.MAX_BYTES + 1)
    assert "over the limit" in (core_metadata.problem(data) or "")
    assert len(core_metadata.bounded(data)) <= core_metadata.MAX_BYTES + 1
