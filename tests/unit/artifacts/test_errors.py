"""One list of the exceptions a damaged zip raises (artifacts/errors.py UNREADABLE_ZIP), used by every reader.

Each exception zipfile may raise while opening a hostile archive gives the same answer everywhere:
the wheel reader's one WheelError (exit 5, no traceback) and PyPI's "not a zipfile" violation.
"""

from __future__ import annotations

import zipfile

import pytest

from kestrel_release.artifacts import pypi_rules, wheel
from kestrel_release.artifacts.errors import UNREADABLE_ZIP, WheelError
from kestrel_release.stages.verify import pypi as verify_pypi
from tests.factories import write_wheel


@pytest.fixture(params=UNREADABLE_ZIP, ids=lambda exc: exc.__name__)
def hostile(request, monkeypatch, tmp_path):
    """A wheel on disk that zipfile, from now on, refuses to open with one of the listed exceptions."""
    path = write_wheel(tmp_path)

    def refuse(*args, **kwargs):
        raise request.param("hostile archive")

    monkeypatch.setattr(zipfile, "ZipFile", refuse)
    return path


def test_the_wheel_reader_says_not_a_readable_zip(hostile):
    with pytest.raises(WheelError, match="not a readable zip file"):
        wheel.read_wheel(hostile)


def test_pypi_rules_and_verify_give_one_zip_violation(hostile):
    path = hostile
    expected = [("pypi-zip", pypi_rules.INVALID + "File is not a zipfile")]
    assert [(v.rule, v.message) for v in pypi_rules.check_wheel(path.name, path.read_bytes())] == expected
    for only_zip in (False, True):
        assert [(v.rule, v.message) for v in verify_pypi._violations(path, only_zip=only_zip)] == expected
