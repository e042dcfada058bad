"""The C++ standard a package pins against the one its build env's torch headers require (read, not tabled)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release.adapters import torch_probe
from kestrel_release.errors import PreflightError
from kestrel_release.project import cxx_std

# chamferdist 1.0.3's shape: the same -std for the host compiler and nvcc.
CHAMFERDIST = """
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(
        name="chamferdist",
        ext_modules=[
            CUDAExtension(
                "chamferdist._C",
                ["chamferdist/ext.cpp", "chamferdist/knn.cu"],
                extra_compile_args={"cxx": ["-std=c++17"], "nvcc": ["-std=c++17"]},
            )
        ],
        cmdclass={"build_ext": BuildExtension},
    )
"""

# torch 2.15's torch/csrc/api/include/torch/all.h: the guard's condition continues over two lines.
ALL_H_2_15 = """\
#pragma once

// MSVC keeps __cplusplus at 199711L unless /Zc:__cplusplus is passed, so check
// _MSVC_LANG there. nvcc on Windows preprocesses with cl and forwards its -std
// to it, so this also covers .cu files.
#if (defined(_MSVC_LANG) && _MSVC_LANG < 202002L) || \\
    (!defined(_MSVC_LANG) && __cplusplus < 202002L)

#error C++20 or later compatible compiler is required to use PyTorch.
#endif
"""
ALL_H_2_13 = """\
#pragma once

#if !defined(_MSC_VER) && __cplusplus < 201703L
#error C++17 or later compatible compiler is required to use PyTorch.
#endif
"""
# A __cplusplus test that is no requirement: its branch defines a macro, not an #error.
MACROS_H = """\
#if (defined(__GNUC__) && __GNUC__ < 13 && __cplusplus < 202302L) || \\
    (defined(__clang_major__) && __clang_major__ < 13)
#define C10_RETURN_MOVE_IF_OLD_COMPILER 1
#endif
"""


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    return tmp_path


def headers(root: Path, all_h: str) -> Path:
    include = root / "torch" / "include"
    files = {"torch/csrc/api/include/torch/all.h": all_h, "c10/macros/Macros.h": MACROS_H, "ATen/x.h": ""}
    project(include, files)
    return include


def test_chamferdist_asks_for_cxx17_at_its_line(tmp_path):
    want = cxx_std.asked(project(tmp_path, {"setup.py": CHAMFERDIST}), {})
    assert want is not None
    assert (want.year, want.flag, str(want.place), str(want)) == (
        2017,
        "-std=c++17",
        "setup.py:9",
        "setup.py:9 passes -std=c++17",
    )


@pytest.mark.parametrize(
    ("files", "env", "found"),
    [
        ({"setup.py": 'nvcc = ["-O3", "-std", "c++14"]'}, {}, (2014, "-std=c++14", "setup.py:1")),
        ({"setup.py": 'cxx = ["-std=gnu++2a"]\nnvcc = ["--std=c++17"]'}, {}, (2017, "--std=c++17", "setup.py:2")),
        ({"setup.py": 'cxx = ["/std:c++17"]'}, {}, (2017, "/std:c++17", "setup.py:1")),
        ({"setup.py": 'cxx = ["/std:c++latest"]'}, {}, None),
        ({"setup.py": "import torch"}, {"CXXFLAGS": "-O2 -std=c++17"}, (2017, "-std=c++17", "build.env")),
        (
            {"CMakeLists.txt": "project(x)\nset(CMAKE_CXX_STANDARD 17)\n"},
            {},
            (2017, "CMAKE_CXX_STANDARD 17", "CMakeLists.txt:2"),
        ),
        (
            {"CMakeLists.txt": "target_compile_features(x PRIVATE cxx_std_14)\n"},
            {},
            (2014, "cxx_std_14", "CMakeLists.txt:1"),
        ),
        # torch-spline-conv's root CMakeLists.txt is for libtorch users: setup.py builds the wheel
        ({"setup.py": "import torch", "CMakeLists.txt": "set(CMAKE_CXX_STANDARD 14)\n"}, {}, None),
        ({"setup.py": 'cxx = ["-O3"]'}, {}, None),
    ],
)
def test_every_place_a_standard_is_pinned(tmp_path, files, env, found):
    want = cxx_std.asked(project(tmp_path, files), env)
    assert (want and (want.year, want.flag, str(want.place))) == found


def test_the_requirement_is_read_from_the_headers_guard_and_error(tmp_path):
    include = headers(tmp_path, ALL_H_2_15)
    (include / "ATen" / "ATen.h").write_text(ALL_H_2_15.replace("PyTorch", "ATen"))
    need = cxx_std.required(include)
    assert need == cxx_std.Required(2020, ("ATen/ATen.h:9", "torch/csrc/api/include/torch/all.h:9"))
    assert str(need) == "ATen/ATen.h:9 and torch/csrc/api/include/torch/all.h:9 stop with #error below it"
    assert cxx_std.required(headers(tmp_path / "old", ALL_H_2_13)) == cxx_std.Required(
        2017, ("torch/csrc/api/include/torch/all.h:4",)
    )
    assert cxx_std.required(headers(tmp_path / "none", "#pragma once\n")) is None


def _torch(monkeypatch, version: str, include: Path) -> None:
    monkeypatch.setattr(torch_probe, "headers", lambda python: (version, include))


def test_a_lower_standard_than_torch_requires_fails_with_both_fixes(tmp_path, monkeypatch):
    root = project(tmp_path / "pkg", {"setup.py": CHAMFERDIST})
    _torch(monkeypatch, "2.15.0", headers(tmp_path, ALL_H_2_15))
    assert cxx_std.check(root, {}, Path("/env/bin/python")) == (
        "fail",
        "setup.py:9 passes -std=c++17, but the build env's torch 2.15.0 requires C++20 "
        "(torch/csrc/api/include/torch/all.h:9 stops with #error below it): the compile would fail",
        "raise the flag at setup.py:9 to C++20, or pin a torch whose headers accept C++17 with "
        'build.requires = ["torch==X.Y.*"]',
    )
    with pytest.raises(PreflightError) as err:
        cxx_std.refuse(root, {}, Path("/env/bin/python"))
    assert err.value.exit_code == 3
    assert err.value.message.startswith("build preflight: C++ standard: setup.py:9 passes -std=c++17, but")


def test_a_torch_that_accepts_the_standard_is_ok(tmp_path, monkeypatch):
    root = project(tmp_path / "pkg", {"setup.py": CHAMFERDIST})
    _torch(monkeypatch, "2.13.0", headers(tmp_path, ALL_H_2_13))
    assert cxx_std.check(root, {}, Path("/env/bin/python")) == (
        "ok",
        "setup.py:9 passes -std=c++17; torch 2.13.0's headers need C++17 (torch/csrc/api/include/torch/all.h:4)",
        "",
    )
    cxx_std.refuse(root, {}, Path("/env/bin/python"))  # nothing to refuse


def test_no_pinned_standard_or_no_torch_asks_nothing(tmp_path, monkeypatch):
    def never(python):
        raise AssertionError("no torch to look at without a pinned standard")

    monkeypatch.setattr(torch_probe, "headers", never)
    assert cxx_std.check(project(tmp_path, {"setup.py": "import torch"}), {}, Path("/p")) is None
    monkeypatch.setattr(torch_probe, "headers", lambda python: None)
    assert cxx_std.check(project(tmp_path, {"setup.py": CHAMFERDIST}), {}, Path("/p")) is None
