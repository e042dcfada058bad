"""`explain --index` downloads within an overall deadline (--timeout), not only a per-read one.

Before: a server sending the wheel one byte every 2 s kept explain downloading for as long as it cared to (each
read came well within the 60 s read timeout). Now the download ends at --timeout with one error line, exit 6.
"""

from __future__ import annotations

import json
import time

from tests.factories import wheel_bytes, wheel_name
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.hostile_http import HostileServer

TAG = "cp312-cp312-manylinux_2_28_x86_64"


def test_a_trickling_wheel_download_ends_at_the_timeout(tmp_path):
    name = wheel_name("kestrel-kernels", "0.1.0", TAG)
    with HostileServer() as srv:
        page = {
            "meta": {"api-version": "1.0"},
            "name": "kestrel-kernels",
            "files": [{"filename": name, "url": f"{srv.url}/files/{name}", "hashes": {}}],
        }
        srv.route(
            "GET",
            "/simple/",
            headers={"Content-Type": "application/vnd.pypi.simple.v1+json"},
            body=json.dumps(page).encode(),
        )
        srv.route("GET", "/files/", trickle=2.0, body=wheel_bytes(tag=TAG))
        args = ["explain", "--index", f"{srv.url}/simple/kestrel-kernels/", "--gpu", "sm_89", "--driver", "580.65.06"]
        args += ["--python", "3.12", "--platform", "manylinux_2_34_x86_64", "--timeout", "5"]
        started = time.monotonic()
        result = run_cli(args, cwd=tmp_path, timeout=300)
        took = time.monotonic() - started
        assert_one_line_error(result, 6, f"downloading {srv.url}/files/{name}", "5 s")
        assert took < 90, took  # the whole body would take ~5 minutes at a byte every 2 s
        as_json = run_cli([*args, "--json"], cwd=tmp_path, timeout=300)
        assert as_json.code == 6 and json.loads(as_json.stdout)["error"]["exit_code"] == 6
