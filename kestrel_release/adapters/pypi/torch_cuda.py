"""Which CUDA each torch minor's PyPI wheels are built with, read from PyPI's own metadata, cached.

A new torch needs no release of this tool: the index says it. For a torch minor, the newest release of
it in the JSON API (`/pypi/torch/json`), then the PEP 658 metadata of one of its Linux wheels
(`<wheel URL>.metadata`): torch >= 2.11 pins the whole toolkit (`Requires-Dist: cuda-toolkit[...]==13.0.3`),
older torch pins the runtime (`nvidia-cuda-runtime-cu12==12.8.90`); the X.Y of that pin is the answer.

The answers are cached in the tool's cache dir with the day each was read (`torch-cuda.json`). An entry
older than MAX_AGE is read again when the index answers, and used with a warning when it does not; a minor
never read and unreachable is unknown (None), never guessed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

PYPI = "https://pypi.org"
ROOT_ENV = "KESTREL_RELEASE_TORCH_PYPI"  # another PyPI-like root to read (a mirror; the tests' server)
MAX_AGE = dt.timedelta(days=7)


def read_recently(entry: object, now: dt.datetime) -> bool:
    """Whether a cache entry ({"read": ISO date, ...}) was read from its index within MAX_AGE of `now`."""
    try:
        return isinstance(entry, dict) and now - dt.datetime.fromisoformat(entry["read"]) <= MAX_AGE
    except (TypeError, KeyError, ValueError):
        return False


TIMEOUT = 20.0
METADATA_MAX = 4 * 1024 * 1024
CACHE_FILE = "torch-cuda.json"
# `cuda-toolkit[...]==13.0.3` (torch >= 2.11) or `nvidia-cuda-runtime-cu12==12.8.90` / `nvidia-cuda-runtime==13.0.96`.
_PIN = re.compile(
    r"^Requires-Dist:\s*(cuda-toolkit|nvidia-cuda-runtime(?:-cu\d+)?)\s*(?:\[[^\]]*\])?\s*==\s*(\d+)\.(\d+)",
    re.IGNORECASE | re.MULTILINE,
)


def root() -> str:
    import os

    return os.environ.get(ROOT_ENV) or PYPI


class Unreadable(Exception):
    """The index gave no answer for a torch minor; the message says why (for a warning)."""


def cuda_of_metadata(text: str) -> str | None:
    """'13.0' from a torch wheel's METADATA; None when it pins no CUDA (a CPU-only or macOS wheel)."""
    pins = {m.group(1).lower().startswith("cuda-toolkit"): f"{m.group(2)}.{m.group(3)}" for m in _PIN.finditer(text)}
    return pins.get(True) or pins.get(False)


def read_url(url: str, max_bytes: int, byte_range: str = "") -> bytes:
    """The body at `url` (at most `max_bytes`), the whole request within TIMEOUT (json_api's way); with
    `byte_range` ("0-99", "-65536") only those bytes, and a server that ignores the range is refused."""
    from kestrel_release.adapters import _deadline

    opened: list = []
    headers = {"Range": f"bytes={byte_range}"} if byte_range else {}

    def fetch() -> bytes:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT) as resp:
            opened.append(resp)
            if byte_range and resp.status != 206:
                raise Unreadable(f"{url} does not serve byte ranges (HTTP {resp.status})")
            return resp.read(max_bytes + 1)

    def abandon() -> None:
        for resp in opened:
            _deadline.sever(resp)

    try:
        data = _deadline.call(fetch, TIMEOUT, f"reading {url}", abandon)
    except urllib.error.HTTPError as exc:
        raise Unreadable(f"{url} answered HTTP {exc.code}") from None
    except _deadline.DeadlineExceeded as exc:
        raise Unreadable(str(exc)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unreadable(f"{url} could not be read ({type(exc).__name__})") from None
    if len(data) > max_bytes:
        raise Unreadable(f"{url} answered more than {max_bytes} bytes")
    return data


def _minor_of(version: str) -> str | None:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)  # final releases only: no rc, no dev
    return f"{m.group(1)}.{m.group(2)}" if m else None


def read_from_index(minors: list[str], root: str = PYPI) -> dict[str, str | None]:
    """{minor: CUDA X.Y or None (no CUDA pin)} for each minor the index has; Unreadable when it cannot tell."""
    from packaging.version import Version

    project_url = f"{root.rstrip('/')}/pypi/torch/json"
    try:
        doc = json.loads(read_url(project_url, 64 * 1024 * 1024))
    except ValueError:
        raise Unreadable(f"{project_url} is not JSON") from None
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        raise Unreadable(f"{project_url} lists no releases")
    out: dict[str, str | None] = {}
    for minor in minors:
        versions = sorted((v for v in releases if _minor_of(v) == minor), key=Version, reverse=True)
        for version in versions:
            files = [f for f in releases[version] or [] if isinstance(f, dict) and not f.get("yanked")]
            wheels = [f for f in files if _linux(str(f.get("filename", "")))]
            answer = _first_metadata(project_url, wheels)
            if answer is not None:
                out[minor] = cuda_of_metadata(answer)
                break
    return out


def _linux(filename: str) -> bool:
    """A Linux wheel (its METADATA carries the CUDA pins; macOS and Windows wheels may not)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from kestrel_release import platforms

    try:
        tags = parse_wheel_filename(filename)[3]
    except (InvalidWheelFilename, ValueError):
        return False
    found = [platforms.parse(t.platform) for t in tags]
    return any(p is not None and p.system == "linux" for p in found)


def _first_metadata(base: str, wheels: list[dict]) -> str | None:
    """The METADATA of the first of `wheels` the index lets us read: its PEP 658 file, else (a mirror
    that serves none) the member itself by byte ranges of the wheel (adapters/pypi/wheel_range.py)."""
    from kestrel_release.adapters.pypi import wheel_range

    for wheel in wheels:
        url = urllib.parse.urljoin(base, str(wheel.get("url", "")))
        try:
            return read_url(url + ".metadata", METADATA_MAX).decode("utf-8", "replace")
        except Unreadable:
            pass
        try:
            return wheel_range.metadata(url, _read_range)
        except (Unreadable, wheel_range.NotAWheel):
            continue
    return None


def _read_range(url: str, start: int, length: int) -> bytes:
    """At most `length` bytes of `url` from `start` (a negative start: its last -start bytes)."""
    return read_url(url, length, str(start) if start < 0 else f"{start}-{start + length - 1}")[:length]


def pypi_cuda(minors: list[str], cache_dir: Path, root: str = PYPI, now: dt.datetime | None = None) -> dict[str, str]:
    """{minor: CUDA X.Y} of PyPI's torch wheels for each of `minors` known fresh, refreshed or stale
    (a warning says which are stale); a minor without an answer is left out."""
    from kestrel_release.files import fsutil
    from kestrel_release.ui import console

    now = now or dt.datetime.now(dt.timezone.utc)
    path = cache_dir / CACHE_FILE
    try:
        cached = json.loads(path.read_text(encoding="utf-8")).get(root, {})
    except (OSError, ValueError, AttributeError):
        cached = {}
    cached = cached if isinstance(cached, dict) else {}

    def fresh(minor: str) -> bool:
        return read_recently(cached.get(minor), now)

    wanted = [m for m in dict.fromkeys(minors) if not fresh(m)]
    if wanted:
        try:
            read = read_from_index(wanted, root)
        except Unreadable as exc:
            read = {}
            stale = [m for m in wanted if m in cached]
            if stale:
                days = ", ".join(f"torch {m} (read {str(cached[m].get('read', '?'))[:10]})" for m in stale)
                console.warn(f"PyPI's torch CUDA could not be refreshed ({exc}); using the cached answers: {days}")
        for minor, cuda in read.items():
            cached[minor] = {"cuda": cuda, "read": now.isoformat(timespec="seconds")}
        if read:
            try:
                everything = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            except (OSError, ValueError):
                everything = {}
            everything = everything if isinstance(everything, dict) else {}
            everything[root] = cached
            fsutil.atomic_write_text(path, json.dumps(everything, indent=1, sort_keys=True) + "\n")
    out: dict[str, str] = {}
    for minor in minors:
        entry = cached.get(minor)
        if isinstance(entry, dict) and entry.get("cuda"):
            out[minor] = str(entry["cuda"])
    return out
