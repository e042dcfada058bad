"""A C++ torch op (torch.ops.torch_cpp_ext.mul_add) built as PyTorch's extension template builds one:
TORCH_LIBRARY registration, a bare PyInit so the limited API suffices (one cp39-abi3 wheel)."""

import os
import re

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))


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
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
    python_requires=">=3.9",
)
