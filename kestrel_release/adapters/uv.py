"""uv: where it is, and the commands that run through it (venvs, installs).

The wheel build command of each frontend (uv or pypa/build) is frontend.py's.

uv is a dependency of this tool, so its binary normally comes from the `uv`
Python package; PATH is the fallback.
"""

from __future__ import annotations

import functools
import re
import shutil
import threading
from pathlib import Path

from kestrel_release.errors import PreflightError
from kestrel_release.process import proc

_lock = threading.Lock()


def find_uv() -> Path:
    """The uv binary, or PreflightError saying how to get it (thread-safe, looked up once)."""
    # uv.find_uv_bin() initialises sysconfig, whose first use is not thread-safe in CPython
    # (two threads at once can fail with "can only concatenate str (not NoneType)").
    with _lock:
        return _find_uv()


@functools.lru_cache(maxsize=1)
def _find_uv() -> Path:
    try:
        from uv import find_uv_bin

        return Path(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return Path(found)
    raise PreflightError("uv not found", "install it: python -m pip install uv (or see https://docs.astral.sh/uv/)")


def version(uv: Path) -> str:
    out = proc.probe([uv, "--version"])
    if out is None:
        return "unknown"
    parts = out.output.split()
    return parts[1] if len(parts) >= 2 else "unknown"


def venv_command(
    uv: Path,
    python: str | Path,
    path: Path,
    *,
    relocatable: bool = False,
    isolated: bool = False,
    system_site_packages: bool = False,
) -> list[str | Path]:
    """argv of `uv venv` at `path` for `python`. relocatable: entry points (cmake, ninja...) keep
    working once the directory is renamed (build envs are made in a temp dir, then renamed);
    isolated: no uv configuration applies (a smoke test sees only the index it names);
    system_site_packages: the interpreter's packages are visible (a torch variant reusing the torch
    already installed there, on a GPU host without network)."""
    options = ["--quiet", "--relocatable"] if relocatable else []
    options += ["--no-config"] if isolated else []
    options += ["--system-site-packages"] if system_site_packages else []
    return [uv, "venv", *options, "--python", python, path]


def pip_install_command(
    uv: Path,
    python: str | Path,
    requirements: list[str],
    *,
    isolated: bool = False,
    compile_bytecode: bool = False,
    no_deps: bool = False,
    extra_index: str = "",
) -> list[str | Path]:
    """argv of `uv pip install` of `requirements` into the env of `python`. isolated: no uv configuration
    and no cache, the index from the environment alone (`index_env`: what a user installing the release
    gets); compile_bytecode: quietly, with .pyc written (build envs are reused many times); extra_index:
    an index searched before the default one (PyTorch's per-CUDA index: uv takes a package from the
    first index that has it, so torch and its CUDA libraries come from there, the rest from PyPI)."""
    options = ["--quiet", "--compile-bytecode"] if compile_bytecode else []
    options += ["--extra-index-url", extra_index] if extra_index else []
    options += ["--no-deps"] if no_deps else []
    options += ["--no-config", "--no-cache"] if isolated else []
    return [uv, "pip", "install", *options, "--python", python, "--", *requirements]


def target_install_command(uv: Path, target: Path, requirements: list[str], *, python: str, platform: str) -> list[str]:
    """argv of `uv pip install --target` for another interpreter and platform: what a container build
    carries in (its build requirements, auditwheel), resolved here for `python` ("3.9") on `platform`
    ("x86_64-manylinux_2_31"), so the container needs no index and no network."""
    return [
        str(uv),
        "pip",
        "install",
        "--quiet",
        "--target",
        str(target),
        "--python-version",
        python,
        "--python-platform",
        platform,
        "--",
        *requirements,
    ]


# uv's words for an index it could not reach (DNS, refused, TLS, timeouts, --offline) and for a
# resolution with no candidate; kept loose because uv rewords them between releases.
_UNREACHABLE = re.compile(
    r"dns error|failed to lookup address|name or service not known|temporary failure in name resolution|"
    r"tcp connect error|connection refused|connection reset|network is unreachable|operation timed out|"
    r"timed out|client error \(connect\)|error sending request|network connectivity is disabled|"
    r"network was disabled|"
    r"certificate|tls handshake",
    re.IGNORECASE,
)
_UNRESOLVABLE = re.compile(
    r"no solution found when resolving|not found in the package registry|no version of|"
    r"requirements are unsatisfiable|no matching distribution",
    re.IGNORECASE,
)
_FETCH_URL = re.compile(r"Failed to fetch:? `?(\S+?)`?$", re.MULTILINE)
_MISSING = re.compile(r"Because (?:there is no version of |only )?([A-Za-z0-9._-]+)")


def install_failure(output: str) -> tuple[str, str]:
    """What an `uv pip install` failure was, from its output: ("unreachable", the URL it could not
    fetch), ("unresolvable", the distribution with no match) or ("other", the first error line)."""
    glyphs = " \u00d7\u2570\u2500\u25b6\u2502"  # the tree uv draws around its causes
    lines = [ln.strip(glyphs) for ln in output.splitlines() if ln.strip()]
    lines = [ln.removeprefix("cause: ").removeprefix("Caused by: ").strip() for ln in lines]
    text = "\n".join(lines)
    if _UNREACHABLE.search(text):
        url = _FETCH_URL.search(text)
        root = next((ln for ln in reversed(lines) if _UNREACHABLE.search(ln)), "")
        return "unreachable", f"{url.group(1) if url else 'the index'} could not be reached ({root})"
    if _UNRESOLVABLE.search(text):
        missing = _MISSING.search(text)
        why = next((ln for ln in lines if ln.startswith("Because")), lines[-1] if lines else "")
        return "unresolvable", (f"{missing.group(1)}: " if missing else "") + why
    first = next((ln for ln in lines if ln.lower().startswith("error")), lines[-1] if lines else "no output")
    return "other", first


def index_env(simple_url: str, credentials: tuple[str, str] | None) -> dict[str, str]:
    """The environment that makes `simple_url` uv's only index, read with `credentials` when given.

    The credentials travel in the URL's userinfo inside the child's environment (uv sends them to that
    index's host only): never on a command line, where every local user can read them."""
    from urllib.parse import quote, urlsplit, urlunsplit

    from kestrel_release.ui import redact

    if not credentials or not credentials[1]:
        return {"UV_DEFAULT_INDEX": simple_url}
    user, password = credentials
    parts = urlsplit(simple_url)
    if parts.scheme not in ("http", "https"):  # a file:// index has no one to log in to
        return {"UV_DEFAULT_INDEX": simple_url}
    quoted = quote(password, safe="")
    redact.register(password)
    redact.register(quoted)  # its URL form, should uv ever echo the URL
    host = parts.netloc.rpartition("@")[2]
    return {"UV_DEFAULT_INDEX": urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}:{quoted}@{host}"))}
