"""CUDA template for ``moe_align_block_size`` (vLLM semantics, deterministic).

Build input only; never shipped in a wheel. One variant per topk_ids dtype
(int32, int64); each cubin holds three kernels launched back to back:

1. ``count``:   per tile of ``tile`` ids, count tokens per expert into
                counts[tile][E]; also fill sorted_token_ids with numel (the
                padding value vLLM uses).
2. ``scan``:    one block. Turns counts into per-tile offsets, pads each
                expert's total to a multiple of block_size, scans those into
                expert starts, writes num_tokens_post_padded and expert_ids
                (unused trailing blocks = 0, as vLLM does).
3. ``scatter``: one warp per tile, in index order: a stable counting sort, so
                token ids within an expert ascend (vLLM's atomics give any order).

Ids outside [0, num_experts) are skipped (vLLM skips ids >= num_experts).
"""

from __future__ import annotations

from string import Template

FAMILY = "moe_align"
ID_TYPES = {"i32": "int", "i64": "long long"}
COUNT_THREADS = 256
SCAN_THREADS = 1024

_SOURCE = Template(
    r"""
#include "kestrel/common.cuh"

using Id = $id_type;

__device__ __forceinline__ int expert_of(Id v, int num_experts) {
  return (v >= 0 && v < static_cast<Id>(num_experts)) ? static_cast<int>(v) : -1;
}

// grid: one block per tile (tile = multiple of 32); dynamic smem: E ints.
extern "C" __global__ void __launch_bounds__($count_threads)
${prefix}_count(const Id* __restrict__ ids, long long numel, int num_experts, int tile,
                int* __restrict__ counts, int* __restrict__ sorted_ids, long long sorted_len) {
  extern __shared__ int smem_counts[];
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) smem_counts[e] = 0;
  // Padding value everywhere first; the scatter kernel overwrites real slots.
  const long long gstride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < sorted_len; i += gstride)
    sorted_ids[i] = static_cast<int>(numel);
  __syncthreads();
  const long long begin = static_cast<long long>(blockIdx.x) * tile;
  const long long end = min(begin + tile, numel);
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int e = expert_of(ids[i], num_experts);
    if (e >= 0) atomicAdd(&smem_counts[e], 1);
  }
  __syncthreads();
  int* out = counts + static_cast<long long>(blockIdx.x) * num_experts;
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) out[e] = smem_counts[e];
}

// One block of $scan_threads threads. counts[t][e] becomes the exclusive prefix of
// tile t within expert e; starts[e] = padded start of expert e.
extern "C" __global__ void __launch_bounds__($scan_threads)
${prefix}_scan(int* __restrict__ counts, int num_tiles, int num_experts, int block_size,
               int* __restrict__ starts, int* __restrict__ expert_ids, long long num_blocks,
               int* __restrict__ num_tokens_post_padded) {
  __shared__ int warp_sums[32];
  __shared__ int carry;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < num_experts; base += blockDim.x) {
    const int e = base + threadIdx.x;
    int padded = 0;
    if (e < num_experts) {
      int total = 0;
      for (int t = 0; t < num_tiles; ++t) {
        int* c = counts + static_cast<long long>(t) * num_experts + e;
        const int v = *c;
        *c = total;
        total += v;
      }
      padded = static_cast<int>(kestrel::ceil_div(total, block_size)) * block_size;
    }
    // Block-wide exclusive scan of padded sizes.
    const int incl = kestrel::warp_inclusive_sum(padded);
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      const int s = kestrel::warp_inclusive_sum(lane < nwarps ? warp_sums[lane] : 0);
      if (lane < nwarps) warp_sums[lane] = s;  // inclusive over warps
    }
    __syncthreads();
    const int start = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + incl - padded;
    if (e < num_experts) {
      starts[e] = start;
      for (int b = start / block_size; b < (start + padded) / block_size; ++b) expert_ids[b] = e;
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += warp_sums[nwarps - 1];
    __syncthreads();
  }
  const int total = carry;
  if (threadIdx.x == 0) {
    starts[num_experts] = total;
    *num_tokens_post_padded = total;
  }
  for (long long b = total / block_size + threadIdx.x; b < num_blocks; b += blockDim.x) expert_ids[b] = 0;
}

// One warp per tile, walking it in order 32 ids at a time: stable placement.
// dynamic smem: E ints (this tile's write cursor per expert).
extern "C" __global__ void __launch_bounds__(32)
${prefix}_scatter(const Id* __restrict__ ids, long long numel, int num_experts, int tile,
                  const int* __restrict__ counts, const int* __restrict__ starts,
                  int* __restrict__ sorted_ids) {
  extern __shared__ int cursor[];
  const int lane = threadIdx.x;
  const int* prefix = counts + static_cast<long long>(blockIdx.x) * num_experts;
  for (int e = lane; e < num_experts; e += 32) cursor[e] = starts[e] + prefix[e];
  __syncwarp();
  const long long begin = static_cast<long long>(blockIdx.x) * tile;
  const long long end = min(begin + tile, numel);
  for (long long i0 = begin; i0 < end; i0 += 32) {
    const long long i = i0 + lane;
    const int e = i < end ? expert_of(ids[i], num_experts) : -1;
    const unsigned same = __match_any_sync(kestrel::kFullMask, e);
    if (e >= 0) {
      const int rank = __popc(same & kestrel::lanemask_lt());
      sorted_ids[cursor[e] + rank] = static_cast<int>(i);
    }
    __syncwarp();
    if (e >= 0 && lane == __ffs(same) - 1) cursor[e] += __popc(same);
    __syncwarp();
  }
}
"""
)


def prefix(id_type: str) -> str:
    return f"kestrel_moe_align_{id_type}"


def variants() -> list[dict]:
    return [
        {
            "name": f"moe_align_{it}",
            "params": {"id_type": it},
            "kernels": [f"{prefix(it)}_{stage}" for stage in ("count", "scan", "scatter")],
        }
        for it in ID_TYPES
    ]


def render(params: dict) -> str:
    it = params["id_type"]
    return _SOURCE.substitute(
        id_type=ID_TYPES[it],
        prefix=prefix(it),
        count_threads=COUNT_THREADS,
        scan_threads=SCAN_THREADS,
    )
