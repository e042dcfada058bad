"""Reading a GitHub release back: success only when it holds exactly the bytes that were sent.

Each upload is already judged by GitHub's answer (adapters/github/client.py); an answer is not
the release, though: an acknowledged upload may be missing (lost, still being stored) or another
asset may hold the name. So before a release is made public (draft=false) or a rolling nightly's
new assets are swapped in, its assets are listed and each compared with the local file; anything
else stops with exit 6 saying what GitHub holds. A short wait rides out an asset still being
stored; the release stays as it was (a draft, or the old assets) and a re-run completes it.
"""

from __future__ import annotations

import hashlib

from kestrel_release.adapters.github.client import Asset, GithubClient, Release
from kestrel_release.errors import PublishError
from kestrel_release.output_dir import manifest
from kestrel_release.targets.github.files import LocalFile

SHOWN = 3  # problems named in the one error line; the rest are counted


def confirm(client: GithubClient, rel: Release, expected: dict[str, LocalFile], what: str) -> dict[str, Asset]:
    """The assets of `rel` named in `expected` (asset name -> the local file it must hold), once
    each is complete with the file's size and digest; PublishError after the policy's retries."""
    policy = client.policy
    for attempt in range(policy.retries + 1):
        held = {a.name: a for a in client.list_assets(rel)}
        problems = [p for name, f in expected.items() if (p := _problem(name, held.get(name), f))]
        if not problems:
            return {name: held[name] for name in expected}
        if attempt < policy.retries:
            policy.sleep(policy.delay(attempt))
    more = f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    raise PublishError(
        f"release {rel.tag} does not hold what was uploaded ({what}): {'; '.join(problems[:SHOWN])}{more}; "
        f"it holds {len(held)} asset(s) and was not made public",
        "run the same command again: it uploads what is missing and publishes once every asset is confirmed",
    )


def _problem(name: str, asset: Asset | None, f: LocalFile) -> str | None:
    shown = f.name
    if asset is None:
        return f"{shown} is missing"
    if asset.same_bytes(f.size, f.sha256, need_digest=False):
        return None
    return f"{shown} holds {asset.describe()}, not {f.size} bytes sha256:{f.sha256[:16]}..."


def check_sums(files: list[LocalFile]) -> None:
    """SHA256SUMS, as confirmed on the release, lists each wheel with the sha256 confirmed for it."""
    sums = next((f for f in files if f.name == manifest.SUMS), None)
    if sums is None:
        return
    text = sums.path.read_bytes()
    wheels = {f.name: f.sha256 for f in files if f.wheel}
    listed = {}
    for line in text.decode("utf-8", "replace").splitlines():
        digest, _, name = line.partition("  ")
        listed[name.strip()] = digest.strip()
    if hashlib.sha256(text).hexdigest() != sums.sha256 or {n: listed.get(n) for n in wheels} != wheels:
        raise PublishError(
            f"{manifest.SUMS} does not list the sha256 of each wheel confirmed on GitHub; nothing was made public",
            "run the same command again",
        )
