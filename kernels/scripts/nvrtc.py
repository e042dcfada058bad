"""Compile one CUDA source with NVRTC (libnvrtc through ctypes): the CUDA 12 compiler PyPI ships.

NVIDIA publishes no nvcc for CUDA 12 on PyPI (nvidia-cuda-nvcc-cu12 is ptxas and libnvvm), but
nvidia-cuda-nvrtc-cu12 is the same front end: it compiles device code to a cubin or PTX.
"""

from __future__ import annotations

import ctypes
import functools


class NvrtcError(Exception):
    pass


@functools.cache
def _lib(path: str):
    return ctypes.CDLL(path)


def version(path: str) -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _lib(path).nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def compile_source(path: str, source: str, name: str, options: list[str], ptx: bool = False) -> bytes:
    """The cubin (options hold -arch=sm_XX), or the PTX text (ptx=True, -arch=compute_XX)."""
    lib = _lib(path)
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    if rc:
        raise NvrtcError(f"nvrtcCreateProgram failed ({rc})")
    try:
        opts = [o.encode() for o in options]
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if rc:
            raise NvrtcError(f"NVRTC failed for {name}:\n{log.value.decode(errors='replace')}".rstrip())
        get_size, get = (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if ptx else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
        get_size(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        get(prog, buf)
        return buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
