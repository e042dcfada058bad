"""A release's files and upload times from an index's JSON API (PyPI's /pypi/<name>/<version>/json).

Used for PyPI's 14-day rule (new files cannot be added to a release created more
than 14 days ago) by verify with an explicit --target, and by publish's preflight.
PyPI, TestPyPI and the strict sandbox serve this API; an index that does not
(pypiserver, devpi) or cannot be reached answers None: the rule is then unknown,
never assumed. So does one that answers too slowly (the whole request, body included,
has publish.timeout), too much, or JSON nested too deep: `read_*` raise Unavailable
saying which, for the caller's warning.
"""

from __future__ import annotations

import datetime as dt
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

TIMEOUT = 5.0
RELEASE_MAX = 16 * 1024 * 1024  # one release's files
PROJECT_MAX = 64 * 1024 * 1024  # every release of a project (PyPI's torch page is a few MiB)


class Unavailable(Exception):
    """The index gave no usable JSON API answer; the message says why (for a warning)."""


def _get_json(url: str, timeout: float, max_bytes: int) -> object | None:
    """The document at `url`; None on 404; Unavailable for anything else. The whole request,
    connect to last byte, has `timeout` seconds: a server trickling its answer cannot hold us."""
    from kestrel_release.adapters import _deadline
    from kestrel_release.files import safejson

    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    opened: list = []

    def fetch() -> bytes:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            opened.append(resp)
            return resp.read(max_bytes + 1)

    def abandon() -> None:  # the worker's socket is shut down under it: its read ends now
        for resp in opened:
            _deadline.sever(resp)

    try:
        data = _deadline.call(fetch, timeout, f"reading {url}", abandon)
    except urllib.error.HTTPError as exc:
        # PyPI answers 404 for a release it does not have; an index without the API answers 404 too,
        # and then no release is known either: the rule cannot refuse what the index never saw.
        if exc.code == 404:
            return None
        raise Unavailable(f"{url} answered HTTP {exc.code}") from None
    except _deadline.DeadlineExceeded as exc:
        raise Unavailable(str(exc)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unavailable(f"{url} could not be read ({type(exc).__name__})") from None
    try:
        return safejson.loads(data, url, max_bytes=max_bytes)
    except safejson.Unusable as exc:
        raise Unavailable(str(exc)) from None


@dataclass(frozen=True)
class ReleaseFiles:
    files: dict[str, str]  # filename -> sha256
    first_upload: dt.datetime | None  # the earliest upload_time_iso_8601; None: no such release yet


def json_url_for(simple_url: str, name: str, version: str) -> str:
    """https://pypi.org/simple/ -> https://pypi.org/pypi/NAME/VERSION/json (same host, beside /simple/)."""
    base = simple_url.rstrip("/")
    base = base.removesuffix("/simple")
    quoted = urllib.parse.quote
    return f"{base}/pypi/{quoted(name, safe='')}/{quoted(version, safe='')}/json"


def parse_release(doc: object) -> ReleaseFiles:
    """The files and first upload time of a JSON API document; tolerant of missing fields."""
    urls = doc.get("urls") if isinstance(doc, dict) else None
    files: dict[str, str] = {}
    times = []
    for entry in urls if isinstance(urls, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            continue
        digests = raw if isinstance(raw := entry.get("digests"), dict) else {}
        files[entry["filename"]] = str(digests.get("sha256", ""))
        stamp = entry.get("upload_time_iso_8601")
        try:
            when = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            continue
        times.append(when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc))
    return ReleaseFiles(files, min(times) if times else None)


def read_release_files(simple_url: str, name: str, version: str, timeout: float = TIMEOUT) -> ReleaseFiles:
    """The release as the index sees it; ReleaseFiles({}, None) when it has no such release (404);
    Unavailable when the index cannot be reached or answers something else."""
    doc = _get_json(json_url_for(simple_url, name, version), timeout, RELEASE_MAX)
    return ReleaseFiles({}, None) if doc is None else parse_release(doc)


def release_files(simple_url: str, name: str, version: str, timeout: float = TIMEOUT) -> ReleaseFiles | None:
    """read_release_files, None where it raises Unavailable."""
    try:
        return read_release_files(simple_url, name, version, timeout)
    except Unavailable:
        return None


@dataclass(frozen=True)
class ProjectUsage:
    """What a project holds on an index, from /pypi/<name>/json (`releases.<ver>[].size`)."""

    exists: bool  # False: the index answered 404 (no such project, or no JSON API)
    releases: dict[str, int]  # version -> bytes of its files
    files: dict[str, int]  # filename -> bytes

    @property
    def total(self) -> int:
        return sum(self.files.values())


def project_json_url(simple_url: str, name: str) -> str:
    """https://pypi.org/simple/ -> https://pypi.org/pypi/NAME/json."""
    base = simple_url.rstrip("/").removesuffix("/simple")
    return f"{base}/pypi/{urllib.parse.quote(name, safe='')}/json"


def parse_project(doc: object) -> ProjectUsage:
    """Sizes per release and file of a project JSON document; entries without a size count 0."""
    releases_doc = doc.get("releases") if isinstance(doc, dict) else None
    releases: dict[str, int] = {}
    files: dict[str, int] = {}
    for version, entries in releases_doc.items() if isinstance(releases_doc, dict) else []:
        total = 0
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
                continue
            size = entry.get("size")
            size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else 0
            files[entry["filename"]] = size
            total += size
        releases[str(version)] = total
    return ProjectUsage(True, releases, files)


def read_project_usage(simple_url: str, name: str, timeout: float = TIMEOUT) -> ProjectUsage:
    """The project's files and sizes; ProjectUsage(False, ...) on 404; Unavailable when the index cannot
    be reached or answers something that is not the JSON API (the caller says the check was not made)."""
    url = project_json_url(simple_url, name)
    doc = _get_json(url, timeout, PROJECT_MAX)
    if doc is None:
        return ProjectUsage(False, {}, {})
    if not isinstance(doc, dict) or not isinstance(doc.get("releases"), dict):
        raise Unavailable(f"{url} is not PyPI's JSON API (no 'releases')")  # another API, or an HTML page
    return parse_project(doc)


def project_usage(simple_url: str, name: str, timeout: float = TIMEOUT) -> ProjectUsage | None:
    """read_project_usage, None where it raises Unavailable."""
    try:
        return read_project_usage(simple_url, name, timeout)
    except Unavailable:
        return None
