"""Secret registry: every credential we read is registered here so that every
output path (console, logs, exception text, child-process output) can mask it.

Secrets are never put on a child's argv: `proc.run` passes them via env only.
"""

from __future__ import annotations

import re
import threading

_lock = threading.Lock()
_secrets: set[str] = set()
MASK = "****"

# Token shapes we mask even if they were never registered (belt and braces).
_PATTERNS = [
    # PyPI tokens are macaroons: "pypi-" + base64 that always starts "AgE" (a bare "pypi-..." would
    # also match paths like /tmp/kestrel-pypi-packages-1234abcd).
    re.compile(r"pypi-AgE[A-Za-z0-9_\-]{16,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{20,}"),
]


def register(value: str | None) -> str | None:
    """Remember a secret value so it is masked everywhere; returns it unchanged."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)
    return value


def mask(text: str) -> str:
    """Replace every registered secret and every token-shaped string by ****."""
    if not text:
        return text
    with _lock:
        values = sorted(_secrets, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(MASK, text)
    return text


def clear() -> None:
    """Forget registered secrets (tests)."""
    with _lock:
        _secrets.clear()
