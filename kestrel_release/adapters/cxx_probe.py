"""Which C++ runtime a compiler links into a shared library: the one question a torch extension's build
cannot answer until it is done.

A toolchain whose lib dir holds only libstdc++.a (a custom GCC, as on some GPU hosts) links a private copy of
the C++ runtime into every extension; next to torch's own runtime a TORCH_CHECK failure then crashes instead of
raising, and verify's `cxx-runtime` rule refuses the wheel after the whole build. Linking one tiny library with
the same compiler answers it before any build (flows/doctor.py asks; a second or so).
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from kestrel_release.artifacts import elf
from kestrel_release.artifacts.errors import CudaFormatError
from kestrel_release.process import proc

_SOURCE = '#include <stdexcept>\nextern "C" void probe(int x) { if (x) throw std::runtime_error("x"); }\n'
RUNTIME_SYMBOLS = frozenset({"__cxa_throw", "__gxx_personality_v0", "__cxa_allocate_exception"})


def private_runtime(compiler: str, env: dict[str, str]) -> bool | None:
    """True when `compiler` (a CXX-style value: `g++`, `/opt/gcc/bin/g++ -m64`) links a shared library that
    defines the C++ runtime itself instead of needing libstdc++.so; False when it needs the shared one;
    None when it cannot tell (no such compiler, or the link fails: the build reports that itself)."""
    try:
        words = shlex.split(compiler)
    except ValueError:
        return None
    if not words:
        return None
    with tempfile.TemporaryDirectory(prefix="kestrel-cxx-") as tmp:
        src, lib = Path(tmp) / "probe.cpp", Path(tmp) / "probe.so"
        src.write_text(_SOURCE, encoding="utf-8")
        done = proc.probe([*words, "-shared", "-fPIC", "-o", lib, src], timeout=120, env=env)
        if done is None or done.returncode != 0 or not lib.is_file():
            return None
        try:
            parsed = elf.parse(lib.read_bytes(), "probe.so")
        except (OSError, CudaFormatError):
            return None
        needs_shared = any(name.startswith("libstdc++") for name in elf.needed(parsed))
        return not needs_shared and bool(elf.defined_dynamic_symbols(parsed, RUNTIME_SYMBOLS))
