"""After a static index is written, "published" means it was read back and holds exactly the verified bytes.

A rename that succeeded proves little by itself: another process can replace or truncate a file between the
write and the moment a user installs it (a sync job, a second publisher that does not take the lock, a full
disk), and a host can serve another copy of the folder than the one written. So every page a publish wrote
is read again from disk, each wheel it lists is checked there (name, size, sha256 against the snapshot that
verify read), and so are the project lists; a served URL is read the way pip reads it, each wheel downloaded
and hashed. The first difference and how many more are named, exit 6.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path
from typing import Any

from kestrel_release.artifacts import simple_pages
from kestrel_release.errors import PublishError
from kestrel_release.files.fsutil import sha256_file

# flavour ("cu130"; "" without variants) -> wheel filename -> (sha256, size) of the verified snapshot
Expected = dict[str, dict[str, tuple[str, int]]]


def confirm_on_disk(root: Path, pages: list[Any], expected: Expected) -> None:
    """Read back every page in `pages` (PageResult: flavour, project, added, kept) from `root`; PublishError
    naming what differs from `expected`."""
    problems: list[str] = []
    for page in pages:
        wanted = {n: expected[page.flavour][n] for n in page.added + page.kept if n in expected.get(page.flavour, {})}
        problems += _page_problems(root / page.flavour / page.project, wanted)
        problems += _list_problems(root / page.flavour, page.project)
    _raise(problems, f"the static index in {root}")


def _page_problems(folder: Path, wanted: dict[str, tuple[str, int]]) -> list[str]:
    listed = simple_pages.files_from_json(_read_json(folder / simple_pages.JSON_PAGE))
    if listed is None:
        return [f"{folder / simple_pages.JSON_PAGE} is missing or not the page written"]
    by_name = {f.filename: f for f in listed}
    try:
        page_html = (folder / simple_pages.HTML_PAGE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return [f"{folder / simple_pages.HTML_PAGE} is missing or unreadable"]
    problems = []
    for name, (sha256, size) in sorted(wanted.items()):
        record = by_name.get(name)
        if record is None:
            problems.append(f"{folder / simple_pages.JSON_PAGE} does not list {name}")
            continue
        if (record.sha256, record.size) != (sha256, size):
            problems.append(f"{folder / simple_pages.JSON_PAGE} lists {name} as sha256 {record.sha256}, not {sha256}")
        link = link_of(page_html, name)
        if link is None or not link.endswith(f"#sha256={sha256}"):
            problems.append(f"{folder / simple_pages.HTML_PAGE} does not link {name} with sha256 {sha256}")
        if "://" not in record.url:  # a copy beside the page (else a release asset, confirmed where uploaded)
            problems += _file_problems(folder / record.url, sha256, size)
            if record.core_metadata:
                problems += _file_problems(folder / f"{record.url}.metadata", record.core_metadata, None)
    return problems


def _file_problems(path: Path, sha256: str, size: int | None) -> list[str]:
    try:
        actual = path.stat().st_size
        digest = sha256_file(path)
    except OSError as exc:
        return [f"{path} cannot be read back ({exc.strerror or type(exc).__name__})"]
    if size is not None and actual != size:
        return [f"{path} holds {actual} bytes, not the {size} verified"]
    if digest != sha256:
        return [f"{path} holds other bytes: sha256 {digest}, verified {sha256}"]
    return []


def _list_problems(folder: Path, project: str) -> list[str]:
    names = simple_pages.projects_from_json(_read_json(folder / simple_pages.JSON_PAGE)) or []
    problems = []
    if simple_pages.normalize(project) not in names:
        problems.append(f"{folder / simple_pages.JSON_PAGE} does not list the project {project}")
    try:
        listed = (
            f'href="{html.escape(simple_pages.normalize(project))}/"' in (folder / simple_pages.HTML_PAGE).read_text()
        )
    except (OSError, UnicodeDecodeError):
        listed = False
    if not listed:
        problems.append(f"{folder / simple_pages.HTML_PAGE} does not list the project {project}")
    return problems


def _read_json(path: Path) -> Any:
    from kestrel_release.files import safejson

    try:
        return safejson.load_file(path, str(path), max_bytes=64 * 1024 * 1024)
    except (OSError, ValueError):
        return None


def _raise(problems: list[str], where: str) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PublishError(
            f"{where} does not hold what was published: {problems[0]}{more}",
            "another process changed the index after it was written; publish again to restore it",
        )


def check_served(base_url: str, pages: list[Any], expected: Expected, timeout: float = 10.0) -> None:
    """Read each page back from the host serving the index at `base_url` and download every wheel it links,
    comparing its size and sha256 with `expected` (PublishError naming the first miss): what pip would do,
    without installing."""
    import urllib.error
    import urllib.request
    from urllib.parse import urljoin

    problems: list[str] = []
    for page in pages:
        url = "/".join(p for p in (base_url.rstrip("/"), page.flavour, page.project) if p) + "/"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                text = resp.read(64 * 1024 * 1024).decode("utf-8", "replace")
            for name in page.added + page.kept:
                link = link_of(text, name)
                if link is None:
                    problems.append(f"{url} does not link {name}")
                    continue
                sha256, size = expected[page.flavour][name]
                if not link.endswith(f"#sha256={sha256}"):
                    problems.append(f"{url} links {name} without its verified sha256 {sha256}")
                with urllib.request.urlopen(urljoin(url, link.split("#")[0]), timeout=timeout) as resp:
                    body = resp.read(size + 1)  # more than was verified is other bytes: not read to its end
                got = hashlib.sha256(body).hexdigest()
                if (len(body), got) != (size, sha256):
                    problems.append(
                        f"{url} serves {name} as {len(body)} bytes, sha256 {got}; verified {size}, {sha256}"
                    )
        except (urllib.error.URLError, OSError) as exc:
            raise PublishError(
                f"the static index at {url} does not serve what was written: {exc}",
                "check that the host serves the directory as it is (a folder URL answers with its index.html)",
            ) from None
    _raise(problems, f"the host at {base_url}")


def link_of(page: str, filename: str) -> str | None:
    """The href an HTML simple page gives `filename` (unescaped), or None."""
    for href, text in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', page):
        if html.unescape(text) == filename:
            return html.unescape(href)
    return None
