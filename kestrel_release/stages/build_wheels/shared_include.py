"""torch's headers at one path for every Python: a copy named by the hash of its bytes, so the compile cache
serves a file that does not depend on the Python (a `.cu` kernel) to every Python's build.

Why: each Python builds in its own env (build_env.py), so torch's headers sit at
`<env>/lib/python3.X/site-packages/torch/include`, another path per Python. The compiler sees that path (in
its command line, in the preprocessed output's line markers, in `__FILE__` strings of inlined checks), so
ccache rightly misses for a kernel that includes no Python.h, and each Python compiles it again (minutes to
hours per wheel). The headers themselves are the same bytes in every Python's torch wheel of one version
(torch 2.13: 9,443 files, the same hash for cp310 and cp312). The compilers' wrappers (compile_cache.py)
read them through this copy instead: the same bytes at the same path give the same object for every
Python, and another torch (other bytes) is another path, so it never gets an old object.

The copy is made once per content (tmp dir, hashed after copying, then renamed) and never changed; files
are copied, not hard-linked, so an edit in place of the env's file cannot change a copy named by its hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
from pathlib import Path

from kestrel_release.adapters import toolchain
from kestrel_release.files import fsutil


def root() -> Path:
    return toolchain.cache_dir() / "shared-include"


def tree_digest(tree: Path) -> str:
    """sha256 over every entry of `tree`: relative path, kind (file, executable, link) and bytes or target."""
    h = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if path.is_symlink():
            h.update(f"L\0{rel}\0{os.readlink(path)}\0".encode())
        elif path.is_file():
            kind = "X" if os.access(path, os.X_OK) else "F"
            h.update(f"{kind}\0{rel}\0".encode())
            h.update(bytes.fromhex(fsutil.sha256_file(path)))
    return h.hexdigest()


def _listing(tree: Path) -> str:
    """What a re-read of `tree` would be needed for: every entry's path, size, mtime and inode (an install
    or an upgrade writes new files; reading 60 MB of headers again costs seconds of every build)."""
    h = hashlib.sha256(str(tree.resolve()).encode())
    for path in sorted(tree.rglob("*")):
        st = path.lstat()
        h.update(f"{path.relative_to(tree).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode())
    return h.hexdigest()


def _digest(tree: Path) -> str:
    """tree_digest, remembered per listing (a small file per listing under root()/known)."""
    memo = root() / "known" / _listing(tree)[:32]
    with contextlib.suppress(OSError):
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    digest = tree_digest(tree)
    with contextlib.suppress(OSError):
        fsutil.atomic_write_text(memo, digest + "\n")
    return digest


def shared_copy(tree: Path) -> Path | None:
    """The content-addressed copy of `tree` (made when missing); None when `tree` cannot be read or copied
    (the build then reads the env's own headers: slower across Pythons, never wrong)."""
    try:
        digest = _digest(tree)
        final = root() / digest[:24]
        if final.is_dir():
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(tree, tmp, symlinks=True)
        copied = tree_digest(tmp)
        named = root() / copied[:24]  # named by what was copied: a change during the copy is another name
        try:
            os.rename(tmp, named)
        except OSError:  # another build made it first: the same bytes
            shutil.rmtree(tmp, ignore_errors=True)
            if not named.is_dir():
                return None
        return named
    except OSError:
        return None
