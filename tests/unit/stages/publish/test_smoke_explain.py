"""Reading uv's output after a failed smoke-test install: the outputs below are uv 0.13's, recorded against a
local pypiserver (private, wrong password, missing version, cp313-only wheels, a wheel for a newer glibc)."""

from __future__ import annotations

import pytest

from kestrel_release.stages.publish import smoke_explain

URL = "http://127.0.0.1:43329/simple/"
NEEDS_AUTH = """Using Python 3.12.1 environment at: venv
error: No solution found when resolving dependencies
  cause: Because kestrel-kernels was not found in the package registry and you require kestrel-kernels==0.1.0, we can conclude that your requirements are unsatisfiable.

hint: An index URL (http://127.0.0.1:43329/simple/) could not be queried due to a lack of valid authentication credentials (401 Unauthorized)
"""
FORBIDDEN = """error: No solution found when resolving dependencies
  cause: Because kestrel-kernels was not found in the package registry and you require kestrel-kernels==0.1.0, we can conclude that your requirements are unsatisfiable.

hint: An index (http://127.0.0.1:51185/simple/) returned a 403 Forbidden error. Check that the index URL is correct and the credentials are valid.
"""
NO_VERSION = """error: No solution found when resolving dependencies
  cause: Because there is no version of kestrel-kernels==0.2.0 and you require kestrel-kernels==0.2.0, we can conclude that your requirements are unsatisfiable.
"""
NO_PROJECT = """error: No solution found when resolving dependencies
  cause: Because kestrel-kernels was not found in the package registry and you require kestrel-kernels==0.1.0, we can conclude that your requirements are unsatisfiable.
"""
WRONG_PYTHON = """error: No solution found when resolving dependencies
  cause: Because kestrel-kernels==0.1.0 has no wheels with a matching Python implementation tag (e.g., `cp312`) and you require kestrel-kernels==0.1.0, we can conclude that your requirements are unsatisfiable.

hint: You require CPython 3.12 (`cp312`), but we only found wheels for `kestrel-kernels` (v0.1.0) with the following Python implementation tag: `cp313`
"""
WRONG_PLATFORM = """error: No solution found when resolving dependencies
  cause: Because kestrel-kernels==0.3.0 has no wheels with a matching platform tag (e.g., `manylinux_2_36_x86_64`) and you require kestrel-kernels==0.3.0, we can conclude that your requirements are unsatisfiable.

hint: Wheels are available for `kestrel-kernels` (v0.3.0) on the following platform: `manylinux_2_99_x86_64`
"""
REFUSED = """error: Request failed after 3 retries in 7.9s
  cause: Failed to fetch: http://127.0.0.1:1/simple/kestrel-kernels/
  cause: error sending request for url (http://127.0.0.1:1/simple/kestrel-kernels/)
  cause: client error (Connect)
  cause: tcp connect error
  cause: Connection refused (os error 111)
"""


@pytest.mark.parametrize(
    ("output", "credentials", "kind", "needle"),
    [
        (NEEDS_AUTH, False, "auth", f"{URL} needs credentials to read (401 Unauthorized)"),
        (NEEDS_AUTH, True, "auth", "refused to serve kestrel-kernels 0.1.0 to the credentials the upload used (401"),
        (FORBIDDEN, True, "auth", "(403 Forbidden): they may upload but not read there"),
        (NO_VERSION, True, "missing", f"{URL} does not list kestrel-kernels 0.1.0"),
        (NO_PROJECT, True, "missing", f"{URL} has no project kestrel-kernels"),
        (
            WRONG_PYTHON,
            False,
            "no-wheel",
            "no wheel of kestrel-kernels 0.1.0 on " + URL + " installs on Python 3.12 "
            "here (You require CPython 3.12 (`cp312`), but we only found wheels",
        ),
        (WRONG_PLATFORM, False, "no-wheel", "on the following platform: `manylinux_2_99_x86_64`)"),
        (REFUSED, False, "unreachable", f"cannot reach {URL}: Connection refused (os error 111)"),
        (
            "error: something new\n",
            False,
            "install",
            f"uv could not install kestrel-kernels==0.1.0 from {URL}: something new",
        ),
    ],
)
def test_install_failures(output, credentials, kind, needle):
    found = smoke_explain.install_failure(output, "kestrel-kernels", "0.1.0", "3.12", URL, credentials)
    assert found[0] == kind and needle in found[1], found


def test_import_and_version_readings():
    report = {
        "dist_version": "0.1.0",
        "versions": {},
        "error": {
            "module": "kk",
            "type": "ModuleNotFoundError",
            "message": "No module named 'torch'",
            "where": "kk/__init__.py:3",
        },
    }
    assert smoke_explain.import_failure(report, "kestrel-kernels", "3.12") == (
        "import",
        "kestrel-kernels installed on Python 3.12, but `import kk` fails: ModuleNotFoundError: No module "
        "named 'torch' at kk/__init__.py:3",
    )
    fine = {"dist_version": "0.1.0", "versions": {"kk": ["0.1.0", "kk/__init__.py"], "vendored": ["2.0", "v.py"]}}
    assert smoke_explain.version_mismatch(fine, "kestrel-kernels", "0.1.0") is None
    stale = {"dist_version": "0.1.1", "versions": {"kk": ["0.1.0", "kk/__init__.py"]}}
    kind, line = smoke_explain.version_mismatch(stale, "kestrel-kernels", "0.1.1")
    assert kind == "version" and line.startswith(
        "kk.__version__ is '0.1.0', expected 0.1.1 (the wheel's METADATA says 0.1.1; kk/__init__.py)"
    )
    other = {"dist_version": "0.1.0", "versions": {}}
    assert (
        "the index served kestrel-kernels 0.1.0 for kestrel-kernels==0.2.0"
        in smoke_explain.version_mismatch(other, "kestrel-kernels", "0.2.0")[1]
    )


def test_an_extension_loaded_before_torch_says_to_import_torch_first():
    from kestrel_release.stages.publish.smoke_explain import import_failure

    report = {"error": {"module": "extension_cpp_stable", "type": "ImportError", "where": "extension_cpp_stable/__init__.py:1",
                        "message": "libc10.so: cannot open shared object file: No such file or directory"}}  # fmt: skip
    kind, line = import_failure(report, "extension_cpp_stable", "3.12")
    assert kind == "import"
    assert line.endswith(
        "at extension_cpp_stable/__init__.py:1; its extension is loaded before torch: import torch first in the "
        "package's __init__.py"
    )
    report["error"]["message"] = "libfoo.so: cannot open shared object file: No such file or directory"
    assert "before torch" not in import_failure(report, "x", "3.12")[1]
