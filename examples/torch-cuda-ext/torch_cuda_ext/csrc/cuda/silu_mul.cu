// silu(x[..., :d]) * x[..., d:] fused into one pass over x (SwiGLU's gating step).
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/all.h>
#include <torch/library.h>

namespace torch_cuda_ext {

template <typename scalar_t>
__global__ void silu_mul_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ x,
                                int64_t numel, int64_t d) {
  using acc_t = at::opmath_type<scalar_t>;  // float for half/bfloat16: no precision lost in exp
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < numel;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / d, col = i % d;
    const acc_t gate = static_cast<acc_t>(x[row * 2 * d + col]);
    const acc_t up = static_cast<acc_t>(x[row * 2 * d + d + col]);
    out[i] = static_cast<scalar_t>(gate / (acc_t(1) + ::exp(-gate)) * up);
  }
}

at::Tensor silu_mul_cuda(const at::Tensor& x) {
  TORCH_CHECK(x.is_cuda(), "silu_mul: expected a CUDA tensor, got ", x.device());
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0, "silu_mul: the last dimension must be even, got ",
              x.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  std::vector<int64_t> sizes = xc.sizes().vec();
  const int64_t d = sizes.back() / 2;
  sizes.back() = d;
  at::Tensor out = at::empty(sizes, xc.options());
  const int64_t numel = out.numel();
  if (numel == 0) return out;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((numel + threads - 1) / threads, 65535);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();  // torch's stream: ordered with its ops
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "silu_mul", [&] {
    silu_mul_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        out.mutable_data_ptr<scalar_t>(), xc.const_data_ptr<scalar_t>(), numel, d);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

TORCH_LIBRARY_IMPL(torch_cuda_ext, CUDA, m) {
  m.impl("silu_mul", &silu_mul_cuda);
}

}  // namespace torch_cuda_ext
