"""Secret registry: every credential we read is registered here so that every
output path (console, logs, exception text, child-process output) can mask it.

Secrets are never put on a child's argv: `proc.run` passes them via env only.

A secret travels in more shapes than the one we read: percent-encoded in a URL, and inside
HTTP Basic auth as base64 of `user:password` (a proxy's or index's reason phrase may echo the
Authorization header). `register` records those forms too. Text that carries a credential by its
shape (URL userinfo, `Basic`/`Bearer` values, an echoed Authorization header, known token formats)
is masked even when nobody registered it.
"""

from __future__ import annotations

import re
import threading

_lock = threading.Lock()
_secrets: set[str] = set()  # masked in every output
_scrubbed: set[str] = set()  # also kept from build children's environments (publish credentials)
MASK = "****"
# The usernames tokens are sent with: PyPI's, and git's over https to GitHub (Actions' checkout).
_TOKEN_USERS = ("__token__", "x-access-token")

# Token shapes we mask even if they were never registered (belt and braces).
_PATTERNS = [
    # PyPI tokens are macaroons: "pypi-" + base64 that always starts "AgE" (a bare "pypi-..." would
    # also match paths like /tmp/kestrel-pypi-packages-1234abcd).
    re.compile(r"pypi-AgE[A-Za-z0-9_\-]{16,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{20,}"),
]
# Credentials recognised by where they stand, whatever their shape: (pattern, replacement).
_USERINFO = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^\s/@:?#]*):([^\s/@?#]+)@")
_TEXT_PATTERNS = [
    (_USERINFO, rf"\1\2:{MASK}@"),  # scheme://user:password@host
    (re.compile(r"\b(https?://)([^\s/@:?#]{16,})@"), rf"\1{MASK}@"),  # https://TOKEN@github.com
    # an Authorization header's value, echoed (`Authorization: token X`, Actions' `extraheader = AUTHORIZATION: basic X`)
    (re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:[a-z]+\s+)?)(?!\*\*\*\*)[^\s\"',;]+"), rf"\g<1>{MASK}"),
    # base64 after Basic (it has a digit, + / or =: "Basic authentication" is prose), a Bearer token
    (re.compile(r"\b([Bb]asic\s+)(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/_-]{8,}={0,2}"), rf"\g<1>{MASK}"),
    (re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/-]{8,}=*"), rf"\g<1>{MASK}"),
]


def _forms(value: str, user: str | None) -> set[str]:
    """`value` as it may appear in output: itself, percent-encoded, and as Basic auth of user:value."""
    import base64
    from urllib.parse import quote, quote_plus

    forms = {value, quote(value, safe=""), quote_plus(value)}
    for name in dict.fromkeys([user or "", *_TOKEN_USERS]):
        if not name:
            continue
        raw = f"{name}:{value}".encode()
        for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
            forms |= {encoded, encoded.rstrip("=")}
    return {f for f in forms if len(f) >= 4}


def register(value: str | None, user: str | None = None, *, scrub: bool = True) -> str | None:
    """Remember a secret so it is masked everywhere, in every form it travels in (`user`: the
    username it is sent with, for its Basic-auth encoding); returns it unchanged. `scrub=False`: mask
    it, but leave variables holding it to build children (an index URL they install from)."""
    if value and len(value) >= 4:
        forms = _forms(value, user)
        with _lock:
            _secrets.update(forms)
            if scrub:
                _scrubbed.update(forms)
    return value


def register_urls(text: str | None, *, scrub: bool = True) -> None:
    """Register the credentials of every URL in `text`: the password of user:password@, or a
    token-length user alone (https://TOKEN@github.com)."""
    from urllib.parse import unquote

    for match in re.finditer(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://([^\s/@?#]+)@", text or ""):
        user, sep, password = match.group(1).partition(":")
        if sep and password:
            register(password, user=unquote(user), scrub=scrub)
            register(unquote(password), user=unquote(user), scrub=scrub)
        elif not sep and len(user) >= 16:
            register(user, scrub=scrub)


def mask(text: str) -> str:
    """Replace every registered secret and every credential-shaped string by ****."""
    if not text:
        return text
    with _lock:
        values = sorted(_secrets, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(MASK, text)
    if "://" in text or "uthoriz" in text or "asic" in text or "Bearer" in text:
        for pattern, replacement in _TEXT_PATTERNS:
            text = pattern.sub(replacement, text)
    return text


def clear() -> None:
    """Forget registered secrets (tests)."""
    with _lock:
        _secrets.clear()
        _scrubbed.clear()


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
        values = list(_scrubbed)
    if named or _CREDENTIAL_NAMES.match(name):
        return True
    if not value:
        return False
    # Containment only for long secrets: a short password ("test") inside PATH must not strip PATH.
    return any(v == value or (len(v) >= 12 and v in value) for v in values) or any(p.search(value) for p in _PATTERNS)


def register_startup(
    environ: dict[str, str] | None = None,
    argv: list[str] | None = None,
    pypirc: str = "~/.pypirc",
    home: str | None = None,
    cwd: str | None = None,
) -> None:
    """Register every credential visible at start-up, before anything can print it.

    Sources: credential variables, the --token-env variable named on the command line, URLs with
    credentials in any variable (index URLs), ~/.pypirc (passwords with their usernames, repository
    URLs; read leniently here: publish reports a malformed file itself), and git: the remotes and
    Actions' `extraheader` of the repository of the cwd and of --project, ~/.gitconfig and
    ~/.git-credentials.
    """
    import os
    import sys

    environ = dict(os.environ) if environ is None else environ
    argv = sys.argv if argv is None else argv
    home = os.path.expanduser("~") if home is None else home
    projects = [cwd or os.getcwd()]
    for i, arg in enumerate(argv):
        name = argv[i + 1] if arg == "--token-env" and i + 1 < len(argv) else arg.partition("--token-env=")[2]
        if name:
            register_env_name(name)
        project = argv[i + 1] if arg == "--project" and i + 1 < len(argv) else arg.partition("--project=")[2]
        if project:
            projects.append(project)
    user = environ.get("TWINE_USERNAME") or None
    for name, value in environ.items():
        if is_credential_var(name) and name not in (
            "PYTHON_KEYRING_BACKEND",
            "TWINE_REPOSITORY_URL",
            "TWINE_REPOSITORY",
            "TWINE_USERNAME",
        ):
            register(value, user=user if name == "TWINE_PASSWORD" else None)
        if "://" in value and "@" in value:  # an index URL with credentials: a build child may need it
            register_urls(value, scrub=is_credential_var(name))
    _register_pypirc(os.path.join(home, pypirc[2:]) if pypirc.startswith("~/") else pypirc)
    _register_git(projects, home, environ)


def _register_pypirc(path: str) -> None:
    import configparser

    parser = configparser.RawConfigParser()
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, UnicodeDecodeError, configparser.Error):
        return
    for section in parser.sections():
        user = parser.get(section, "username", fallback=None)
        register(parser.get(section, "password", fallback=None), user=user)
        register_urls(parser.get(section, "repository", fallback=None))


def _git_dir(start: str) -> str | None:
    """The .git directory of the repository holding `start` (a worktree's own git dir), else None."""
    import os

    here = os.path.abspath(start)
    while True:
        dot = os.path.join(here, ".git")
        if os.path.isdir(dot):
            return dot
        if os.path.isfile(dot):  # a worktree or submodule: "gitdir: <path>"
            try:
                with open(dot, encoding="utf-8") as fh:
                    target = fh.read(4096).strip().removeprefix("gitdir:").strip()
            except (OSError, UnicodeDecodeError):
                return None
            return os.path.join(here, target)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _register_git(projects: list[str], home: str, environ: dict[str, str]) -> None:
    """Credentials in git's configuration: remote URLs with user:token@, `extraheader` values."""
    import base64
    import binascii
    import os

    files = [os.path.join(home, ".gitconfig"), os.path.join(home, ".git-credentials")]
    files.append(os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "git", "config"))
    for project in projects:
        git_dir = _git_dir(project)
        if git_dir is None:
            continue
        files.append(os.path.join(git_dir, "config"))
        try:  # a worktree's settings live in the common git dir
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
                files.append(os.path.join(git_dir, fh.read(4096).strip(), "config"))
        except (OSError, UnicodeDecodeError):
            pass
    for path in dict.fromkeys(files):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(1024 * 1024)
        except OSError:
            continue
        register_urls(text)
        for blob in re.findall(r"(?i)authorization:\s*(?:basic|bearer|token)\s+([A-Za-z0-9+/=._~-]+)", text):
            register(blob)
            try:
                user, sep, password = base64.b64decode(blob, validate=True).decode("utf-8").partition(":")
            except (binascii.Error, ValueError):
                continue
            if sep:
                register(password, user=user)
