"""A torch CUDA extension built the way PyTorch's extension template (pytorch/extension-cpp) does.

No [project] table: name and version are given here (the version is read from
torch_cuda_ext/version.py). One cp39-abi3 wheel serves every CPython >= 3.9 that torch
supports: the C++ side uses only torch's C++ API and the limited Python API (torch >= 2.6).
Architectures come from TORCH_CUDA_ARCH_LIST (9.0a for H100: sm_90a SASS, no PTX), which
kestrel-release sets through [tool.kestrel-release.build].env.
"""

import glob
import os
import re

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

LIBRARY = "torch_cuda_ext"
HERE = os.path.dirname(os.path.abspath(__file__))


def read_version() -> str:
    with open(os.path.join(HERE, LIBRARY, "version.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE).group(1)


def extensions():
    csrc = os.path.join(LIBRARY, "csrc")
    sources = sorted(glob.glob(os.path.join(csrc, "*.cpp")) + glob.glob(os.path.join(csrc, "cuda", "*.cu")))
    return [
        CUDAExtension(
            f"{LIBRARY}._C",
            sources,
            extra_compile_args={
                "cxx": ["-O3", "-DPy_LIMITED_API=0x03090000"],  # the limited API of CPython 3.9
                "nvcc": ["-O3"],
            },
            py_limited_api=True,
        )
    ]


setup(
    name="torch-cuda-ext",
    version=read_version(),
    description="A fused SiLU-and-multiply CUDA kernel for PyTorch (sm_90a)",
    packages=find_packages(include=[LIBRARY, f"{LIBRARY}.*"]),
    ext_modules=extensions(),
    install_requires=["torch>=2.6"],
    python_requires=">=3.10",
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
