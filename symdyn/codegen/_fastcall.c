/* symdyn_fastcall: the C side of compiled functions' single calls (see fastcall.py).
 *
 * ``Function`` is a base type for symdyn.codegen.loader.CompiledFunction. ``_attach`` binds an
 * instance to one generated entry point ``int F_call(void **ctx)`` (csource.py: ctx holds the
 * input pointers, the output pointers, then iw, w and the owner thread) and to the Python call
 * (``CompiledFunction.__call__``).
 *
 * Calling the instance with exactly its inputs as C-contiguous float64 NumPy arrays of the
 * right shapes and no keywords points ctx at their data, lets C write into fresh output arrays
 * and returns them (an array, or a tuple of arrays). Any other call, and any nonzero status from
 * C (NaN/inf, a bad quaternion, another thread's context; C wrote nothing then), goes to the
 * Python call with the same arguments, which converts the inputs, handles keywords and raises
 * the named errors; it runs C through ``_run(inputs, outputs)``. The GIL is held throughout.
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
/* F_batch_mode(in, out, n, nthreads, stream, simd, bad) of csource.py */
typedef int (*batch_fn)(const double *const *, double *const *, long long, int, int, int,
                        long long *);

static void release(PyObject **arrays, Py_ssize_t n) {
    while (n-- > 0) Py_DECREF(arrays[n]);
}

typedef struct {
    PyObject_HEAD
    entry_fn fn;                      /* NULL until _attach */
    int direct;                       /* exact-array calls may skip the Python call */
    void **ctx;                       /* sz_arg + sz_res + 3 slots, owned */
    Py_ssize_t sz_arg, n_in, n_out;
    npy_intp in_size[MAX_IO];
    npy_intp out_size[MAX_IO];
    int out_ndim[MAX_IO];
    npy_intp out_dims[MAX_IO][MAX_NDIM];
    PyObject *python_call;            /* CompiledFunction.__call__, called with self first */
    batch_fn batch;                   /* NULL until _attach_batch */
    Py_ssize_t batch_max;             /* batches of at most this many states run here */
    PyObject *python_batch;           /* CompiledFunction.batch, called with self first */
} Function;

static int is_input(PyObject *a, npy_intp size) {
    PyArrayObject *x = (PyArrayObject *)a;
    return PyArray_Check(a) && PyArray_TYPE(x) == NPY_DOUBLE && PyArray_SIZE(x) == size
           && PyArray_ISCARRAY_RO(x) && !PyArray_ISBYTESWAPPED(x);
}

/* Point ctx at the inputs and outputs and run C; no Python code runs in between, so no other
 * Python thread can change ctx before C reads it. */
static int run(Function *self, PyObject *const *ins, PyObject *const *outs) {
    Py_ssize_t k;
    for (k = 0; k < self->n_in; k++) self->ctx[k] = PyArray_DATA((PyArrayObject *)ins[k]);
    for (k = 0; k < self->n_out; k++)
        self->ctx[self->sz_arg + k] = PyArray_DATA((PyArrayObject *)outs[k]);
    int status = self->fn(self->ctx);
    for (k = 0; k < self->n_in; k++) self->ctx[k] = NULL;
    return status;
}

static PyObject *python_call_with(PyObject *call, Function *self, PyObject *args,
                                  PyObject *kw);

static PyObject *python_call(Function *self, PyObject *args, PyObject *kw) {
    return python_call_with(self->python_call, self, args, kw);
}

static PyObject *python_call_with(PyObject *call, Function *self, PyObject *args,
                                  PyObject *kw) {
    if (call == NULL) {
        PyErr_SetString(PyExc_TypeError, "this compiled function is not attached");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args), k;
    PyObject *with_self = PyTuple_New(n + 1);
    if (with_self == NULL) return NULL;
    Py_INCREF(self);
    PyTuple_SET_ITEM(with_self, 0, (PyObject *)self);
    for (k = 0; k < n; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        Py_INCREF(a);
        PyTuple_SET_ITEM(with_self, k + 1, a);
    }
    PyObject *res = PyObject_Call(call, with_self, kw);
    Py_DECREF(with_self);
    return res;
}

/* the Python batch with the arguments of a vectorcall */
static PyObject *python_batch(Function *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    Py_ssize_t k, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *t = PyTuple_New(nargs), *kw = NULL, *res;
    if (t == NULL) return NULL;
    for (k = 0; k < nargs; k++) {
        Py_INCREF(args[k]);
        PyTuple_SET_ITEM(t, k, args[k]);
    }
    if (nkw) {
        kw = PyDict_New();
        for (k = 0; kw != NULL && k < nkw; k++)
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0)
                Py_CLEAR(kw);
        if (kw == NULL) {
            Py_DECREF(t);
            return NULL;
        }
    }
    res = python_call_with(self->python_batch, self, t, kw);
    Py_DECREF(t);
    Py_XDECREF(kw);
    return res;
}

/* An out= array for output k of a batch of n states: an exact, writeable, C-contiguous,
 * native float64 array of shape (n, *output shape). */
static int is_batch_out(Function *self, PyObject *a, Py_ssize_t k, npy_intp n) {
    PyArrayObject *x = (PyArrayObject *)a;
    int d;
    if (!PyArray_CheckExact(a) || PyArray_TYPE(x) != NPY_DOUBLE || !PyArray_ISCARRAY(x)
        || PyArray_ISBYTESWAPPED(x) || PyArray_NDIM(x) != self->out_ndim[k] + 1
        || PyArray_DIM(x, 0) != n)
        return 0;
    for (d = 0; d < self->out_ndim[k]; d++)
        if (PyArray_DIM(x, d + 1) != self->out_dims[k][d]) return 0;
    return 1;
}

/* The batch's keywords, where C can take them as they are: out (checked against n later),
 * threads (None or a positive int), stream (None, True or False), simd (True or False) and nan
 * ("raise" or "propagate"). 0 for anything else: the Python batch then converts or raises. */
typedef struct {
    PyObject *out;
    int threads, stream, simd, propagate;
} BatchOptions;

static int batch_options(PyObject *const *values, PyObject *kwnames, BatchOptions *o) {
    Py_ssize_t k, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    o->out = NULL;
    o->threads = 0;          /* None: one thread for batches up to batch_max */
    o->stream = -1;
    o->simd = 1;
    o->propagate = 0;
    for (k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k), *v = values[k];
        if (PyUnicode_CompareWithASCIIString(key, "out") == 0) {
            if (v != Py_None) o->out = v;
        } else if (PyUnicode_CompareWithASCIIString(key, "threads") == 0) {
            if (v == Py_None) continue;
            if (!PyLong_CheckExact(v)) return 0;
            long t = PyLong_AsLong(v);
            if (t == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            if (t < 1 || t > 4096) return 0;
            o->threads = (int)t;
        } else if (PyUnicode_CompareWithASCIIString(key, "stream") == 0) {
            if (v == Py_None) o->stream = -1;
            else if (v == Py_True) o->stream = 1;
            else if (v == Py_False) o->stream = 0;
            else return 0;
        } else if (PyUnicode_CompareWithASCIIString(key, "simd") == 0) {
            if (v == Py_True) o->simd = 1;
            else if (v == Py_False) o->simd = 0;
            else return 0;
        } else if (PyUnicode_CompareWithASCIIString(key, "nan") == 0) {
            if (!PyUnicode_CheckExact(v)) return 0;
            if (PyUnicode_CompareWithASCIIString(v, "raise") == 0) o->propagate = 0;
            else if (PyUnicode_CompareWithASCIIString(v, "propagate") == 0) o->propagate = 1;
            else return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

/* batch(*arrays, **options): C-contiguous float64 arrays of shape (B, n_k), the keywords as
 * batch_options takes them, out= arrays as is_batch_out takes them (an array, or a tuple of
 * arrays for several outputs), and either an explicit thread count or a batch small enough
 * for one thread (batch_max) run here, the GIL released around C. Any other call, and any
 * nonzero status that is an error (NaN/inf unless nan="propagate", a bad quaternion), goes to
 * the Python batch, which converts, checks and raises the named errors; it evaluates again
 * (into the same out= arrays), so results never depend on the path. */
static PyObject *function_batch(PyObject *obj, PyObject *const *args, Py_ssize_t nargsf,
                                PyObject *kwnames) {
    Function *self = (Function *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), k;
    const double *in[MAX_IO];
    double *out[MAX_IO];
    PyObject *outs[MAX_IO];
    npy_intp n = -1, dims[MAX_NDIM + 1];
    long long bad[2];
    int status, d, threads;
    BatchOptions o;
    if (self->batch == NULL || !self->direct || nargs != self->n_in
        || !batch_options(args + nargs, kwnames, &o))
        return python_batch(self, args, nargs, kwnames);
    for (k = 0; k < nargs; k++) {
        PyArrayObject *x = (PyArrayObject *)args[k];
        if (!PyArray_CheckExact(args[k]) || PyArray_NDIM(x) != 2 || PyArray_TYPE(x) != NPY_DOUBLE
            || !PyArray_ISCARRAY_RO(x) || PyArray_ISBYTESWAPPED(x)
            || PyArray_DIM(x, 1) != self->in_size[k] || (n >= 0 && PyArray_DIM(x, 0) != n))
            return python_batch(self, args, nargs, kwnames);
        n = PyArray_DIM(x, 0);
        in[k] = (const double *)PyArray_DATA(x);
    }
    if (n < 1 || (o.threads == 0 && n > self->batch_max))
        return python_batch(self, args, nargs, kwnames);
    threads = o.threads ? o.threads : 1;
    if (o.out != NULL) {
        PyObject *const *given = &o.out;
        if (self->n_out > 1) {
            if (!PyTuple_CheckExact(o.out) || PyTuple_GET_SIZE(o.out) != self->n_out)
                return python_batch(self, args, nargs, kwnames);
            given = &PyTuple_GET_ITEM(o.out, 0);
        }
        for (k = 0; k < self->n_out; k++) {
            if (!is_batch_out(self, given[k], k, n))
                return python_batch(self, args, nargs, kwnames);
            out[k] = (double *)PyArray_DATA((PyArrayObject *)given[k]);
        }
    } else {
        for (k = 0; k < self->n_out; k++) {
            dims[0] = n;
            for (d = 0; d < self->out_ndim[k]; d++) dims[d + 1] = self->out_dims[k][d];
            outs[k] = PyArray_SimpleNew(self->out_ndim[k] + 1, dims, NPY_DOUBLE);
            if (outs[k] == NULL) {
                release(outs, k);
                return NULL;
            }
            out[k] = (double *)PyArray_DATA((PyArrayObject *)outs[k]);
        }
    }
    Py_BEGIN_ALLOW_THREADS
    status = self->batch(in, out, (long long)n, threads, o.stream, o.simd, bad);
    Py_END_ALLOW_THREADS
    if (status != 0 && !(status == 1 && o.propagate)) {
        if (o.out == NULL) release(outs, self->n_out);
        return python_batch(self, args, nargs, kwnames);
    }
    if (o.out != NULL) {
        Py_INCREF(o.out);
        return o.out;
    }
    if (self->n_out == 1) return outs[0];
    PyObject *t = PyTuple_New(self->n_out);
    if (t == NULL) {
        release(outs, self->n_out);
        return NULL;
    }
    for (k = 0; k < self->n_out; k++) PyTuple_SET_ITEM(t, k, outs[k]);
    return t;
}

/* _attach_batch(batch_address, batch_max, python_batch) */
static PyObject *function_attach_batch(PyObject *obj, PyObject *args) {
    Function *self = (Function *)obj;
    unsigned long long fn;
    Py_ssize_t batch_max;
    PyObject *call;
    if (!PyArg_ParseTuple(args, "KnO", &fn, &batch_max, &call)) return NULL;
    if (fn == 0 || !PyCallable_Check(call)) {
        PyErr_SetString(PyExc_ValueError, "_attach_batch: bad entry point or Python batch");
        return NULL;
    }
    self->batch = (batch_fn)(uintptr_t)fn;
    self->batch_max = batch_max;
    Py_INCREF(call);
    Py_XSETREF(self->python_batch, call);
    Py_RETURN_NONE;
}

static PyObject *function_call(PyObject *obj, PyObject *args, PyObject *kw) {
    Function *self = (Function *)obj;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), k;
    PyObject *outs[MAX_IO];
    if (!self->direct || (kw != NULL && PyDict_GET_SIZE(kw)) || nargs != self->n_in)
        return python_call(self, args, kw);
    for (k = 0; k < nargs; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        if (!PyArray_CheckExact(a) || PyArray_NDIM((PyArrayObject *)a) != 1
            || !is_input(a, self->in_size[k]))
            return python_call(self, args, kw);
    }
    for (k = 0; k < self->n_out; k++) {
        outs[k] = PyArray_SimpleNew(self->out_ndim[k], self->out_dims[k], NPY_DOUBLE);
        if (outs[k] == NULL) {
            while (k-- > 0) Py_DECREF(outs[k]);
            return NULL;
        }
    }
    int status = run(self, PySequence_Fast_ITEMS(args), outs);
    if (status != 0) {
        for (k = 0; k < self->n_out; k++) Py_DECREF(outs[k]);
        return python_call(self, args, kw);
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

/* _run(inputs, outputs) -> status: float64 input arrays of the function's sizes (any strides:
 * C-contiguous copies are made where needed) and writeable C-contiguous float64 outputs;
 * TypeError for anything else. */
static PyObject *function_run(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
    Function *self = (Function *)obj;
    PyObject *ins[MAX_IO], *outs[MAX_IO];
    Py_ssize_t k;
    int status;
    if (self->fn == NULL) {
        PyErr_SetString(PyExc_TypeError, "this compiled function is not attached");
        return NULL;
    }
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1])
        || PyTuple_GET_SIZE(args[0]) != self->n_in || PyTuple_GET_SIZE(args[1]) != self->n_out) {
        PyErr_SetString(PyExc_TypeError, "_run(inputs, outputs): two tuples of arrays");
        return NULL;
    }
    for (k = 0; k < self->n_out; k++) {
        outs[k] = PyTuple_GET_ITEM(args[1], k);
        if (!is_input(outs[k], self->out_size[k])
            || !PyArray_ISWRITEABLE((PyArrayObject *)outs[k])) {
            PyErr_Format(PyExc_TypeError, "_run: output %zd is not a writeable C-contiguous "
                         "float64 array of %zd entries", k, (Py_ssize_t)self->out_size[k]);
            return NULL;
        }
    }
    for (k = 0; k < self->n_in; k++) {
        PyObject *a = PyTuple_GET_ITEM(args[0], k);
        ins[k] = NULL;
        if (is_input(a, self->in_size[k])) {
            Py_INCREF(a);
            ins[k] = a;
        } else if (PyArray_Check(a) && PyArray_TYPE((PyArrayObject *)a) == NPY_DOUBLE) {
            ins[k] = PyArray_FROM_OF(a, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_NOTSWAPPED);
        }
        if (ins[k] == NULL || !is_input(ins[k], self->in_size[k])) {
            release(ins, ins[k] == NULL ? k : k + 1);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "_run: input %zd is not a float64 array of %zd "
                         "entries", k, (Py_ssize_t)self->in_size[k]);
            return NULL;
        }
    }
    status = run(self, ins, outs);
    release(ins, self->n_in);
    return PyLong_FromLong(status);
}

static int size_list(PyObject *seq, const char *what, Py_ssize_t *n) {
    if (!PyTuple_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple", what);
        return -1;
    }
    *n = PyTuple_GET_SIZE(seq);
    if (*n > MAX_IO) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d entries", what, MAX_IO);
        return -1;
    }
    return 0;
}

/* _attach(fn_address, sz_arg, sz_res, iw_address, w_address, owner, in_sizes, out_shapes,
 *         python_call, direct) */
static PyObject *function_attach(PyObject *obj, PyObject *args) {
    Function *self = (Function *)obj;
    unsigned long long fn, iw, w, owner;
    Py_ssize_t sz_arg, sz_res, n_in, n_out, k, d;
    PyObject *in_sizes, *out_shapes, *call;
    int direct;
    if (!PyArg_ParseTuple(args, "KnnKKKOOOp", &fn, &sz_arg, &sz_res, &iw, &w, &owner, &in_sizes,
                          &out_shapes, &call, &direct))
        return NULL;
    if (size_list(in_sizes, "in_sizes", &n_in) || size_list(out_shapes, "out_shapes", &n_out))
        return NULL;
    if (fn == 0 || n_in > sz_arg || n_out > sz_res || !PyCallable_Check(call)) {
        PyErr_SetString(PyExc_ValueError, "_attach: bad entry point, sizes or Python call");
        return NULL;
    }
    for (k = 0; k < n_in; k++) {
        self->in_size[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(in_sizes, k));
        if (self->in_size[k] < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "in_sizes: negative size");
            return NULL;
        }
    }
    for (k = 0; k < n_out; k++) {
        PyObject *s = PyTuple_GET_ITEM(out_shapes, k);
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) > MAX_NDIM) {
            PyErr_SetString(PyExc_ValueError, "out_shapes: tuples of at most 3 dimensions");
            return NULL;
        }
        self->out_ndim[k] = (int)PyTuple_GET_SIZE(s);
        self->out_size[k] = 1;
        for (d = 0; d < self->out_ndim[k]; d++) {
            self->out_dims[k][d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(s, d));
            if (self->out_dims[k][d] < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "out_shapes: negative dimension");
                return NULL;
            }
            self->out_size[k] *= self->out_dims[k][d];
        }
    }
    void **ctx = (void **)PyMem_Calloc((size_t)(sz_arg + sz_res + 3), sizeof(void *));
    if (ctx == NULL) return PyErr_NoMemory();
    ctx[sz_arg + sz_res] = (void *)(uintptr_t)iw;
    ctx[sz_arg + sz_res + 1] = (void *)(uintptr_t)w;
    ctx[sz_arg + sz_res + 2] = (void *)(uintptr_t)owner;
    PyMem_Free(self->ctx);
    self->ctx = ctx;
    self->fn = (entry_fn)(uintptr_t)fn;
    self->direct = direct;
    self->sz_arg = sz_arg;
    self->n_in = n_in;
    self->n_out = n_out;
    Py_INCREF(call);
    Py_XSETREF(self->python_call, call);
    Py_RETURN_NONE;
}

static PyObject *function_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    return type->tp_alloc(type, 0);   /* unattached: every call goes to the Python call */
}

static int function_traverse(Function *self, visitproc visit, void *arg) {
    Py_VISIT(self->python_call);
    Py_VISIT(self->python_batch);
    return 0;
}

static int function_clear(Function *self) {
    Py_CLEAR(self->python_call);
    Py_CLEAR(self->python_batch);
    return 0;
}

static void function_dealloc(Function *self) {
    PyObject_GC_UnTrack(self);
    function_clear(self);
    PyMem_Free(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef function_methods[] = {
    {"_attach", (PyCFunction)function_attach, METH_VARARGS,
     "_attach(fn_address, sz_arg, sz_res, iw_address, w_address, owner, in_sizes, out_shapes, "
     "python_call, direct): bind to a generated F_call entry point."},
    {"_attach_batch", (PyCFunction)function_attach_batch, METH_VARARGS,
     "_attach_batch(batch_address, batch_max, python_batch): bind batch() to F_batch_mode."},
    {"batch", (PyCFunction)(void (*)(void))function_batch, METH_FASTCALL | METH_KEYWORDS,
     "batch(*arrays, out=None, threads=None, nan='raise', stream=None, simd=True): see "
     "CompiledFunction.batch (symdyn.codegen.loader); exact-array calls (out= arrays and "
     "plain keyword values included) are handled in C."},
    {"_run", (PyCFunction)(void (*)(void))function_run, METH_FASTCALL,
     "_run(inputs, outputs) -> C status: evaluate into the given float64 arrays."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "symdyn_fastcall.Function",
    .tp_basicsize = sizeof(Function),
    .tp_dealloc = (destructor)function_dealloc,
    .tp_call = function_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Base type of compiled functions' single calls (see symdyn/codegen/fastcall.py).",
    .tp_traverse = (traverseproc)function_traverse,
    .tp_clear = (inquiry)function_clear,
    .tp_methods = function_methods,
    .tp_new = function_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "symdyn_fastcall", "Single calls of symdyn's compiled functions.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_symdyn_fastcall(void) {
    import_array();
    if (PyType_Ready(&FunctionType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&FunctionType);
    if (PyModule_AddObject(m, "Function", (PyObject *)&FunctionType) < 0) {
        Py_DECREF(&FunctionType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
