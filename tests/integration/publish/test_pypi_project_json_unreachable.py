"""Reading a project's size from an index's JSON API (/pypi/<name>/json), as PyPI shapes it."""

from __future__ import annotations

from kestrel_release.adapters.pypi import json_api as pypi_json
from kestrel_release.sandbox.pypi.server import free_port


def test_an_index_that_cannot_be_reached_gives_none():
    assert pypi_json.project_usage(f"http://127.0.0.1:{free_port()}/simple/", "x", timeout=2) is None
