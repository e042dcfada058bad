/*
 * kestrel_kernels._C: load precompiled cubins and launch their kernels through
 * the CUDA driver API.
 *
 * The driver is opened with dlopen("libcuda.so.1") on first use, so the
 * extension links against nothing but libc (and libdl): importing it never
 * needs a GPU, and auditwheel has nothing to graft. Set
 * KESTREL_KERNELS_LIBCUDA to load another driver library (tests use a fake).
 *
 * Every call that touches a device makes that device's primary context current
 * for its duration (the context PyTorch and the CUDA runtime use), so handles
 * from torch and from other runtime users interoperate.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the slice of cuda.h we use (values checked against CUDA 13.0) ------- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_MEMORYTYPE_HOST 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

#define MAX_DEVICES 64
#define MAX_ARGS 32

static struct {
    int loaded;            /* 1 ok, -1 failed (message in error) */
    char error[512];
    void *lib;
    CUresult (*Init)(unsigned int);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUcontext contexts[MAX_DEVICES];
} drv;

/* Raised for every driver-level failure; the Python side re-raises it as
 * kestrel_kernels.KestrelKernelsError with context. */
static PyObject *CudaError;

static PyObject *raise_cu(CUresult rc, const char *what) {
    const char *name = NULL, *desc = NULL;
    if (drv.GetErrorName) drv.GetErrorName(rc, &name);
    if (drv.GetErrorString) drv.GetErrorString(rc, &desc);
    PyErr_Format(CudaError, "%s failed: %s (%d): %s", what, name ? name : "CUDA_ERROR_UNKNOWN", rc,
                 desc ? desc : "unknown error");
    return NULL;
}

#define CU_CHECK(call, what)                \
    do {                                    \
        CUresult rc_ = (call);              \
        if (rc_ != CUDA_SUCCESS) {          \
            return raise_cu(rc_, what);     \
        }                                   \
    } while (0)

static int load_symbol(void **slot, const char *name) {
    *slot = dlsym(drv.lib, name);
    if (!*slot) {
        snprintf(drv.error, sizeof drv.error, "the CUDA driver library has no symbol %s (driver too old?)", name);
        return -1;
    }
    return 0;
}

/* dlopen the driver and cuInit once; afterwards report the same outcome. */
static int ensure_driver(void) {
    if (drv.loaded == 1) return 0;
    if (drv.loaded == 0) {
        const char *path = getenv("KESTREL_KERNELS_LIBCUDA");
        if (!path || !*path) path = "libcuda.so.1";
        drv.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!drv.lib) {
            const char *why = dlerror();
            snprintf(drv.error, sizeof drv.error,
                     "no CUDA driver: could not load %s (%s); kestrel_kernels needs an NVIDIA GPU with its driver installed",
                     path, why ? why : "unknown error");
            drv.loaded = -1;
        } else {
            struct { void **slot; const char *name; } syms[] = {
                {(void **)&drv.Init, "cuInit"},
                {(void **)&drv.DriverGetVersion, "cuDriverGetVersion"},
                {(void **)&drv.DeviceGetCount, "cuDeviceGetCount"},
                {(void **)&drv.DeviceGet, "cuDeviceGet"},
                {(void **)&drv.DeviceGetAttribute, "cuDeviceGetAttribute"},
                {(void **)&drv.DeviceGetName, "cuDeviceGetName"},
                {(void **)&drv.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
                {(void **)&drv.CtxPushCurrent, "cuCtxPushCurrent_v2"},
                {(void **)&drv.CtxPopCurrent, "cuCtxPopCurrent_v2"},
                {(void **)&drv.ModuleLoadData, "cuModuleLoadData"},
                {(void **)&drv.ModuleGetFunction, "cuModuleGetFunction"},
                {(void **)&drv.FuncSetAttribute, "cuFuncSetAttribute"},
                {(void **)&drv.LaunchKernel, "cuLaunchKernel"},
                {(void **)&drv.MemAlloc, "cuMemAlloc_v2"},
                {(void **)&drv.MemFree, "cuMemFree_v2"},
                {(void **)&drv.PointerGetAttribute, "cuPointerGetAttribute"},
                {(void **)&drv.GetErrorName, "cuGetErrorName"},
                {(void **)&drv.GetErrorString, "cuGetErrorString"},
            };
            drv.loaded = 1;
            for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
                if (load_symbol(syms[i].slot, syms[i].name) < 0) {
                    drv.loaded = -1;
                    break;
                }
            }
            if (drv.loaded == 1) {
                CUresult rc = drv.Init(0);
                if (rc == CUDA_ERROR_NO_DEVICE) {
                    snprintf(drv.error, sizeof drv.error,
                             "no CUDA GPU found: the driver (%s) is installed but sees no device "
                             "(check CUDA_VISIBLE_DEVICES and nvidia-smi)", path);
                    drv.loaded = -1;
                } else if (rc != CUDA_SUCCESS) {
                    const char *name = NULL;
                    drv.GetErrorName(rc, &name);
                    snprintf(drv.error, sizeof drv.error, "the CUDA driver failed to initialise: cuInit returned %s (%d)",
                             name ? name : "?", rc);
                    drv.loaded = -1;
                }
            }
        }
    }
    if (drv.loaded != 1) {
        PyErr_SetString(PyExc_RuntimeError, drv.error);
        return -1;
    }
    return 0;
}

static int get_ordinal(PyObject *obj, int *ordinal) {
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "device ordinal %ld out of range", v);
        return -1;
    }
    *ordinal = (int)v;
    return 0;
}

/* Push the primary context of `ordinal` (retained once, kept for the process). */
static PyObject *push_device(int ordinal) {
    if (!drv.contexts[ordinal]) {
        CUdevice dev;
        CU_CHECK(drv.DeviceGet(&dev, ordinal), "cuDeviceGet");
        CU_CHECK(drv.DevicePrimaryCtxRetain(&drv.contexts[ordinal], dev), "cuDevicePrimaryCtxRetain");
    }
    CU_CHECK(drv.CtxPushCurrent(drv.contexts[ordinal]), "cuCtxPushCurrent");
    Py_RETURN_NONE;
}

static void pop_device(void) {
    CUcontext ignored;
    drv.CtxPopCurrent(&ignored);
}

/* Run `expr` (a CUresult expression) with the device's context current. */
#define WITH_DEVICE(ordinal, expr, what)                  \
    do {                                                  \
        PyObject *ok_ = push_device(ordinal);             \
        if (!ok_) return NULL;                            \
        Py_DECREF(ok_);                                   \
        CUresult rc_ = (expr);                            \
        pop_device();                                     \
        if (rc_ != CUDA_SUCCESS) return raise_cu(rc_, what); \
    } while (0)

/* ---- Python functions ------------------------------------------------------ */

static PyObject *py_driver_version(PyObject *self, PyObject *args) {
    if (ensure_driver() < 0) return NULL;
    int version = 0;
    CU_CHECK(drv.DriverGetVersion(&version), "cuDriverGetVersion");
    return PyLong_FromLong(version);
}

static PyObject *py_device_count(PyObject *self, PyObject *args) {
    if (ensure_driver() < 0) return NULL;
    int count = 0;
    CU_CHECK(drv.DeviceGetCount(&count), "cuDeviceGetCount");
    return PyLong_FromLong(count);
}

/* device_info(ordinal) -> (major, minor, name) */
static PyObject *py_device_info(PyObject *self, PyObject *arg) {
    int ordinal;
    if (get_ordinal(arg, &ordinal) < 0 || ensure_driver() < 0) return NULL;
    CUdevice dev;
    int major = 0, minor = 0;
    char name[256] = {0};
    CU_CHECK(drv.DeviceGet(&dev, ordinal), "cuDeviceGet");
    CU_CHECK(drv.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    CU_CHECK(drv.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    CU_CHECK(drv.DeviceGetName(name, (int)sizeof name - 1, dev), "cuDeviceGetName");
    return Py_BuildValue("iis", major, minor, name);
}

/* pointer_device(ptr) -> ordinal of the device that owns ptr (error for host memory) */
static PyObject *py_pointer_device(PyObject *self, PyObject *arg) {
    unsigned long long ptr = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred() || ensure_driver() < 0) return NULL;
    unsigned int mem_type = 0;
    int ordinal = -1;
    CU_CHECK(drv.PointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ptr),
             "cuPointerGetAttribute(MEMORY_TYPE)");
    if (mem_type == CU_MEMORYTYPE_HOST) {
        PyErr_SetString(PyExc_ValueError, "pointer refers to host memory, not GPU memory");
        return NULL;
    }
    CU_CHECK(drv.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)ptr),
             "cuPointerGetAttribute(DEVICE_ORDINAL)");
    return PyLong_FromLong(ordinal);
}

/* load_module(ordinal, image: bytes) -> module handle */
static PyObject *py_load_module(PyObject *self, PyObject *args) {
    PyObject *ord_obj;
    Py_buffer image;
    int ordinal;
    if (!PyArg_ParseTuple(args, "Oy*", &ord_obj, &image)) return NULL;
    if (get_ordinal(ord_obj, &ordinal) < 0 || ensure_driver() < 0) {
        PyBuffer_Release(&image);
        return NULL;
    }
    CUmodule module = NULL;
    PyObject *ok = push_device(ordinal);
    if (!ok) {
        PyBuffer_Release(&image);
        return NULL;
    }
    Py_DECREF(ok);
    CUresult rc = drv.ModuleLoadData(&module, image.buf);
    pop_device();
    PyBuffer_Release(&image);
    if (rc != CUDA_SUCCESS) return raise_cu(rc, "cuModuleLoadData");
    return PyLong_FromVoidPtr(module);
}

/* get_function(module, name) -> function handle */
static PyObject *py_get_function(PyObject *self, PyObject *args) {
    PyObject *mod_obj;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os", &mod_obj, &name)) return NULL;
    CUmodule module = (CUmodule)PyLong_AsVoidPtr(mod_obj);
    if (PyErr_Occurred() || ensure_driver() < 0) return NULL;
    CUfunction fn = NULL;
    CU_CHECK(drv.ModuleGetFunction(&fn, module, name), "cuModuleGetFunction");
    return PyLong_FromVoidPtr(fn);
}

/* set_max_dynamic_smem(function, bytes) */
static PyObject *py_set_max_dynamic_smem(PyObject *self, PyObject *args) {
    PyObject *fn_obj;
    int bytes;
    if (!PyArg_ParseTuple(args, "Oi", &fn_obj, &bytes)) return NULL;
    CUfunction fn = (CUfunction)PyLong_AsVoidPtr(fn_obj);
    if (PyErr_Occurred() || ensure_driver() < 0) return NULL;
    CU_CHECK(drv.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes), "cuFuncSetAttribute");
    Py_RETURN_NONE;
}

typedef union {
    unsigned long long u64;
    long long i64;
    int i32;
    unsigned int u32;
    float f32;
    double f64;
} KernelArg;

/* launch(ordinal, function, grid, block, smem, stream, fmt, args)
 *   grid/block: 3-tuples; stream: CUstream handle as int (0 = legacy default);
 *   fmt: one code per arg: P pointer, q int64, i int32, I uint32, f float, d double. */
static PyObject *py_launch(PyObject *self, PyObject *args) {
    PyObject *ord_obj, *fn_obj, *stream_obj, *values;
    unsigned int gx, gy, gz, bx, by, bz, smem;
    const char *fmt;
    int ordinal;
    if (!PyArg_ParseTuple(args, "OO(III)(III)IOsO!", &ord_obj, &fn_obj, &gx, &gy, &gz, &bx, &by, &bz, &smem,
                          &stream_obj, &fmt, &PyTuple_Type, &values))
        return NULL;
    if (get_ordinal(ord_obj, &ordinal) < 0) return NULL;
    CUfunction fn = (CUfunction)PyLong_AsVoidPtr(fn_obj);
    if (PyErr_Occurred()) return NULL;
    CUstream stream = (CUstream)PyLong_AsVoidPtr(stream_obj);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    if ((Py_ssize_t)strlen(fmt) != n || n > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "launch: format %R does not describe %zd arguments (max %d)",
                     PyTuple_GET_ITEM(args, 6), n, MAX_ARGS);
        return NULL;
    }
    KernelArg storage[MAX_ARGS];
    void *params[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *v = PyTuple_GET_ITEM(values, i);
        switch (fmt[i]) {
            case 'P': storage[i].u64 = PyLong_AsUnsignedLongLong(v); break;
            case 'q': storage[i].i64 = PyLong_AsLongLong(v); break;
            case 'i': {
                long long x = PyLong_AsLongLong(v);
                if (!PyErr_Occurred() && (x < INT32_MIN || x > INT32_MAX))
                    PyErr_Format(PyExc_OverflowError, "launch: argument %zd (%lld) does not fit int32", i, x);
                storage[i].i32 = (int)x;
                break;
            }
            case 'I': {
                unsigned long long x = PyLong_AsUnsignedLongLong(v);
                if (!PyErr_Occurred() && x > UINT32_MAX)
                    PyErr_Format(PyExc_OverflowError, "launch: argument %zd does not fit uint32", i);
                storage[i].u32 = (unsigned int)x;
                break;
            }
            case 'f': storage[i].f32 = (float)PyFloat_AsDouble(v); break;
            case 'd': storage[i].f64 = PyFloat_AsDouble(v); break;
            default:
                PyErr_Format(PyExc_ValueError, "launch: unknown argument code %c", fmt[i]);
                return NULL;
        }
        if (PyErr_Occurred()) return NULL;
        params[i] = &storage[i];
    }
    if (ensure_driver() < 0) return NULL;
    WITH_DEVICE(ordinal, drv.LaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, NULL), "cuLaunchKernel");
    Py_RETURN_NONE;
}

/* mem_alloc(ordinal, nbytes) -> device pointer */
static PyObject *py_mem_alloc(PyObject *self, PyObject *args) {
    PyObject *ord_obj;
    unsigned long long nbytes;
    int ordinal;
    if (!PyArg_ParseTuple(args, "OK", &ord_obj, &nbytes)) return NULL;
    if (get_ordinal(ord_obj, &ordinal) < 0 || ensure_driver() < 0) return NULL;
    CUdeviceptr ptr = 0;
    WITH_DEVICE(ordinal, drv.MemAlloc(&ptr, nbytes ? (size_t)nbytes : 1), "cuMemAlloc");
    return PyLong_FromUnsignedLongLong(ptr);
}

/* mem_free(ordinal, ptr) */
static PyObject *py_mem_free(PyObject *self, PyObject *args) {
    PyObject *ord_obj;
    unsigned long long ptr;
    int ordinal;
    if (!PyArg_ParseTuple(args, "OK", &ord_obj, &ptr)) return NULL;
    if (get_ordinal(ord_obj, &ordinal) < 0 || ensure_driver() < 0) return NULL;
    WITH_DEVICE(ordinal, drv.MemFree((CUdeviceptr)ptr), "cuMemFree");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"driver_version", py_driver_version, METH_NOARGS, "CUDA driver version (e.g. 13000); loads the driver."},
    {"device_count", py_device_count, METH_NOARGS, "Number of visible CUDA devices."},
    {"device_info", py_device_info, METH_O, "device_info(ordinal) -> (major, minor, name)"},
    {"pointer_device", py_pointer_device, METH_O, "pointer_device(ptr) -> ordinal of the owning device"},
    {"load_module", py_load_module, METH_VARARGS, "load_module(ordinal, cubin_bytes) -> module handle"},
    {"get_function", py_get_function, METH_VARARGS, "get_function(module, name) -> function handle"},
    {"set_max_dynamic_smem", py_set_max_dynamic_smem, METH_VARARGS, "set_max_dynamic_smem(function, bytes)"},
    {"launch", py_launch, METH_VARARGS,
     "launch(ordinal, function, grid, block, smem, stream, fmt, args): cuLaunchKernel on `stream`"},
    {"mem_alloc", py_mem_alloc, METH_VARARGS, "mem_alloc(ordinal, nbytes) -> device pointer"},
    {"mem_free", py_mem_free, METH_VARARGS, "mem_free(ordinal, ptr)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kestrel_kernels._C",
    "CUDA driver-API loader and launcher for kestrel-kernels' precompiled cubins.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    CudaError = PyErr_NewExceptionWithDoc("kestrel_kernels._C.CudaError",
                                          "A CUDA driver call failed (the message names the call and the CUresult).",
                                          PyExc_RuntimeError, NULL);
    if (!CudaError || PyModule_AddObject(m, "CudaError", CudaError) < 0) {
        Py_XDECREF(CudaError);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(CudaError);
    return m;
}
