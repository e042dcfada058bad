"""The one retry policy and loop of every publisher: bounded, exponential, jittered.

Shared by the index uploader (adapters/pypi/client.py) and the GitHub client
(adapters/github/client.py) so `[tool.kestrel-release.publish]` means the same thing to both; each
adapter keeps only its `classify` (which of its failures are worth another attempt) and its words.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kestrel_release.config.model import PublishConfig


class Transient(Exception):
    """A failure worth retrying (connection error, deadline, 5xx, 429); `retry_after` as the server said."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.retry_after = retry_after


class RetryNow(Exception):
    """The classifier already waited (a rate limit's reset): try again without counting an attempt."""


@dataclass
class RetryPolicy:
    retries: int = 5
    backoff: float = 1.0  # first pause's ceiling, seconds; doubles per attempt
    max_backoff: float = 30.0
    rate_limit_wait_cap: float = 120.0  # longest total wait for a rate limit
    timeout: float = 60.0  # per HTTP request
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)  # tests pass a recorder

    @classmethod
    def from_config(cls, publish: PublishConfig) -> RetryPolicy:
        """From `cfg.publish`."""
        return cls(publish.retries, publish.backoff, publish.max_backoff, publish.rate_limit_wait_cap, publish.timeout)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Pause before retry number `attempt` (0-based); a server's Retry-After wins, clamped to
        [0, rate_limit_wait_cap]; a value that is not a finite number falls back to the backoff."""
        if retry_after is not None and math.isfinite(retry_after):
            return self.clamp(retry_after)
        ceiling = min(self.max_backoff, self.backoff * 2**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # jitter: parallel runs do not retry in step

    def clamp(self, seconds: float) -> float:
        """A server-given wait within [0, rate_limit_wait_cap]."""
        return min(max(0.0, seconds), self.rate_limit_wait_cap)

    def run(
        self,
        fn: Callable[[], Any],
        *,
        classify: Callable[[Exception], Exception | None],
        warn: Callable[[str, int, float], str],
        give_up: Callable[[str, int], Exception],
        on_retry: Callable[[], None] | None = None,
    ) -> Any:
        """Call `fn` until it returns. `classify(exc)` says what a failure is: a Transient (pause, warn
        `warn(failure, attempt, pause)`, call `on_retry`, try again; `give_up(failure, attempts)` is
        raised once the retries are spent), RetryNow (again at once), another exception (raised as it
        is) or None (the original exception propagates)."""
        from kestrel_release.ui import console

        attempt = 0
        while True:
            try:
                return fn()
            except Exception as exc:
                verdict = classify(exc)
                if verdict is None:
                    raise
                if isinstance(verdict, RetryNow):
                    continue
                if not isinstance(verdict, Transient):
                    raise verdict from None
            attempt += 1
            if attempt > self.retries:
                raise give_up(str(verdict), attempt) from None
            pause = self.delay(attempt - 1, verdict.retry_after)
            console.warn(warn(str(verdict), attempt, pause))
            self.sleep(pause)
            if on_retry is not None:
                on_retry()


# Servers say when to come back in headers anyone can send: parse them strictly, and let a value
# that is not one (negative, NaN, 1e400, "soon") mean "no hint", never a crash or an endless wait.
_DELAY_SECONDS = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,9})?")  # RFC 9110's 1*DIGIT; a decimal is tolerated
_FAR = 10.0**9  # seconds: more than any cap; longer digit strings mean the same


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header as seconds from now, >= 0; None when absent or not valid.

    RFC 9110 section 10.2.3: `delay-seconds` (digits) or an `HTTP-date` (IMF-fixdate, and the obsolete
    RFC 850 and asctime forms); a date in the past means now."""
    if value is None:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):
        return float(text)
    if re.fullmatch(r"[0-9]+", text):  # valid, but longer than 15 digits
        return _FAR
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # asctime carries no zone; HTTP dates are always UTC
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def reset_seconds(value: str | None, now: float | None = None) -> float | None:
    """An X-RateLimit-Reset header (UTC epoch seconds, GitHub's) as seconds from now, >= 0; None when
    absent or not an epoch time."""
    if value is None:
        return None
    text = value.strip()
    if not re.fullmatch(r"[0-9]+", text):
        return None
    if len(text) > 15:
        return _FAR
    return max(0.0, int(text) - (time.time() if now is None else now))
