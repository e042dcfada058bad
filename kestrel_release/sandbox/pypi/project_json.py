"""The strict sandbox's /pypi/<name>/json: a project's releases and file sizes as PyPI shapes them.

Release tools read `releases.<version>[].size` to learn what a project already
holds against its quota (PyPI: 10 GiB unless raised), so the sandbox serves the
fields PyPI's real response has for each file (filename, size, digests,
packagetype, upload time, url, yanked) plus `info` and `urls` (the latest release).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from kestrel_release.sandbox.pypi.index_rules import release_of

__all__ = ["project_json"]


def _entry(path: Path, base_url: str) -> dict:
    data = path.read_bytes()
    stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
    return {
        "filename": path.name,
        "size": len(data),
        "packagetype": "bdist_wheel" if path.suffix == ".whl" else "sdist",
        "digests": {
            "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(),
            "blake2b_256": hashlib.blake2b(data, digest_size=32).hexdigest(),
        },
        "upload_time_iso_8601": stamp.isoformat().replace("+00:00", "Z"),
        "upload_time": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
        "url": f"{base_url}/packages/{path.name}",
        "yanked": False,
        "yanked_reason": None,
        "requires_python": None,
    }


def project_json(root: Path, name: str, base_url: str = "") -> dict | None:
    """/pypi/<name>/json for the files under `root`; None (a 404) when the project has none."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    wanted = str(canonicalize_name(name))
    releases: dict[str, list[dict]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        parsed = release_of(path.name)
        if parsed and parsed[0] == wanted:
            releases.setdefault(parsed[1], []).append(_entry(path, base_url))
    if not releases:
        return None

    def order(version: str) -> tuple[int, Version]:
        try:
            return (1, Version(version))
        except InvalidVersion:
            return (0, Version("0"))

    latest = max(releases, key=order)
    return {
        "info": {"name": name, "version": latest},
        "last_serial": 0,
        "releases": releases,
        "urls": releases[latest],
        "vulnerabilities": [],
    }
