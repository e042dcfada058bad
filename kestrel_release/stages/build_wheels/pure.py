"""Pure-Python wheels: nothing to repair.

auditwheel (and delocate, delvewheel) refuse a wheel without native code ("This does not look like a
platform wheel"), so a `py3-none-any` wheel, or any wheel whose built contents hold no binary, skips
repair: there is no library to graft and no platform tag to choose. The one build with the oldest Python
(native.pythons_to_build, abi "py3") then covers every configured Python on every platform (verify's
matrix reads the `any` tag that way).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from kestrel_release.artifacts import binformat

_HEADER = 4096  # enough for binformat.identify: a PE header sits past the DOS stub


def needs_repair(wheel: Path) -> bool:
    """False for a wheel tagged for any platform, or one that holds no native binary."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(wheel.name)[3]
    except InvalidWheelFilename:
        return True  # not ours to judge: the repair tool names the problem
    if tags and all(t.platform == "any" for t in tags):
        return False
    return _has_native_code(wheel)


def _has_native_code(wheel: Path) -> bool:
    try:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if info.is_dir() or info.file_size < 4:
                    continue
                with zf.open(info) as fh:
                    kind = binformat.identify(fh.read(_HEADER))
                if kind is not None and kind.format in ("elf", "pe", "macho"):
                    return True
    except (OSError, zipfile.BadZipFile):
        return True  # unreadable: let the repair tool report it
    return False
