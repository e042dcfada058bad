"""Child process: abi3audit's own CLI, with a fast reader of a DLL's import table.

`python -m kestrel_release.adapters._abi3audit_child --strict --report WHEEL` answers exactly as
`abi3audit --strict --report WHEEL` does. Why not the plain CLI: for each Windows DLL, abi3audit
parses the whole image with `pefile.PE(path)` and then every data directory again (relocations,
resources, exceptions), only to read the import table: 8.5 s for cryptography's 8 MB `_rust.pyd`,
minutes for a large CUDA extension. `fast_load` plus the import directory alone reads the same
imports in milliseconds. ELF and Mach-O objects go through abi3audit unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any


def dll_imports(path: str) -> Iterator[tuple[str, str]]:
    """(symbol name, visibility) of every named import of the DLL at `path`, as abi3audit's _Dll yields them."""
    import pefile

    with pefile.PE(path, fast_load=True) as pe:
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]])
        for import_data in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []):
            for imp in import_data.imports:
                if imp.name is not None:  # ordinal-only imports: abi3audit skips them too
                    # Every import is global on Windows (abi3audit's own reasoning).
                    yield imp.name.decode(), "global"


def _fast_iter(self: Any) -> Iterator[Any]:  # self: abi3audit's private _Dll; yields its Symbol records
    from abi3info.models import Symbol

    for name, visibility in dll_imports(self._extractor.path):
        yield Symbol(name, visibility=visibility)


def main(argv: list[str]) -> None:
    from abi3audit import _object
    from abi3audit._cli import main as cli_main

    dll = getattr(_object, "_Dll", None)  # abi3audit's private class: if a release renames it, run unpatched
    if dll is not None:
        dll.__iter__ = _fast_iter
    sys.argv = ["abi3audit", *argv]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
