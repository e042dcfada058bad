"""Which GitHub repository and which token: the token lookup and OWNER/NAME of the target (no network)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kestrel_release.errors import PublishError
from kestrel_release.ui import redact

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")  # gh's and Actions' names, in gh's order


def token_variable(token_env: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The variable a GitHub token is read from: `token_env`, else the first of GH_TOKEN/GITHUB_TOKEN
    that is set and not empty; None when none is."""
    env = os.environ if env is None else env
    return next((n for n in ([token_env] if token_env else TOKEN_VARIABLES) if env.get(n)), None)


def resolve_token(
    given: str | None, token_env: str | None, *, required: bool, env: Mapping[str, str] | None = None
) -> str | None:
    """The GitHub token: `given` > --token-env NAME > GH_TOKEN > GITHUB_TOKEN (beside
    pypi_config.resolve_credentials, the other credential lookup); registered as a secret.
    PublishError (exit 6) naming the variables when `required` and there is none."""
    env = os.environ if env is None else env
    name = token_variable(token_env, env)
    value = given or (env[name] if name else None)
    if value is None and required:
        names = [token_env] if token_env else list(TOKEN_VARIABLES)
        raise PublishError(
            f"no GitHub token: {' or '.join(names)} is not set",
            "export a token with contents:write on the repository (or pass --token-env NAME)",
        )
    if not value:
        return None
    for line in value.splitlines():  # mask every piece before anything can print one
        redact.register(line.strip())
    token = redact.register(value.strip())
    problem = token_problem(token or "")
    if problem:
        where = "the token given" if given else name
        raise PublishError(
            f"the GitHub token in {where} is not usable: it {problem}",
            'set it to the token alone, one line, no spaces (e.g. GH_TOKEN="$(head -n1 FILE)")',
        )
    return token


def token_problem(token: str) -> str | None:
    """What makes `token` impossible to send in an Authorization header (None: nothing). HTTP header
    values are one line of Latin-1; a token is ASCII without spaces, so anything else is a pasting
    mistake (a two-line token file, a CR from Windows, a NUL) and never reaches the network, where
    the HTTP library's error would quote the whole header, token included."""
    for index, char in enumerate(token, 1):
        if char in "\r\n":
            return f"holds a line break (character {index} of {len(token)})"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"holds the control character U+{ord(char):04X} (character {index} of {len(token)})"
        if char.isspace():
            return f"holds a space (character {index} of {len(token)})"
        if ord(char) > 0x7E:
            return f"holds a non-ASCII character (character {index} of {len(token)})"
    return None


def repo_from_remote(url: str) -> str | None:
    """OWNER/NAME of a github.com remote URL (https, ssh or scp-like), else None."""
    import re

    m = re.match(
        r"^(?:https?://(?:[^@/]+@)?github\.com/|ssh://git@github\.com/|git@github\.com:)"
        r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$",
        url.strip(),
    )
    return f"{m.group(1)}/{m.group(2)}" if m else None


def target_repo(cfg: Config) -> tuple[str | None, str]:
    """OWNER/NAME for the github target and where it came from: the config, else the git remote 'origin'."""
    repo = cfg.github().repo
    if repo:
        return repo, "targets.github.repo"
    from kestrel_release.adapters import git

    derived = repo_from_remote(git.remote_url(cfg.project_dir) or "")
    return (derived, "git remote 'origin'") if derived else (None, "")
