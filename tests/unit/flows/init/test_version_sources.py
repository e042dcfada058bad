"""The version a VCS plugin computes, read from `git describe --tags --long` and an sdist's PKG-INFO (pure)."""

from __future__ import annotations

import pytest

from kestrel_release.flows.init.version_sources import pkg_info_version, scm_version
from kestrel_release.stages.version.source import tag_command, tag_prefix


@pytest.mark.parametrize(
    ("describe", "expected"),
    [
        ("v1.2.3-0-gabc1234", ("1.2.3", "v1.2.3")),
        ("1.2.3-0-gabc1234", ("1.2.3", "1.2.3")),
        ("26.1.0-3-g0123abc", ("26.1.1.dev3+g0123abc", "26.1.0")),
        ("release-candidate-0-gabc1234", None),
        ("", None),
    ],
)
def test_version_as_setuptools_scm_computes_it(describe, expected):
    assert scm_version(describe) == expected


def test_pkg_info_version():
    assert pkg_info_version("Metadata-Version: 2.1\nName: hv\nVersion: 26.1.0\n\nVersion: no\n") == "26.1.0"
    assert pkg_info_version("Name: hv\n") is None


@pytest.mark.parametrize(
    ("tags", "prefix"), [(["26.1.0", "v0.1"], ""), (["nightly", "v2.0.0", "1.0"], "v"), ([], "v"), (["latest"], "v")]
)
def test_tag_advice_follows_the_newest_version_tag(tags, prefix):
    assert tag_prefix(tags) == prefix
    assert tag_command("hv", "26.1.1", prefix) == (
        f'git tag -a {prefix}26.1.1 -m "hv 26.1.1" && git push origin {prefix}26.1.1'
    )
