"""What a failed smoke test really says, read from uv's and the import child's output (pure: no process).

"does not install/import" sends a user to the package when the index refused to serve it (401/403),
did not list the version yet, or had no wheel for that Python; or to the index when the package
imports a module it does not declare. Each reading is one kind, one line that says which:

  auth        the index refused to serve the release (with or without the upload's credentials)
  missing     the index does not list NAME (or NAME==VERSION)
  no-wheel    no wheel of the release installs on this Python/platform (uv's tag hint quoted)
  unreachable the index could not be reached
  import      a module of the release fails to import (the exception and where)
  version     the installed metadata or a module's __version__ is not the release's version
  install     anything else uv said (its error lines quoted)

(A dependency that cannot be fetched is read by smoke.py with adapters/uv.install_failure.)
"""

from __future__ import annotations

import re

_AUTH = re.compile(r"\b(401|403)\b[ (]*(Unauthorized|Forbidden)?", re.I)
_NETWORK = re.compile(
    r"connection refused|dns error|failed to lookup address|tcp connect error|timed out|operation timed out|"
    r"error sending request|connection reset",
    re.I,
)
_TAGS = re.compile(r"has no wheels with a matching (Python implementation|Python ABI|platform) tag", re.I)


def _lines(output: str) -> list[str]:
    """uv's `error:`, `cause:` and `hint:` lines, without their prefixes (the rest is progress)."""
    out = []
    for raw in output.splitlines():
        line = raw.strip()
        for prefix in ("error:", "cause:", "hint:", "Caused by:"):
            if line.startswith(prefix):
                out.append(line[len(prefix) :].strip())
    return out or [line.strip() for line in output.splitlines() if line.strip()][-3:]


def _hint(output: str) -> str:
    hints = [ln.strip()[len("hint:") :].strip() for ln in output.splitlines() if ln.strip().startswith("hint:")]
    return hints[0] if hints else ""


def install_failure(
    output: str, name: str, version: str, python: str, simple_url: str, credentials: bool
) -> tuple[str, str]:
    """(kind, one line) for a failed `uv pip install NAME==VERSION` from `simple_url` alone."""
    found = _AUTH.search(output)
    if found:
        status = found.group(1) + (f" {found.group(2)}" if found.group(2) else "")
        if credentials:
            return "auth", (
                f"{simple_url} refused to serve {name} {version} to the credentials the upload used ({status}): "
                "they may upload but not read there"
            )
        return "auth", f"{simple_url} needs credentials to read ({status}) and the smoke test had none"
    if _TAGS.search(output):
        hint = _hint(output)
        return "no-wheel", (
            f"no wheel of {name} {version} on {simple_url} installs on Python {python} here"
            + (f" ({hint.rstrip('.')})" if hint else "")
        )
    if re.search(rf"there is no version of {re.escape(name)}\b", output, re.I):
        return "missing", (
            f"{simple_url} does not list {name} {version} (other versions of it are there): an index that "
            "lists uploads with a delay, or a simple URL that is not the upload's"
        )
    if re.search(rf"\b{re.escape(name)} was not found in the package registry", output, re.I):
        return "missing", (
            f"{simple_url} has no project {name}: the upload is not visible there (a delayed index, or a simple "
            "URL that is not the upload's)"
        )
    if _NETWORK.search(output):
        return "unreachable", f"cannot reach {simple_url}: {_lines(output)[-1]}"
    return "install", f"uv could not install {name}=={version} from {simple_url}: " + " / ".join(_lines(output)[:3])


def import_failure(report: dict, name: str, python: str) -> tuple[str, str]:
    """(kind, line) from the import child's report: {"error": {module, type, message, where}}."""
    err = report.get("error") or {}
    where = f" at {err['where']}" if err.get("where") else ""
    message = str(err.get("message", ""))
    # libc10.so/libtorch*.so are found only once `import torch` has loaded them (the extension has no RPATH to
    # them): a package that loads its extension first fails for every user who imports it before torch.
    before_torch = (
        "; its extension is loaded before torch: import torch first in the package's __init__.py"
        if re.search(r"lib(c10|torch)\w*\.so[^:]*: cannot open shared object file", message)
        else ""
    )
    return "import", (
        f"{name} installed on Python {python}, but `import {err.get('module', '?')}` fails: "
        f"{err.get('type', 'Error')}: {message}{where}{before_torch}"
    )


def version_mismatch(report: dict, name: str, version: str) -> tuple[str, str] | None:
    """(kind, line) when the installed distribution or its modules do not say `version`; None when they do.

    A module's __version__ passes when any top-level module of the distribution says `version` (a vendored
    package may carry its own); a distribution whose modules have none is checked by its metadata alone."""
    installed = str(report.get("dist_version", ""))
    if not _same(installed, version):
        return "version", (
            f"the index served {name} {installed or '(no version)'} for {name}=={version}: "
            "another release answers at that version there"
        )
    versions = {m: v for m, v in (report.get("versions") or {}).items() if isinstance(v, list) and v}
    if not versions or any(_same(v[0], version) for v in versions.values()):
        return None
    module, (said, path) = next(iter(sorted(versions.items())))
    return "version", (
        f"{module}.__version__ is {said!r}, expected {version} (the wheel's METADATA says {installed}; "
        f"{path or module}): a place the version lives was not updated"
    )


def _same(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b
