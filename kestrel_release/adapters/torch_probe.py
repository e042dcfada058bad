"""The torch an interpreter (or build env) has: version, CUDA, C++ ABI.

A torch C++ extension is tied to the torch it was built against (C++ ABI,
`_GLIBCXX_USE_CXX11_ABI`), so build records it and doctor shows it. torch is imported
in a child of that interpreter, never in the tool (it takes seconds and gigabytes).
"""

from __future__ import annotations

import json
from pathlib import Path

from kestrel_release.process import proc

_PROBE = r"""
import importlib.util, json
if importlib.util.find_spec("torch") is None:
    print("null")
else:
    import torch
    print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda,
                      "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI)}))
"""


def probe(python: Path | None) -> dict | None:
    """{"version", "cuda", "cxx11_abi"} or None (no torch, or it would not import)."""
    if python is None:
        return None
    out = proc.probe([python, "-c", _PROBE], timeout=180)
    if out is None or out.returncode != 0:
        return None
    lines = out.output.strip().splitlines()
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def describe(info: dict) -> str:
    abi = "cxx11 ABI" if info.get("cxx11_abi") else "pre-cxx11 ABI"
    return f"torch {info.get('version')} (CUDA {info.get('cuda') or 'none'}, {abi})"


def installed(python: Path) -> bool:
    """Whether the interpreter has a torch to import (found, not imported: a fraction of a second)."""
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    out = proc.probe([python, "-c", code], timeout=60)
    return out is not None and out.returncode == 0


# Found, not imported: the version from the distribution's metadata, the headers beside the package.
_HEADERS = r"""
import importlib.metadata, importlib.util, json, os
spec = importlib.util.find_spec("torch")
if spec is None or not spec.submodule_search_locations:
    print("null")
else:
    print(json.dumps({"version": importlib.metadata.version("torch"),
                      "include": os.path.join(list(spec.submodule_search_locations)[0], "include")}))
"""


def headers(python: Path) -> tuple[str, Path] | None:
    """(torch's version, its C++ include dir) in the interpreter or build env `python`; None: no torch."""
    out = proc.probe([python, "-c", _HEADERS], timeout=60)
    lines = out.output.strip().splitlines() if out is not None and out.returncode == 0 else []
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    if not isinstance(found, dict) or not Path(str(found.get("include"))).is_dir():
        return None
    return str(found.get("version")), Path(str(found["include"]))
