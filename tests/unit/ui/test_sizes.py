"""sizes.size: the one format of a printed byte count (console.size is the same function)."""

from __future__ import annotations

import pytest

from kestrel_release.ui import console, sizes


@pytest.mark.parametrize(
    ("n", "unit", "text"),
    [
        (10, None, "10 B"),
        (6 * 1024, None, "6.0 KiB"),
        (1.5 * 1024**2, None, "1.5 MiB"),
        (10 * 1024**3, None, "10.0 GiB"),
        (100 * 1024, "MiB", "0.1 MiB"),
    ],
)
def test_size_reads_in_the_largest_unit_reached_or_the_one_given(n, unit, text):
    assert sizes.size(n, unit) == text


def test_console_size_is_the_pure_helper():
    assert console.size is sizes.size
