"""Pick the precompiled ``topk`` variant (dtype, k bucket) for an input and launch it."""

from __future__ import annotations

from typing import Any

from .. import _runtime as rt

_VARIANT_DTYPE = {"float32": "f32", "bfloat16": "bf16"}
K_BUCKETS = (8, 16, 32, 64)
_THREADS = {8: 256, 16: 256, 32: 128, 64: 128}  # must match the template's threads_for()
MAX_K = K_BUCKETS[-1]


def bucket(k: int) -> int:
    return next(b for b in K_BUCKETS if b >= k)


def topk(x: Any, k: int, *, out: Any = None, stream: Any = None) -> tuple:
    """Top-``k`` of each row of ``x`` (last dim): ``(values, int32 indices)``, largest first.

    fp32 / bf16, ``1 <= k <= 64``, ``k <= x.shape[-1]``. Equal values are ordered by
    lower index; NaN ranks above +inf (as torch.topk). ``out``, if given, is a
    ``(values, indices)`` pair of contiguous ``[..., k]`` arrays.
    """
    op = "topk"
    a = rt.as_array(x, "x", op)
    rt.check_dtype(a, "x", op, _VARIANT_DTYPE)
    if len(a.shape) < 1:
        raise ValueError(f"{op}: x must have at least one dimension, got shape {a.shape}")
    n = a.shape[-1]
    k = rt.check_int(k, "k", op, 1, MAX_K)
    if k > n:
        raise ValueError(f"{op}: k={k} is larger than the last dimension of x ({n})")
    if n >= 2**31:
        raise ValueError(f"{op}: rows of {n} elements are too long (max {2**31 - 1})")
    shape = a.shape[:-1] + (k,)
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 2):
        raise TypeError(f"{op}: out must be a (values, indices) pair")
    values = rt.output(a, out and out[0], "out[0]", op, shape, a.dtype)
    indices = rt.output(a, out and out[1], "out[1]", op, shape, "int32")
    rows = a.numel // n
    if rows == 0:
        return values.obj, indices.obj
    kb = bucket(k)
    variant = f"topk_{_VARIANT_DTYPE[a.dtype]}_k{kb}"
    fn = rt.kernel(a.device, variant, f"kestrel_{variant}")
    s = rt.resolve_stream(a, stream)
    grid = min(rows, 2**31 - 1)
    rt.launch(a, fn, (grid, 1, 1), (_THREADS[kb], 1, 1), 0, s, "PPPqii", (a.ptr, values.ptr, indices.ptr, rows, n, k))
    rt.mark_stream(values, indices, stream=s)
    return values.obj, indices.obj
