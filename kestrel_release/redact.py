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


# Variables that carry publish credentials (or tell a child where to find them). Build children never
# need them, and a backend or build dependency that prints its environment must not see them.
_CREDENTIAL_NAMES = re.compile(
    r"^(TWINE_\w+|GH_TOKEN|GITHUB_TOKEN|GH_ENTERPRISE_TOKEN|GITHUB_ENTERPRISE_TOKEN|UV_PUBLISH_\w+"
    r"|ACTIONS_ID_TOKEN_REQUEST_\w+|PYTHON_KEYRING_\w+|KEYRING_\w+|PYPI_\w*TOKEN\w*|PYPI_\w*PASSWORD\w*)$"
)
_extra_names: set[str] = set()


def register_env_name(name: str | None) -> None:
    """A variable named as holding a token (--token-env): scrubbed from children, its value masked."""
    if name:
        with _lock:
            _extra_names.add(name)


def is_credential_var(name: str, value: str = "") -> bool:
    """True for a variable a build child must not inherit: a credential name or a registered secret's value."""
    with _lock:
        named = name in _extra_names
        values = list(_secrets)
    if named or _CREDENTIAL_NAMES.match(name):
        return True
    if not value:
        return False
    # Containment only for long secrets: a short password ("test") inside PATH must not strip PATH.
    return any(v == value or (len(v) >= 12 and v in value) for v in values) or any(p.search(value) for p in _PATTERNS)


def register_startup(
    environ: dict[str, str] | None = None, argv: list[str] | None = None, pypirc: str = "~/.pypirc"
) -> None:
    """Register every credential visible at start-up, before anything can print it.

    Sources: credential variables, the --token-env variable named on the command line, and the
    passwords of ~/.pypirc (read leniently here; publish reports a malformed file itself).
    """
    import os
    import sys

    environ = dict(os.environ) if environ is None else environ
    argv = sys.argv if argv is None else argv
    for i, arg in enumerate(argv):
        name = argv[i + 1] if arg == "--token-env" and i + 1 < len(argv) else arg.partition("--token-env=")[2]
        if name:
            register_env_name(name)
    for name, value in environ.items():
        if is_credential_var(name) and name not in (
            "PYTHON_KEYRING_BACKEND",
            "TWINE_REPOSITORY_URL",
            "TWINE_REPOSITORY",
            "TWINE_USERNAME",
        ):
            register(value)
    _register_pypirc(os.path.expanduser(pypirc))


def _register_pypirc(path: str) -> None:
    import configparser

    parser = configparser.RawConfigParser()
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, UnicodeDecodeError, configparser.Error):
        return
    for section in parser.sections():
        register(parser.get(section, "password", fallback=None))
