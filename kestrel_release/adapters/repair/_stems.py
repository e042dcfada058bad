"""build.exclude patterns are Linux sonames (libcudart*, libtorch*, libcuda.so*): their library
stems, which name the same libraries on Windows (cudart64_12.dll, torch_cpu.dll) and macOS
(libc10.dylib)."""

from __future__ import annotations

import re

_SO = re.compile(r"\.so(\.[\d*.]*)?\*?$|\*$")


def linux_stem(pattern: str) -> str | None:
    """'libcudart*' -> 'cudart', 'libcuda.so*' -> 'cuda', 'libc10*' -> 'c10'; None when the pattern
    is not a Linux library pattern (a .dll or .dylib name is another platform's own)."""
    if pattern.lower().endswith((".dll", ".dylib")) or not pattern.startswith("lib"):
        return None
    stem = _SO.sub("", pattern[3:])
    return stem or None
