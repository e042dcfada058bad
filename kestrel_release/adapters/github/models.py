"""A GitHub release and its assets as plain dataclasses: PyGithub objects never leave adapters/github/client.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Asset:
    """One release asset as GitHub describes it (no PyGithub object: the client keeps those)."""

    id: int
    name: str
    label: str
    state: str  # "uploaded", or "starter"/"new" for an upload that never finished
    size: int
    digest: str | None  # "sha256:<hex>" where GitHub computed one
    browser_download_url: str

    def same_bytes(self, size: int, sha256: str, need_digest: bool) -> bool:
        """Complete and identical: uploaded, same size, and same digest (when GitHub gave one)."""
        if self.state != "uploaded" or self.size != size:
            return False
        if self.digest is None:
            return not need_digest
        return self.digest == f"sha256:{sha256}"

    def describe(self) -> str:
        """What GitHub says it holds, for an error line."""
        digest = f"{self.digest[:23]}..." if self.digest else "no digest"
        return f"{self.size} bytes {digest}" + ("" if self.state == "uploaded" else f" in state {self.state}")


@dataclass(frozen=True)
class Release:
    """One release as GitHub describes it; the stage passes it back to the client to act on it."""

    id: int
    tag: str
    name: str
    draft: bool
    prerelease: bool
    immutable: bool  # published on a repository with immutable releases: assets and tag are fixed
    html_url: str
    upload_url: str
