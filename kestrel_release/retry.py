"""The one retry policy of every publisher: bounded, exponential, jittered.

Shared by the index uploader (adapters/pypi.py) and the GitHub client
(adapters/github.py) so `[tool.kestrel-release.publish]` means the same thing to both.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RetryPolicy:
    retries: int = 5
    backoff: float = 1.0  # first pause's ceiling, seconds; doubles per attempt
    max_backoff: float = 30.0
    rate_limit_wait_cap: float = 120.0  # longest total wait for a rate limit
    timeout: float = 60.0  # per HTTP request
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)  # tests pass a recorder

    @classmethod
    def from_config(cls, publish) -> RetryPolicy:
        """From `cfg.publish` (config.PublishConfig)."""
        return cls(publish.retries, publish.backoff, publish.max_backoff, publish.rate_limit_wait_cap,
                   publish.timeout)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Pause before retry number `attempt` (0-based); a server's Retry-After wins, up to the cap."""
        if retry_after is not None:
            return min(retry_after, self.rate_limit_wait_cap)
        ceiling = min(self.max_backoff, self.backoff * 2 ** attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # jitter: parallel runs do not retry in step
