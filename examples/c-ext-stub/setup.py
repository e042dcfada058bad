"""A setuptools C extension as many kernel packages write it: no [project] table, abi3.

The extension links against three stub shared libraries standing in for the torch and CUDA
runtime libraries a real kernel extension needs (sonames libtorch.so, libc10.so,
libcudart.so.13). They are built here into build/stubs and are NOT part of the wheel: at
run time the real ones come from the user's torch install, so a release tool must keep
auditwheel from grafting them and report them as DT_NEEDED.
"""

import os
import re

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
STUB_DIR = os.path.join(HERE, "build", "stubs")
# source file -> soname (the name the extension's DT_NEEDED entry will carry)
STUBS = {"torch.c": "libtorch.so", "c10.c": "libc10.so", "cudart.c": "libcudart.so.13"}


def read_version() -> str:
    with open(os.path.join(HERE, "c_ext_stub", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE).group(1)


class BuildWithStubs(build_ext):
    """Build the stub libraries first, then link the extension against them."""

    def run(self):
        # build_ext creates its compiler inside run(); make one of our own for the stubs.
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        cc = new_compiler()
        customize_compiler(cc)
        os.makedirs(STUB_DIR, exist_ok=True)
        for source, soname in STUBS.items():
            objects = cc.compile([os.path.join("stubs", source)], output_dir=self.build_temp)
            cc.link_shared_object(objects, soname, output_dir=STUB_DIR, extra_postargs=[f"-Wl,-soname,{soname}"])
        super().run()


ext = Extension(
    "c_ext_stub._native",
    sources=["c_ext_stub/_native.c"],
    define_macros=[("Py_LIMITED_API", "0x030A0000")],  # the limited API of CPython 3.10
    py_limited_api=True,
    library_dirs=[STUB_DIR],
    # -l:NAME links the exact file, so DT_NEEDED is each stub's soname (libcudart.so.13 has no
    # unversioned libcudart.so beside it, as on a machine with only the CUDA runtime wheel).
    extra_link_args=["-l:libtorch.so", "-l:libc10.so", "-l:libcudart.so.13"],
)

setup(
    name="c-ext-stub",
    version=read_version(),
    packages=find_packages(include=["c_ext_stub", "c_ext_stub.*"]),
    ext_modules=[ext],
    cmdclass={"build_ext": BuildWithStubs},
)
