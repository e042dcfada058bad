"""The `cxx-runtime` rule: a binary with a private (statically linked) C++ runtime next to torch's.

A torch extension linked with -static-libstdc++ (or by a toolchain whose lib dir holds only
libstdc++.a, e.g. a custom GCC) carries its own `__cxa_throw` and personality routine. An exception
thrown by libc10 (TORCH_CHECK) then unwinds through two C++ runtimes and the process crashes
(a segfault instead of a Python RuntimeError). Seen on an H100 host; see docs/cuda-binaries.md.
"""

from __future__ import annotations

from kestrel_release.artifacts import elf
from kestrel_release.stages.verify.finding import Finding

# Defined only by a C++ runtime (libstdc++/libsupc++); an extension that merely uses C++ imports them.
RUNTIME_SYMBOLS = frozenset(
    {
        "__cxa_throw",
        "__gxx_personality_v0",
        "_ZSt9terminatev",
        "__cxa_begin_catch",
        "__cxa_allocate_exception",
        "_ZSt13set_terminatePFvvE",
    }
)
_TORCH = ("libc10", "libtorch")
FIX = (
    "link the shared libstdc++ (the toolchain's lib dir holds only libstdc++.a, e.g. a custom GCC: use the "
    "system g++ or add -l:libstdc++.so.6); never -static-libstdc++ with torch"
)


def check(member: str, parsed: elf.Elf, needed: list[str]) -> Finding | None:
    """An error when `member` defines C++ runtime symbols and links torch, or defines them without
    needing the shared libstdc++ (a private copy); None otherwise. libstdc++ itself is exempt."""
    base = member.rsplit("/", 1)[-1]
    if base.startswith(("libstdc++", "libsupc++")):
        return None
    defined = elf.defined_dynamic_symbols(parsed, RUNTIME_SYMBOLS)
    if not defined:
        return None
    links_torch = any(lib.startswith(_TORCH) for lib in needed)
    if not links_torch and any(lib.startswith("libstdc++") for lib in needed):
        return None
    why = (
        "links torch (" + ", ".join(lib for lib in needed if lib.startswith(_TORCH)) + ")"
        if links_torch
        else "does not need libstdc++.so"
    )
    return Finding(
        "cxx-runtime",
        "error",
        member,
        f"defines the C++ runtime ({', '.join(sorted(defined))}) and {why}: a private static "
        f"libstdc++, so exceptions thrown across it crash the process (a TORCH_CHECK failure "
        f"segfaults instead of raising): {FIX}",
    )
