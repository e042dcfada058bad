"""Child process: auditwheel's own policy analysis of one wheel, plus the symbols behind its floor.

`python -m kestrel_release.adapters._glibc_floor_child WHEEL MAJOR.MINOR [EXCLUDE...]` prints
one JSON line: {"policy": best manylinux tag, "sym_policy": best tag by symbol versions,
"symbols": ["sym@GLIBC_2.38 (member)", ...] (versioned symbols, GLIBC_, GLIBCXX_, CXXABI_, GCC_..., that
manylinux_MAJOR_MINOR does not allow)}.
A child because auditwheel keeps global state and takes ~1 s to import.
"""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any, cast

from kestrel_release.adapters._auditwheel_auto import best_policy

_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)")


def allowed_versions(wheel: Path, floor: tuple[int, int]) -> dict[str, frozenset[str]] | None:
    """The symbol versions (GLIBC_, GLIBCXX_, CXXABI_, GCC_, ...) auditwheel's manylinux_<floor> policy allows."""
    from auditwheel.architecture import Architecture
    from auditwheel.error import AuditwheelError, WheelToolsError
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies
    from auditwheel.wheeltools import get_wheel_architecture

    try:
        arch = get_wheel_architecture(wheel.name)
    except WheelToolsError:
        arch = Architecture.detect()
    try:
        policies = WheelPolicies(libc=Libc.GLIBC, arch=arch)
        return policies.get_policy_by_name(f"manylinux_{floor[0]}_{floor[1]}_{arch.value}").symbol_versions
    except (AuditwheelError, LookupError, ValueError):
        return None  # no such policy (e.g. 2.6): fall back to comparing GLIBC_ versions


def _is_too_new(version: str, floor: tuple[int, int], allowed: dict[str, frozenset[str]] | None) -> bool:
    prefix, _, number = version.partition("_")
    if allowed is not None and prefix in allowed:
        return number not in allowed[prefix]
    m = _GLIBC.match(version)
    return m is not None and (int(m.group(1)), int(m.group(2))) > floor


def _too_new(
    data: bytes, member: str, floor: tuple[int, int], allowed: dict[str, frozenset[str]] | None = None
) -> list[str]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        # Typed as the base Section; pyelftools returns the symbol/version subclasses for these names
        # (a malformed file keeps failing loudly rather than passing the glibc check).
        dynsym, versym, verneed = (
            cast(Any, elf.get_section_by_name(n)) for n in (".dynsym", ".gnu.version", ".gnu.version_r")
        )
        if dynsym is None or versym is None or verneed is None:
            return []
        names = {aux["vna_other"]: aux.name for _vn, auxes in verneed.iter_versions() for aux in auxes}
        out = []
        for i, sym in enumerate(dynsym.iter_symbols()):
            if sym["st_shndx"] != "SHN_UNDEF" or not sym.name:
                continue
            ndx = versym.get_symbol(i)["ndx"]
            version = names.get(ndx & 0x7FFF if isinstance(ndx, int) else -1, "")
            if version and _is_too_new(version, floor, allowed):
                out.append(f"{sym.name}@{version} ({member.rsplit('/', 1)[-1]})")
        return out
    except (ELFError, ValueError, KeyError):
        return []


def main(argv: list[str]) -> int:
    wheel, floor_text, exclude = Path(argv[0]), argv[1], argv[2:]
    floor = tuple(int(p) for p in floor_text.split("."))
    policy, sym_policy = best_policy(wheel, exclude)
    symbols: list[str] = []
    allowed = allowed_versions(wheel, floor)  # type: ignore[arg-type]
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".so") or ".so." in info.filename:
                data = zf.read(info)
                if data[:4] == b"\x7fELF":
                    symbols += _too_new(data, info.filename, floor, allowed)  # type: ignore[arg-type]
    print(json.dumps({"policy": policy, "sym_policy": sym_policy, "symbols": sorted(set(symbols))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
