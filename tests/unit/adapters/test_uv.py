"""uv's failure output, as uv 0.13 prints it (recorded from real runs), read into what went wrong."""

from __future__ import annotations

import pytest

from kestrel_release.adapters import uv

DNS = """Using Python 3.11.2 environment at: v
error: Request failed after 3 retries in 6.0s
  cause: Failed to fetch: http://no-such-host.invalid/simple/torch/
  cause: error sending request for url (http://no-such-host.invalid/simple/torch/)
  cause: client error (Connect)
  cause: dns error
  cause: error resolving DNS
  cause: failed to lookup address information: Name or service not known
"""
REFUSED = """error: Request failed after 3 retries in 8.7s
  cause: Failed to fetch: http://127.0.0.1:9/simple/torch/
  cause: error sending request for url (http://127.0.0.1:9/simple/torch/)
  cause: client error (Connect)
  cause: tcp connect error
  cause: Connection refused (os error 111)
"""
NOT_FOUND = """error: No solution found when resolving dependencies
  cause: Because kk-x was not found in the package registry and you require kk-x, we can conclude that your \
requirements are unsatisfiable.
"""
OLD_STYLE = """  \u00d7 No solution found when resolving dependencies:
  ╰─▶ Because only torch<=2.0 is available and you require torch>=2.9, we can conclude that your requirements \
are unsatisfiable.
"""
BROKEN = """error: Failed to install: kk-0.1-py3-none-any.whl (kk==0.1)
  Caused by: The wheel is invalid: Metadata field Name not found
"""


@pytest.mark.parametrize(
    ("output", "kind", "needle"),
    [
        (DNS, "unreachable", "http://no-such-host.invalid/simple/torch/ could not be reached (failed to lookup"),
        (REFUSED, "unreachable", "http://127.0.0.1:9/simple/torch/ could not be reached (Connection refused"),
        (NOT_FOUND, "unresolvable", "kk-x: Because kk-x was not found in the package registry"),
        (OLD_STYLE, "unresolvable", "torch: Because only torch<=2.0 is available"),
        (BROKEN, "other", "error: Failed to install: kk-0.1-py3-none-any.whl"),
    ],
)
def test_install_failures_are_told_apart(output, kind, needle):
    got_kind, detail = uv.install_failure(output)
    assert got_kind == kind and needle in detail, detail
