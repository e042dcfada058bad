// Shared device helpers for every kestrel-kernels variant.
//
// Self-contained on purpose: no <cuda_fp16.h>/<cuda_bf16.h>, so a cold
// precompile stays fast and the rendered sources depend only on this tree.
// Never shipped in a wheel (build input only).
#pragma once

#ifdef __CUDACC_RTC__
// NVRTC (the CUDA 12 compiler PyPI ships: nvidia-cuda-nvcc-cu12 has no nvcc) has no libc headers.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef long long intptr_t;
#else
#include <stdint.h>
#endif

namespace kestrel {

constexpr unsigned kFullMask = 0xffffffffu;

// ---- element types: storage type + exact fp32 conversion -----------------

struct F32 {
  using storage = float;
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
  static __device__ __forceinline__ uint32_t float_bits(float v) { return __float_as_uint(v); }
};

struct F16 {
  using storage = uint16_t;
  static __device__ __forceinline__ float to_float(uint16_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
  }
  static __device__ __forceinline__ uint16_t from_float(float f) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
};

struct BF16 {
  using storage = uint16_t;
  static __device__ __forceinline__ float to_float(uint16_t v) {
    return __uint_as_float(static_cast<uint32_t>(v) << 16);
  }
  // Round to nearest even; NaN stays a (quiet) NaN with its sign.
  static __device__ __forceinline__ uint16_t from_float(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  // bf16 is the top half of an fp32: its fp32 bit pattern is exact.
  static __device__ __forceinline__ uint32_t float_bits(uint16_t v) {
    return static_cast<uint32_t>(v) << 16;
  }
};

// ---- ordering keys ---------------------------------------------------------

// Maps fp32 bits to a uint32 whose unsigned order is the float order.
// -0.0 and +0.0 compare equal (as torch does); every NaN sorts above +inf.
// The smallest key of a real value (-inf) is 0x007fffff, so 0 is free as an
// "empty" sentinel.
__device__ __forceinline__ uint32_t order_key(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // NaN
  if (bits == 0x80000000u) bits = 0u;                            // -0 -> +0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// 64-bit key: value order first, then LOWER index wins a tie.
__device__ __forceinline__ unsigned long long topk_key(uint32_t bits, uint32_t index) {
  return (static_cast<unsigned long long>(order_key(bits)) << 32) |
         static_cast<unsigned long long>(0xffffffffu - index);
}

__device__ __forceinline__ uint32_t topk_key_index(unsigned long long key) {
  return 0xffffffffu - static_cast<uint32_t>(key & 0xffffffffull);
}

// ---- warp helpers ------------------------------------------------------------

__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const unsigned long long other = __shfl_xor_sync(kFullMask, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

__device__ __forceinline__ int warp_inclusive_sum(int v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int other = __shfl_up_sync(kFullMask, v, offset);
    if (lane >= offset) v += other;
  }
  return v;
}

__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

__host__ __device__ __forceinline__ long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

}  // namespace kestrel
