"""Runtime shared by every dispatcher: arrays in, cubins loaded, kernels launched.

Importing this module never touches the GPU or the driver: the driver is opened
(by ``kestrel_kernels._C``) on the first launch, and every failure on that path
becomes a :class:`KestrelKernelsError` that says what is wrong and what to do.

Inputs are torch CUDA tensors (torch is optional: it is only used when the
caller passes torch tensors) or any object exposing ``__cuda_array_interface__``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _select

PRECOMPILED = Path(__file__).resolve().parent / "precompiled"

# dtype name -> (CUDA array interface typestr, itemsize)
DTYPES = {
    "float32": ("<f4", 4),
    "float16": ("<f2", 2),
    "bfloat16": (None, 2),  # no standard typestr: torch tensors only
    "int32": ("<i4", 4),
    "int64": ("<i8", 8),
}
_TYPESTR_TO_DTYPE = {ts: name for name, (ts, _) in DTYPES.items() if ts}


class KestrelKernelsError(RuntimeError):
    """Raised when the kernels cannot run here: no driver or GPU, wrong arch, broken install."""


# ---- driver, device and manifest ------------------------------------------------

_lock = threading.Lock()
_choices: dict[int, tuple] = {}  # ordinal -> (pair, "sass"/"ptx", that pair's manifest)
_modules: dict[tuple[int, str], int] = {}
_functions: dict[tuple[int, str, str], int] = {}
_manifest: dict | None = None


def _ext():
    try:
        from . import _C
    except ImportError as exc:  # a source checkout, or a wheel for another Python
        raise KestrelKernelsError(
            f"kestrel_kernels._C is not available ({exc}); install a kestrel-kernels wheel "
            "built for this Python, or build one with `uv build --wheel` in kernels/"
        ) from None
    return _C


def index() -> dict:
    """The (toolkit, arch) pairs that ship with this install (precompiled/kestrel-precompile.json)."""
    global _manifest
    if _manifest is None:
        path = PRECOMPILED / "kestrel-precompile.json"
        try:
            _manifest = json.loads(path.read_text())
        except FileNotFoundError:
            raise KestrelKernelsError(
                f"no precompiled kernels at {PRECOMPILED} (kestrel-precompile.json missing): "
                "run `python -m scripts.precompile --for-cmake LIST` in kernels/ or install a wheel"
            ) from None
    return _manifest


def pairs() -> list:
    return _select.parse_pairs(index())


def _pair_manifest(pair) -> dict:
    return json.loads((PRECOMPILED / pair.dir / "manifest.json").read_text())


def choose(major: int, minor: int, driver: int) -> tuple:
    """(pair, "sass" or "ptx") this package loads on a GPU of major.minor under a driver of CUDA `driver`
    (cuDriverGetVersion's 13000); KESTREL_KERNELS_CUDA=12|13 forces a toolkit major's code path."""
    return _select.choose(pairs(), (major, minor), driver, os.environ.get(_select.FORCE_ENV) or None)


def selected(ordinal: int = 0) -> dict:
    """What device `ordinal` runs: {"cuda": "12.9", "arch": "sm_90a", "kind": "sass", "dir": ...}."""
    check_device(ordinal)
    pair, kind, _m = _choices[ordinal]
    return {"cuda": f"{pair.cuda[0]}.{pair.cuda[1]}", "arch": f"sm_{pair.arch}", "kind": kind, "dir": pair.dir}


def check_device(ordinal: int) -> None:
    """Driver present, device visible, and a precompiled pair that runs on it."""
    if ordinal in _choices:
        return
    C = _ext()
    try:
        count = C.device_count()
    except RuntimeError as exc:  # no libcuda / no device / cuInit failed
        raise KestrelKernelsError(str(exc)) from None
    if ordinal >= count:
        raise KestrelKernelsError(f"CUDA device {ordinal} does not exist ({count} visible)")
    major, minor, name = C.device_info(ordinal)
    try:
        pair, kind = choose(major, minor, C.driver_version())
    except _select.NoMatch as exc:
        raise KestrelKernelsError(f"{exc} ({name}, device {ordinal})") from None
    _choices[ordinal] = (pair, kind, _pair_manifest(pair))


def kernel(ordinal: int, variant: str, name: str) -> int:
    """Function handle of kernel `name` in precompiled `variant`, loaded on device `ordinal`."""
    key = (ordinal, variant, name)
    fn = _functions.get(key)
    if fn is not None:
        return fn
    check_device(ordinal)
    with _lock:
        try:
            if (ordinal, variant) not in _modules:
                _modules[(ordinal, variant)] = _ext().load_module(ordinal, _cubin_bytes(ordinal, variant))
            fn = _ext().get_function(_modules[(ordinal, variant)], name)
        except KestrelKernelsError:
            raise
        except RuntimeError as exc:  # _C.CudaError
            raise KestrelKernelsError(f"loading {variant}/{name} on device {ordinal}: {exc}") from None
        _functions[key] = fn
    return fn


def _cubin_bytes(ordinal: int, variant: str) -> bytes:
    pair, _kind, manifest = _choices[ordinal]
    entry = manifest["variants"].get(variant)
    if entry is None:
        raise KestrelKernelsError(
            f"this kestrel_kernels build has no precompiled variant {variant!r} for {pair.describe()} "
            f"(it has: {', '.join(sorted(manifest['variants']))})"
        )
    data = (PRECOMPILED / pair.dir / entry["cubin"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise KestrelKernelsError(f"{entry['cubin']} does not match its manifest sha256: reinstall kestrel-kernels")
    return data


# ---- arrays -------------------------------------------------------------------------


@dataclass
class Array:
    """A validated, C-contiguous device array (torch tensor or CUDA array interface)."""

    obj: Any
    ptr: int
    shape: tuple
    dtype: str
    stream: int  # CUstream handle the producer uses (torch: current stream)
    is_torch: bool
    _device: int | None = None  # resolved on first use: asking the driver comes after validation

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def device(self) -> int:
        if self._device is None:
            self._device = _pointer_device(self.ptr) if self.ptr and self.numel else 0
        return self._device


def _pointer_device(ptr: int) -> int:
    try:
        return _ext().pointer_device(ptr)
    except ValueError:
        raise ValueError("kestrel_kernels: array points to host memory; it needs GPU memory") from None
    except RuntimeError as exc:  # no driver / no GPU
        raise KestrelKernelsError(str(exc)) from None


def _torch_tensor_type():
    torch = sys.modules.get("torch")  # never import torch ourselves
    return getattr(torch, "Tensor", None)


def as_array(obj: Any, name: str, op: str) -> Array:
    tensor_type = _torch_tensor_type()
    if tensor_type is not None and isinstance(obj, tensor_type):
        return _from_torch(obj, name, op)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj, name, op)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        raise TypeError(
            f"{op}: {name} is a host array ({type(obj).__module__}.{type(obj).__name__}); "
            "kestrel_kernels needs GPU memory: a torch CUDA tensor or a __cuda_array_interface__ object"
        )
    raise TypeError(
        f"{op}: {name} must be a torch CUDA tensor or an object with __cuda_array_interface__, "
        f"got {type(obj).__module__}.{type(obj).__name__}"
    )


def _from_torch(t, name: str, op: str) -> Array:
    import torch

    if t.device.type != "cuda":
        raise ValueError(
            f"{op}: {name} is a {t.device.type} tensor; kestrel_kernels runs on CUDA tensors ({name}.cuda())"
        )
    dtype = str(t.dtype).removeprefix("torch.")
    if not t.is_contiguous():
        raise ValueError(
            f"{op}: {name} must be contiguous (shape {tuple(t.shape)}, strides {t.stride()}); pass {name}.contiguous()"
        )
    ordinal = t.device.index if t.device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(t.device).cuda_stream
    return Array(t, t.data_ptr(), tuple(t.shape), dtype, stream, True, ordinal)


def _from_cai(obj, name: str, op: str) -> Array:
    cai = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in cai["shape"])
    dtype = _TYPESTR_TO_DTYPE.get(cai["typestr"])
    if dtype is None:
        raise TypeError(f"{op}: {name} has unsupported typestr {cai['typestr']!r}")
    if cai.get("mask") is not None:
        raise ValueError(f"{op}: {name} is a masked array; masks are not supported")
    strides = cai.get("strides")
    itemsize = DTYPES[dtype][1]
    if strides is not None and tuple(strides) != _c_strides(shape, itemsize) and math.prod(shape) > 1:
        raise ValueError(f"{op}: {name} must be C-contiguous (shape {shape}, strides {tuple(strides)})")
    stream = cai.get("stream")
    return Array(obj, int(cai["data"][0]), shape, dtype, int(stream) if stream else 0, False)


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


class DeviceBuffer:
    """Device memory from cuMemAlloc exposed through ``__cuda_array_interface__`` (v3).

    Returned for inputs that are not torch tensors. ``stream`` is the stream the
    producing kernel was queued on, so consumers synchronise as the protocol says.
    """

    def __init__(self, shape: tuple, dtype: str, device: int, keepalive: tuple = ()) -> None:
        self.shape, self.dtype, self.device = tuple(shape), dtype, device
        self.nbytes = math.prod(self.shape) * DTYPES[dtype][1]
        self.ptr, self.stream = 0, 0
        if self.nbytes:
            try:
                self.ptr = _ext().mem_alloc(device, self.nbytes)
            except RuntimeError as exc:
                raise KestrelKernelsError(f"allocating {self.nbytes} bytes on device {device}: {exc}") from None
        self._keepalive = keepalive

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": DTYPES[self.dtype][0],
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            # 0 is not allowed by the protocol: the legacy default stream is 1.
            "stream": self.stream or 1,
        }

    def __del__(self) -> None:
        if getattr(self, "ptr", 0):
            try:
                _ext().mem_free(self.device, self.ptr)
            except (RuntimeError, ImportError, AttributeError):  # driver gone / interpreter shutdown
                return

    def __repr__(self) -> str:
        return f"DeviceBuffer(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def empty(like: Array, shape: tuple, dtype: str, keepalive: tuple = ()) -> Array:
    """A new C-contiguous output on `like`'s device, of `like`'s kind (torch or buffer)."""
    if like.is_torch:
        import torch

        t = torch.empty(shape, dtype=getattr(torch, dtype), device=like.obj.device)
        return Array(t, t.data_ptr(), tuple(shape), dtype, like.stream, True, like.device)
    buf = DeviceBuffer(shape, dtype, like.device, keepalive)
    return Array(buf, buf.ptr, tuple(shape), dtype, like.stream, False, like.device)


def output(like: Array, out: Any, name: str, op: str, shape: tuple, dtype: str) -> Array:
    """Validate a caller-provided output, or allocate one (after the device check)."""
    check_device(like.device)
    if out is None:
        return empty(like, shape, dtype)
    arr = as_array(out, name, op)
    if arr.shape != tuple(shape) or arr.dtype != dtype:
        raise ValueError(f"{op}: {name} must have shape {tuple(shape)} and dtype {dtype}, got {arr.shape} {arr.dtype}")
    if arr.numel and arr.device != like.device:
        raise ValueError(f"{op}: {name} is on device {arr.device}, the input on device {like.device}")
    return arr


def resolve_stream(like: Array, stream: Any) -> int:
    """Explicit stream (int handle, torch/cupy stream, __cuda_stream__) or the input's."""
    if stream is None:
        return like.stream
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream must be an int handle or a CUDA stream object, got {type(stream).__name__}")


def launch(like: Array, fn: int, grid: tuple, block: tuple, smem: int, stream: int, fmt: str, args: tuple) -> None:
    try:
        _ext().launch(like.device, fn, grid, block, smem, stream, fmt, args)
    except RuntimeError as exc:
        if isinstance(exc, KestrelKernelsError):
            raise
        raise KestrelKernelsError(str(exc)) from None


def mark_stream(*arrays: Array, stream: int) -> None:
    for a in arrays:
        if isinstance(a.obj, DeviceBuffer):
            a.obj.stream = stream


def check_dtype(arr: Array, name: str, op: str, allowed) -> None:
    if arr.dtype not in allowed:
        raise TypeError(f"{op}: {name} has dtype {arr.dtype}; supported: {', '.join(allowed)}")


def check_int(value: Any, name: str, op: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(value.__index__())
        except (AttributeError, TypeError):
            raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{op}: {name} must be in [{lo}, {hi}], got {value}")
    return value
