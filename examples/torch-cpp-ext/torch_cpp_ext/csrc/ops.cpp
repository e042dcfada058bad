// mul_add(a, b, alpha) = a * b + alpha on CPU tensors; registered with TORCH_LIBRARY.
#include <Python.h>
#include <ATen/ATen.h>
#include <torch/library.h>

extern "C" {
// A module object for `import torch_cpp_ext._C`; the op registers itself when the library loads.
PyObject* PyInit__C(void) {
    static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
    return PyModule_Create(&module_def);
}
}

namespace torch_cpp_ext {

at::Tensor mul_add(const at::Tensor& a, const at::Tensor& b, double alpha) {
    TORCH_CHECK(a.sizes() == b.sizes(), "mul_add: a and b must have the same shape");
    return (a * b + alpha).contiguous();
}

TORCH_LIBRARY(torch_cpp_ext, m) { m.def("mul_add(Tensor a, Tensor b, float alpha) -> Tensor"); }

TORCH_LIBRARY_IMPL(torch_cpp_ext, CPU, m) { m.impl("mul_add", &mul_add); }

}  // namespace torch_cpp_ext
