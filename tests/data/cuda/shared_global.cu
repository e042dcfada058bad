// Global shared memory used from a non-inlined device function: relocatable (-c / -rdc) release
// builds of every CUDA from 11.8 to 13 give its cubin a .nv_debug.shared placeholder section.
__shared__ float stage[64];
__device__ __noinline__ void load(const float* a) { stage[threadIdx.x] = a[threadIdx.x]; }
__global__ void k1(const float* a, float* b) { load(a); __syncthreads(); b[threadIdx.x] = stage[63 - threadIdx.x]; }
__global__ void k2(const float* a, float* b) { load(a); __syncthreads(); b[threadIdx.x] = stage[threadIdx.x] * 2; }
