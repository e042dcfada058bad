"""A wheel whose binaries link torch is smoke-tested as its users import it: `import torch` first.

Before: the import check imported the package's own modules alone, so pytorch/extension-cpp's
extension_cpp_stable (its __init__.py imports its `_C` before torch; `_C` needs libc10.so and libtorch, which
only torch's import loads) failed its smoke test with "libc10.so: cannot open shared object file" although it
works for every user who imports torch first. Here the extension is a stand-in whose `_C.so` names libtorch
(what the smoke test reads) and whose import fails as the real one does unless torch was imported; the
stand-in torch ships in the same wheel, so no 3 GB torch is installed.
"""

from __future__ import annotations

import json

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_project, write_wheel
from tests.integration.publish.test_smoke_failures import _publish

LOADER = b"""import sys
if "torch" not in sys.modules:  # what the dynamic loader says when libtorch was not loaded by torch
    raise ImportError("libc10.so: cannot open shared object file: No such file or directory")
__version__ = "0.1.0"
"""


def _wheel(tmp_path, links_torch: bool, with_torch: bool = True, loader: bytes = LOADER):
    needed = b"libc10.so\x00libtorch_cpu.so\x00" if links_torch else b"libc.so.6\x00"
    files = {"kk_ext/__init__.py": loader, "kk_ext/_C.so": b"\x7fELF stand-in\x00" + needed}
    if with_torch:
        files["torch/__init__.py"] = b"LOADED = True\n"
    return write_wheel(tmp_path / "w", "kestrel-kernels", "0.1.0", "py3-none-any", files=files)


def test_a_wheel_linking_torch_is_imported_after_torch(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, _wheel(tmp_path, links_torch=True), {}, "--json")
    assert result.code == 0, result.output[-3000:]
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["detail"] == "installed and imported kk_ext torch 0.1.0", row


def test_a_wheel_that_does_not_link_torch_is_imported_as_it_is(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, _wheel(tmp_path, links_torch=False), {}, "--json")
    assert result.code == 6, result.output[-3000:]
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["failure"] == "import" and "libc10.so: cannot open shared object file" in row["detail"], row


def test_a_wheel_linking_torch_without_a_torch_to_import_is_imported_as_it_is(tmp_path):
    """No torch in the smoke env (nothing requires it, no torch minor to name): the package's own import
    decides, as before; a package that loads its binary lazily still passes."""
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    lazy = b'__version__ = "0.1.0"\n'
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, _wheel(tmp_path, links_torch=True, with_torch=False, loader=lazy), {}, "--json")
    assert result.code == 0, result.output[-3000:]
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["detail"] == "installed and imported kk_ext 0.1.0", row
