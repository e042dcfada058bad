"""A wheel whose METADATA is made of 100,000 headers: verify ends in exit 5 with one finding, not minutes later."""

from __future__ import annotations

import json

from tests.factories import make_wheel
from tests.helpers import assert_one_line_error, run_cli


def test_a_metadata_of_100000_headers_is_one_finding(tmp_path):
    extra = "".join(f"X-H{i}: v\n" for i in range(100_000))
    wheel = make_wheel(tmp_path / "dist", extra_metadata=extra)
    result = run_cli(["verify", str(wheel)], cwd=tmp_path, timeout=300)  # before: past 10 minutes
    assert_one_line_error(result, 5, "verify found 1 error(s)")
    assert "more than 10,000 header lines" in result.stderr
    doc = json.loads(run_cli(["verify", str(wheel), "--json"], cwd=tmp_path, timeout=300).stdout)
    (finding,) = doc["wheels"][0]["findings"]
    assert finding["rule"] == "metadata" and finding["member"].endswith(".dist-info/METADATA")
