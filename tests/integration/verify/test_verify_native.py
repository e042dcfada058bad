"""verify on native extensions: DT_NEEDED reported, a grafted libtorch is an error, abi3audit findings.

Binaries are compiled here with the system C compiler (a few milliseconds each); wheels are
assembled with the shared test builder, then checked through the real CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.factories import make_verify_project, make_wheel
from tests.helpers import need, run_cli

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _cc(tmp: Path, name: str, source: str, *args: str) -> bytes:
    c = tmp / f"{name}.c"
    c.write_text(source)
    out = tmp / name
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(c), *args], check=True)
    return out.read_bytes()


def _verify_json(project: Path, dist: Path) -> tuple[int, dict]:
    result = run_cli(["verify", "--project", str(project), str(dist), "--json"])
    return result.code, json.loads(result.stdout)


def test_dt_needed_is_reported_and_a_grafted_libtorch_is_an_error(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    torch = _cc(lib, "libtorch.so", "int torch_version(void) { return 2; }\n", "-Wl,-soname,libtorch.so")
    ext = _cc(
        lib,
        "_ext.so",
        "int torch_version(void);\nint answer(void) { return torch_version(); }\n",
        f"-L{lib}",
        "-l:libtorch.so",
    )
    project = make_verify_project(tmp_path / "proj", pythons=("3.11",))
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(
        dist,
        {
            "kestrel_kernels/__init__.py": b"",
            "kestrel_kernels/_ext.so": ext,
            "kestrel_kernels.libs/libtorch-1a2b3c4d.so": torch,
        },
    )
    code, report = _verify_json(project, dist)
    assert code == 5
    wheel = report["wheels"][0]
    assert wheel["native"]["needed"]["kestrel_kernels/_ext.so"] == ["libtorch.so"]
    grafted = [f for f in wheel["findings"] if f["rule"] == "grafted-runtime"]
    assert [(f["severity"], f["member"]) for f in grafted] == [("error", "kestrel_kernels.libs/libtorch-1a2b3c4d.so")]


def test_an_extension_that_only_links_torch_passes(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    _cc(lib, "libc10.so", "int c10(void) { return 1; }\n", "-Wl,-soname,libc10.so")
    ext = _cc(lib, "_ext.so", "int c10(void);\nint f(void) { return c10(); }\n", f"-L{lib}", "-l:libc10.so")
    project = make_verify_project(tmp_path / "proj", pythons=("3.11",))
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, {"kestrel_kernels/__init__.py": b"", "kestrel_kernels/_ext.so": ext})
    code, report = _verify_json(project, dist)
    assert code == 0, report
    native = report["wheels"][0]["native"]
    assert native["needed"] == {"kestrel_kernels/_ext.so": ["libc10.so"]}
    assert native["glibc_floor"] == "2.34" and "Ubuntu 22.04" in native["installs_on"]
    assert "RHEL/Rocky 8" not in native["installs_on"]


def _python_include() -> Path:
    """Python.h of the interpreter running the tests: any 3.10+ headers build a cp310-abi3 object
    (Py_LIMITED_API picks the API), so no other Python need be installed."""
    import sysconfig

    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        need(f"the Python headers ({include}/Python.h)", "install python3-dev (Debian/Ubuntu) or python3-devel")
    return include


def test_an_abi3_wheel_using_a_non_limited_symbol_is_an_abi3audit_error(tmp_path: Path) -> None:
    include = _python_include()
    # PyUnicode_New is CPython's internal-layout API: not part of the limited API / stable ABI.
    source = (
        "#include <Python.h>\nPyObject *make(void) { return PyUnicode_New(3, 127); }\n"
        "PyObject *PyInit__ext(void) { return make(); }\n"
    )
    ext = _cc(tmp_path, "_ext.abi3.so", source, f"-I{include}")
    project = make_verify_project(tmp_path / "proj", pythons=("3.10", "3.11", "3.12"))
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(
        dist,
        {"kestrel_kernels/__init__.py": b"", "kestrel_kernels/_ext.abi3.so": ext},
        tag="cp310-abi3-manylinux_2_17_x86_64",
    )
    code, report = _verify_json(project, dist)
    assert code == 5
    abi3 = [f for f in report["wheels"][0]["findings"] if f["rule"] == "abi3"]
    assert abi3 and abi3[0]["severity"] == "error" and "PyUnicode_New" in abi3[0]["message"], abi3
    # The one abi3 wheel covers all three configured Pythons: no matrix finding.
    assert not [f for f in report["findings"] if f["rule"] == "matrix"], report["findings"]


def test_a_clean_abi3_wheel_passes_the_audit(tmp_path: Path) -> None:
    include = _python_include()
    source = (
        "#define Py_LIMITED_API 0x030A0000\n#include <Python.h>\n"
        "PyObject *PyInit__ext(void) { return PyLong_FromLong(1); }\n"
    )
    ext = _cc(tmp_path, "_ext.abi3.so", source, f"-I{include}")
    project = make_verify_project(tmp_path / "proj", pythons=("3.10", "3.13"))
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(
        dist,
        {"kestrel_kernels/__init__.py": b"", "kestrel_kernels/_ext.abi3.so": ext},
        tag="cp310-abi3-manylinux_2_17_x86_64",
    )
    code, report = _verify_json(project, dist)
    assert code == 0, report


def test_a_wheel_above_the_configured_min_glibc_fails_verify(tmp_path: Path) -> None:
    project = make_verify_project(tmp_path / "proj", pythons=("3.11",))
    with (project / "pyproject.toml").open("a") as fh:
        fh.write('\n[tool.kestrel-release.build]\nmin_glibc = "2.28"\n')
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, tag="cp311-cp311-manylinux_2_34_x86_64")
    code, report = _verify_json(project, dist)
    assert code == 5
    floor = [f for f in report["wheels"][0]["findings"] if f["rule"] == "glibc-floor"]
    assert len(floor) == 1 and "needs glibc 2.34, above build.min_glibc 2.28" in floor[0]["message"]
    assert "not on RHEL/Rocky 8" in floor[0]["message"]
