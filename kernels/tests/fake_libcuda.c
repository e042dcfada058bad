/* A stand-in libcuda.so.1 for CPU tests of kestrel_kernels' driver checks.
 * FAKE_CUDA_MODE (compile-time): 0 = no device, 1 = one device (sm_80 unless FAKE_CUDA_MAJOR/MINOR say). */
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_CUDA_MODE
#define FAKE_CUDA_MODE 0
#endif

typedef int CUresult;
static const char *NAME = "CUDA_ERROR_NO_DEVICE";

CUresult cuInit(unsigned flags) { (void)flags; return FAKE_CUDA_MODE == 0 ? 100 : 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = FAKE_CUDA_MODE == 0 ? 0 : 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
/* Compute capability 8.0, or FAKE_CUDA_MAJOR/FAKE_CUDA_MINOR from the environment. */
static int env_int(const char *name, int fallback) { const char *v = getenv(name); return v ? atoi(v) : fallback; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 75 ? env_int("FAKE_CUDA_MAJOR", 8) : attr == 76 ? env_int("FAKE_CUDA_MINOR", 0) : 0;
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "Fake A100", len); return 0; }
CUresult cuPointerGetAttribute(void *data, int attr, unsigned long long ptr) {
    (void)ptr;
    if (attr == 2) *(unsigned *)data = 2; /* device memory */
    else *(int *)data = 0;
    return 0;
}
CUresult cuGetErrorName(CUresult rc, const char **s) { (void)rc; *s = NAME; return 0; }
CUresult cuGetErrorString(CUresult rc, const char **s) { (void)rc; *s = "no CUDA-capable device is detected"; return 0; }
/* Present so symbol resolution succeeds; never reached by the tests. */
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)c; (void)d; return 999; }
CUresult cuCtxPushCurrent_v2(void *c) { (void)c; return 999; }
CUresult cuCtxPopCurrent_v2(void **c) { (void)c; return 999; }
CUresult cuModuleLoadData(void **m, const void *i) { (void)m; (void)i; return 999; }
CUresult cuModuleGetFunction(void **f, void *m, const char *n) { (void)f; (void)m; (void)n; return 999; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { (void)f; (void)a; (void)v; return 999; }
CUresult cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                        unsigned s, void *st, void **p, void **x) {
    (void)f; (void)a; (void)b; (void)c; (void)d; (void)e; (void)g; (void)s; (void)st; (void)p; (void)x;
    return 999;
}
CUresult cuMemAlloc_v2(unsigned long long *p, unsigned long n) { (void)p; (void)n; return 999; }
CUresult cuMemFree_v2(unsigned long long p) { (void)p; return 999; }
