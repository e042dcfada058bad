"""retry.py: the server's Retry-After and rate-limit reset, parsed strictly and clamped to the cap."""

from __future__ import annotations

import math

import pytest

from kestrel_release.adapters.retry import RetryPolicy, reset_seconds, retry_after_seconds

NOW = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        ("1.5", 1.5),  # not RFC 9110's digits, but harmless and sent by some servers
        ("Wed, 21 Oct 2015 07:30:00 GMT", 120.0),  # IMF-fixdate
        ("Wednesday, 21-Oct-15 07:29:00 GMT", 60.0),  # obsolete RFC 850 form
        ("Wed Oct 21 07:28:30 2015", 30.0),  # obsolete asctime form (UTC)
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # in the past: now
        ("9" * 40, 1e9),  # valid digits, absurdly far: more than any cap, no overflow
    ],
)
def test_retry_after_accepts_delay_seconds_and_http_dates(value, seconds) -> None:
    assert retry_after_seconds(value, now=NOW) == seconds


@pytest.mark.parametrize("value", [None, "", "-1", "-5", "nan", "NaN", "inf", "1e400", "soon", "٣", "12 s", "0x10"])
def test_retry_after_nonsense_is_no_hint(value) -> None:
    assert retry_after_seconds(value, now=NOW) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(str(int(NOW) + 30), 30.0), (str(int(NOW) - 30), 0.0), ("9" * 30, 1e9)],
)
def test_reset_is_epoch_seconds(value, seconds) -> None:
    assert reset_seconds(value, now=NOW) == seconds


@pytest.mark.parametrize(
    "value", [None, "", "soon", "-5", "1e400", "nan", "1445412510.5", "Wed, 21 Oct 2015 07:30:00 GMT"]
)
def test_reset_nonsense_is_no_hint(value) -> None:
    assert reset_seconds(value, now=NOW) is None


def test_delay_clamps_a_server_wait_to_zero_and_the_cap_and_ignores_non_finite() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=4.0, rate_limit_wait_cap=10.0)
    assert policy.delay(0, retry_after=500) == 10.0
    assert policy.delay(0, retry_after=-3) == 0.0
    for nonsense in (math.nan, math.inf, -math.inf):
        assert 0.5 <= policy.delay(0, retry_after=nonsense) <= 1.0  # the backoff, not a crash
