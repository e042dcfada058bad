"""What an in-tree build rewrites in the user's work tree, put back afterwards.

setuptools rewrites `<name>.egg-info/` (SOURCES.txt, PKG-INFO) on every build. A project that commits
that folder would see its tree turn dirty from the build alone, and the next `release` (or its
`--resume`) be refused as uncommitted. Only files that existed before the build are restored, byte
for byte: those are the user's; `build/` and new egg-info folders are the backend's outputs (init
adds them to .gitignore) and are kept, so a warm rebuild stays incremental.
"""

from __future__ import annotations

from pathlib import Path

from kestrel_release import fsutil

_MAX_BYTES = 8 * 1024 * 1024  # metadata folders are small; a huge one is not setuptools' and is left alone
_WHERE = ("*.egg-info", "src/*.egg-info", "python/*.egg-info")


class Kept:
    def __init__(self, files: dict[Path, bytes]) -> None:
        self.files = files

    def restore(self) -> None:
        """Put back every snapshotted file the build changed or removed."""
        for path, data in self.files.items():
            try:
                if path.read_bytes() == data:
                    continue
            except OSError:
                pass
            path.parent.mkdir(parents=True, exist_ok=True)
            fsutil.atomic_write_bytes(path, data)


def snapshot(project_dir: Path) -> Kept:
    """The bytes of every file in the project's existing egg-info folders."""
    files: dict[Path, bytes] = {}
    total = 0
    for pattern in _WHERE:
        for folder in project_dir.glob(pattern):
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in folder.rglob("*"):
                if not path.is_file() or path.is_symlink():
                    continue
                total += path.stat().st_size
                if total > _MAX_BYTES:
                    return Kept({})
                files[path] = path.read_bytes()
    return Kept(files)
