"""Dated nightlies for publish --target github (`targets.github.nightly = "dated"`).

On a repository with immutable releases a published release can never get new assets and
its tag can never move, so a rolling nightly is impossible there. A dated nightly is one
prerelease per night under its own tag `<base>-YYYYMMDD-<sha7>`, made as a draft, filled,
then published; the oldest beyond `targets.github.keep` are deleted. Their tags stay:
GitHub keeps the tag of a deleted release, and burns the name of an immutable one.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import TYPE_CHECKING

from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.adapters.github.client import GithubClient, Release


def pattern(base: str, sha: str | None = None) -> re.Pattern:
    """Tags of the dated nightlies of `base` (of one commit when `sha` is given)."""
    commit = re.escape(sha[:7]) if sha else "[0-9a-f]{7}"
    return re.compile(rf"^{re.escape(base)}-(\d{{8}})-({commit})$")


def tag_for(client: GithubClient, base: str, sha: str, today: _dt.date | None = None) -> str:
    """The tag of this commit's nightly: an existing one (a re-run completes or skips it,
    even after midnight), else `<base>-<today UTC>-<sha7>`."""
    mine = pattern(base, sha)
    existing = sorted((r.tag for r in client.releases() if mine.match(r.tag)), reverse=True)
    if existing:
        return existing[0]
    day = today or _dt.datetime.now(_dt.timezone.utc).date()
    return f"{base}-{day:%Y%m%d}-{sha[:7]}"


def to_prune(releases: list[Release], base: str, current: str, keep: int) -> list[Release]:
    """Dated nightlies of `base` beyond the newest `keep` (the current one always stays)."""
    ours = pattern(base)
    day = {r.id: m.group(1) for r in releases if (m := ours.match(r.tag)) and r.tag != current}
    others = [r for r in releases if r.id in day]
    # Newest first: the date in the tag, then creation order (two nightlies on one day).
    others.sort(key=lambda r: (day[r.id], r.id), reverse=True)
    return others[max(keep - 1, 0) :]


def prune(client: GithubClient, base: str, current: str, keep: int, dry_run: bool) -> list[str]:
    """Delete the nightlies beyond `keep`; return their tags (which stay in the repository)."""
    doomed = to_prune(client.releases(), base, current, keep)
    for rel in doomed:
        if not dry_run:
            console.step(f"deleting nightly {rel.tag} (keeping {keep}; its tag stays)")
            client.delete_release(rel)
    return [r.tag for r in doomed]
