"""Which of a binary's imported C++ symbols are torch's own C++ ABI, read from the mangled names; pure.

The LibTorch stable ABI (torch >= 2.10: torch/csrc/stable, torch/headeronly) reaches libtorch only
through its C shim (`aoti_torch_*`, `torch_*`: extern "C", so never mangled); everything else it
offers is header-only and compiled into the extension. A binary that still imports a mangled
`at::`, `c10::` or `torch::` symbol (an `at::Tensor` method, `c10::detail::torchCheckFail` from
TORCH_CHECK, `torch::Library` from TORCH_LIBRARY) is bound to the torch it was built with, whatever
its wheel claims. The outermost scope is read from the Itanium mangling itself (no demangler needed
to decide); `torch::stable::` is the stable ABI's C++ side (kernel-builder's kernel-abi-check allows
it too). libtorch_python's `THP*` functions (global scope, C++ linkage) are torch's too.
"""

from __future__ import annotations

import re

TORCH_SCOPES = ("at", "c10", "torch", "caffe2")
ALLOWED = (("torch", "stable"),)  # the stable ABI's own C++ symbols
# Where a scope's declarations live in torch's include tree (torch/include/...): the first two scopes
# of a symbol, then its first alone.
_HEADERS: dict[tuple[str, ...], str] = {
    ("at", "_ops"): "ATen/Operators.h (ATen/ops/<op>_ops.h)",
    ("at", "Tensor"): "ATen/core/TensorBody.h",
    ("at", "TensorBase"): "ATen/core/TensorBase.h",
    ("at", "cuda"): "ATen/cuda/",
    ("at", "native"): "ATen/native/",
    ("at",): "ATen/ (ATen/ATen.h)",
    ("c10", "detail"): "c10/util/Exception.h (TORCH_CHECK)",
    ("c10", "Error"): "c10/util/Exception.h",
    ("c10", "Warning"): "c10/util/Exception.h",
    ("c10", "TensorImpl"): "c10/core/TensorImpl.h",
    ("c10", "StorageImpl"): "c10/core/StorageImpl.h",
    ("c10", "SymInt"): "c10/core/SymInt.h",
    ("c10", "impl"): "c10/core/impl/",
    ("c10", "cuda"): "c10/cuda/",
    ("c10", "Dispatcher"): "ATen/core/dispatch/Dispatcher.h",
    ("c10", "OperatorHandle"): "ATen/core/dispatch/Dispatcher.h",
    ("c10", "IValue"): "ATen/core/ivalue.h",
    ("c10", "ivalue"): "ATen/core/ivalue.h",
    ("c10",): "c10/",
    ("torch", "Library"): "torch/library.h (TORCH_LIBRARY)",
    ("torch", "detail"): "torch/library.h (TORCH_LIBRARY)",
    ("torch", "autograd"): "torch/csrc/autograd/",
    ("torch", "jit"): "torch/csrc/jit/",
    ("torch", "cuda"): "torch/csrc/cuda/",
    ("torch",): "torch/csrc/ (torch/extension.h)",
    ("caffe2",): "caffe2/",
    ("THP",): "torch/csrc/ (libtorch_python's Python bindings)",
}
_SOURCE_NAME = re.compile(r"(\d+)")
_SPECIAL = ("TV", "TI", "TS", "TT", "GV")  # vtable, typeinfo, typeinfo name, VTT, guard variable: a name follows


def scopes(mangled: str) -> tuple[str, ...]:
    """The first two names of a symbol's outermost scope ('_ZN2at6Tensor4sizeEl' -> ('at', 'Tensor'));
    ('std',) for std::; () for a C name or a mangling this does not follow."""
    if not mangled.startswith("_Z"):
        return ()
    s, i = mangled, 2
    if s[i : i + 2] in _SPECIAL:
        i += 2
    if s[i : i + 1] in ("Z", "L"):  # a local name (the enclosing function's name follows); internal linkage
        i += 1
    nested = s[i : i + 1] == "N"
    if nested:
        i += 1
        while s[i : i + 1] in ("r", "V", "K"):
            i += 1
        if s[i : i + 1] in ("R", "O"):
            i += 1
    if s.startswith("St", i):
        return ("std",)
    out: list[str] = []
    while len(out) < (2 if nested else 1):
        m = _SOURCE_NAME.match(s, i)
        if not m:
            break
        length = int(m.group(1))
        name = s[m.end() : m.end() + length]
        if len(name) != length:
            return ()
        out.append(name)
        i = m.end() + length
    return tuple(out)


def is_torch_cxx(mangled: str) -> bool:
    """A mangled symbol of torch's C++ ABI (not the stable ABI's)."""
    found = scopes(mangled)
    if not found:
        return False
    if found[0].startswith("THP") and len(found) == 1:
        return True
    return found[0] in TORCH_SCOPES and found[:2] not in ALLOWED


def header(mangled: str) -> str:
    """Where in torch's include tree the symbol's scope is declared ('' when not torch's)."""
    found = scopes(mangled)
    if found and found[0].startswith("THP"):
        found = ("THP",)
    return _HEADERS.get(found[:2]) or _HEADERS.get(found[:1]) or ""
