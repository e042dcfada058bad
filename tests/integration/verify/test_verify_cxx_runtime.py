"""verify's `cxx-runtime` rule on real binaries built here by g++: an extension that needs (a stub)
libc10.so and carries a private static libstdc++ is an error; the same linked normally is clean."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.factories import make_verify_project, make_wheel
from tests.helpers import run_cli

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# Throws, so the C++ runtime (__cxa_throw, the personality routine) is linked in.
EXT = """
#include <stdexcept>
extern "C" int c10_check(int);
extern "C" int checked(int x) {
    try { if (!c10_check(x)) throw std::runtime_error("TORCH_CHECK failed"); } catch (...) { return -1; }
    return x;
}
"""


def _ext(tmp: Path, *link: str) -> bytes:
    lib = tmp / "lib"
    lib.mkdir(exist_ok=True)
    stub = lib / "c10.c"
    stub.write_text("int c10_check(int x) { return x > 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libc10.so", "-o", str(lib / "libc10.so"), str(stub)], check=True
    )
    src = tmp / "ext.cpp"
    src.write_text(EXT)
    out = tmp / "_C.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(out), str(src), f"-L{lib}", "-l:libc10.so", *link], check=True)
    return out.read_bytes()


def _verify(tmp: Path, ext: bytes) -> tuple[int, dict]:
    project = make_verify_project(tmp / "proj", pythons=("3.11",))
    dist = tmp / "dist"
    dist.mkdir()
    make_wheel(dist, {"kestrel_kernels/__init__.py": b"", "kestrel_kernels/_C.so": ext})
    result = run_cli(["verify", "--project", str(project), str(dist), "--json"])
    return result.code, json.loads(result.stdout)


def _rule(report: dict) -> list[dict]:
    return [f for f in report["wheels"][0]["findings"] if f["rule"] == "cxx-runtime"]


def test_private_static_libstdcxx_next_to_torch_is_an_error(tmp_path: Path) -> None:
    code, report = _verify(tmp_path, _ext(tmp_path, "-static-libstdc++"))
    assert code == 5
    [finding] = _rule(report)
    assert (finding["severity"], finding["member"]) == ("error", "kestrel_kernels/_C.so")
    assert "__cxa_throw" in finding["message"]
    assert "libc10.so" in finding["message"]
    assert "-l:libstdc++.so.6" in finding["message"]


def test_shared_libstdcxx_is_clean(tmp_path: Path) -> None:
    code, report = _verify(tmp_path, _ext(tmp_path))
    assert _rule(report) == []
    assert "libstdc++.so.6" in report["wheels"][0]["native"]["needed"]["kestrel_kernels/_C.so"]
    assert code == 0, report


def test_private_runtime_without_torch_and_the_real_libstdcxx(tmp_path: Path) -> None:
    from kestrel_release.artifacts import elf
    from kestrel_release.stages.verify import cxx_runtime

    src = tmp_path / "plain.cpp"
    src.write_text(
        '#include <stdexcept>\nextern "C" int f(int x) { if (x) throw std::runtime_error("x"); return 0; }\n'
    )
    out = tmp_path / "libplain.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-static-libstdc++", "-o", str(out), str(src)], check=True)
    parsed = elf.parse(out.read_bytes(), out.name)
    finding = cxx_runtime.check("pkg/libplain.so", parsed, elf.needed(parsed))
    assert finding is not None and "does not need libstdc++.so" in finding.message
    real = subprocess.run(["g++", "-print-file-name=libstdc++.so.6"], capture_output=True, text=True).stdout.strip()
    if Path(real).is_file():  # the shared runtime itself defines these symbols: exempt by name
        data = Path(real).resolve().read_bytes()
        assert cxx_runtime.check("pkg.libs/libstdc++.so.6", elf.parse(data, real), []) is None
