"""CUDA template for row-wise ``topk`` (values + int32 indices, descending).

Build input only; never shipped in a wheel. Variants: dtype (f32, bf16) x
K bucket (8, 16, 32, 64). The dispatcher rounds k up to the bucket and the
kernel emits exactly k results per row, so nothing is computed past k.

Algorithm (one block per row): each thread keeps its K best 64-bit keys
(value order, then lower index) sorted in registers; the block then pops the
global maximum k times with a warp-shuffle + shared-memory reduction. Keys
embed the index, so they are all distinct and ties resolve to lower indices.
"""

from __future__ import annotations

from string import Template

FAMILY = "topk"
DTYPES = {"f32": "F32", "bf16": "BF16"}
K_BUCKETS = (8, 16, 32, 64)


def threads_for(k_bucket: int) -> int:
    # Fewer threads for the register-heavy buckets (K 64-bit keys each).
    return 256 if k_bucket <= 16 else 128


_SOURCE = Template(
    r"""
#include "kestrel/common.cuh"

using T = kestrel::$traits;
using S = T::storage;
constexpr int K = $k_bucket;
constexpr int kThreads = $threads;
constexpr int kWarps = kThreads / 32;

// x: [rows, n] contiguous; values: [rows, k]; indices: [rows, k]; 1 <= k <= K, k <= n.
extern "C" __global__ void __launch_bounds__(kThreads)
$entry(const S* __restrict__ x, S* __restrict__ values, int* __restrict__ indices,
       long long rows, int n, int k) {
  __shared__ unsigned long long warp_best[kWarps];
  __shared__ unsigned long long best;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const S* xr = x + row * n;
    unsigned long long list[K];  // sorted descending; 0 = empty
#pragma unroll
    for (int j = 0; j < K; ++j) list[j] = 0ull;

    for (int i = threadIdx.x; i < n; i += kThreads) {
      unsigned long long key = kestrel::topk_key(T::float_bits(xr[i]), static_cast<uint32_t>(i));
      if (key > list[K - 1]) {
#pragma unroll
        for (int j = 0; j < K; ++j) {  // insertion by compare-swap: constant indices only
          const unsigned long long cur = list[j];
          const bool take = key > cur;
          list[j] = take ? key : cur;
          key = take ? cur : key;
        }
      }
    }

    for (int out = 0; out < k; ++out) {
      const unsigned long long w = kestrel::warp_max_u64(list[0]);
      if (lane == 0) warp_best[warp] = w;
      __syncthreads();
      if (warp == 0) {
        const unsigned long long v = kestrel::warp_max_u64(lane < kWarps ? warp_best[lane] : 0ull);
        if (lane == 0) {
          best = v;
          const uint32_t idx = kestrel::topk_key_index(v);
          values[row * k + out] = xr[idx];
          indices[row * k + out] = static_cast<int>(idx);
        }
      }
      __syncthreads();
      if (list[0] == best) {  // exactly one thread owns the winner: pop it
#pragma unroll
        for (int j = 0; j < K - 1; ++j) list[j] = list[j + 1];
        list[K - 1] = 0ull;
      }
    }
    __syncthreads();  // warp_best/best are reused by the next row
  }
}
"""
)


def entry_name(dtype: str, k_bucket: int) -> str:
    return f"kestrel_topk_{dtype}_k{k_bucket}"


def variants() -> list[dict]:
    return [
        {
            "name": f"topk_{dt}_k{kb}",
            "params": {"dtype": dt, "k_bucket": kb, "threads": threads_for(kb)},
            "kernels": [entry_name(dt, kb)],
        }
        for dt in DTYPES
        for kb in K_BUCKETS
    ]


def render(params: dict) -> str:
    dt, kb = params["dtype"], params["k_bucket"]
    return _SOURCE.substitute(traits=DTYPES[dt], k_bucket=kb, threads=threads_for(kb), entry=entry_name(dt, kb))
