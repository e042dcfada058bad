"""Which CUDA builds PyTorch's own index serves for each torch minor, read from the index itself, cached.

download.pytorch.org/whl/torch/ is a PEP 503 page listing every torch wheel of every CUDA build, each
with PyTorch's local version (`torch-2.14.0+cu132-cp313-cp313-manylinux_2_28_x86_64.whl`); the
`+cuXYZ` tags of a minor's final releases are the CUDAs `<root>/cuXYZ` installs it from (CPU, ROCm and
XPU builds are not CUDA). A new torch or a dropped CUDA needs no release of this tool.

Cached like PyPI's answer (adapters/pypi/torch_cuda.py): the cache dir's `torch-index-cuda.json`, each
minor with the day it was read; older than MAX_AGE it is read again, and used with a warning when the
index cannot be reached; a minor never read is unknown (left out), never guessed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from kestrel_release.adapters.pypi.torch_cuda import Unreadable, read_recently, read_url

PYTORCH = "https://download.pytorch.org/whl"
ROOT_ENV = "KESTREL_RELEASE_TORCH_INDEX"  # another root in PyTorch's layout (a mirror; the tests' server)
CACHE_FILE = "torch-index-cuda.json"
PAGE_MAX = 64 * 1024 * 1024  # the real page lists tens of thousands of wheels
_CU = re.compile(r"cu(\d{2})(\d{1,2})")


def root() -> str:
    import os

    return (os.environ.get(ROOT_ENV) or PYTORCH).rstrip("/")


class _Links(HTMLParser):
    """The file names of a simple page's anchors (the href's last segment, URL-decoded)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            path = urllib.parse.urlsplit(href).path
            self.names.append(urllib.parse.unquote(path.rsplit("/", 1)[-1]))


def cudas_of_page(html: str) -> dict[str, list[str]]:
    """{minor: [CUDA X.Y, ...] oldest first} from the simple page of torch; final releases only."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    links = _Links()
    links.feed(html)
    found: dict[str, set[tuple[int, int]]] = {}
    for name in links.names:
        try:
            _, version, _, _ = parse_wheel_filename(name)
        except (InvalidWheelFilename, ValueError):
            continue
        m = _CU.fullmatch(version.local or "")
        if m is None or version.is_prerelease or version.is_devrelease or len(version.release) < 2:
            continue
        minor = f"{version.release[0]}.{version.release[1]}"
        found.setdefault(minor, set()).add((int(m.group(1)), int(m.group(2))))
    return {minor: [f"{a}.{b}" for a, b in sorted(cudas)] for minor, cudas in found.items()}


def read_from_index(index_root: str = PYTORCH) -> dict[str, list[str]]:
    """{minor: CUDAs} of the whole index; Unreadable when the page cannot be read."""
    url = f"{index_root.rstrip('/')}/torch/"
    return cudas_of_page(read_url(url, PAGE_MAX).decode("utf-8", "replace"))


def index_cudas(
    minors: list[str], cache_dir: Path, index_root: str = PYTORCH, now: dt.datetime | None = None
) -> dict[str, list[str]]:
    """{minor: the CUDAs PyTorch's index serves it for} for each of `minors` known fresh, refreshed or
    stale (a warning says which are stale); a minor the index does not list, or never read, is left out."""
    from kestrel_release.files import fsutil
    from kestrel_release.ui import console

    now = now or dt.datetime.now(dt.timezone.utc)
    path = cache_dir / CACHE_FILE
    try:
        everything = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        everything = {}
    everything = everything if isinstance(everything, dict) else {}
    raw = everything.get(index_root)
    cached: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def fresh(minor: str) -> bool:
        return read_recently(cached.get(minor), now)

    if any(not fresh(m) for m in minors):
        try:
            read = read_from_index(index_root)
        except Unreadable as exc:
            stale = [m for m in minors if isinstance(cached.get(m), dict)]
            if stale:
                days = ", ".join(f"torch {m} (read {str(cached[m].get('read', '?'))[:10]})" for m in stale)
                console.warn(f"PyTorch's index could not be read again ({exc}); using the cached answers: {days}")
        else:
            stamp = now.isoformat(timespec="seconds")
            cached = {minor: {"cuda": cudas, "read": stamp} for minor, cudas in read.items()}
            everything[index_root] = cached
            fsutil.atomic_write_text(path, json.dumps(everything, indent=1, sort_keys=True) + "\n")
    out: dict[str, list[str]] = {}
    for minor in minors:
        entry = cached.get(minor)
        if isinstance(entry, dict) and isinstance(entry.get("cuda"), list):
            out[minor] = [str(c) for c in entry["cuda"]]
    return out
