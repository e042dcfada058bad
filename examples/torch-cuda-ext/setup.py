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
import shutil
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.errors import LinkError
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

LIBRARY = "torch_cuda_ext"
HERE = os.path.dirname(os.path.abspath(__file__))
# TORCH_CHECK throws c10::Error here and libtorch catches it (into a Python RuntimeError), so
# the extension must share torch's C++ runtime, the shared libstdc++.so.6. A C++ driver that
# links libstdc++ statically (a CXX wrapper or specs adding -static-libstdc++) gives _C a
# private copy of __cxa_throw and the personality routine: every TORCH_CHECK failure then
# segfaults. Naming the shared runtime by its soname, ahead of the driver's own -lstdc++, binds
# it first even where the driver's library directory holds only libstdc++.a (plain -lstdc++
# would take that archive: ld tries libstdc++.so then libstdc++.a in each directory in turn).
SHARED_CXX_RUNTIME = ["-Wl,--push-state,-Bdynamic", "-l:libstdc++.so.6", "-Wl,--pop-state"]
# Defined only by a C++ runtime: if _C defines them, it carries its own.
CXX_RUNTIME_SYMBOLS = ("__cxa_throw", "__gxx_personality_v0")


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
            extra_link_args=SHARED_CXX_RUNTIME if sys.platform.startswith("linux") else [],
            py_limited_api=True,
        )
    ]


def private_cxx_runtime(path: str) -> list[str]:
    """The C++ runtime symbols that the built library defines itself (readelf's dynamic symbols)."""
    if shutil.which("readelf") is None:  # binutils come with every linker; checked where present
        return []
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True, text=True, check=True).stdout
    fields = (line.split() for line in out.splitlines())
    # Num: Value Size Type Bind Vis Ndx Name -- Ndx UND marks a symbol taken from another library.
    return sorted({f[7].split("@")[0] for f in fields if len(f) >= 8 and f[6] != "UND"} & set(CXX_RUNTIME_SYMBOLS))


class BuildSharingTorchRuntime(BuildExtension):
    """torch's BuildExtension that refuses a library with its own C++ runtime (it would segfault)."""

    def build_extension(self, ext):
        super().build_extension(ext)
        path = self.get_ext_fullpath(ext.name)
        if own := private_cxx_runtime(path):
            raise LinkError(
                f"{path} defines {', '.join(own)}: the C++ runtime was linked statically, so exceptions "
                f"thrown in it (TORCH_CHECK) crash instead of raising; link with a C++ compiler that uses "
                f"the shared libstdc++.so.6 (check CXX={os.environ.get('CXX', 'c++')})"
            )


setup(
    name="torch-cuda-ext",
    version=read_version(),
    description="A fused SiLU-and-multiply CUDA kernel for PyTorch (sm_90a)",
    packages=find_packages(include=[LIBRARY, f"{LIBRARY}.*"]),
    ext_modules=extensions(),
    install_requires=["torch>=2.6"],
    python_requires=">=3.10",
    cmdclass={"build_ext": BuildSharingTorchRuntime},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
