"""C++ symbol names as people read them, from the C++ runtime's own demangler (`abi::__cxa_demangle`).

Loaded through ctypes from the system's libstdc++ (libc++ on macOS): no child process per symbol, no
dependency. Where neither is there (or a name does not demangle) the mangled name is returned: the
callers only show it, their decisions come from the mangling (artifacts/torch_symbols.py).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def _runtime() -> tuple[Any, Any] | None:
    """(__cxa_demangle, free), or None where no C++ runtime can be loaded."""
    # By soname, never ctypes.util.find_library: on Linux it runs `ldconfig -p` (a child process per verify).
    for name in ("libstdc++.so.6", "libc++.1.dylib", "libc++.so.1"):
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        return fn, free
    return None


def demangle(mangled: str) -> str:
    """'_ZN3c106detail14torchCheckFailEPKcS2_jS2_' -> 'c10::detail::torchCheckFail(char const*, ...)'."""
    found = _runtime()
    if found is None or not mangled.startswith("_Z"):
        return mangled
    fn, free = found
    status = ctypes.c_int(-1)
    ptr = fn(mangled.encode("latin-1"), None, None, ctypes.byref(status))
    if not ptr:
        return mangled
    try:
        text = ctypes.string_at(ptr).decode("latin-1")
    finally:
        free(ptr)
    return text if status.value == 0 else mangled
