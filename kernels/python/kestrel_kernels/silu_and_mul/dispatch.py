"""Pick the precompiled ``silu_and_mul`` variant for an input and launch it."""

from __future__ import annotations

from typing import Any

from .. import _runtime as rt

_VARIANT_DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
_MAX_THREADS = 256  # the kernel's __launch_bounds__


def silu_and_mul(x: Any, *, out: Any = None, stream: Any = None) -> Any:
    """``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2d]``; returns ``[..., d]``.

    fp32 / fp16 / bf16, computed in fp32 with one rounding. Runs on the current
    torch stream (or ``stream``). ``out``, if given, must be a contiguous
    ``[..., d]`` array of x's dtype on x's device.
    """
    op = "silu_and_mul"
    a = rt.as_array(x, "x", op)
    rt.check_dtype(a, "x", op, _VARIANT_DTYPE)
    if len(a.shape) < 1 or a.shape[-1] % 2:
        raise ValueError(f"{op}: x must have an even last dimension [..., 2*d], got shape {a.shape}")
    d = a.shape[-1] // 2
    o = rt.output(a, out, "out", op, a.shape[:-1] + (d,), a.dtype)
    rows = a.numel // a.shape[-1] if a.shape[-1] else 0
    if rows == 0 or d == 0:
        return o.obj
    variant = f"silu_and_mul_{_VARIANT_DTYPE[a.dtype]}"
    fn = rt.kernel(a.device, variant, f"kestrel_{variant}")
    vec = 16 // rt.DTYPES[a.dtype][1]
    work = -(-d // vec) if d % vec == 0 else d  # items per row per pass
    threads = min(_MAX_THREADS, max(32, 1 << (work - 1).bit_length()))
    grid = min(rows, 2**31 - 1)
    s = rt.resolve_stream(a, stream)
    rt.launch(a, fn, (grid, 1, 1), (threads, 1, 1), 0, s, "PPqq", (o.ptr, a.ptr, rows, d))
    rt.mark_stream(o, stream=s)
    return o.obj
