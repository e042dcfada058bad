"""GitHub's rate limits for the retry loop: wait for the reset up to publish.rate_limit_wait_cap, then stop."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from kestrel_release.adapters.retry import RetryNow, RetryPolicy, Transient
from kestrel_release.errors import PublishError
from kestrel_release.ui import console


class RateLimits:
    """The waits of one client: their total never passes the policy's cap."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.waited = 0.0

    def wait(self, exc: Any, what: str) -> Exception | None:
        """None when `exc` is no rate limit; else RetryNow after waiting for the reset, a PublishError
        when the wait passes publish.rate_limit_wait_cap, or a Transient (the policy's backoff) when
        the server gave no usable time (a hint that is negative, NaN, 1e400 or "soon" is no hint)."""
        from kestrel_release.adapters.retry import reset_seconds, retry_after_seconds

        headers = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
        limited = exc.status == 429 or (
            exc.status == 403
            and (
                headers.get("x-ratelimit-remaining") == "0"
                or "retry-after" in headers
                or "rate limit" in str(getattr(exc, "data", "")).lower()
            )
        )
        if not limited:
            return None
        wait = retry_after_seconds(headers.get("retry-after"))
        if wait is None and (reset := reset_seconds(headers.get("x-ratelimit-reset"))) is not None:
            wait = reset + 1  # the reset second itself may still be limited
        if wait is None:
            return Transient(f"HTTP {exc.status} rate limit without a usable Retry-After or X-RateLimit-Reset")
        # a far-off date must still print; a wait beyond the cap is never started
        at = datetime.now(timezone.utc) + timedelta(seconds=min(wait, 10 * 365 * 86400))
        when = at.strftime("%H:%M:%S UTC" if wait < 86400 else "%Y-%m-%d %H:%M:%S UTC")
        # Each wait counts at least 1 s: a server answering "Retry-After: 0" forever still ends at the cap.
        counted = max(wait, 1.0)
        if self.waited + counted > self.policy.rate_limit_wait_cap:
            return PublishError(
                f"GitHub rate limit reached while {what}; it resets at {when} (in {wait:.0f} s)",
                f"retry after {when}, or raise publish.rate_limit_wait_cap",
            )
        console.warn(f"GitHub rate limit reached while {what}; waiting {wait:.0f} s (until {when})")
        self.waited += counted
        self.policy.sleep(self.policy.clamp(wait))
        return RetryNow()
