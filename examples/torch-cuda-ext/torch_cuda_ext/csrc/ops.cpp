// The op schema and the Python module. Compiled with -DPy_LIMITED_API (setup.py): only the
// limited Python API is used here, so one abi3 wheel serves every supported CPython.
#include <Python.h>
#include <torch/library.h>

extern "C" {
// An empty _C module: importing it loads this library, whose static initializers
// (TORCH_LIBRARY below, TORCH_LIBRARY_IMPL in the .cu file) register the op.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
  return PyModule_Create(&module_def);
}
}

TORCH_LIBRARY(torch_cuda_ext, m) {
  m.def("silu_mul(Tensor x) -> Tensor");
}
