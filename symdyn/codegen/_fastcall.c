/* symdyn_fastcall: single calls of compiled functions without ctypes (see fastcall.py).
 *
 * A Caller wraps one generated entry point ``int F_call(void **ctx)`` (csource.py: ctx holds
 * the input pointers, the output pointers, then iw, w and the owner thread). Called with exactly
 * its inputs as C-contiguous float64 NumPy arrays of the right shapes and no keywords, it points
 * ctx at their data, allocates fresh output arrays for the C code to write into and returns them
 * (an array, or a tuple of arrays). Anything else - other argument types or shapes, keywords,
 * a nonzero status from C (NaN/inf, a bad quaternion, another thread's context) - goes to the
 * Python ``fallback`` with the same arguments, which converts, raises the named error or runs
 * the call on the thread's own copy. The GIL is held throughout, as with ctypes.PyDLL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_IO 16
#define MAX_NDIM 3

typedef int (*entry_fn)(void **ctx);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    entry_fn fn;
    void **ctx;                       /* sz_arg + sz_res + 3 slots, owned */
    Py_ssize_t sz_arg, n_in, n_out;
    npy_intp in_size[MAX_IO];
    int out_ndim[MAX_IO];
    npy_intp out_dims[MAX_IO][MAX_NDIM];
    PyObject *fallback;
} Caller;

static PyObject *caller_fallback(Caller *self, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *caller_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    Caller *self = (Caller *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), k;
    PyObject *outs[MAX_IO];
    if (kwnames != NULL || nargs != self->n_in)
        return caller_fallback(self, args, nargsf, kwnames);
    for (k = 0; k < nargs; k++) {
        PyObject *a = args[k];
        PyArrayObject *x = (PyArrayObject *)a;
        if (!PyArray_CheckExact(a) || PyArray_TYPE(x) != NPY_DOUBLE || PyArray_NDIM(x) != 1
            || PyArray_DIM(x, 0) != self->in_size[k]
            || !PyArray_ISCARRAY_RO(x) || PyArray_ISBYTESWAPPED(x))
            return caller_fallback(self, args, nargsf, kwnames);
        self->ctx[k] = PyArray_DATA(x);
    }
    for (k = 0; k < self->n_out; k++) {
        outs[k] = PyArray_SimpleNew(self->out_ndim[k], self->out_dims[k], NPY_DOUBLE);
        if (outs[k] == NULL) {
            while (k-- > 0) Py_DECREF(outs[k]);
            return NULL;
        }
        self->ctx[self->sz_arg + k] = PyArray_DATA((PyArrayObject *)outs[k]);
    }
    int status = self->fn(self->ctx);
    for (k = 0; k < nargs; k++) self->ctx[k] = NULL;
    if (status != 0) {
        for (k = 0; k < self->n_out; k++) Py_DECREF(outs[k]);
        return caller_fallback(self, args, nargsf, kwnames);
    }
    if (self->n_out == 1) return outs[0];
    PyObject *t = PyTuple_New(self->n_out);
    if (t == NULL) {
        for (k = 0; k < self->n_out; k++) Py_DECREF(outs[k]);
        return NULL;
    }
    for (k = 0; k < self->n_out; k++) PyTuple_SET_ITEM(t, k, outs[k]);
    return t;
}

static int size_list(PyObject *seq, const char *what, Py_ssize_t *n) {
    if (!PyTuple_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple", what);
        return -1;
    }
    *n = PyTuple_GET_SIZE(seq);
    if (*n < 0 || *n > MAX_IO) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d entries", what, MAX_IO);
        return -1;
    }
    return 0;
}

/* Caller(fn_address, sz_arg, sz_res, iw_address, w_address, owner, in_sizes, out_shapes,
 *        fallback) */
static PyObject *caller_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    unsigned long long fn, iw, w, owner;
    Py_ssize_t sz_arg, sz_res, n_in, n_out, k, d;
    PyObject *in_sizes, *out_shapes, *fallback;
    if (kw != NULL && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "Caller() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KnnKKKOOO", &fn, &sz_arg, &sz_res, &iw, &w, &owner, &in_sizes,
                          &out_shapes, &fallback))
        return NULL;
    if (size_list(in_sizes, "in_sizes", &n_in) || size_list(out_shapes, "out_shapes", &n_out))
        return NULL;
    if (fn == 0 || n_in > sz_arg || n_out > sz_res || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_ValueError, "Caller: bad entry point, sizes or fallback");
        return NULL;
    }
    Caller *self = (Caller *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = caller_vectorcall;
    self->fn = (entry_fn)(uintptr_t)fn;
    self->sz_arg = sz_arg;
    self->n_in = n_in;
    self->n_out = n_out;
    self->ctx = (void **)PyMem_Calloc((size_t)(sz_arg + sz_res + 3), sizeof(void *));
    if (self->ctx == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->ctx[sz_arg + sz_res] = (void *)(uintptr_t)iw;
    self->ctx[sz_arg + sz_res + 1] = (void *)(uintptr_t)w;
    self->ctx[sz_arg + sz_res + 2] = (void *)(uintptr_t)owner;
    for (k = 0; k < n_in; k++) {
        self->in_size[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(in_sizes, k));
        if (self->in_size[k] < 0 && PyErr_Occurred()) goto fail;
    }
    for (k = 0; k < n_out; k++) {
        PyObject *s = PyTuple_GET_ITEM(out_shapes, k);
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) > MAX_NDIM) {
            PyErr_SetString(PyExc_ValueError, "out_shapes: tuples of at most 3 dimensions");
            goto fail;
        }
        self->out_ndim[k] = (int)PyTuple_GET_SIZE(s);
        for (d = 0; d < self->out_ndim[k]; d++) {
            self->out_dims[k][d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(s, d));
            if (self->out_dims[k][d] < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "out_shapes: negative dimension");
                goto fail;
            }
        }
    }
    Py_INCREF(fallback);
    self->fallback = fallback;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static int caller_traverse(Caller *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback);
    return 0;
}

static int caller_clear(Caller *self) {
    Py_CLEAR(self->fallback);
    return 0;
}

static void caller_dealloc(Caller *self) {
    PyObject_GC_UnTrack(self);
    caller_clear(self);
    PyMem_Free(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *caller_call(PyObject *self, PyObject *args, PyObject *kw) {
    return PyVectorcall_Call(self, args, kw);
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symdyn_fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
    .tp_call = caller_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A compiled function's single call (see symdyn/codegen/fastcall.py).",
    .tp_traverse = (traverseproc)caller_traverse,
    .tp_clear = (inquiry)caller_clear,
    .tp_new = caller_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "symdyn_fastcall", "Single calls of symdyn's compiled functions.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_symdyn_fastcall(void) {
    import_array();
    if (PyType_Ready(&CallerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&CallerType);
    if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
        Py_DECREF(&CallerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
