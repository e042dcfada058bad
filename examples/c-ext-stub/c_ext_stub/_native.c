/* An abi3 extension: only the limited API (Py_LIMITED_API is defined by setup.py). */
#include <Python.h>

/* From the stub libraries in stubs/: stand-ins for libtorch, libc10 and libcudart. */
extern int stub_torch_version(void);
extern int stub_c10_version(void);
extern int stub_cudart_version(void);

static PyObject *versions(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return Py_BuildValue("(iii)", stub_torch_version(), stub_c10_version(), stub_cudart_version());
}

static PyMethodDef methods[] = {
    {"versions", versions, METH_NOARGS, "The stub libraries' versions (torch, c10, cudart)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
