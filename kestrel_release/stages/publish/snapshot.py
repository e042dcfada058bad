"""The one path from verification to the wire: every publisher sends copies the tool owns.

Why: between `verify` and the last retry of an upload, the wheel's path can change under us (another
build writing the same output folder, an editor, a symlink swapped in). Re-opening the path would send
other bytes than were checked, under the checked sha256. So each wheel is read ONCE into a private,
read-only copy (with its folder's manifest and SHA256SUMS, which verify and the integrity gate read
beside it); verify checks that copy, every upload and every retry sends it, and the sha256 in a form
or a SHA256SUMS is the copy's. Before the first byte is sent, a source that no longer holds the copied
bytes is named and refused: the user's folder would otherwise disagree with what the target holds.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import FilesystemError, PublishError, UsageError
from kestrel_release.files import statedir
from kestrel_release.output_dir import manifest

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.stages.verify import VerifyReport

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class Copy:
    """One wheel as it was read: the user's path, the tool's copy, and the identity of the file read."""

    source: Path
    path: Path
    sha256: str
    size: int
    identity: tuple[int, int, int, int, int]  # device, inode, size, mtime ns, ctime ns of the file read


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Snapshots:
    """Copies of wheels (and of their folders' manifests) in a private 0700 directory of the tool's cache;
    the copies are 0400 and named by the folder they came from, so a manifest beside a copy is the one that
    named the original."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.copies: dict[Path, Copy] = {}  # by the copy's path
        self._folders: dict[Path, Path] = {}  # a source folder -> its folder of copies

    def take(self, wheels: list[Path]) -> list[Path]:
        """Copy each wheel once (with its folder's manifests); the copies' paths, in the same order."""
        return [self._take_one(Path(w)) for w in wheels]

    def source_of(self, path: Path) -> Path:
        copy = self.copies.get(Path(path))
        return copy.source if copy else Path(path)

    def _folder_for(self, source_dir: Path) -> Path:
        key = source_dir.resolve()
        if key not in self._folders:
            # named as the source folder (what a finding about the folder shows), under a number of its own
            folder = self.root / str(len(self._folders)) / (source_dir.resolve().name or "root")
            folder.mkdir(mode=0o700, parents=True)
            for found in manifest.manifest_files(source_dir):
                sums = manifest.sums_for(found)  # and sign_key's signature of them, checked before upload
                for extra in (found, sums, sums.with_name(sums.name + manifest.SIG)):
                    if extra.is_file():
                        _copy(extra, folder / extra.name)
            self._folders[key] = folder
        return self._folders[key]

    def _take_one(self, source: Path) -> Path:
        folder = self._folder_for(source.parent)
        dest = folder / source.name
        if dest in self.copies:  # one file named twice (a directory and the file itself)
            return dest
        digest, size, identity = _copy(source, dest, hashed=True)
        self.copies[dest] = Copy(source, dest, digest, size, identity)
        return dest

    def check_sources(self) -> None:
        """Refuse (exit 6, before anything is sent) a wheel whose file changed since it was read and verified."""
        for copy in self.copies.values():
            try:
                st = os.stat(copy.source)
            except OSError as exc:
                raise PublishError(
                    f"{copy.source} changed after it was verified: it can no longer be read "
                    f"({os.strerror(exc.errno or 0) or type(exc).__name__}); nothing was uploaded",
                    "let the build that writes this folder finish, then run the command again",
                ) from None
            if _identity(st) == copy.identity:
                continue
            from kestrel_release.files.fsutil import sha256_file

            now = sha256_file(copy.source) if stat.S_ISREG(st.st_mode) else "(not a regular file)"
            if now != copy.sha256:
                raise PublishError(
                    f"{copy.source} changed after it was verified: sha256 {now} != verified {copy.sha256}; "
                    "nothing was uploaded",
                    "another process rewrote the output; let it finish (or rebuild), then run the command again",
                )


def _copy(source: Path, dest: Path, hashed: bool = False) -> tuple[str, int, tuple[int, int, int, int, int]]:
    """Copy one regular file into a new 0400 file; (sha256 of the bytes copied, size, the source's identity).
    The source is opened once: what is hashed is what was written, whatever happens to the path meanwhile."""
    digest = hashlib.sha256()
    try:
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO named *.whl must not block
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {os.strerror(exc.errno or 0)}", "check the path") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{source} is not a regular file", "pass wheel files")
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        size = 0
        try:
            while chunk := os.read(fd, _CHUNK):
                if hashed:
                    digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                size += len(chunk)
        except OSError as exc:
            raise _no_room(exc, dest) from None
        finally:
            os.close(out)
        os.chmod(dest, 0o400)  # ours alone, and not to be changed: the bytes verify reads are the bytes sent
        return digest.hexdigest(), size, _identity(st)
    finally:
        os.close(fd)


def _no_room(exc: OSError, dest: Path) -> Exception:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return FilesystemError(
            f"no space left to copy the wheels for upload into {dest.parent.parent}",
            "free some space there, or point KESTREL_RELEASE_CACHE_DIR at a larger disk; nothing was uploaded",
        )
    return FilesystemError(f"cannot copy a wheel for upload into {dest.parent}: {os.strerror(exc.errno or 0)}")


@contextlib.contextmanager
def session() -> Iterator[Snapshots]:
    """A publish's snapshots, removed when it ends (a SIGKILLed run's are collected by the next one)."""
    base = statedir.root() / "snapshots"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    with statedir.temp_dir("snap", base) as path:
        yield Snapshots(path)


def verified(
    cfg: Config, snaps: Snapshots, paths: list[Path], *, integrity: str | None, rules: str | None
) -> VerifyReport:
    """Copy the wheels at `paths` (verify's resolution: files, folders, the build output), refuse bytes other
    than build recorded and verify passed for `integrity`, verify the copies under `rules`; the clean report,
    whose wheels are the copies (what every upload sends)."""
    from kestrel_release.stages import verify

    copies = snaps.take(verify.resolve_wheels(cfg, list(paths)))
    manifest.check_unchanged(copies, integrity)
    report = verify.run(cfg, copies, target=rules, record=False)
    verify.raise_for(report, show=True)
    return report
