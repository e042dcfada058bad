/* Stand-in for libcudart.so.13 (the CUDA 13 runtime). */
int stub_cudart_version(void) { return 13000; }
