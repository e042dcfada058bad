"""Names from a wheel reach the terminal with their control characters escaped, never raw.

Before: a member named `\\x1b[2J...` cleared the screen when verify listed it, `\\x1b]0;...\\x07` set the window
title, and a newline in a name printed a line of its own (`error: forged`) among the tool's lines.
"""

from __future__ import annotations

import json

from tests.factories import make_wheel
from tests.helpers import assert_one_line_error, run_cli

HOSTILE = "kestrel_kernels/\x1b[2J\x1b]0;pwned\x07\x9b31m\nerror: forged.cu"


def test_a_hostile_member_name_is_shown_escaped_and_forges_no_error_line(tmp_path):
    wheel = make_wheel(tmp_path / "dist", {"kestrel_kernels/__init__.py": b"", HOSTILE: b"//"})
    result = run_cli(["verify", str(wheel)], cwd=tmp_path)
    assert_one_line_error(result, 5, "verify found")  # exactly one line starts with `error:`
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "\x9b" not in result.stderr
    assert "kestrel_kernels/\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\nerror: forged.cu" in result.stderr
    doc = json.loads(run_cli(["verify", str(wheel), "--json"], cwd=tmp_path).stdout)  # --json: the name as it is
    assert HOSTILE in {f["member"] for f in doc["wheels"][0]["findings"]}
