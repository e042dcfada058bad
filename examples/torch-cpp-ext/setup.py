"""A C++ torch op (torch.ops.torch_cpp_ext.mul_add) built as PyTorch's extension template builds one:
TORCH_LIBRARY registration, a bare PyInit so the limited API suffices (one cp39-abi3 wheel)."""

import os
import re
import sys

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
# torch's exceptions (TORCH_CHECK) cross into this library: it must share torch's C++ runtime, the shared
# libstdc++.so.6, even where the compiler links libstdc++ statically by default (verify's cxx-runtime rule
# caught that on a GPU host); as examples/torch-cuda-ext does.
SHARED_CXX_RUNTIME = ["-Wl,--push-state,-Bdynamic", "-l:libstdc++.so.6", "-Wl,--pop-state"]


def read_version() -> str:
    with open(os.path.join(HERE, "torch_cpp_ext", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE).group(1)


setup(
    name="torch-cpp-ext",
    version=read_version(),
    packages=find_packages(include=["torch_cpp_ext"]),
    ext_modules=[
        CppExtension(
            "torch_cpp_ext._C",
            ["torch_cpp_ext/csrc/ops.cpp"],
            extra_compile_args={"cxx": ["-O2", "-DPy_LIMITED_API=0x03090000"]},
            extra_link_args=SHARED_CXX_RUNTIME if sys.platform.startswith("linux") else [],
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
    python_requires=">=3.9",
)
