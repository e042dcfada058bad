"""Reading a project's size from an index's JSON API (/pypi/<name>/json), as PyPI shapes it."""

from __future__ import annotations

from kestrel_release.adapters.pypi import json_api as pypi_json


def test_json_url_sits_beside_the_simple_index():
    assert (
        pypi_json.project_json_url("https://pypi.org/simple/", "kestrel-kernels")
        == "https://pypi.org/pypi/kestrel-kernels/json"
    )
    assert pypi_json.project_json_url("https://test.pypi.org/simple", "a b") == "https://test.pypi.org/pypi/a%20b/json"


def test_sizes_are_summed_per_release_and_odd_entries_count_nothing():
    doc = {
        "releases": {
            "0.1.0": [{"filename": "a.whl", "size": 100}, {"filename": "b.whl", "size": 50}],
            "0.2.0": [
                {"filename": "c.whl", "size": True},
                {"filename": "d.whl"},
                "junk",
                {"size": 7},
                {"filename": "e.whl", "size": -3},
            ],
            "0.3.0": [],
        }
    }
    usage = pypi_json.parse_project(doc)
    assert usage.exists and usage.total == 150
    assert usage.releases == {"0.1.0": 150, "0.2.0": 0, "0.3.0": 0}
    assert usage.files == {"a.whl": 100, "b.whl": 50, "c.whl": 0, "d.whl": 0, "e.whl": 0}
