"""The `torch-stable-abi` rule: a stable-ABI variant wheel's binaries import no torch C++ symbol.

A wheel built with `variants.stable_abi` claims `torch>=X.Y`: it loads on every later torch only if
it reaches libtorch through the C shim alone (`aoti_torch_*`, `torch_*`, unmangled). Any mangled
`at::`/`c10::`/`torch::` symbol it imports (NativeScanner collects them from .dynsym in the one read,
artifacts/torch_symbols.py decides) exists in the torch it was built with and may be gone or changed
in the next: the import fails there with `undefined symbol`, or worse, runs with another layout.
xformers and kernel-builder's kernel-abi-check check their binaries the same way.
"""

from __future__ import annotations

from typing import Any

from kestrel_release.stages.verify.finding import Finding

RULE = "torch-stable-abi"
SHOWN = 5  # symbols named per binary; the rest are counted


def findings(variant: dict[str, Any], torch_cxx: dict[str, list[str]]) -> list[Finding]:
    """One error per binary of a stable-ABI variant that imports torch C++ symbols."""
    from kestrel_release.adapters import cxx_demangle
    from kestrel_release.artifacts import torch_symbols

    stable = str(variant.get("stable_abi") or "")
    if not stable:
        return []
    out = []
    for member, symbols in sorted(torch_cxx.items()):
        unique = sorted(set(symbols))
        named = [f"{cxx_demangle.demangle(s)} [{torch_symbols.header(s)}]" for s in unique[:SHOWN]]
        more = f" and {len(unique) - SHOWN} more" if len(unique) > SHOWN else ""
        out.append(
            Finding(
                RULE,
                "error",
                member,
                f"built for the torch {stable} stable ABI ({variant.get('name')}) but imports {len(unique)} torch "
                f"C++ symbol{'s' if len(unique) > 1 else ''} outside it: {'; '.join(named)}{more}. It loads only "
                f"next to the torch it was built with; use torch/csrc/stable (torch::stable::Tensor, "
                f"STD_TORCH_CHECK, STABLE_TORCH_LIBRARY) and torch/headeronly instead of those headers",
            )
        )
    return out
