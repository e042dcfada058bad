"""CUDA template for ``silu_and_mul``: out = silu(x[..., :d]) * x[..., d:].

Build input only (rendered and compiled by ``scripts/precompile.py``); this file
is never shipped in a wheel. One variant per element type.
"""

from __future__ import annotations

from string import Template

FAMILY = "silu_and_mul"
DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16"}

_SOURCE = Template(
    r"""
#include "kestrel/common.cuh"

using T = kestrel::$traits;
using S = T::storage;

__device__ __forceinline__ float silu_mul(float a, float b) {
  return a / (1.0f + expf(-a)) * b;  // fp32 math, one rounding at the store
}

// x: [rows, 2*d] contiguous, out: [rows, d] contiguous. blockDim.x is free
// (the dispatcher sizes it to d); rows are strided over the grid.
extern "C" __global__ void __launch_bounds__(256)
$entry(S* __restrict__ out, const S* __restrict__ x, long long rows, long long d) {
  constexpr int kVec = 16 / sizeof(S);
  // 16-byte path only when every row start of x, x[d:] and out is aligned.
  const bool vec = (d % kVec == 0) &&
                   ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) % 16 == 0);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const S* xa = x + row * 2 * d;
    const S* xb = xa + d;
    S* o = out + row * d;
    if (vec) {
      const long long nv = d / kVec;
      for (long long v = threadIdx.x; v < nv; v += blockDim.x) {
        alignas(16) S a[kVec];
        alignas(16) S b[kVec];
        alignas(16) S r[kVec];
        *reinterpret_cast<uint4*>(a) = reinterpret_cast<const uint4*>(xa)[v];
        *reinterpret_cast<uint4*>(b) = reinterpret_cast<const uint4*>(xb)[v];
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          r[j] = T::from_float(silu_mul(T::to_float(a[j]), T::to_float(b[j])));
        reinterpret_cast<uint4*>(o)[v] = *reinterpret_cast<uint4*>(r);
      }
    } else {
      for (long long i = threadIdx.x; i < d; i += blockDim.x)
        o[i] = T::from_float(silu_mul(T::to_float(xa[i]), T::to_float(xb[i])));
    }
  }
}
"""
)


def entry_name(dtype: str) -> str:
    return f"kestrel_silu_and_mul_{dtype}"


def variants() -> list[dict]:
    """Every specialisation the wheel ships: name, params and entry points."""
    return [{"name": f"silu_and_mul_{dt}", "params": {"dtype": dt}, "kernels": [entry_name(dt)]} for dt in DTYPES]


def render(params: dict) -> str:
    dtype = params["dtype"]
    return _SOURCE.substitute(traits=DTYPES[dtype], entry=entry_name(dtype))
