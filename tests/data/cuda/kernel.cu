// Test kernels for the CUDA reader: one plain kernel and one device assert
// (an assert without -DNDEBUG embeds __FILE__ in .nv.global.init).
#include <cassert>
__global__ void add(float* a, const float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}
__global__ void check(const int* a) { assert(a[0] == 1); }
extern "C" void launch(float* a, const float* b, int n) { add<<<1, 32>>>(a, b, n); }
