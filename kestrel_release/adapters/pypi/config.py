"""Where an upload goes and with which credentials: .pypirc, --target/--repository-url, twine's sources.

Apart from pypi.py (the uploads and index reads themselves) so that each stays short; both are the
only code that reads the user's PyPI configuration and credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from kestrel_release.adapters import http_policy
from kestrel_release.adapters.pypi.client import PYPIRC, Index, route_twine_logs, simple_url_for
from kestrel_release.errors import PublishError, UsageError
from kestrel_release.ui import redact


def read_pypirc(path: str = PYPIRC) -> dict[str, dict[str, Any]]:
    """Repositories of .pypirc (twine's view: pypi and testpypi always exist)."""
    import configparser

    from twine import exceptions, utils

    try:
        return utils.get_config(path)
    except exceptions.UnableToReadConfigurationFile:  # twine's wrapper of a UnicodeDecodeError
        raise UsageError(
            f"{path} is not UTF-8 text", "save it as UTF-8: https://packaging.python.org/specifications/pypirc/"
        ) from None
    except IsADirectoryError:
        raise UsageError(
            f"{path} is a directory, not a .pypirc file",
            "move it away or make it a file: https://packaging.python.org/specifications/pypirc/",
        ) from None
    except PermissionError:
        raise UsageError(f"{path} cannot be read (permission denied)", f"chmod 600 {path}") from None
    except FileNotFoundError:  # twine tolerates only a missing *default* file
        blank = {"username": None, "password": None}
        return {
            "pypi": {**blank, "repository": utils.DEFAULT_REPOSITORY},
            "testpypi": {**blank, "repository": utils.TEST_REPOSITORY},
        }
    except UnicodeDecodeError:
        raise UsageError(
            f"{path} is not UTF-8 text", "save it as UTF-8: https://packaging.python.org/specifications/pypirc/"
        ) from None
    except (configparser.Error, OSError):
        # configparser quotes the offending line, which may hold a password
        raise UsageError(f"{path} is malformed", "see https://packaging.python.org/specifications/pypirc/") from None


def _host(url: str | None) -> str:
    return urlparse(url or "").netloc.lower()


def resolve_index(
    target: str,
    configured: Mapping[str, Any],
    repository_url: str | None,
    simple_url: str | None,
    pypirc_path: str = PYPIRC,
    env: Mapping[str, str] | None = None,
    builtin: Any = None,
) -> Index:
    """Where to upload and read, as twine decides, with the project's own targets in between:

    --repository-url > TWINE_REPOSITORY_URL > [tool.kestrel-release.targets.NAME] > .pypirc [NAME]
    `repository =` (pypi/testpypi included) > the built-in PyPI/TestPyPI URLs (`builtin`: the target's
    own defaults, an IndexTarget, when it has any; targets/pypi/ passes them).
    """
    env = os.environ if env is None else env
    pypirc = read_pypirc(pypirc_path)
    section = pypirc.get(target)
    own = configured.get(target)
    own = own if hasattr(own, "repository_url") and own != builtin else None
    rc_url = (section or {}).get("repository")
    rc_url = rc_url if rc_url and not (builtin and rc_url == builtin.repository_url) else None
    choices = [
        (repository_url, "--repository-url"),
        (env.get("TWINE_REPOSITORY_URL"), "TWINE_REPOSITORY_URL"),
        (own and own.repository_url, "[tool.kestrel-release.targets]"),
        (rc_url, f"{pypirc_path} [{target}]"),
        (builtin and builtin.repository_url, "built-in"),
    ]
    upload, source = next(((u, src) for u, src in choices if u), (None, ""))
    if not upload:
        import difflib

        known = sorted(set(pypirc) | {k for k, v in configured.items() if hasattr(v, "repository_url")})
        close = difflib.get_close_matches(target, known, n=1)
        raise UsageError(
            f"unknown publish target '{target}'" + (f" (did you mean '{close[0]}'?)" if close else ""),
            f"use one of {', '.join(known)}, add [{target}] to {pypirc_path}, or pass --repository-url",
        )
    http_policy.require_clean(upload, f"the upload URL of {target} (from {source})")
    parsed = urlparse(upload)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError(
            f"'{_strip_userinfo(upload)}' is not an http(s) URL",
            "pass the index's upload URL, e.g. https://HOST/legacy/",
        )
    url_auth = None
    if parsed.username is not None:  # twine: user:password@ in the URL are the credentials
        url_auth = (parsed.username, redact.register(parsed.password, user=parsed.username) or "")
        upload = _strip_userinfo(upload)
    if not simple_url:
        simple_url = (own.simple_url if own else builtin.simple_url if builtin and source == "built-in" else "") or None
    simple_url = simple_url or simple_url_for(upload)
    http_policy.require_secure(upload, f"the upload URL of {target}")
    http_policy.require_secure(simple_url, f"the simple index URL of {target}")  # its sha256s decide what is sent
    # A .pypirc section's password and certificates belong to its own host, never to another URL.
    rc_section = section if section and _host(section.get("repository")) == _host(upload) else None
    return Index(target, upload, simple_url, rc_section, source, url_auth)


def _strip_userinfo(url: str) -> str:
    parsed = urlparse(url)
    if "@" not in parsed.netloc:
        return url
    return parsed._replace(netloc=parsed.netloc.rpartition("@")[2]).geturl()


def resolve_credentials(
    index: Index,
    *,
    token_env: str | None = None,
    given: tuple[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """(username, password) from: given > --token-env > TWINE_* > .pypirc > keyring. Registered as secrets."""
    env = os.environ if env is None else env
    if given:
        user, password = given
    elif index.url_auth and index.url_auth[1]:
        user, password = index.url_auth
    elif token_env:
        password = env.get(token_env, "")
        if not password:
            raise UsageError(
                f"--token-env {token_env}: that environment variable is not set or empty",
                f"export {token_env}=<token> first",
            )
        user = "__token__"  # PyPI tokens always go with this username
    else:
        user, password = _twine_credentials(index, env)
    redact.register(password, user=user)  # with its Basic-auth form: a reason phrase may echo the header
    for what, value in (("username", user), ("password", password)):
        problem = basic_auth_problem(value)
        if problem:  # requests would fail deep inside (UnicodeEncodeError), or send a broken header
            raise PublishError(
                f"the {what} for {index.name} is not usable: it {problem}",
                "set it again, one line, as the index gave it (TWINE_PASSWORD, --token-env, ~/.pypirc)",
            )
    return user, password


def basic_auth_problem(value: str) -> str | None:
    """What keeps `value` out of an HTTP Basic Authorization header (None: nothing). The header is one
    line of Latin-1 (what requests encodes it as); the message never quotes the value."""
    for index, char in enumerate(value, 1):
        where = f"(character {index} of {len(value)})"
        if char in "\r\n":
            return f"holds a line break {where}"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"holds the control character U+{ord(char):04X} {where}"
        if ord(char) > 0xFF:
            return f"holds a character HTTP Basic authentication cannot carry (not Latin-1) {where}"
    return None


def _twine_credentials(index: Index, env: Mapping[str, str]) -> tuple[str, str]:
    import requests
    from twine import auth, exceptions

    route_twine_logs()
    config = dict(index.pypirc or {"username": None, "password": None})
    config["repository"] = index.upload_url
    redact.register(config.get("password"), user=config.get("username"))
    # An exported-but-empty variable means "not set" (twine would let it hide .pypirc).
    given = auth.CredentialInput(env.get("TWINE_USERNAME") or None, env.get("TWINE_PASSWORD") or None)
    resolver = auth.Private(config, given)
    hint = (
        f"set TWINE_USERNAME/TWINE_PASSWORD, add [{index.name}] to ~/.pypirc, store them in keyring, "
        "or pass --token-env VAR"
    )
    try:
        user, password = resolver.username, resolver.password
    except exceptions.NonInteractive:
        raise PublishError(f"no credentials for {index.name} ({index.upload_url})", hint) from None
    except (exceptions.TrustedPublishingFailure, requests.RequestException) as exc:
        raise PublishError(
            f"no credentials for {index.name}, and trusted publishing failed ({type(exc).__name__})", hint
        ) from None
    if not password:
        raise PublishError(f"no password for {index.name} ({index.upload_url})", hint)
    return user or "__token__", password
