"""A torch extension whose wheel links torch but does not require it ("install torch first", as
chamferdist 1.0.3 says in its README): a fresh venv cannot import it, and neither can a user who did not
read the README. The smoke test does what such a user must: it installs the torch minor the release was
built against (the manifest's toolchain) beside it, and says so; the wheel is not changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kestrel_release.config.model import Config

# Run in the smoke venv: does any shared object of the installed distribution name torch's libraries
# (DT_NEEDED strings sit in .dynstr: a byte search finds them without an ELF parser in the child)?
_LINKS_TORCH_CHILD = """
import importlib.metadata as md, sys
for f in md.distribution(sys.argv[1]).files or ():
    name = str(f)
    if name.endswith(".so") or ".so." in name or name.endswith(".pyd"):
        try:
            data = f.locate().read_bytes()
        except OSError:
            continue
        if b"libc10" in data or b"libtorch" in data:
            print("KESTREL-LINKS-TORCH")
            break
"""

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requires_torch(wanted: Sequence[str]) -> bool:
    for requirement in wanted:
        found = _NAME.match(requirement)
        if found and re.sub(r"[-_.]+", "-", found.group(1)).lower() == "torch":
            return True
    return False


def built_torch(cfg: Config) -> str | None:
    """The torch version the release in the output folder was built against (e.g. "2.13.0+cu130"), or None."""
    from kestrel_release.errors import KestrelError
    from kestrel_release.output_dir import manifest

    try:
        found = manifest.load(cfg.out_path, cfg.name)
    except (KestrelError, OSError):
        return None
    torch = (found.toolchain or {}).get("torch") if found is not None else None
    version = torch.get("version") if isinstance(torch, dict) else torch
    return str(version) if version else None


def missing_torch(
    cfg: Config, venv_python: Path, name: str, wanted: Sequence[str], run: Callable[[list[Any]], str]
) -> str | None:
    """The requirement to install beside `name` (torch==X.Y.*) when its binaries link torch, it does not
    require torch, and the release was built against a known torch; else None. `run` runs a child in the
    smoke venv and returns its output."""
    if _requires_torch(wanted):
        return None
    built = built_torch(cfg)
    parts = re.match(r"(\d+)\.(\d+)", built or "")
    if parts is None:
        return None
    if not links_torch(venv_python, name, run):
        return None
    return f"torch=={parts.group(1)}.{parts.group(2)}.*"


def links_torch(venv_python: Path, name: str, run: Callable[[list[Any]], str]) -> bool:
    """True when a shared object of the installed `name` names torch's libraries."""
    return "KESTREL-LINKS-TORCH" in run([venv_python, "-I", "-c", _LINKS_TORCH_CHILD, name])


def imported_first(venv_python: Path, name: str, run: Callable[[list[Any]], str]) -> list[str]:
    """What the import check imports before `name`'s own modules: torch when its binaries link torch.
    Their users write `import torch` first, as torch's extension docs say: torch loads libtorch's and
    libc10's shared objects (RTLD_GLOBAL), which the extension's own loader would not find (extension-cpp's
    extension_cpp_stable imports its _C before torch in its __init__.py)."""
    if not links_torch(venv_python, name, run):
        return []
    # No torch in the smoke env (a wheel linking torch that neither requires it nor was built against a torch
    # minor we can name): the package's own import says whether it needs it, as before.
    return ["torch"] if "KESTREL-HAS-TORCH" in run([venv_python, "-I", "-c", _HAS_TORCH_CHILD]) else []


_HAS_TORCH_CHILD = "import importlib.util\nif importlib.util.find_spec('torch'):\n    print('KESTREL-HAS-TORCH')\n"
