"""The pages of a static package index (PEP 503 HTML, PEP 691/700 JSON), pure: no I/O, no console.

Layout (PyTorch's, download.pytorch.org/whl/cu130/...): one folder per CUDA flavour, in it one
folder per project (PEP 503's normalized name), each with `index.html` (what pip and uv read) and
`index.json` (the same list as PEP 691 JSON, API version 1.1). A static host cannot negotiate
content types, so the JSON sits beside the HTML: a host that serves `index.json` to requests with
`Accept: application/vnd.pypi.simple.v1+json` gives clients the JSON form, any other host serves the
HTML and clients fall back to it (PEP 691: "static servers ... serve HTML only").

The JSON page is also the record of what an index holds: `files_from_json` reads it back, `merge`
adds new files without dropping old ones and reports a filename whose bytes would change (an index
must never serve two files under one name: pip and uv cache by name and check the hash).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

API_VERSION = "1.1"  # PEP 700: project pages list `versions` and each file's `size`
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_PAGE = "index.html"
JSON_PAGE = "index.json"
GENERATOR = "kestrel-release"  # the JSON pages' `meta._generator`: marks a page as one this tool wrote


def normalize(name: str) -> str:
    """PEP 503's project name: runs of -_. become one '-', lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def href(url: str) -> str:
    """A link target as a static host needs it: '+' of a local version as %2B (S3 and CloudFront read a raw
    '+' in a path as a space; download.pytorch.org links `torch-2.9.0%2Bcu130-...whl` for that reason)."""
    return quote(url, safe="/:@#=?&%")


@dataclass(frozen=True, order=True)
class IndexFile:
    filename: str
    url: str  # as linked from the project page: relative (a file beside the page) or absolute (a release asset)
    sha256: str
    size: int
    requires_python: str = ""
    core_metadata: str = ""  # sha256 of the PEP 658 `<url>.metadata` file served beside it; "" = none

    def to_json(self) -> dict[str, Any]:
        metadata: dict[str, str] | bool = {"sha256": self.core_metadata} if self.core_metadata else False
        out: dict[str, Any] = {
            "filename": self.filename,
            "url": href(self.url),
            "hashes": {"sha256": self.sha256},
            "size": self.size,
            "core-metadata": metadata,
            "dist-info-metadata": metadata,  # PEP 714's older name, still read by pip < 23.2
        }
        if self.requires_python:
            out["requires-python"] = self.requires_python
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> IndexFile:
        from urllib.parse import unquote

        metadata = doc.get("core-metadata") or doc.get("dist-info-metadata")
        return cls(
            filename=str(doc["filename"]),
            url=unquote(str(doc["url"])),
            sha256=str(doc["hashes"]["sha256"]),
            size=int(doc.get("size", 0)),
            requires_python=str(doc.get("requires-python") or ""),
            core_metadata=str(metadata.get("sha256", "")) if isinstance(metadata, dict) else "",
        )


def version_of(filename: str) -> str:
    """The version a wheel's filename carries ('+cu130' included)."""
    from packaging.utils import parse_wheel_filename

    return str(parse_wheel_filename(filename)[1])


def project_of(filename: str) -> str:
    from packaging.utils import parse_wheel_filename

    return str(parse_wheel_filename(filename)[0])


def project_html(project: str, files: list[IndexFile]) -> str:
    name = html.escape(normalize(project))
    lines = [*_head(f"Links for {name}"), f"    <h1>Links for {name}</h1>"]
    for f in sorted(files):
        attrs = f' href="{html.escape(href(f.url))}#sha256={f.sha256}"'
        if f.requires_python:
            attrs += f' data-requires-python="{html.escape(f.requires_python)}"'
        if f.core_metadata:  # PEP 714's name and PEP 658's, for pip before and after 23.2
            attrs += (
                f' data-core-metadata="sha256={f.core_metadata}" data-dist-info-metadata="sha256={f.core_metadata}"'
            )
        lines.append(f"    <a{attrs}>{html.escape(f.filename)}</a><br/>")
    return "\n".join([*lines, "  </body>", "</html>", ""])


def project_json(project: str, files: list[IndexFile]) -> dict[str, Any]:
    from packaging.version import Version

    versions = sorted({version_of(f.filename) for f in files}, key=Version)
    return {
        "meta": {"api-version": API_VERSION, "_generator": GENERATOR},
        "name": normalize(project),
        "versions": versions,
        "files": [f.to_json() for f in sorted(files)],
    }


def root_html(projects: list[str]) -> str:
    lines = _head("Simple index")
    for name in sorted({normalize(p) for p in projects}):
        lines.append(f'    <a href="{html.escape(name)}/">{html.escape(name)}</a><br/>')
    return "\n".join([*lines, "  </body>", "</html>", ""])


def root_json(projects: list[str]) -> dict[str, Any]:
    names = sorted({normalize(p) for p in projects})
    return {"meta": {"api-version": API_VERSION, "_generator": GENERATOR}, "projects": [{"name": n} for n in names]}


def files_from_json(doc: Any) -> list[IndexFile] | None:
    """The files a project page of ours lists; None when `doc` is not such a page."""
    if not isinstance(doc, dict) or (doc.get("meta") or {}).get("_generator") != GENERATOR:
        return None
    try:
        return [IndexFile.from_json(f) for f in doc.get("files", [])]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def projects_from_json(doc: Any) -> list[str] | None:
    if not isinstance(doc, dict) or (doc.get("meta") or {}).get("_generator") != GENERATOR:
        return None
    return [str(p["name"]) for p in doc.get("projects", []) if isinstance(p, dict) and p.get("name")]


@dataclass(frozen=True)
class Merged:
    files: list[IndexFile]  # everything the page lists after the merge
    added: list[str]  # filenames new to the page
    kept: list[str]  # filenames the page already listed with these bytes
    conflicts: list[tuple[str, str, str]]  # (filename, sha256 listed, sha256 given): refused


def merge(existing: list[IndexFile], new: list[IndexFile]) -> Merged:
    """The page after adding `new`: nothing listed is dropped, a listed name never gets other bytes."""
    by_name = {f.filename: f for f in existing}
    added, kept, conflicts = [], [], []
    for f in new:
        old = by_name.get(f.filename)
        if old is None:
            by_name[f.filename] = f
            added.append(f.filename)
        elif old.sha256 == f.sha256:
            kept.append(f.filename)
            if old != f:  # same bytes, a better record (the metadata file now served, a new URL)
                by_name[f.filename] = f
        else:
            conflicts.append((f.filename, old.sha256, f.sha256))
    return Merged(sorted(by_name.values()), sorted(added), sorted(kept), conflicts)


def _head(title: str) -> list[str]:
    return [
        "<!DOCTYPE html>",
        "<html>",
        "  <head>",
        '    <meta name="pypi:repository-version" content="1.1">',  # PEP 629
        f"    <title>{title}</title>",
        "  </head>",
        "  <body>",
    ]
