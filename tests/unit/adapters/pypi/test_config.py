"""adapters/pypi/config: what keeps a credential out of an HTTP Basic header is said without quoting it."""

from __future__ import annotations

import pytest

from kestrel_release.adapters.pypi.config import basic_auth_problem


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("pypi-AgEI€xyz", "cannot carry (not Latin-1) (character 10 of 13)"),
        ("two\nlines", "holds a line break (character 4 of 9)"),
        ("tab\there", "holds the control character U+0009 (character 4 of 8)"),
    ],
)
def test_a_credential_no_basic_header_carries_is_named_by_position(value, problem):
    assert problem in (basic_auth_problem(value) or "")
    assert value not in (basic_auth_problem(value) or "")


def test_latin1_passwords_are_fine():
    assert basic_auth_problem("pässwörd with spaces") is None
