/*
 * gpusync._core: the CPython + NumPy C API binding of the C API (gpusync.h).
 *
 * Arrays arrive either as 1-D NumPy arrays (host memory) or as device
 * descriptors (ptr, length, stride_in_elements, dtype_code, device) built by
 * gpusync/_arrays.py from __cuda_array_interface__ / DLPack.  The GIL is
 * released around every backend call.  gs_raise() is the only place where a
 * gs_status becomes a Python exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL gpusync_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>

#include "gpusync/gpusync.h"
#include "gpusync/tuning.h"
#include "demos.h"

#include <time.h>

static PyObject *GpusyncError, *CudaError, *DeadlockError, *UnsupportedDeviceError, *NoCudaError,
    *CooperativeLaunchError;

/* The one mapping from status codes to exceptions. */
static PyObject *gs_raise(gs_status st)
{
    PyObject *type;
    switch (st) {
    case GS_ERR_INVALID_ARGUMENT: type = PyExc_ValueError; break;
    case GS_ERR_TYPE: type = PyExc_TypeError; break;
    case GS_ERR_NO_MEMORY: type = PyExc_MemoryError; break;
    case GS_ERR_NO_CUDA: type = NoCudaError; break;
    case GS_ERR_UNSUPPORTED_DEVICE: type = UnsupportedDeviceError; break;
    case GS_ERR_OVERFLOW: type = PyExc_OverflowError; break;
    case GS_ERR_DEADLOCK: type = DeadlockError; break;
    case GS_ERR_NO_COOPERATIVE: type = CooperativeLaunchError; break;
    case GS_ERR_INTERRUPTED:
        gs_interrupt_clear();
        if (!PyErr_Occurred()) /* the hook already set the handler's exception */
            PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    default: type = CudaError; break;
    }
    const char *msg = gs_last_error();
    PyErr_SetString(type, msg && msg[0] ? msg : "gpusync: unknown error");
    return NULL;
}

/* After every backend call (GIL held again): environment warnings become
 * RuntimeWarnings, a failure an exception, and an exception the interrupt
 * hook left (KeyboardInterrupt from a signal handler) wins even when the call
 * finished.  Returns 1 when the call's result should be returned. */
static int gs_done(gs_status st)
{
    char msg[320];
    while (gs_env_take_warning(msg, sizeof msg))
        if (PyErr_WarnEx(PyExc_RuntimeWarning, msg, 1) < 0)
            return 0;
    if (st != GS_OK) {
        gs_raise(st);
        return 0;
    }
    if (PyErr_Occurred()) {
        gs_interrupt_clear();
        return 0;
    }
    return 1;
}

/* The interrupt hook (gpusync.h): run by the calling thread inside a long
 * wait, with the GIL released.  A pending SIGINT runs Python's handler here,
 * whose exception stays set on this thread until gs_done sees it. */
static unsigned long main_thread_ident; /* Python runs signal handlers only there */

static int interrupt_hook(void)
{
    if (PyThread_get_thread_ident() != main_thread_ident)
        return 0; /* no handler can run here: do not contend for the GIL */
    PyGILState_STATE g = PyGILState_Ensure();
    const int hit = PyErr_Occurred() != NULL || PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return hit;
}

/* The backend names, interned at import: Python passes the same interned
 * strings, so the converter below compares pointers on the common path. */
static PyObject *name_cuda, *name_cpu;

static const gs_backend_ops *backend_by_name(PyObject *name)
{
    if (name == name_cuda || (PyUnicode_Check(name) && PyUnicode_Compare(name, name_cuda) == 0))
        return gs_cuda_backend();
    if (name == name_cpu || (PyUnicode_Check(name) && PyUnicode_Compare(name, name_cpu) == 0))
        return gs_cpu_backend();
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "unknown backend %R: expected 'cuda' or 'cpu'", name);
    return NULL;
}

static int dtype_from_numpy(int typenum, gs_dtype *dt)
{
    switch (typenum) {
    case NPY_BOOL: *dt = GS_BOOL; return 1;
    case NPY_BYTE: *dt = GS_INT8; return 1;
    case NPY_UBYTE: *dt = GS_UINT8; return 1;
    case NPY_SHORT: *dt = GS_INT16; return 1;
    case NPY_USHORT: *dt = GS_UINT16; return 1;
    case NPY_INT: *dt = GS_INT32; return 1;
    case NPY_UINT: *dt = GS_UINT32; return 1;
    case NPY_LONG: *dt = sizeof(long) == 8 ? GS_INT64 : GS_INT32; return 1;
    case NPY_ULONG: *dt = sizeof(long) == 8 ? GS_UINT64 : GS_UINT32; return 1;
    case NPY_LONGLONG: *dt = GS_INT64; return 1;
    case NPY_ULONGLONG: *dt = GS_UINT64; return 1;
    case NPY_HALF: *dt = GS_FLOAT16; return 1;
    case NPY_FLOAT: *dt = GS_FLOAT32; return 1;
    case NPY_DOUBLE: *dt = GS_FLOAT64; return 1;
    default: return 0;
    }
}

/* An argument that is a host NumPy array or a device descriptor tuple. */
typedef struct {
    gs_array a;
    PyObject *owner;  /* borrowed: the caller keeps the array alive */
    int writable;
    const char *what; /* the argument's name in errors (set by the caller for the converters) */
    int present;      /* 0: None was passed for an optional array */
} gs_arg;

static int parse_array(PyObject *obj, gs_arg *out, const char *what)
{
    memset(out, 0, sizeof *out);
    out->what = what;
    out->present = 1;
    if (PyArray_Check(obj)) {
        PyArrayObject *arr = (PyArrayObject *)obj;
        if (PyArray_NDIM(arr) != 1) {
            PyErr_Format(PyExc_ValueError, "%s: expected a 1-D array, got %d dimensions", what, PyArray_NDIM(arr));
            return 0;
        }
        if (!dtype_from_numpy(PyArray_TYPE(arr), &out->a.dtype)) {
            PyErr_Format(PyExc_TypeError, "%s: unsupported dtype %R", what, (PyObject *)PyArray_DESCR(arr));
            return 0;
        }
        npy_intp isz = PyArray_ITEMSIZE(arr), st = PyArray_STRIDE(arr, 0);
        if (!PyArray_ISALIGNED(arr) || st % isz != 0) {
            PyErr_Format(PyExc_ValueError, "%s: array is not aligned", what);
            return 0;
        }
        out->a.data = PyArray_DATA(arr);
        out->a.length = PyArray_DIM(arr, 0);
        out->a.stride = out->a.length > 1 ? st / isz : 1;
        out->a.device = GS_HOST;
        out->writable = PyArray_ISWRITEABLE(arr);
        out->owner = obj;
        return 1;
    }
    unsigned long long ptr;
    long long len, stride;
    int dt, dev;
    if (!PyTuple_Check(obj) || !PyArg_ParseTuple(obj, "KLLii", &ptr, &len, &stride, &dt, &dev)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a 1-D NumPy array or a device descriptor", what);
        return 0;
    }
    if (dt < 0 || dt >= GS_DTYPE_COUNT || len < 0) {
        PyErr_Format(PyExc_ValueError, "%s: bad device descriptor", what);
        return 0;
    }
    out->a.data = (void *)(uintptr_t)ptr;
    out->a.length = len;
    out->a.stride = stride;
    out->a.dtype = (gs_dtype)dt;
    out->a.device = dev;
    out->writable = 1;
    out->owner = obj;
    return 1;
}

static int parse_strategy(const char *name, gs_strategy *s)
{
    *s = gs_strategy_from_name(name);
    if (*s == GS_STRATEGY_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown strategy '%s'", name);
        return 0;
    }
    return 1;
}

/* bins: (kind, nbins, offset, closed_top, lut, start, step, stop, scale,
 *        margin, arith_f32, edges_f32, edges) -- lut a bytes object of 256 int32 or
 * None, edges a contiguous float64 NumPy array or None. */
typedef struct {
    gs_hist_bins b;
    Py_buffer lut;
    PyArrayObject *edges; /* owned */
} bins_arg;

static void bins_release(bins_arg *ba)
{
    if (ba->lut.obj)
        PyBuffer_Release(&ba->lut);
    Py_XDECREF(ba->edges);
}

static int parse_bins(PyObject *t, bins_arg *ba)
{
    memset(ba, 0, sizeof *ba);
    /* (kind, nbins, offset, closed, lut, start, step, stop, scale, margin, arith_f32, edges_f32, edges):
     * read item by item (PyArg_ParseTuple's format walk cost a tenth of a small fast-path histogram) */
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 13) {
        PyErr_SetString(PyExc_TypeError, "bins description: a tuple of 13 items");
        return 0;
    }
    PyObject *const *it = &PyTuple_GET_ITEM(t, 0);
    const long kind = PyLong_AsLong(it[0]), closed = PyLong_AsLong(it[3]), af32 = PyLong_AsLong(it[10]),
               ef32 = PyLong_AsLong(it[11]);
    const long long nbins = PyLong_AsLongLong(it[1]), offset = PyLong_AsLongLong(it[2]);
    PyObject *lut = it[4], *edges = it[12];
    ba->b.start = PyFloat_AsDouble(it[5]);
    ba->b.step = PyFloat_AsDouble(it[6]);
    ba->b.stop = PyFloat_AsDouble(it[7]);
    ba->b.scale = PyFloat_AsDouble(it[8]);
    ba->b.margin = PyFloat_AsDouble(it[9]);
    if (PyErr_Occurred())
        return 0;
    ba->b.kind = (gs_bins_kind)kind;
    ba->b.nbins = nbins;
    ba->b.offset = offset;
    ba->b.closed_top = closed;
    ba->b.arith_f32 = af32;
    ba->b.edges_f32 = ef32;
    if (kind == GS_BINS_LUT) {
        if (PyObject_GetBuffer(lut, &ba->lut, PyBUF_SIMPLE) < 0)
            return 0;
        if (ba->lut.len != 256 * 4) {
            PyErr_SetString(PyExc_ValueError, "lut must hold 256 int32");
            bins_release(ba);
            return 0;
        }
        ba->b.lut = (const int32_t *)ba->lut.buf;
    }
    if (kind == GS_BINS_EDGES || kind == GS_BINS_EDGES_INT) { /* EDGES_INT: integer bits, passed as float64 */
        ba->edges = (PyArrayObject *)PyArray_FROM_OTF(edges, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
        if (!ba->edges)
            return 0;
        if (PyArray_NDIM(ba->edges) != 1 || PyArray_DIM(ba->edges, 0) != nbins + 1) {
            PyErr_SetString(PyExc_ValueError, "edges must hold nbins + 1 values");
            bins_release(ba);
            return 0;
        }
        ba->b.edges = (const double *)PyArray_DATA(ba->edges);
    }
    if (kind < GS_BINS_DIRECT || kind > GS_BINS_EDGES_INT || nbins < 0) {
        PyErr_SetString(PyExc_ValueError, "bad bins description");
        bins_release(ba);
        return 0;
    }
    return 1;
}

/* ---- O& converters: one per kind of binding argument.  Each fills its
 * target and sets the Python error itself; an array's name for errors is
 * the target's `what` (declare `gs_arg x = {.what = "x"}`). */
static int conv_backend(PyObject *o, void *p)
{
    return (*(const gs_backend_ops **)p = backend_by_name(o)) != NULL;
}

/* The same backend's demo and test-hook table (demos.h). */
static int conv_demos(PyObject *o, void *p)
{
    const gs_backend_ops *ops = backend_by_name(o);
    if (!ops)
        return 0;
    *(const gs_demo_ops **)p = ops == gs_cuda_backend() ? gs_cuda_demos() : gs_cpu_demos();
    return 1;
}

static int conv_strategy(PyObject *o, void *p)
{
    const char *name = PyUnicode_AsUTF8(o);
    return name && parse_strategy(name, (gs_strategy *)p);
}

static int conv_array(PyObject *o, void *p)
{
    gs_arg *g = (gs_arg *)p;
    return parse_array(o, g, g->what);
}

/* None: absent (present == 0) */
static int conv_array_opt(PyObject *o, void *p)
{
    gs_arg *g = (gs_arg *)p;
    if (o == Py_None) {
        g->present = 0;
        return 1;
    }
    return parse_array(o, g, g->what);
}

/* An output array: also writable. */
static int conv_out(PyObject *o, void *p)
{
    gs_arg *g = (gs_arg *)p;
    if (!parse_array(o, g, g->what))
        return 0;
    if (!g->writable) {
        PyErr_Format(PyExc_ValueError, "%s: array is read-only", g->what);
        return 0;
    }
    return 1;
}

/* An optional output array (None: absent). */
static int conv_out_opt(PyObject *o, void *p)
{
    if (o == Py_None) {
        ((gs_arg *)p)->present = 0;
        return 1;
    }
    return conv_out(o, p);
}

/* A cudaStream_t passed as an int. */
static int conv_stream(PyObject *o, void *p)
{
    const unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *(void **)p = (void *)(uintptr_t)v;
    return 1;
}

/* The bins tuple; released by the parser itself when a later argument
 * fails, else by the binding (bins_release) after the call. */
static int conv_bins(PyObject *o, void *p)
{
    if (!o) {
        bins_release((bins_arg *)p);
        return 1;
    }
    return parse_bins(o, (bins_arg *)p) ? Py_CLEANUP_SUPPORTED : 0;
}

/* threshold: None or a float (*(const double **)p: NULL or &value) */
typedef struct {
    double value;
    const double *p;
} threshold_arg;

static int conv_threshold(PyObject *o, void *p)
{
    threshold_arg *t = (threshold_arg *)p;
    t->p = NULL;
    if (o == Py_None)
        return 1;
    t->value = PyFloat_AsDouble(o);
    if (t->value == -1.0 && PyErr_Occurred())
        return 0;
    t->p = &t->value;
    return 1;
}

/* An optional array's data for the C API: NULL when None was passed. */
#define GS_OPT(g) ((g).present ? &(g).a : NULL)

static PyObject *py_histogram(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg x = {.what = "x"}, w = {.what = "weights"}, out = {.what = "out"}, edges = {.what = "edges"};
    bins_arg bins;
    gs_strategy strategy, used = GS_STRATEGY_AUTO;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&O&O&O&|O&", conv_backend, &ops, conv_array, &x, conv_array_opt, &w, conv_out,
                          &out, conv_bins, &bins, conv_strategy, &strategy, conv_stream, &stream, conv_array_opt,
                          &edges))
        return NULL;
    if (edges.present && !edges.writable) {
        bins_release(&bins);
        PyErr_SetString(PyExc_ValueError, "edges: array is read-only");
        return NULL;
    }
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->histogram(&x.a, GS_OPT(w), &bins.b, &out.a, GS_OPT(edges), strategy, stream, &used);
    Py_END_ALLOW_THREADS
    bins_release(&bins);
    if (!gs_done(st))
        return NULL;
    return PyUnicode_FromString(gs_strategy_name(used));
}

/* bincount_first(backend, x, out, stream) -> (top, negative, bottom): ops->bincount_first */
static PyObject *py_bincount_first(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg x = {.what = "x"}, out = {.what = "out"};
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&", conv_backend, &ops, conv_array, &x, conv_out, &out, conv_stream, &stream))
        return NULL;
    int64_t top = -1, bottom = -1;
    int negative = 0;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->bincount_first(&x.a, &out.a, &top, &bottom, &negative, stream);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return Py_BuildValue("(LOL)", (long long)top, negative ? Py_True : Py_False, (long long)bottom);
}

static PyObject *py_minmax(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg x = {.what = "x"};
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&", conv_backend, &ops, conv_array, &x, conv_stream, &stream))
        return NULL;
    char buf[16];
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->minmax(&x.a, buf, stream);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyBytes_FromStringAndSize(buf, (Py_ssize_t)(2 * gs_dtype_size(x.a.dtype)));
}

/* minmax_many(backend, [x, ...], stream) -> bytes of (min, max) of each x in
 * turn (one dtype), one synchronization */
static PyObject *py_minmax_many(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    PyObject *lo;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O!O&", conv_backend, &ops, &PyList_Type, &lo, conv_stream, &stream))
        return NULL;
    enum { MANY = 16 };
    const Py_ssize_t k = PyList_GET_SIZE(lo);
    if (k < 1 || k > MANY) {
        PyErr_SetString(PyExc_ValueError, "minmax_many: 1 to 16 arrays");
        return NULL;
    }
    gs_array xs[MANY];
    for (Py_ssize_t i = 0; i < k; i++) {
        gs_arg a;
        if (!parse_array(PyList_GET_ITEM(lo, i), &a, "x"))
            return NULL;
        xs[i] = a.a;
        if (xs[i].dtype != xs[0].dtype) {
            PyErr_SetString(PyExc_ValueError, "minmax_many: arrays of one dtype");
            return NULL;
        }
    }
    const size_t es = gs_dtype_size(xs[0].dtype);
    char buf[2 * MANY * 8];
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->minmax_many(xs, (int)k, buf, stream);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyBytes_FromStringAndSize(buf, (Py_ssize_t)(2 * es * (size_t)k));
}

static PyObject *py_uniform_edges(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    bins_arg bins;
    gs_arg out = {.what = "out"};
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&", conv_backend, &ops, conv_bins, &bins, conv_out, &out, conv_stream,
                          &stream))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->uniform_edges(&bins.b, &out.a, stream);
    Py_END_ALLOW_THREADS
    bins_release(&bins);
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_reduce(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, b = {.what = "b"}, out = {.what = "out"};
    gs_strategy strategy, used = GS_STRATEGY_AUTO;
    int det;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&O&pO&", conv_backend, &ops, conv_array, &a, conv_array_opt, &b, conv_out,
                          &out, conv_strategy, &strategy, &det, conv_stream, &stream))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->reduce(&a.a, GS_OPT(b), &out.a, strategy, det, stream, &used);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyUnicode_FromString(gs_strategy_name(used));
}

static PyObject *py_binned_statistic(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg x = {.what = "x"}, v = {.what = "values"}, r = {.what = "result"}, bn = {.what = "binnumber"},
           nf = {.what = "nonfinite"};
    PyObject *eo;
    double top;
    int stat;
    gs_strategy strategy, used = GS_STRATEGY_AUTO;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&OdiO&O&O&O&O&", conv_backend, &ops, conv_array, &x, conv_array, &v, &eo, &top,
                          &stat, conv_array, &r, conv_array_opt, &bn, conv_array_opt, &nf, conv_strategy, &strategy,
                          conv_stream, &stream))
        return NULL;
    if (nf.present && !nf.writable) {
        PyErr_SetString(PyExc_ValueError, "nonfinite: array is read-only");
        return NULL;
    }
    PyArrayObject *edges = (PyArrayObject *)PyArray_FROM_OTF(eo, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (!edges)
        return NULL;
    if (PyArray_NDIM(edges) != 1 || PyArray_DIM(edges, 0) < 2) {
        Py_DECREF(edges);
        PyErr_SetString(PyExc_ValueError, "edges must be 1-D with at least 2 values");
        return NULL;
    }
    const int64_t nbins = PyArray_DIM(edges, 0) - 1;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->binned_statistic(&x.a, &v.a, (const double *)PyArray_DATA(edges), nbins, top, stat, &r.a, GS_OPT(bn),
                               GS_OPT(nf), strategy, stream, &used);
    Py_END_ALLOW_THREADS
    Py_DECREF(edges);
    if (!gs_done(st))
        return NULL;
    return PyUnicode_FromString(gs_strategy_name(used));
}

static PyObject *py_counter(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_demo_ops *demos;
    int kind, threads;
    long long blocks;
    if (!PyArg_ParseTuple(args, "O&iLi", conv_demos, &demos, &kind, &blocks, &threads))
        return NULL;
    int64_t value = 0;
    double ms = 0;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = demos->counter(kind, blocks, threads, &value, &ms);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return Py_BuildValue("(Ld)", (long long)value, ms);
}

static PyObject *py_test_deadlock(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_demo_ops *demos;
    double ms;
    if (!PyArg_ParseTuple(args, "O&d", conv_demos, &demos, &ms))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = demos->test_deadlock((int64_t)(ms * 1e6));
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_packbits(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, out = {.what = "out"};
    threshold_arg thr;
    int little;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&pO&O&", conv_backend, &ops, conv_array, &a, conv_threshold, &thr, &little, conv_out, &out, conv_stream,
                          &stream))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->packbits(&a.a, thr.p, little, &out.a, stream);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_count_nonzero(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, out = {.what = "out"};
    threshold_arg thr;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&O&", conv_backend, &ops, conv_array, &a, conv_threshold, &thr, conv_out, &out, conv_stream, &stream))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->count_nonzero(&a.a, thr.p, &out.a, stream);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_kernel_names(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    if (!PyArg_ParseTuple(args, "O&", conv_backend, &ops))
        return NULL;
    char buf[2048];
    gs_status st = ops->kernel_names(buf, sizeof buf);
    if (!gs_done(st))
        return NULL;
    return PyUnicode_FromString(buf);
}

static PyObject *py_occupancy(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    const char *name;
    int block;
    if (!PyArg_ParseTuple(args, "O&si", conv_backend, &ops, &name, &block))
        return NULL;
    gs_occupancy o;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->occupancy(name, block, &o);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return Py_BuildValue("{s:s,s:i,s:i,s:L,s:L,s:i,s:i,s:i,s:d,s:s,s:{s:i,s:i,s:i,s:i},s:i,s:i}", "kernel", o.name,
                         "block_size", o.block_size, "registers", o.registers, "static_smem",
                         (long long)o.static_smem, "dynamic_smem", (long long)o.dynamic_smem, "active_blocks_per_sm",
                         o.active_blocks_per_sm, "active_warps_per_sm", o.active_warps_per_sm, "max_warps_per_sm",
                         o.max_warps_per_sm, "occupancy", o.occupancy, "limiter", o.limiter, "blocks_allowed_by",
                         "threads", o.limit_threads, "blocks per SM", o.limit_blocks, "registers", o.limit_registers,
                         "shared memory", o.limit_smem, "suggested_block_size", o.suggested_block_size,
                         "suggested_min_grid", o.suggested_min_grid);
}

static PyObject *py_divergence(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_demo_ops *demos;
    int kind, block, iters;
    long long n;
    if (!PyArg_ParseTuple(args, "O&iLii", conv_demos, &demos, &kind, &n, &block, &iters))
        return NULL;
    double ms = 0;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = demos->divergence(kind, n, block, iters, &ms);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyFloat_FromDouble(ms);
}

static PyObject *py_self_test(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_demo_ops *demos;
    int which;
    if (!PyArg_ParseTuple(args, "O&i", conv_demos, &demos, &which))
        return NULL;
    int64_t bad = -1;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = demos->self_test(which, &bad);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyLong_FromLongLong((long long)bad);
}

static PyObject *py_barrier_benchmark(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_strategy s;
    long long blocks, rounds;
    int threads, skip;
    if (!PyArg_ParseTuple(args, "O&O&LiLi", conv_backend, &ops, conv_strategy, &s, &blocks, &threads, &rounds, &skip))
        return NULL;
    gs_barrier_result r;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->barrier_benchmark(s, blocks, threads, rounds, skip, &r);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return Py_BuildValue("{s:s,s:s,s:L,s:i,s:i,s:L,s:L,s:d,s:d,s:L,s:L}", "strategy", gs_strategy_name(r.used),
                         "note", r.note, "blocks", (long long)r.blocks,
                         "threads", r.threads, "cluster", r.cluster, "max_blocks", (long long)r.max_blocks, "rounds", (long long)r.rounds,
                         "us_per_barrier", r.us_per_barrier, "us_per_barrier_graph", r.us_per_barrier_graph, "stale",
                         (long long)r.stale, "launches", (long long)r.launches);
}

static PyObject *py_cumsum(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, out = {.what = "out"};
    gs_strategy strategy, used = GS_STRATEGY_AUTO;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&O&O&O&", conv_backend, &ops, conv_array, &a, conv_out, &out, conv_strategy,
                          &strategy, conv_stream, &stream))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->cumsum(&a.a, &out.a, strategy, stream, &used);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return PyUnicode_FromString(gs_strategy_name(used));
}

static PyObject *py_available(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    if (!PyArg_ParseTuple(args, "O&", conv_backend, &ops))
        return NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = ops->available();
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(Ns)", PyBool_FromLong(ok), ok ? "" : gs_last_error());
}

static PyObject *py_pointer_device(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    unsigned long long ptr;
    if (!PyArg_ParseTuple(args, "O&K", conv_backend, &ops, &ptr))
        return NULL;
    return PyLong_FromLong(ops->pointer_device((const void *)(uintptr_t)ptr));
}

static PyObject *py_stream_wait(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    int device;
    void *consumer, *producer;
    if (!PyArg_ParseTuple(args, "O&iO&O&", conv_backend, &ops, &device, conv_stream, &consumer, conv_stream, &producer))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->stream_wait(device, consumer, producer);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_empty_cache(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    if (!PyArg_ParseTuple(args, "O&", conv_backend, &ops))
        return NULL;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->empty_cache();
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_device_info(PyObject *self, PyObject *args)
{
    (void)self;
    int ordinal;
    if (!PyArg_ParseTuple(args, "i", &ordinal))
        return NULL;
    gs_device_info d;
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gs_cuda_backend()->device_info(ordinal, &d);
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    return Py_BuildValue(
        "{s:s,s:i,s:(ii),s:i,s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:i,s:O,s:O}", "name", d.name, "ordinal",
        d.ordinal, "compute_capability", d.major, d.minor, "multiprocessors", d.multiprocessors, "warp_size",
        d.warp_size, "max_threads_per_block", d.max_threads_per_block, "max_threads_per_multiprocessor",
        d.max_threads_per_multiprocessor, "shared_memory_per_block", (long long)d.shared_memory_per_block,
        "shared_memory_per_block_optin", (long long)d.shared_memory_per_block_optin,
        "shared_memory_per_multiprocessor", (long long)d.shared_memory_per_multiprocessor, "l2_cache_bytes",
        (long long)d.l2_cache_bytes, "total_memory_bytes", (long long)d.total_memory_bytes, "memory_clock_khz",
        d.memory_clock_khz, "memory_bus_width_bits", d.memory_bus_width_bits, "clock_khz", d.clock_khz,
        "cooperative_launch", d.cooperative_launch ? Py_True : Py_False, "cluster_launch",
        d.cluster_launch ? Py_True : Py_False);
}

static PyObject *py_hist_auto_strategy(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"n", "nbins", "weighted", "elem_bytes", "cc_major", "smem_per_block_optin",
                            "smem_per_sm", NULL};
    gs_hist_shape s = {0, 0, 0, 1, 0, 0, 0};
    long long n, nbins, optin = 0, per_sm = 0;
    int weighted = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LL|piiLL", names, &n, &nbins, &weighted, &s.elem_bytes,
                                     &s.cc_major, &optin, &per_sm))
        return NULL;
    s.n = n;
    s.nbins = nbins;
    s.weighted = weighted;
    s.smem_per_block_optin = optin;
    s.smem_per_sm = per_sm;
    return PyUnicode_FromString(gs_strategy_name(gs_hist_auto_strategy(&s)));
}

/* reduce_axis(backend, a, (n0, n1, n2), (s0, s1, s2), op, out, stream): a is a
 * descriptor tuple whose ptr is the view's base (length and stride unused). */
static PyObject *py_reduce_axis(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, out = {.what = "out"};
    long long n[3], s[3];
    int op;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&(LLL)(LLL)iO&O&", conv_backend, &ops, conv_array, &a, &n[0], &n[1], &n[2], &s[0],
                          &s[1], &s[2], &op, conv_out, &out, conv_stream, &stream))
        return NULL;
    if (!ops->reduce_axis) {
        PyErr_SetString(PyExc_NotImplementedError, "reduce_axis: not in this backend");
        return NULL;
    }
    const int64_t shape[3] = {n[0], n[1], n[2]}, strides[3] = {s[0], s[1], s[2]};
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->reduce_axis(&a.a, shape, strides, op, &out.a, stream);
    Py_END_ALLOW_THREADS
    if (st != GS_OK)
        return gs_raise(st);
    Py_RETURN_NONE;
}

/* The coordinates of an N-D call: a list of 1 to GS_HISTDD_MAX_DIMS arrays,
 * and every dimension's float64 edges back to back (ea) with their int64
 * counts (na); sets *ndim and *ne. */
static int parse_coords(PyObject *co, PyArrayObject *ea, PyArrayObject *na, gs_array *coords, int *ndim,
                        const int64_t **ne, const char *what)
{
    if (!PyList_Check(co) || PyList_GET_SIZE(co) < 1 || PyList_GET_SIZE(co) > GS_HISTDD_MAX_DIMS ||
        PyArray_TYPE(ea) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(ea) || PyArray_TYPE(na) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS(na) || PyArray_SIZE(na) != PyList_GET_SIZE(co)) {
        PyErr_Format(PyExc_ValueError, "%s: bad coordinates, edges or nedges", what);
        return 0;
    }
    *ndim = (int)PyList_GET_SIZE(co);
    *ne = (const int64_t *)PyArray_DATA(na);
    int64_t total = 0;
    for (int d = 0; d < *ndim; d++) {
        gs_arg a;
        if (!parse_array(PyList_GET_ITEM(co, d), &a, "coords"))
            return 0;
        coords[d] = a.a;
        total += (*ne)[d];
    }
    if (PyArray_SIZE(ea) != total) {
        PyErr_Format(PyExc_ValueError, "%s: edges do not match nedges", what);
        return 0;
    }
    return 1;
}

/* histogramdd(backend, [coords], edges (float64, all dimensions'), nedges
 * (int64), weights or None, out, stream, edges_out=None) */
static PyObject *py_histogramdd(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    PyObject *co, *eo, *no;
    gs_arg w = {.what = "weights"}, out = {.what = "out"}, eout = {.what = "edges_out"};
    void *stream;
    if (!PyArg_ParseTuple(args, "O&OO!O!O&O&O&|O&", conv_backend, &ops, &co, &PyArray_Type, &eo, &PyArray_Type, &no,
                          conv_array_opt, &w, conv_out, &out, conv_stream, &stream, conv_out_opt, &eout))
        return NULL;
    if (!ops->histogramdd) {
        PyErr_SetString(PyExc_NotImplementedError, "histogramdd: not in this backend");
        return NULL;
    }
    gs_array coords[GS_HISTDD_MAX_DIMS];
    int ndim;
    const int64_t *ne;
    if (!parse_coords(co, (PyArrayObject *)eo, (PyArrayObject *)no, coords, &ndim, &ne, "histogramdd"))
        return NULL;
    const double *e = (const double *)PyArray_DATA((PyArrayObject *)eo);
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->histogramdd(coords, ndim, e, ne, GS_OPT(w), &out.a, GS_OPT(eout), stream);
    Py_END_ALLOW_THREADS
    if (st != GS_OK)
        return gs_raise(st);
    Py_RETURN_NONE;
}

/* binned_statistic_dd(backend, [coords], edges (float64, all dimensions'),
 * nedges (int64), tops (float64, one per dimension), values, stat, result,
 * binnumber or None, nonfinite or None, stream): the fused privatized
 * statistic (issues 14, 15) */
static PyObject *py_binned_statistic_dd(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    PyObject *co, *eo, *no, *to;
    gs_arg v = {.what = "values"}, r = {.what = "result"}, bn = {.what = "binnumber"}, nf = {.what = "nonfinite"};
    int stat;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&OO!O!O!O&iO&O&O&O&", conv_backend, &ops, &co, &PyArray_Type, &eo, &PyArray_Type,
                          &no, &PyArray_Type, &to, conv_array, &v, &stat, conv_out, &r, conv_array_opt, &bn,
                          conv_array_opt, &nf, conv_stream, &stream))
        return NULL;
    if (!ops->binned_statistic_dd) {
        PyErr_SetString(PyExc_NotImplementedError, "binned_statistic_dd: not in this backend");
        return NULL;
    }
    PyArrayObject *ea = (PyArrayObject *)eo, *ta = (PyArrayObject *)to;
    gs_array coords[GS_HISTDD_MAX_DIMS];
    int ndim;
    const int64_t *ne;
    if (!parse_coords(co, ea, (PyArrayObject *)no, coords, &ndim, &ne, "binned_statistic_dd"))
        return NULL;
    if (PyArray_TYPE(ta) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(ta) || PyArray_SIZE(ta) != ndim) {
        PyErr_SetString(PyExc_ValueError, "binned_statistic_dd: tops must be one float64 per dimension");
        return NULL;
    }
    if ((bn.present && !bn.writable) || (nf.present && !nf.writable)) {
        PyErr_SetString(PyExc_ValueError, bn.present && !bn.writable ? "binnumber: array is read-only"
                                                                     : "nonfinite: array is read-only");
        return NULL;
    }
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->binned_statistic_dd(coords, ndim, (const double *)PyArray_DATA(ea), ne,
                                  (const double *)PyArray_DATA(ta), &v.a, stat, &r.a, GS_OPT(bn), GS_OPT(nf), stream);
    Py_END_ALLOW_THREADS
    if (st != GS_OK)
        return gs_raise(st);
    Py_RETURN_NONE;
}

/* unpackbits(backend, a (uint8), little, out (uint8, 8 n), stream) */
static PyObject *py_unpackbits(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    gs_arg a = {.what = "a"}, out = {.what = "out"};
    int little;
    void *stream;
    if (!PyArg_ParseTuple(args, "O&O&pO&O&", conv_backend, &ops, conv_array, &a, &little, conv_out, &out, conv_stream,
                          &stream))
        return NULL;
    if (!ops->unpackbits) {
        PyErr_SetString(PyExc_NotImplementedError, "unpackbits: not in this backend");
        return NULL;
    }
    gs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ops->unpackbits(&a.a, little, &out.a, stream);
    Py_END_ALLOW_THREADS
    if (st != GS_OK)
        return gs_raise(st);
    Py_RETURN_NONE;
}

static PyObject *py_raise_status(PyObject *self, PyObject *args)
{
    (void)self;
    int st;
    const char *msg;
    if (!PyArg_ParseTuple(args, "is", &st, &msg))
        return NULL;
    gs_fail((gs_status)st, "%s", msg);
    return gs_raise((gs_status)st);
}

/* ---- The per-call fast path (the dispatcher's common case, in C) ----------
 *
 * A NumPy array (exactly ndarray), native byte order, aligned, C-contiguous,
 * default options, at most the op's size limit: run the op on the calling
 * thread (the CPU engine with one thread, no hand-off) and return the result.
 * Anything else returns NotImplemented and the wrapper takes the general
 * Python path (gpusync/_dispatch.py), which also sets the limits: the largest
 * element count for which its cost model picks the calling thread alone (0
 * when the calling thread is not a candidate: a forced CUDA backend,
 * GPUSYNC_ENGINE, GPUSYNC_DEBUG).  Each fast call leaves a thread-local record
 * that gs.last_plan() reads. */
enum {
    FAST_SUM,
    FAST_DOT,
    FAST_COUNT_NONZERO,
    FAST_PACKBITS,
    FAST_CUMSUM,
    FAST_HISTOGRAM,
    FAST_BINCOUNT,
    FAST_UNPACKBITS,
    FAST_OPS
};
static const char *const fast_names[FAST_OPS] = {
    [FAST_SUM] = "sum",          [FAST_DOT] = "dot",           [FAST_COUNT_NONZERO] = "count_nonzero",
    [FAST_PACKBITS] = "packbits", [FAST_CUMSUM] = "cumsum",     [FAST_HISTOGRAM] = "histogram",
    [FAST_BINCOUNT] = "bincount", [FAST_UNPACKBITS] = "unpackbits"};
static int64_t fast_limit[FAST_OPS] = {-1, -1, -1, -1, -1, -1, -1, -1};  /* -1: not configured yet */
static int64_t fast_caller[FAST_OPS] = {-1, -1, -1, -1, -1, -1, -1, -1}; /* up to here the calling thread alone */
#define FAST_GIL_RELEASE_MIN 16384                                    /* elements; below, keep the GIL */

typedef struct {
    unsigned long long seq; /* this thread's call count when the fast path ran (0: never) */
    int op;
    int64_t n;
    int typenum;
    gs_strategy used;
    int threads; /* CPU threads the call ran on */
} fast_record;
static _Thread_local fast_record fast_last;
static _Thread_local unsigned long long call_seq;
static _Thread_local int fast_threads; /* of the last FAST_RUN */

/* Whether the fast path is on for `op` now: configured, and neither
 * GPUSYNC_ENGINE nor GPUSYNC_DEBUG=1 set (they steer or log the plan: the
 * general path reads them). */
/* The calling thread measures the machine constants with an engine forced
 * (gpusync/_calibrate.py): the fast path steps aside on that thread alone. */
static _Thread_local int fast_off_here;

static int fast_on(int op)
{
    if (fast_limit[op] <= 0 || fast_off_here)
        return 0;
    return gs_env_choice(GS_ENV_ENGINE) <= 0 && gs_env_number(GS_ENV_DEBUG, 0, NULL) == 0;
}

/* The shapes a fast path takes: FAST_FLAT a C-contiguous array of any
 * number of dimensions (NumPy flattens it); FAST_1D one dimension with any
 * positive stride of whole aligned elements (a[::k]: ops whose CPU loops take
 * strides); FAST_FLAT_1D either; FAST_1D_ANY / FAST_FLAT_1D_ANY the same with
 * strides of any sign, zero too (a[::-k], np.broadcast_to: sum and dot, whose
 * loops read element i at i x stride from the first). */
enum { FAST_FLAT, FAST_1D, FAST_FLAT_1D, FAST_1D_ANY, FAST_FLAT_1D_ANY };

/* The input when the fast path can take it in `shapes`: 1 and its gs_array, else 0. */
static int fast_input(PyObject *obj, int op, int shapes, gs_array *a)
{
    if (!PyArray_CheckExact(obj))
        return 0;
    PyArrayObject *arr = (PyArrayObject *)obj;
    const int64_t n = PyArray_SIZE(arr);
    const int nd = PyArray_NDIM(arr);
    if (fast_limit[op] < 0 || n > fast_limit[op] || ((shapes == FAST_1D || shapes == FAST_1D_ANY) && nd != 1) ||
        !PyArray_ISNOTSWAPPED(arr) || !dtype_from_numpy(PyArray_TYPE(arr), &a->dtype))
        return 0;
    a->stride = 1;
    if (!PyArray_ISCARRAY_RO(arr)) {
        const npy_intp isz = PyArray_ITEMSIZE(arr), st = nd == 1 ? PyArray_STRIDE(arr, 0) : 0;
        const int any_sign = shapes == FAST_1D_ANY || shapes == FAST_FLAT_1D_ANY;
        if (shapes == FAST_FLAT || nd != 1 || !PyArray_ISALIGNED(arr) || (st <= 0 && !any_sign) || st % isz != 0)
            return 0;
        a->stride = st / isz;
    }
    a->data = PyArray_DATA(arr);
    a->length = n;
    a->device = GS_HOST;
    return 1;
}

/* Run `call`: up to fast_caller[op] elements on the calling thread alone;
 * above (up to fast_limit[op]) the engine's own thread count (the pool's
 * measured hand-off against the work).  The GIL is kept for small inputs.
 * FAST_RUN_ALONE: the same with the caller's own test for "alone". */
#define FAST_RUN(op, n, st, call) FAST_RUN_ALONE(op, n, (n) <= fast_caller[op], st, call)
#define FAST_RUN_ALONE(op, n, alone, st, call)                                                                \
    do {                                                                                                      \
        const int alone_ = (alone); /* read once: fast_config may run while the GIL is out */                 \
        gs_cpu_request_threads(alone_ ? 1 : 0);                                                               \
        if ((n) >= FAST_GIL_RELEASE_MIN) {                                                                    \
            Py_BEGIN_ALLOW_THREADS st = (call);                                                               \
            Py_END_ALLOW_THREADS                                                                              \
        } else {                                                                                              \
            st = (call);                                                                                      \
        }                                                                                                     \
        gs_cpu_request_threads(0);                                                                            \
        fast_threads = alone_ ? 1 : gs_cpu_last_threads();                                                    \
    } while (0)

/* A count of n elements into nbins bins on the calling thread alone: n within
 * the op's caller limit (the model's, made for results of a few bins), and
 * no threads to gain on zeroing the result the engine counts into when the
 * bins far outnumber the elements (csrc/cpu/hist.c zero_result: the engine
 * then picks both thread counts itself -- one for 1000 counts, the pool's for
 * the 8 MB of zeros of 10^6 bins). */
static int fast_alone_bins(int op, int64_t n, int64_t nbins)
{
    return n <= fast_caller[op] && (nbins <= n || gs_cpu_threads_for_cost(nbins, GS_CPU_NS_ZERO_BIN) <= 1);
}

static void fast_note(int op, const gs_array *a, int typenum, gs_strategy used)
{
    fast_last = (fast_record){++call_seq, op, a->length, typenum, used, fast_threads};
}

/* NumPy's accumulator dtype of sum / cumsum: small ints widen to 64 bits. */
static int fast_sum_type(gs_dtype dt)
{
    switch (dt) {
    case GS_UINT8:
    case GS_UINT16:
    case GS_UINT32:
    case GS_UINT64: return NPY_UINT64;
    case GS_FLOAT16: return NPY_HALF;
    case GS_FLOAT32: return NPY_FLOAT;
    case GS_FLOAT64: return NPY_DOUBLE;
    default: return NPY_INT64;
    }
}

/* A fast-path function's argument count: lo..hi, else TypeError naming it. */
static int fast_arity(const char *name, Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi)
{
    if (nargs >= lo && nargs <= hi)
        return 1;
    if (lo == hi)
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, lo);
    else
        PyErr_Format(PyExc_TypeError, "%s takes %zd or %zd arguments", name, lo, hi);
    return 0;
}

/* Optional flag argument i (absent: 0); -1 with the exception set. */
static int fast_flag(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t i)
{
    return nargs > i ? PyObject_IsTrue(args[i]) : 0;
}

/* as_f64: sum(a, dtype=float64) of a float array -- the float64
 * accumulation itself, not rounded to a's dtype. */
static PyObject *fast_reduce(PyObject *ao, PyObject *bo, int op, int as_f64)
{
    gs_array a, b, out;
    if (!fast_on(op) || !fast_input(ao, op, op == FAST_DOT ? FAST_1D_ANY : FAST_FLAT_1D_ANY, &a) ||
        (bo && (!fast_input(bo, op, FAST_1D_ANY, &b) || b.dtype != a.dtype || b.length != a.length)))
        Py_RETURN_NOTIMPLEMENTED;
    if (as_f64 && a.dtype != GS_FLOAT16 && a.dtype != GS_FLOAT32 && a.dtype != GS_FLOAT64)
        Py_RETURN_NOTIMPLEMENTED;
    const int typenum = as_f64 ? NPY_DOUBLE : bo ? PyArray_TYPE((PyArrayObject *)ao) : fast_sum_type(a.dtype);
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr)
        return NULL;
    union {
        double d;
        int64_t i;
        char c[16];
    } buf = {0};
    out.data = buf.c;
    out.length = 1;
    out.stride = 1;
    out.device = GS_HOST;
    if (!dtype_from_numpy(typenum, &out.dtype)) {
        Py_DECREF(descr);
        Py_RETURN_NOTIMPLEMENTED;
    }
    gs_strategy used = GS_STRATEGY_AUTO;
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(op, a.length, st, ops->reduce(&a, bo ? &b : NULL, &out, GS_STRATEGY_AUTO, 0, NULL, &used));
    if (!gs_done(st)) {
        Py_DECREF(descr);
        return NULL;
    }
    /* a float result that is inf or NaN goes through the general path, which
     * owns what NumPy gives there (e.g. partial sums that overflow) */
    int finite = 1;
    if (out.dtype == GS_FLOAT64)
        finite = isfinite(buf.d);
    else if (out.dtype == GS_FLOAT32) {
        float f;
        memcpy(&f, buf.c, sizeof f);
        finite = isfinite(f);
    } else if (out.dtype == GS_FLOAT16) {
        uint16_t h;
        memcpy(&h, buf.c, sizeof h);
        finite = (h & 0x7c00) != 0x7c00;
    }
    if (!finite) {
        Py_DECREF(descr);
        Py_RETURN_NOTIMPLEMENTED;
    }
    fast_note(op, &a, PyArray_TYPE((PyArrayObject *)ao), used);
    PyObject *r = PyArray_Scalar(buf.c, descr, NULL);
    Py_DECREF(descr);
    return r;
}

/* Complex NumPy input (complex64 / complex128; gpusync has no complex
 * kernel).  sum: the float sums of the C-contiguous array's real parts and of
 * its imaginary parts -- two strided pairwise sums of the float view (the
 * strided kernel's bits are its contiguous copy's), +0 (NumPy's complex sums
 * start from +0, so an all -0.0 part sums to +0); a part that is not finite:
 * NumPy's own sum (its inf / NaN), as for arrays this route does not take.  NumPy's own
 * loop is one thread (10^7 complex128: 19.7 ms on the H200 host against
 * torch's 0.92 ms, r272) but a fast one: on a 2-core box it beat both our
 * two strided sums and the (n, 2) view's axis-0 sum from 3*10^4 elements on
 * (10^5: 0.059 ms against 0.106 and 0.445).  So this route takes short
 * arrays (FAST_COMPLEX_ALONE, the calling thread: 1,000 elements 4.0 us
 * against NumPy's 6.8 there; a Python route cost 11 us against 2 on the H200
 * host) and, past them, machines whose pool has FAST_COMPLEX_POOL threads. */
#define FAST_COMPLEX_ALONE 2048
#define FAST_COMPLEX_POOL 8
static int gs_fast_complex_takes(int64_t n) { return n <= FAST_COMPLEX_ALONE || gs_cpu_max_threads() >= FAST_COMPLEX_POOL; }

/* fast_complex_takes(n): whether a complex host sum of n elements takes gpusync's route (its Python twin) */
static PyObject *py_fast_complex_takes(PyObject *self, PyObject *arg)
{
    (void)self;
    const long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(gs_fast_complex_takes(n));
}

#ifdef NPY_RAVEL_AXIS
#define GS_NPY_RAVEL NPY_RAVEL_AXIS
#else
#define GS_NPY_RAVEL NPY_MAXDIMS
#endif
/* NumPy's own sum of the whole array (its complex loop; its inf / NaN), noted as NumPy's call (threads -1). */
static PyObject *fast_numpy_sum(PyArrayObject *arr, int t, int64_t n)
{
    PyObject *r = PyArray_Sum(arr, GS_NPY_RAVEL, NPY_NOTYPE, NULL);
    if (!r)
        return NULL;
    gs_array a = {.length = n};
    fast_threads = -1;
    fast_note(FAST_SUM, &a, t, GS_STRATEGY_AUTO);
    return r;
}

static PyObject *fast_complex_sum(PyObject *ao)
{
    if (!PyArray_CheckExact(ao))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *arr = (PyArrayObject *)ao;
    const int t = PyArray_TYPE(arr);
    const int64_t n = PyArray_SIZE(arr);
    if ((t != NPY_CDOUBLE && t != NPY_CFLOAT) || !PyArray_ISCARRAY_RO(arr) || !PyArray_ISNOTSWAPPED(arr) || n == 0 ||
        !fast_on(FAST_SUM) || 2 * n > fast_limit[FAST_SUM])
        Py_RETURN_NOTIMPLEMENTED;
    if (!gs_fast_complex_takes(n)) /* NumPy's own loop, called from here: through Python it cost 14 us more */
        return fast_numpy_sum(arr, t, n);
    const gs_dtype fdt = t == NPY_CDOUBLE ? GS_FLOAT64 : GS_FLOAT32;
    const size_t fsz = t == NPY_CDOUBLE ? 8 : 4;
    gs_array re = {.data = PyArray_DATA(arr), .length = n, .stride = 2, .dtype = fdt, .device = GS_HOST};
    gs_array im = re;
    im.data = (char *)PyArray_DATA(arr) + fsz;
    union {
        double d;
        float f;
    } br = {0}, bi = {0};
    gs_array ore = {.data = &br, .length = 1, .stride = 1, .dtype = fdt, .device = GS_HOST};
    gs_array oim = ore;
    oim.data = &bi;
    gs_status st;
    gs_strategy used = GS_STRATEGY_AUTO;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(FAST_SUM, 2 * n, st, ops->reduce(&re, NULL, &ore, GS_STRATEGY_AUTO, 0, NULL, &used));
    if (gs_done(st))
        FAST_RUN(FAST_SUM, 2 * n, st, ops->reduce(&im, NULL, &oim, GS_STRATEGY_AUTO, 0, NULL, &used));
    if (!gs_done(st))
        return NULL;
    union {
        double d[2];
        float f[2];
    } buf;
    if (t == NPY_CDOUBLE) {
        if (!isfinite(br.d) || !isfinite(bi.d))
            return fast_numpy_sum(arr, t, n);
        buf.d[0] = br.d + 0.0, buf.d[1] = bi.d + 0.0;
    } else {
        if (!isfinite(br.f) || !isfinite(bi.f))
            return fast_numpy_sum(arr, t, n);
        buf.f[0] = br.f + 0.0f, buf.f[1] = bi.f + 0.0f;
    }
    fast_note(FAST_SUM, &re, t, used);
    PyArray_Descr *descr = PyArray_DescrFromType(t);
    if (!descr)
        return NULL;
    PyObject *r = PyArray_Scalar(&buf, descr, NULL);
    Py_DECREF(descr);
    return r;
}

/* Whether NumPy's dot takes this dtype as gpusync's dot does: bool,
 * integers, float16/32/64, complex64/128 (not long double, object, ...). */
static int fast_dot_type(int t)
{
    return t == NPY_BOOL || (PyTypeNum_ISINTEGER(t) && t != NPY_OBJECT) || t == NPY_HALF || t == NPY_FLOAT ||
           t == NPY_DOUBLE || t == NPY_CFLOAT || t == NPY_CDOUBLE;
}

/* dot of two 1-D NumPy vectors of one length, at least one complex: NumPy's
 * own np.dot (BLAS zdotu / cdotu, threaded: 10^7 complex128 2.16 ms on the
 * H200 host against 2.49 ms for the two float dots of the real views, r272);
 * the plan says so (threads -1: NumPy's call). */
static PyObject *fast_complex_dot(PyObject *ao, PyObject *bo)
{
    if (!PyArray_CheckExact(ao) || !PyArray_CheckExact(bo) || !fast_on(FAST_DOT))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *x = (PyArrayObject *)ao, *y = (PyArrayObject *)bo;
    const int tx = PyArray_TYPE(x), ty = PyArray_TYPE(y);
    if ((!PyTypeNum_ISCOMPLEX(tx) && !PyTypeNum_ISCOMPLEX(ty)) || !fast_dot_type(tx) || !fast_dot_type(ty) ||
        PyArray_NDIM(x) != 1 || PyArray_NDIM(y) != 1 || PyArray_DIM(x, 0) != PyArray_DIM(y, 0))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = PyArray_MatrixProduct2(ao, bo, NULL);
    if (!r)
        return NULL;
    /* (NumPy 2 gives the 0-d result as a scalar already; an array: PyArray_Return makes it one) */
    PyArray_Descr *d = PyArray_Check(r) ? PyArray_DESCR((PyArrayObject *)r) : PyArray_DescrFromScalar(r);
    if (!d) {
        Py_DECREF(r);
        return NULL;
    }
    const int typenum = d->type_num;
    if (!PyArray_Check(r))
        Py_DECREF(d); /* (PyArray_DescrFromScalar's new reference; PyArray_DESCR's is borrowed) */
    gs_array a = {.length = PyArray_DIM(x, 0)};
    fast_threads = -1;
    fast_note(FAST_DOT, &a, typenum, GS_STRATEGY_AUTO);
    return PyArray_Check(r) ? PyArray_Return((PyArrayObject *)r) : r;
}

/* fast_sum(a[, as_f64]) */
static PyObject *py_fast_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (!fast_arity("fast_sum", nargs, 1, 2))
        return NULL;
    const int as_f64 = fast_flag(args, nargs, 1);
    if (as_f64 < 0)
        return NULL;
    if (!as_f64 && PyArray_CheckExact(args[0]) && PyTypeNum_ISCOMPLEX(PyArray_TYPE((PyArrayObject *)args[0])))
        return fast_complex_sum(args[0]);
    return fast_reduce(args[0], NULL, FAST_SUM, as_f64);
}

static PyObject *py_fast_dot(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (!fast_arity("fast_dot", nargs, 2, 2))
        return NULL;
    PyObject *r = fast_reduce(args[0], args[1], FAST_DOT, 0);
    if (r == Py_NotImplemented && PyArray_CheckExact(args[0]) && PyArray_CheckExact(args[1]) &&
        (PyTypeNum_ISCOMPLEX(PyArray_TYPE((PyArrayObject *)args[0])) ||
         PyTypeNum_ISCOMPLEX(PyArray_TYPE((PyArrayObject *)args[1])))) {
        Py_DECREF(r);
        return fast_complex_dot(args[0], args[1]);
    }
    return r;
}

static PyObject *py_fast_count_nonzero(PyObject *self, PyObject *ao)
{
    (void)self;
    gs_array a;
    if (!fast_on(FAST_COUNT_NONZERO) || !fast_input(ao, FAST_COUNT_NONZERO, FAST_FLAT_1D, &a))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t count = 0;
    gs_array out = {.data = &count, .length = 1, .stride = 1, .dtype = GS_INT64, .device = GS_HOST};
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(FAST_COUNT_NONZERO, a.length, st, ops->count_nonzero(&a, NULL, &out, NULL));
    if (!gs_done(st))
        return NULL;
    fast_note(FAST_COUNT_NONZERO, &a, PyArray_TYPE((PyArrayObject *)ao), GS_STRATEGY_AUTO);
    /* NumPy 2's result: an intp scalar (made here: np.intp(int) in Python costs more than the count) */
    static PyArray_Descr *intp_descr;
    if (!intp_descr && !(intp_descr = PyArray_DescrFromType(NPY_INTP)))
        return NULL;
    npy_intp c = (npy_intp)count;
    return PyArray_Scalar(&c, intp_descr, NULL);
}

/* A new 1-D NumPy array of n elements of typenum. */
/* A new 1-D NumPy array of n elements and its view; zeroed when asked
 * (calloc: pages of a large array that nothing writes are never touched). */
/* From this many bytes of zeros, a result comes from calloc (fresh pages are
 * zero already, no memset: above glibc's default mmap threshold, 128 KiB)
 * rather than from malloc and a memset of the bytes that must be zero. */
#define FAST_CALLOC_MIN_BYTES (128 * 1024)
static PyArrayObject *fast_new_of(int64_t n, int typenum, gs_array *view, int zeroed)
{
    npy_intp dims[1] = {(npy_intp)n};
    PyArrayObject *r = (PyArrayObject *)(zeroed ? PyArray_ZEROS(1, dims, typenum, 0) : PyArray_SimpleNew(1, dims, typenum));
    if (r) {
        view->data = PyArray_DATA(r);
        view->length = n;
        view->stride = 1;
        view->device = GS_HOST;
        dtype_from_numpy(typenum, &view->dtype);
    }
    return r;
}
static PyArrayObject *fast_new(int64_t n, int typenum, gs_array *view) { return fast_new_of(n, typenum, view, 0); }

static PyObject *fast_finish(PyArrayObject *r, gs_status st, int op, const gs_array *a, int typenum,
                             gs_strategy used)
{
    if (!gs_done(st)) {
        Py_DECREF(r);
        return NULL;
    }
    fast_note(op, a, typenum, used);
    return (PyObject *)r;
}

/* fast_packbits(a[, little]): bit order big, or little when `little` is true. */
static PyObject *py_fast_packbits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    gs_array a, out;
    if (!fast_arity("fast_packbits", nargs, 1, 3))
        return NULL;
    PyObject *ao = args[0];
    const int little = fast_flag(args, nargs, 1);
    if (little < 0)
        return NULL;
    /* a > thr: the float64 the dispatcher's _threshold made of the threshold for a's dtype */
    double thr = 0;
    const int has_thr = nargs == 3 && args[2] != Py_None;
    if (has_thr && (thr = PyFloat_AsDouble(args[2])) == -1.0 && PyErr_Occurred())
        return NULL;
    if (!fast_on(FAST_PACKBITS) || !fast_input(ao, FAST_PACKBITS, FAST_FLAT_1D, &a)) /* axis=None: flattened */
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *r = fast_new((a.length + 7) / 8, NPY_UINT8, &out);
    if (!r)
        return NULL;
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(FAST_PACKBITS, a.length, st, ops->packbits(&a, has_thr ? &thr : NULL, little, &out, NULL));
    return fast_finish(r, st, FAST_PACKBITS, &a, PyArray_TYPE((PyArrayObject *)ao), GS_STRATEGY_AUTO);
}

/* fast_reduce_axis(a, axis, mode): sum (mode 0), count_nonzero (1) or
 * cumsum (2) of a C-contiguous NumPy array of 2 or more dimensions along one
 * int axis, with NumPy's other defaults: NumPy's result shape and dtype (the
 * sum's accumulator type, also cumsum's; intp counts).  Empty or bool input, an axis out of
 * range and 1-D input return NotImplemented (the general path decides). */
static PyObject *py_fast_reduce_axis(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    gs_array a, out;
    if (!fast_arity("fast_reduce_axis", nargs, 3, 3))
        return NULL;
    if (!PyLong_CheckExact(args[1]))
        Py_RETURN_NOTIMPLEMENTED;
    long ax = PyLong_AsLong(args[1]);
    if (ax == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    const long mode = PyLong_AsLong(args[2]); /* 0 sum, 1 count_nonzero (True), 2 cumsum */
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    if (mode < 0 || mode > 2)
        Py_RETURN_NOTIMPLEMENTED;
    const int count = mode == 1, scan = mode == 2;
    const int fop = count ? FAST_COUNT_NONZERO : scan ? FAST_CUMSUM : FAST_SUM;
    if (!fast_on(fop) || !fast_input(args[0], fop, FAST_FLAT, &a) || a.length == 0 || a.dtype == GS_BOOL)
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *arr = (PyArrayObject *)args[0];
    const int nd = PyArray_NDIM(arr);
    if (ax < 0)
        ax += nd;
    if (nd < 2 || nd > NPY_MAXDIMS || ax < 0 || ax >= nd)
        Py_RETURN_NOTIMPLEMENTED;
    const npy_intp *dims = PyArray_DIMS(arr);
    npy_intp rdims[NPY_MAXDIMS];
    int64_t outer = 1, inner = 1;
    for (int k = 0, j = 0; k < nd; k++) {
        if (k == ax)
            continue;
        rdims[j++] = dims[k];
        if (k < ax)
            outer *= dims[k];
        else
            inner *= dims[k];
    }
    const int64_t len = dims[ax];
    const int64_t shape3[3] = {outer, len, inner}, strides3[3] = {len * inner, inner, 1};
    const int typenum = count ? NPY_INTP : fast_sum_type(a.dtype); /* (cumsum's dtype is the sum's) */
    PyArrayObject *r = scan ? (PyArrayObject *)PyArray_SimpleNew(nd, dims, typenum)
                            : (PyArrayObject *)PyArray_SimpleNew(nd - 1, rdims, typenum);
    if (!r)
        return NULL;
    out.data = PyArray_DATA(r);
    out.length = scan ? a.length : outer * inner;
    out.stride = 1;
    out.device = GS_HOST;
    dtype_from_numpy(typenum, &out.dtype);
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(fop, a.length, st,
             ops->reduce_axis(&a, shape3, strides3, count ? GS_AXIS_COUNT_NONZERO : scan ? GS_AXIS_CUMSUM : GS_AXIS_SUM,
                              &out, NULL));
    return fast_finish(r, st, fop, &a, PyArray_TYPE(arr), GS_STRATEGY_AUTO);
}

/* fast_unpackbits(a, little): np.unpackbits of a C-contiguous uint8 array of any shape, flattened. */
static PyObject *py_fast_unpackbits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    gs_array a, out;
    if (!fast_arity("fast_unpackbits", nargs, 2, 2))
        return NULL;
    const int little = fast_flag(args, nargs, 1);
    if (little < 0)
        return NULL;
    if (!fast_on(FAST_UNPACKBITS) || !fast_input(args[0], FAST_UNPACKBITS, FAST_FLAT, &a) || a.dtype != GS_UINT8)
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *r = fast_new(8 * a.length, NPY_UINT8, &out);
    if (!r)
        return NULL;
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(FAST_UNPACKBITS, a.length, st, ops->unpackbits(&a, little, &out, NULL));
    return fast_finish(r, st, FAST_UNPACKBITS, &a, NPY_UINT8, GS_STRATEGY_AUTO);
}

static PyObject *py_fast_cumsum(PyObject *self, PyObject *ao)
{
    (void)self;
    gs_array a, out;
    if (!fast_on(FAST_CUMSUM) || !fast_input(ao, FAST_CUMSUM, FAST_FLAT, &a))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *r = fast_new(a.length, fast_sum_type(a.dtype), &out);
    if (!r)
        return NULL;
    gs_strategy used = GS_STRATEGY_AUTO;
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN(FAST_CUMSUM, a.length, st, ops->cumsum(&a, &out, GS_STRATEGY_AUTO, NULL, &used));
    return fast_finish(r, st, FAST_CUMSUM, &a, PyArray_TYPE((PyArrayObject *)ao), used);
}

/* fast_histogram(a, bins, nbins): counts (int64) with a bin description the
 * wrapper cached for this dtype, bins and range. */
static PyObject *py_fast_histogram(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    gs_array a, out;
    if (!fast_arity("fast_histogram", nargs, 2, 2))
        return NULL;
    PyObject *ao = args[0], *bo = args[1];
    if (!fast_on(FAST_HISTOGRAM) || !fast_input(ao, FAST_HISTOGRAM, FAST_FLAT_1D, &a) || a.dtype == GS_BOOL)
        Py_RETURN_NOTIMPLEMENTED;
    bins_arg bins;
    if (!parse_bins(bo, &bins))
        return NULL;
    PyArrayObject *r = fast_new(bins.b.nbins, NPY_INT64, &out);
    if (!r) {
        bins_release(&bins);
        return NULL;
    }
    gs_strategy used = GS_STRATEGY_AUTO;
    gs_status st;
    const gs_backend_ops *ops = gs_cpu_backend();
    FAST_RUN_ALONE(FAST_HISTOGRAM, a.length, fast_alone_bins(FAST_HISTOGRAM, a.length, bins.b.nbins), st,
                   ops->histogram(&a, NULL, &bins.b, &out, NULL, GS_STRATEGY_AUTO, NULL, &used));
    bins_release(&bins);
    return fast_finish(r, st, FAST_HISTOGRAM, &a, PyArray_TYPE((PyArrayObject *)ao), used);
}

/* gs.histogram(a, bins, range) of a NumPy array whose (dtype, bins, range)
 * the dispatcher already planned: `plans` is gpusync._histogram._fast_plans,
 * keyed (a.dtype, bins, type(r0), r0, type(r1), r1) -> (edges, bins
 * description, device formula).  The counts and a fresh copy of the edges,
 * or NotImplemented (another input, an unplanned key, unhashable bounds:
 * the Python path decides and plans) -- the lookup, the call and the copy
 * in C, where the same steps in Python cost more than a small histogram. */
static PyObject *py_fast_histogram_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (!fast_arity("fast_histogram_of", nargs, 4, 4))
        return NULL;
    PyObject *ao = args[0], *bo = args[1], *ro = args[2], *plans = args[3];
    if (!PyArray_CheckExact(ao) || !PyLong_CheckExact(bo) || !PyTuple_CheckExact(ro) || PyTuple_GET_SIZE(ro) != 2 ||
        !PyDict_CheckExact(plans))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r0 = PyTuple_GET_ITEM(ro, 0), *r1 = PyTuple_GET_ITEM(ro, 1);
    PyObject *key = PyTuple_Pack(6, (PyObject *)PyArray_DESCR((PyArrayObject *)ao), bo, (PyObject *)Py_TYPE(r0), r0,
                                 (PyObject *)Py_TYPE(r1), r1);
    if (!key)
        return NULL;
    PyObject *hit = PyDict_GetItemWithError(plans, key); /* borrowed */
    Py_DECREF(key);
    if (!hit || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) < 2) {
        PyErr_Clear(); /* unhashable bounds: the general path says what is wrong with them */
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_INCREF(hit); /* the dict may change while a large count runs without the GIL */
    PyObject *call[2] = {ao, PyTuple_GET_ITEM(hit, 1)};
    PyObject *counts = py_fast_histogram(NULL, call, 2);
    PyObject *res = counts;
    if (counts && counts != Py_NotImplemented) {
        PyArrayObject *e = (PyArrayObject *)PyTuple_GET_ITEM(hit, 0);
        PyObject *edges;
        if (PyArray_CheckExact(e) && PyArray_NDIM(e) == 1 && PyArray_IS_C_CONTIGUOUS(e)) { /* (the planned ones) */
            npy_intp dims[1] = {PyArray_DIM(e, 0)};
            PyArray_Descr *d = PyArray_DESCR(e);
            Py_INCREF(d);
            edges = PyArray_NewFromDescr(&PyArray_Type, d, 1, dims, NULL, NULL, 0, NULL);
            if (edges)
                memcpy(PyArray_DATA((PyArrayObject *)edges), PyArray_DATA(e), (size_t)PyArray_NBYTES(e));
        } else {
            edges = PyArray_NewCopy(e, NPY_CORDER);
        }
        res = edges ? PyTuple_Pack(2, counts, edges) : NULL;
        Py_XDECREF(edges);
        Py_DECREF(counts);
    }
    Py_DECREF(hit);
    return res;
}

/* The minimum and maximum of a contiguous integer array (bincount's
 * argument check, as NumPy's own bincount makes it in C), from the CPU
 * engine's vectorized minmax (csrc/cpu/minmax.c: the calling thread up to
 * fast_caller, the pool above); 0 when they do not fit int64 (uint64
 * above 2^62: no fast path), -1 with the exception set when the engine
 * failed (an interrupt). */
#define FAST_RANGE(T)                                                                                         \
    do {                                                                                                      \
        T v[2];                                                                                               \
        memcpy(v, buf, sizeof v);                                                                             \
        if ((uint64_t)v[1] > (uint64_t)INT64_MAX / 2 && (T)-1 > 0)                                            \
            return 0;                                                                                         \
        *lo = (int64_t)v[0];                                                                                  \
        *hi = (int64_t)v[1];                                                                                  \
    } while (0)

static int fast_int_range(const gs_backend_ops *ops, const gs_array *a, int64_t *lo, int64_t *hi)
{
    char buf[16];
    /* the engine's minmax at any size: its loop is vectorized (AVX-512 / AVX2
     * clones); a scalar loop here took 40% of a 10k-element bincount */
    gs_status st;
    FAST_RUN(FAST_BINCOUNT, a->length, st, ops->minmax(a, buf, NULL));
    if (!gs_done(st)) /* an interrupt: raised */
        return -1;
    switch (a->dtype) {
    case GS_INT8: FAST_RANGE(int8_t); return 1;
    case GS_UINT8: FAST_RANGE(uint8_t); return 1;
    case GS_INT16: FAST_RANGE(int16_t); return 1;
    case GS_UINT16: FAST_RANGE(uint16_t); return 1;
    case GS_INT32: FAST_RANGE(int32_t); return 1;
    case GS_UINT32: FAST_RANGE(uint32_t); return 1;
    case GS_INT64: FAST_RANGE(int64_t); return 1;
    case GS_UINT64: FAST_RANGE(uint64_t); return 1;
    default: return 0;
    }
}

/* fast_bincount(x, minlength[, weights]): np.bincount of a 1-D array of
 * integers >= 0; NotImplemented for negatives, empty input or a result that
 * cannot be allocated (the general path says why).  A maximum far above the
 * length took the general path before (a count into a few of many bins:
 * 1000 values below 10^6 cost 0.15-0.23 ms there, ~0.04 ms of it Python);
 * the engine now counts such a call in place on one thread and zeroes the
 * result on the threads that pays for (csrc/cpu/hist.c). */
static PyObject *py_fast_bincount(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    gs_array a, w, out;
    if (!fast_arity("fast_bincount", nargs, 2, 3))
        return NULL;
    PyObject *ao = args[0];
    const long long minlength = PyLong_AsLongLong(args[1]);
    if (minlength == -1 && PyErr_Occurred())
        return NULL;
    if (!fast_on(FAST_BINCOUNT) || !fast_input(ao, FAST_BINCOUNT, FAST_1D, &a) || a.length == 0 || minlength < 0 ||
        a.dtype == GS_FLOAT16 || a.dtype == GS_FLOAT32 || a.dtype == GS_FLOAT64)
        Py_RETURN_NOTIMPLEMENTED;
    /* weights (float32 / float64, one per element): NumPy's float64 sums */
    const int weighted = nargs == 3;
    if (weighted && (!fast_input(args[2], FAST_BINCOUNT, FAST_1D, &w) || w.length != a.length ||
                     (w.dtype != GS_FLOAT32 && w.dtype != GS_FLOAT64)))
        Py_RETURN_NOTIMPLEMENTED;
    const int is_bool = a.dtype == GS_BOOL;
    if (is_bool)
        a.dtype = GS_UINT8;
    const gs_backend_ops *ops = gs_cpu_backend();
    int64_t lo, hi;
    const int range = fast_int_range(ops, &a, &lo, &hi);
    if (range < 0)
        return NULL;
    if (!range)
        Py_RETURN_NOTIMPLEMENTED;
    /* a bool byte other than 0 or 1 is True, counted as 1: the general path folds those bytes */
    if (lo < 0 || (is_bool && hi > 1))
        Py_RETURN_NOTIMPLEMENTED;
    const int64_t nbins = hi + 1 > minlength ? hi + 1 : minlength;
    /* the values lo .. hi alone where the rule says so (identifiers far from 0), else 0 .. hi; the engine
     * writes every one of those bins, the others (below lo, past the maximum: minlength) are zero -- from
     * calloc where there are any: a memset of fresh pages cost 2 ms for 10^6 identifiers from 10^6 (8 MB
     * of zeros, page faults included) where counting them took 0.1 ms (H200 host, r176) */
    const int64_t from = gs_bincount_min_to_max(lo, hi) ? lo : 0;
    /* from 0, with fewer elements than two results' bins (the engine then counts in place on one thread,
     * csrc/cpu/hist.c): the engine's bins run to minlength's end, and it zeroes them all on the threads that
     * pays for -- calloc's zeros are one thread's memset of recycled heap memory (1000 values, minlength
     * 10^6: 8 MB) */
    const int whole = from == 0 && (double)a.length < 2.0 * (double)nbins;
    const int64_t top = whole ? nbins - 1 : hi; /* the engine's last bin */
    /* the bins outside from .. top: zeros from calloc where they are many (fresh pages come zeroed), else a
     * memset of those alone -- calloc of a small result cleared it all and the engine cleared from .. hi
     * again (bincount of 10 values with minlength 1000: 8 KB twice, ~0.1 us of a 0.9 us call) */
    const int64_t outside = from + (nbins - top - 1);
    const int big_zeros = outside >= FAST_CALLOC_MIN_BYTES / 8;
    PyArrayObject *r = fast_new_of(nbins, weighted ? NPY_DOUBLE : NPY_INT64, &out, big_zeros);
    if (!r) { /* (a maximum of 2^40, say: NumPy's own error from the general path) */
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!big_zeros && outside > 0) {
        char *d = (char *)PyArray_DATA(r);
        memset(d, 0, (size_t)from * 8);
        memset(d + (top + 1) * 8, 0, (size_t)(nbins - top - 1) * 8);
    }
    gs_hist_bins bins;
    memset(&bins, 0, sizeof bins);
    bins.kind = GS_BINS_DIRECT;
    bins.nbins = top - from + 1;
    bins.offset = from;
    out.data = (int64_t *)PyArray_DATA(r) + from;
    out.length = top - from + 1;
    gs_strategy used = GS_STRATEGY_AUTO;
    gs_status st;
    FAST_RUN_ALONE(FAST_BINCOUNT, a.length, fast_alone_bins(FAST_BINCOUNT, a.length, bins.nbins), st,
                   ops->histogram(&a, weighted ? &w : NULL, &bins, &out, NULL, GS_STRATEGY_AUTO, NULL, &used));
    return fast_finish(r, st, FAST_BINCOUNT, &a, PyArray_TYPE((PyArrayObject *)ao), used);
}

static PyObject *py_bincount_min_to_max(PyObject *self, PyObject *args)
{
    (void)self;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "LL", &lo, &hi))
        return NULL;
    return PyBool_FromLong(gs_bincount_min_to_max((int64_t)lo, (int64_t)hi));
}

/* fast_thread_off(flag): the C fast path off (True) or on (False) for the
 * calling thread; returns the previous setting. */
static PyObject *py_fast_thread_off(PyObject *self, PyObject *arg)
{
    (void)self;
    const int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    const int was = fast_off_here;
    fast_off_here = on;
    return PyBool_FromLong(was);
}

/* fast_config(limits): the element limit of each op (a tuple in fast_names'
 * order; -1 or 0 turns an op's fast path off).  Returns the names. */
static PyObject *py_fast_config(PyObject *self, PyObject *arg)
{
    (void)self;
    if (arg != Py_None) {
        if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != FAST_OPS) {
            PyErr_Format(PyExc_ValueError, "fast_config: expected a tuple of %d limits", FAST_OPS);
            return NULL;
        }
        int64_t lim[FAST_OPS], caller[FAST_OPS];
        for (int k = 0; k < FAST_OPS; k++) {
            PyObject *it = PyTuple_GET_ITEM(arg, k);
            if (PyTuple_Check(it) && PyTuple_GET_SIZE(it) == 2) { /* (calling thread alone, fast path at all) */
                caller[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(it, 0));
                lim[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(it, 1));
            } else {
                lim[k] = caller[k] = PyLong_AsLongLong(it);
            }
            if (PyErr_Occurred())
                return NULL;
        }
        memcpy(fast_limit, lim, sizeof lim);
        memcpy(fast_caller, caller, sizeof caller);
    }
    PyObject *names = PyTuple_New(FAST_OPS);
    for (int k = 0; names && k < FAST_OPS; k++)
        PyTuple_SET_ITEM(names, k, PyUnicode_FromString(fast_names[k]));
    return names;
}

/* plan_seq(): the next number of this thread's call sequence (the general
 * path's plans); fast_last(): (seq, op, n, dtype, strategy) of this thread's
 * last fast call, or None. */
static PyObject *py_plan_seq(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromUnsignedLongLong(++call_seq);
}

static PyObject *py_cpu_last_threads(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromLong(gs_cpu_last_threads());
}

static PyObject *py_fast_last(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    if (!fast_last.seq)
        Py_RETURN_NONE;
    PyArray_Descr *d = PyArray_DescrFromType(fast_last.typenum);
    if (!d)
        return NULL;
    PyObject *r = Py_BuildValue("(KsLOsi)", fast_last.seq, fast_names[fast_last.op], (long long)fast_last.n,
                                (PyObject *)d, gs_strategy_name(fast_last.used), fast_last.threads);
    Py_DECREF(d);
    return r;
}

/* The dispatcher's variables through the table: (GPUSYNC_ENGINE or None for
 * auto, GPUSYNC_CALIBRATE, GPUSYNC_DEBUG as a bool); invalid values warn
 * (RuntimeWarning naming the variable) and read as the default. */
static PyObject *py_env_dispatch(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    static const char *const engines[] = {"auto", "caller", "cpu", "cuda", "cpu+cuda"};
    const int e = gs_env_choice(GS_ENV_ENGINE), c = gs_env_choice(GS_ENV_CALIBRATE);
    const double dbg = gs_env_number(GS_ENV_DEBUG, 0, NULL);
    if (!gs_done(GS_OK))
        return NULL;
    return Py_BuildValue("(ssO)", e > 0 ? engines[e] : "auto", c == 1 ? "off" : "auto", dbg != 0 ? Py_True : Py_False);
}

/* GPUSYNC_DEBUG=1 alone, for the device fast path's per-call check (env_dispatch builds a tuple: 0.3 us) */
static PyObject *py_env_debug(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyBool_FromLong(gs_env_number(GS_ENV_DEBUG, 0, NULL) != 0);
}

static PyObject *py_cpu_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    gs_cpu_request_threads((int)(n < 0 ? 0 : n > 4096 ? 4096 : n));
    Py_RETURN_NONE;
}

/* Test hook: the indexes of NULL slots in a backend's ops table (must be []). */
/* The NULL slots of a backend's ops table and of its demo table, as
 * "ops[i]" / "demos[i]" (tests/test_contract.py: there are none). */
static int null_slots(PyObject *out, const void *table, size_t bytes, const char *what)
{
    const size_t n = bytes / sizeof(void (*)(void));
    for (size_t i = 0; i < n; i++) {
        void (*slot)(void);
        memcpy(&slot, (const char *)table + i * sizeof slot, sizeof slot);
        if (!slot) {
            PyObject *k = PyUnicode_FromFormat("%s[%zu]", what, i);
            const int bad = !k || PyList_Append(out, k) < 0;
            Py_XDECREF(k);
            if (bad)
                return 0;
        }
    }
    return 1;
}

static PyObject *py_ops_null_slots(PyObject *self, PyObject *args)
{
    (void)self;
    const gs_backend_ops *ops;
    if (!PyArg_ParseTuple(args, "O&", conv_backend, &ops))
        return NULL;
    const gs_demo_ops *demos = ops == gs_cuda_backend() ? gs_cuda_demos() : gs_cpu_demos();
    _Static_assert(sizeof(gs_backend_ops) % sizeof(void (*)(void)) == 0, "ops: pointer-sized slots only");
    _Static_assert(sizeof(gs_demo_ops) % sizeof(void (*)(void)) == 0, "demos: pointer-sized slots only");
    PyObject *out = PyList_New(0);
    if (out && (!null_slots(out, ops, sizeof *ops, "ops") || !null_slots(out, demos, sizeof *demos, "demos")))
        Py_CLEAR(out);
    return out;
}

/* Test hook: wait up to `ms` as every long wait does (polling the interrupt
 * flag); KeyboardInterrupt when a SIGINT arrives meanwhile. */
static PyObject *py_test_interrupt_wait(PyObject *self, PyObject *args)
{
    (void)self;
    double ms;
    if (!PyArg_ParseTuple(args, "d", &ms))
        return NULL;
    gs_status st = GS_OK;
    Py_BEGIN_ALLOW_THREADS
    struct timespec t0, t, nap = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (gs_interrupt_poll()) {
            st = gs_interrupted();
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 >= ms)
            break;
        nanosleep(&nap, NULL);
    }
    Py_END_ALLOW_THREADS
    if (!gs_done(st))
        return NULL;
    Py_RETURN_NONE;
}

/* The CPU pool's cost inputs for the engine choice (csrc/cpu/parallel.c):
 * threads worth using for n items of ns_per_item each, the measured hand-off
 * of that many threads (of all of them when one), and the most threads. */
static PyObject *py_cpu_threads_for(PyObject *self, PyObject *args)
{
    (void)self;
    long long n;
    double ns;
    if (!PyArg_ParseTuple(args, "Ld", &n, &ns))
        return NULL;
    int t, most;
    double h;
    Py_BEGIN_ALLOW_THREADS
    t = gs_cpu_threads_for_cost((int64_t)n, ns);
    most = gs_cpu_max_threads();
    h = gs_cpu_handoff_ns(t > 1 ? t : most);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(idi)", t, h, most);
}

static PyObject *py_stage_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    gs_stage_request_threads((int)(n < 0 ? 0 : n > 4096 ? 4096 : n));
    Py_RETURN_NONE;
}

static PyObject *py_cpu_pool_warm(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyBool_FromLong(gs_cpu_pool_warm());
}

/* The environment table (csrc/common/env.c) for docs and tests: a tuple of
 * (name, type, default, lo, hi, choices, meaning). */
static PyObject *py_env_table(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    const gs_env_info *t = gs_env_table();
    PyObject *out = PyTuple_New(GS_ENV_COUNT);
    for (int i = 0; out && i < GS_ENV_COUNT; i++) {
        PyObject *row = Py_BuildValue("(sssddzs)", t[i].name, t[i].type, t[i].fallback, t[i].lo, t[i].hi,
                                      t[i].choices, t[i].meaning);
        if (!row)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, row);
    }
    return out;
}

/* GPUSYNC_BACKEND through the table: "cpu", "cuda" or None (unset or
 * invalid: a RuntimeWarning names the variable). */
static PyObject *py_env_backend(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    const int k = gs_env_choice(GS_ENV_BACKEND);
    if (!gs_done(GS_OK))
        return NULL;
    if (k < 0)
        Py_RETURN_NONE;
    return PyUnicode_FromString(k == 0 ? "cpu" : "cuda");
}

/* Test hook: read variable `name` through the table now (its warnings
 * surface as RuntimeWarnings); the number, or None when unset or invalid. */
static PyObject *py_env_number(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    const gs_env_info *t = gs_env_table();
    for (int i = 0; i < GS_ENV_COUNT; i++)
        if (strcmp(t[i].name, name) == 0) {
            int set = 0;
            const double v = strcmp(t[i].type, "choice") == 0 ? gs_env_choice((gs_env_var)i)
                                                              : gs_env_number((gs_env_var)i, 0, &set);
            if (strcmp(t[i].type, "choice") == 0)
                set = v >= 0;
            if (!gs_done(GS_OK))
                return NULL;
            if (!set)
                Py_RETURN_NONE;
            return PyFloat_FromDouble(v);
        }
    PyErr_Format(PyExc_KeyError, "%s is not a gpusync environment variable", name);
    return NULL;
}

static int add_names(PyObject *m, const char *attr, const char *(*name_of)(int))
{
    PyObject *d = PyDict_New();
    if (!d)
        return -1;
    for (int c = 0; name_of(c); c++) {
        PyObject *v = PyLong_FromLong(c);
        if (!v || PyDict_SetItemString(d, name_of(c), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return -1;
        }
        Py_DECREF(v);
    }
    const int rc = PyModule_AddObjectRef(m, attr, d);
    Py_DECREF(d);
    return rc;
}

static const char *strategy_name_of(int c) { return c < GS_STRATEGY_COUNT ? gs_strategy_name((gs_strategy)c) : NULL; }

/* _core.BINCOUNT_FIRST_DTYPES: the names of the dtypes gs_bincount_first_takes (one rule for C and Python) */
static int add_first_dtypes(PyObject *m)
{
    PyObject *names = PyList_New(0), *set = NULL;
    int rc = -1;
    for (int c = 0; names && c < GS_DTYPE_COUNT; c++) {
        if (!gs_bincount_first_takes((gs_dtype)c))
            continue;
        PyObject *s = PyUnicode_FromString(gs_dtype_name(c));
        const int bad = !s || PyList_Append(names, s) < 0;
        Py_XDECREF(s);
        if (bad)
            goto done;
    }
    if (names && (set = PyFrozenSet_New(names)))
        rc = PyModule_AddObjectRef(m, "BINCOUNT_FIRST_DTYPES", set);
done:
    Py_XDECREF(set);
    Py_XDECREF(names);
    return rc;
}

/* reduce_axis's operations by name (issue 15): _core.AXIS_OPS */
static const char *axis_op_name_of(int c)
{
    switch (c) {
    case GS_AXIS_SUM: return "sum";
    case GS_AXIS_COUNT_NONZERO: return "count_nonzero";
    case GS_AXIS_CUMSUM: return "cumsum";
    default: return NULL;
    }
}

/* ---- The public functions' C front (gpusync._core.front) ------------------
 *
 * gs.sum, gs.dot, ... are objects of this type: a call whose arguments the
 * fast path takes (the leading parameters alone, positional or by the
 * keywords their Python signature allows, every other parameter at its
 * default) runs the fast path's C function straight from the call, with no
 * Python frame; anything else -- and a fast path that answers NotImplemented
 * -- calls the Python function itself (`fallback`) with the arguments as
 * given, so every error and every other path stays the Python function's.
 * Between the two, the same parameters go to the device arrays' fast path
 * (`device`, gpusync/_devfast.py) when the first is not a NumPy array: a
 * CuPy / PyTorch call skips the Python function's frame too.
 * The Python frame and its default checks cost 0.1-0.7 us a call (c-kernels,
 * r158's H200 host sweep: 20 of the 30 cells behind NumPy were 1-3 us calls
 * within that much of it).  The parameters' names and defaults are read once
 * from the Python function (one source of truth); the object passes as that
 * function for introspection (its __doc__, __name__, __module__, __wrapped__:
 * inspect.signature, help) and pickles by reference. */
enum {
    FRONT_SUM,
    FRONT_DOT,
    FRONT_COUNT_NONZERO,
    FRONT_CUMSUM,
    FRONT_PACKBITS,
    FRONT_UNPACKBITS,
    FRONT_BINCOUNT,
    FRONT_HISTOGRAM,
    FRONT_OPS
};
#define FRONT_MAX_PARAMS 3
typedef struct {
    const char *name;                      /* the op, as gs.<name> */
    const char *params[FRONT_MAX_PARAMS]; /* the leading parameters the fast path takes, in order */
    int required;                          /* how many of them a call must give */
} front_spec;
static const front_spec front_specs[FRONT_OPS] = {
    [FRONT_SUM] = {.name = "sum", .params = {"a", "axis"}, .required = 1},
    [FRONT_DOT] = {.name = "dot", .params = {"a", "b"}, .required = 2},
    [FRONT_COUNT_NONZERO] = {.name = "count_nonzero", .params = {"a", "axis"}, .required = 1},
    [FRONT_CUMSUM] = {.name = "cumsum", .params = {"a", "axis"}, .required = 1},
    [FRONT_PACKBITS] = {.name = "packbits", .params = {"a"}, .required = 1},
    [FRONT_UNPACKBITS] = {.name = "unpackbits", .params = {"a"}, .required = 1},
    [FRONT_BINCOUNT] = {.name = "bincount", .params = {"x", "weights", "minlength"}, .required = 1},
    [FRONT_HISTOGRAM] = {.name = "histogram", .params = {"a", "bins", "range"}, .required = 1},
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int op;
    int nparams;                         /* of front_specs[op].params */
    PyObject *fallback;                  /* the Python function */
    PyObject *extra;                     /* histogram: gpusync._histogram._fast_plans; else None */
    PyObject *device;                    /* the device arrays' fast path (gpusync/_devfast.py), or None */
    PyObject *names[FRONT_MAX_PARAMS];   /* the parameters' names (str), NULL where positional-only */
    PyObject *defaults[FRONT_MAX_PARAMS]; /* their defaults, NULL where required */
    PyObject *weakrefs;
} front_object;

/* The fast path's answer for the parameters v (every one given or its
 * default): a new reference, NotImplemented, or NULL with an exception. */
/* sum / count_nonzero / cumsum along an int axis (v: a, axis): the C fast path of one axis (mode 0 sum, 1
 * count_nonzero, 2 cumsum); any other axis (a tuple, a NumPy integer): the Python function.  Through the
 * Python function a device array's axis sum cost 23-25 us a call against torch's 17-19 us (r272, H200). */
static PyObject *front_axis(PyObject *const *v, long mode)
{
    if (!PyLong_CheckExact(v[1]))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *m = PyLong_FromLong(mode);
    if (!m)
        return NULL;
    PyObject *args[3] = {v[0], v[1], m};
    PyObject *r = py_fast_reduce_axis(NULL, args, 3);
    Py_DECREF(m);
    return r;
}

static PyObject *front_fast(front_object *f, PyObject *const *v)
{
    switch (f->op) {
    case FRONT_SUM: return v[1] == Py_None ? py_fast_sum(NULL, v, 1) : front_axis(v, 0);
    case FRONT_DOT: return py_fast_dot(NULL, v, 2);
    case FRONT_COUNT_NONZERO: return v[1] == Py_None ? py_fast_count_nonzero(NULL, v[0]) : front_axis(v, 1);
    case FRONT_CUMSUM: return v[1] == Py_None ? py_fast_cumsum(NULL, v[0]) : front_axis(v, 2);
    case FRONT_PACKBITS:
    case FRONT_UNPACKBITS: { /* bitorder "big" (the default) */
        PyObject *args[2] = {v[0], Py_False};
        return f->op == FRONT_PACKBITS ? py_fast_packbits(NULL, args, 2) : py_fast_unpackbits(NULL, args, 2);
    }
    case FRONT_BINCOUNT: { /* (x, weights, minlength): an int minlength; weights None or an array */
        if (!PyLong_CheckExact(v[2]))
            Py_RETURN_NOTIMPLEMENTED;
        PyObject *args[3] = {v[0], v[2], v[1]};
        return py_fast_bincount(NULL, args, v[1] == Py_None ? 2 : 3);
    }
    case FRONT_HISTOGRAM: {
        PyObject *args[4] = {v[0], v[1], v[2], f->extra};
        return py_fast_histogram_of(NULL, args, 4);
    }
    default: Py_RETURN_NOTIMPLEMENTED;
    }
}

/* Whether x may be a device array: not NumPy's (arrays, subclasses, scalars)
 * nor Python's own numbers and sequences -- those go straight to the Python
 * function (a list through the device hook cost ~1 us, review37 #5). */
static int front_device_candidate(PyObject *x)
{
    return !(PyArray_Check(x) || PyArray_IsScalar(x, Generic) || PyList_Check(x) || PyTuple_Check(x) ||
             PyLong_Check(x) || PyFloat_Check(x) || PyComplex_Check(x) || x == Py_None);
}

/* The device arrays' fast path for the same parameters (a host array, a
 * list, ... answer NotImplemented there too): device(a), dot's device(a, b),
 * bincount's device(x, minlength) without weights, histogram's device(a,
 * bins, range). */
static PyObject *front_device(front_object *f, PyObject *const *v)
{
    if (f->device == Py_None || !front_device_candidate(v[0]) ||
        (f->op == FRONT_DOT && !front_device_candidate(v[1])))
        Py_RETURN_NOTIMPLEMENTED;
    switch (f->op) {
    case FRONT_DOT: return PyObject_Vectorcall(f->device, v, 2, NULL);
    case FRONT_BINCOUNT: {
        if (v[1] != Py_None || !PyLong_CheckExact(v[2]))
            Py_RETURN_NOTIMPLEMENTED;
        const long long m = PyLong_AsLongLong(v[2]);
        if (m < 0) { /* (negative or past int64: the Python function's error) */
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        PyObject *args[2] = {v[0], v[2]};
        return PyObject_Vectorcall(f->device, args, 2, NULL);
    }
    case FRONT_HISTOGRAM: return PyObject_Vectorcall(f->device, v, 3, NULL); /* device(a, bins, range) */
    case FRONT_SUM:
    case FRONT_COUNT_NONZERO:
    case FRONT_CUMSUM: /* device(a) for axis None, device(a, axis) for an int axis */
        if (v[1] == Py_None)
            return PyObject_Vectorcall(f->device, v, 1, NULL);
        if (!PyLong_CheckExact(v[1]))
            Py_RETURN_NOTIMPLEMENTED;
        return PyObject_Vectorcall(f->device, v, 2, NULL);
    default: return PyObject_Vectorcall(f->device, v, 1, NULL);
    }
}

static PyObject *front_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    front_object *f = (front_object *)self;
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *v[FRONT_MAX_PARAMS] = {NULL};
    int take = nargs <= f->nparams;
    for (Py_ssize_t i = 0; take && i < nargs; i++)
        v[i] = args[i];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; take && k < nkw; k++) { /* keywords: the fast path's parameters, each once */
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int hit = -1;
        for (int i = 0; i < f->nparams && hit < 0; i++) {
            if (!f->names[i])
                continue;
            const int c = f->names[i] == name ? 0 : PyUnicode_Compare(f->names[i], name);
            if (c == -1 && PyErr_Occurred())
                return NULL;
            if (c == 0)
                hit = i;
        }
        if (hit < 0 || v[hit])
            take = 0; /* another parameter, or one given twice: the Python function decides */
        else
            v[hit] = args[nargs + k];
    }
    for (int i = 0; take && i < f->nparams; i++)
        if (!v[i] && !(v[i] = f->defaults[i]))
            take = 0; /* a required parameter missing: the Python function's TypeError */
    if (take) {
        PyObject *r = front_fast(f, v);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
        r = front_device(f, v);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
    }
    return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

static PyObject *front_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    const char *opname;
    PyObject *fallback, *extra = Py_None, *device = Py_None;
    static char *kwlist[] = {"op", "fallback", "extra", "device", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO|OO:front", kwlist, &opname, &fallback, &extra, &device))
        return NULL;
    int op = -1;
    for (int i = 0; i < FRONT_OPS; i++)
        if (strcmp(front_specs[i].name, opname) == 0)
            op = i;
    if (op < 0)
        return PyErr_Format(PyExc_ValueError, "front: unknown op '%s'", opname);
    if (!PyFunction_Check(fallback))
        return PyErr_Format(PyExc_TypeError, "front: fallback must be a Python function, not %R", fallback);
    if (op == FRONT_HISTOGRAM && !PyDict_CheckExact(extra))
        return PyErr_Format(PyExc_TypeError, "front: histogram's extra must be its plans dict");
    if (device != Py_None && !PyCallable_Check(device))
        return PyErr_Format(PyExc_TypeError, "front: %s takes no device fast path %R", opname, device);
    /* the leading parameters' names and defaults from the function itself */
    PyCodeObject *code = (PyCodeObject *)PyFunction_GET_CODE(fallback);
    PyObject *defaults = PyFunction_GET_DEFAULTS(fallback); /* borrowed; NULL: none */
    const front_spec *sp = &front_specs[op];
    int np = 0;
    while (np < FRONT_MAX_PARAMS && sp->params[np])
        np++;
    PyObject *varnames = PyObject_GetAttrString((PyObject *)code, "co_varnames");
    if (!varnames)
        return NULL;
    const int argc = code->co_argcount, posonly = code->co_posonlyargcount;
    const Py_ssize_t nd = defaults ? PyTuple_GET_SIZE(defaults) : 0;
    front_object *f = (front_object *)type->tp_alloc(type, 0);
    if (!f) {
        Py_DECREF(varnames);
        return NULL;
    }
    f->vectorcall = front_call;
    f->op = op;
    f->nparams = np;
    Py_INCREF(fallback);
    f->fallback = fallback;
    Py_INCREF(extra);
    f->extra = extra;
    Py_INCREF(device);
    f->device = device;
    for (int i = 0; i < np; i++) {
        PyObject *nm = i < argc ? PyTuple_GetItem(varnames, i) : NULL;
        if (!nm || PyUnicode_CompareWithASCIIString(nm, sp->params[i]) != 0) {
            Py_DECREF(varnames);
            Py_DECREF(f);
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError, "front: %s's parameter %d must be %s", sp->name, i, sp->params[i]);
        }
        if (i >= posonly) {
            Py_INCREF(nm);
            PyUnicode_InternInPlace(&nm);
            f->names[i] = nm;
        }
        const Py_ssize_t d = i - (argc - nd); /* defaults align with the last positional parameters */
        if (d >= 0) {
            f->defaults[i] = PyTuple_GET_ITEM(defaults, d);
            Py_INCREF(f->defaults[i]);
        } else if (i >= sp->required) {
            Py_DECREF(varnames);
            Py_DECREF(f);
            return PyErr_Format(PyExc_TypeError, "front: %s's parameter %s needs a default", sp->name, sp->params[i]);
        }
    }
    Py_DECREF(varnames);
    return (PyObject *)f;
}

static int front_traverse(PyObject *self, visitproc visit, void *arg)
{
    front_object *f = (front_object *)self;
    Py_VISIT(f->fallback);
    Py_VISIT(f->extra);
    Py_VISIT(f->device);
    for (int i = 0; i < FRONT_MAX_PARAMS; i++)
        Py_VISIT(f->defaults[i]);
    return 0;
}

/* (no tp_clear: the fields never change after construction, every entry
 * point uses them, and a cycle through the module's globals is broken by
 * the Python function's own clear) */
static void front_release(PyObject *self)
{
    front_object *f = (front_object *)self;
    Py_CLEAR(f->fallback);
    Py_CLEAR(f->extra);
    Py_CLEAR(f->device);
    for (int i = 0; i < FRONT_MAX_PARAMS; i++) {
        Py_CLEAR(f->names[i]);
        Py_CLEAR(f->defaults[i]);
    }
}

static void front_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    if (((front_object *)self)->weakrefs)
        PyObject_ClearWeakRefs(self);
    front_release(self);
    Py_TYPE(self)->tp_free(self);
}

/* The function's own attributes (__doc__, __name__, __qualname__,
 * __module__, __defaults__, ...) and __wrapped__: the front passes as it. */
static PyObject *front_getattro(PyObject *self, PyObject *name)
{
    front_object *f = (front_object *)self;
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GetAttr(f->fallback, name);
}

/* __doc__, __name__, __qualname__, __module__: the function's, read and
 * written there (a data descriptor: pydoc reads __doc__ with
 * object.__getattribute__, review37 #1); __wrapped__: the function. */
static PyObject *front_attr_get(PyObject *self, void *name)
{
    front_object *f = (front_object *)self;
    if (!name) {
        Py_INCREF(f->fallback);
        return f->fallback;
    }
    return PyObject_GetAttrString(f->fallback, (const char *)name);
}

static int front_attr_set(PyObject *self, PyObject *value, void *name)
{
    if (!name) {
        PyErr_SetString(PyExc_AttributeError, "__wrapped__ is read-only");
        return -1;
    }
    return PyObject_SetAttrString(((front_object *)self)->fallback, (const char *)name, value);
}

static PyGetSetDef front_getset[] = {
    {"__doc__", front_attr_get, front_attr_set, NULL, "__doc__"},
    {"__name__", front_attr_get, front_attr_set, NULL, "__name__"},
    {"__qualname__", front_attr_get, front_attr_set, NULL, "__qualname__"},
    {"__module__", front_attr_get, front_attr_set, NULL, "__module__"},
    {"__wrapped__", front_attr_get, front_attr_set, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* Any other attribute is set on the function (a user's own, e.g. by a decorator library). */
static int front_setattro(PyObject *self, PyObject *name, PyObject *value)
{
    if (PyObject_GenericSetAttr(self, name, value) == 0) /* the attributes above */
        return 0;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return value ? PyObject_SetAttr(((front_object *)self)->fallback, name, value)
                 : PyObject_DelAttr(((front_object *)self)->fallback, name);
}

static PyObject *front_repr(PyObject *self) { return PyObject_Repr(((front_object *)self)->fallback); }

/* As a class attribute it binds like the Python function (an instance's
 * method gets the instance first); it also makes inspect.isroutine true. */
static PyObject *front_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* Pickled by reference: the name, looked up in the function's module (where this object is bound). */
static PyObject *front_reduce(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyObject_GetAttrString(((front_object *)self)->fallback, "__qualname__");
}

static PyObject *front_dir(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyObject_Dir(((front_object *)self)->fallback);
}

static PyMethodDef front_methods[] = {
    {"__reduce__", front_reduce, METH_NOARGS, "pickled by reference (the function's qualified name)"},
    {"__dir__", front_dir, METH_NOARGS, "the function's attributes"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject front_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpusync._core.front",
    .tp_basicsize = sizeof(front_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    /* (no tp_doc: __doc__ is the function's; front(op, fallback, extra=None, device=None)) */
    .tp_new = front_new,
    .tp_dealloc = front_dealloc,
    .tp_traverse = front_traverse,
    .tp_weaklistoffset = offsetof(front_object, weakrefs),
    .tp_getset = front_getset,
    .tp_setattro = front_setattro,
    .tp_vectorcall_offset = offsetof(front_object, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = front_getattro,
    .tp_repr = front_repr,
    .tp_descr_get = front_get,
    .tp_methods = front_methods,
};

static PyMethodDef methods[] = {
    {"_ops_null_slots", py_ops_null_slots, METH_VARARGS, "test hook: NULL slots of a backend's ops table"},
    {"_test_interrupt_wait", py_test_interrupt_wait, METH_VARARGS,
     "test hook: wait `ms` polling for interrupts; KeyboardInterrupt on SIGINT"},
    {"stage_threads", py_stage_threads, METH_O,
     "stage_threads(n): the staging crew's workers for this thread's host <-> device copies (0: the crew's size)"},
    {"cpu_pool_warm", py_cpu_pool_warm, METH_NOARGS,
     "cpu_pool_warm() -> bool: the CPU pool is free and its workers still spin after the last job"},
    {"cpu_threads_for", py_cpu_threads_for, METH_VARARGS,
     "cpu_threads_for(n, ns_per_item) -> (threads, handoff_ns, max_threads): the CPU pool's choice and "
     "measured hand-off"},
    {"_env_table", py_env_table, METH_NOARGS, "the GPUSYNC_* variables: (name, type, default, lo, hi, choices, meaning)"},
    {"env_backend", py_env_backend, METH_NOARGS, "GPUSYNC_BACKEND: 'cpu', 'cuda' or None"},
    {"_env_number", py_env_number, METH_VARARGS, "test hook: a GPUSYNC_* variable as the C side reads it"},
    {"fast_reduce_axis", (PyCFunction)(void (*)(void))py_fast_reduce_axis, METH_FASTCALL,
     "fast path: sum (mode 0), count_nonzero (1) or cumsum (2) along one int axis of a C-contiguous N-d array, or "
     "NotImplemented"},
    {"fast_unpackbits", (PyCFunction)(void (*)(void))py_fast_unpackbits, METH_FASTCALL,
     "fast path: unpackbits(a, little), or NotImplemented"},
    {"fast_complex_takes", py_fast_complex_takes, METH_O,
     "fast_complex_takes(n) -> whether a complex host sum of n elements takes gpusync's route (module.c)"},
    {"fast_sum", (PyCFunction)(void (*)(void))py_fast_sum, METH_FASTCALL,
     "fast path: sum(a[, as_f64]) (as_f64: dtype=float64 of a float array), or NotImplemented"},
    {"fast_dot", (PyCFunction)(void (*)(void))py_fast_dot, METH_FASTCALL, "fast path: dot(a, b) on the calling thread, or NotImplemented"},
    {"fast_count_nonzero", py_fast_count_nonzero, METH_O, "fast path: count_nonzero(a), or NotImplemented"},
    {"fast_packbits", (PyCFunction)(void (*)(void))py_fast_packbits, METH_FASTCALL,
     "fast path: packbits(a[, little[, threshold as float64]]) (big bit order, or little), or NotImplemented"},
    {"fast_cumsum", py_fast_cumsum, METH_O, "fast path: cumsum(a) flattened, or NotImplemented"},
    {"fast_histogram", (PyCFunction)(void (*)(void))py_fast_histogram, METH_FASTCALL, "fast path: counts of a with a bins description"},
    {"fast_histogram_of", (PyCFunction)(void (*)(void))py_fast_histogram_of, METH_FASTCALL,
     "fast path: histogram(a, bins, range) -> (counts, edges) from the planned (dtype, bins, range), or NotImplemented"},
    {"fast_bincount", (PyCFunction)(void (*)(void))py_fast_bincount, METH_FASTCALL, "fast path: bincount(x, minlength), or NotImplemented"},
    {"bincount_min_to_max", py_bincount_min_to_max, METH_VARARGS,
     "bincount_min_to_max(lo, hi) -> bool: bincount counts lo .. hi alone (gs_bincount_min_to_max)"},
    {"fast_thread_off", py_fast_thread_off, METH_O, "fast_thread_off(flag) -> previous: the C fast path off for this thread"},
    {"fast_config", py_fast_config, METH_O, "fast_config(limits or None) -> the ops' names, in the limits' order (a limit: n, or (caller alone, fast path))"},
    {"plan_seq", py_plan_seq, METH_NOARGS, "the next number of this thread's call sequence"},
    {"cpu_last_threads", py_cpu_last_threads, METH_NOARGS, "threads of the CPU engine's last job on this thread"},
    {"fast_last", py_fast_last, METH_NOARGS, "(seq, op, n, dtype, strategy, threads) of this thread's last fast call"},
    {"env_dispatch", py_env_dispatch, METH_NOARGS, "(GPUSYNC_ENGINE, GPUSYNC_CALIBRATE, GPUSYNC_DEBUG) via the table"},
    {"env_debug", py_env_debug, METH_NOARGS, "GPUSYNC_DEBUG=1 is set (via the table)"},
    {"cpu_threads", py_cpu_threads, METH_O,
     "cpu_threads(n): the CPU engine's threads for this thread's next calls (1: the caller alone; 0: its own choice)"},
    {"histogram", py_histogram, METH_VARARGS,
     "histogram(backend, x, weights, out, bins, strategy, stream[, edges]) -> strategy used (edges: filled with "
     "an equal-width description's edges)"},
    {"minmax", py_minmax, METH_VARARGS, "minmax(backend, x, stream) -> bytes of (min, max) in x's dtype"},
    {"bincount_first", py_bincount_first, METH_VARARGS,
     "bincount_first(backend, x, out, stream) -> (largest x, any x < 0, smallest x or -1 when not known), out the counts of 0 .. len(out) - 1; "
     "synchronizes"},
    {"minmax_many", py_minmax_many, METH_VARARGS,
     "minmax_many(backend, [x, ...], stream) -> bytes of each x's (min, max) in their one dtype"},
    {"uniform_edges", py_uniform_edges, METH_VARARGS, "uniform_edges(backend, bins, out, stream)"},
    {"reduce", py_reduce, METH_VARARGS,
     "reduce(backend, a, b or None, out, strategy, deterministic, stream) -> strategy used"},
    {"binned_statistic", py_binned_statistic, METH_VARARGS,
     "binned_statistic(backend, x, values, edges, top, stat, result, binnumber or None, nonfinite or None, strategy, "
     "stream)"},
    {"counter", py_counter, METH_VARARGS, "counter(backend, kind, blocks, threads) -> (value, ms)"},
    {"_test_deadlock", py_test_deadlock, METH_VARARGS,
     "test hook: wait on a lock that is never released for `ms`; raises DeadlockError"},
    {"packbits", py_packbits, METH_VARARGS, "packbits(backend, a, threshold or None, little, out, stream)"},
    {"count_nonzero", py_count_nonzero, METH_VARARGS, "count_nonzero(backend, a, threshold or None, out, stream)"},
    {"kernel_names", py_kernel_names, METH_VARARGS, "kernel_names(backend) -> 'op:strategy,...'"},
    {"occupancy", py_occupancy, METH_VARARGS, "occupancy(backend, name, block_size) -> dict"},
    {"divergence", py_divergence, METH_VARARGS, "divergence(backend, kind, n, block, iters) -> ms"},
    {"_self_test", py_self_test, METH_VARARGS, "test hook: _self_test(backend, which) -> wrong results"},
    {"barrier_benchmark", py_barrier_benchmark, METH_VARARGS,
     "barrier_benchmark(backend, strategy, blocks, threads, rounds, skip_block) -> dict"},
    {"cumsum", py_cumsum, METH_VARARGS, "cumsum(backend, a, out, strategy, stream) -> strategy used"},
    {"available", py_available, METH_VARARGS, "available(backend) -> (bool, reason)"},
    {"empty_cache", py_empty_cache, METH_VARARGS, "empty_cache(backend): give cached scratch memory back"},
    {"stream_wait", py_stream_wait, METH_VARARGS,
     "stream_wait(backend, device, consumer, producer): order consumer after producer's work so far"},
    {"pointer_device", py_pointer_device, METH_VARARGS, "pointer_device(backend, ptr) -> ordinal or -1"},
    {"device_info", py_device_info, METH_VARARGS, "device_info(ordinal) -> dict"},
    {"hist_auto_strategy", (PyCFunction)(void (*)(void))py_hist_auto_strategy, METH_VARARGS | METH_KEYWORDS,
     "the strategy `auto` picks for a histogram of this shape on this device"},
    {"reduce_axis", py_reduce_axis, METH_VARARGS,
     "reduce_axis(backend, a, (outer, len, inner), strides, op, out, stream): segmented sum/count/cumsum"},
    {"histogramdd", py_histogramdd, METH_VARARGS,
     "histogramdd(backend, [coords], edges, nedges, weights or None, out, stream, edges_out=None): "
     "numpy.histogramdd's counts (and its edges into edges_out)"},
    {"unpackbits", py_unpackbits, METH_VARARGS, "unpackbits(backend, a, little, out, stream)"},
    {"binned_statistic_dd", py_binned_statistic_dd, METH_VARARGS,
     "binned_statistic_dd(backend, [coords], edges, nedges, tops, values, stat, result, binnumber or None, "
     "nonfinite or None, stream)"},
    {"_raise_status", py_raise_status, METH_VARARGS, "test hook: raise the exception for a status code"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, .m_name = "gpusync._core", .m_doc = NULL, .m_size = -1, .m_methods = methods};

static PyObject *new_exc(PyObject *m, const char *name, PyObject *bases, const char *doc)
{
    char full[128];
    snprintf(full, sizeof full, "gpusync.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (e && PyModule_AddObjectRef(m, name, e) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    if (!(name_cuda = PyUnicode_InternFromString("cuda")) || !(name_cpu = PyUnicode_InternFromString("cpu")))
        return NULL;
    PyObject *m = PyModule_Create(&moduledef), *b = NULL;
    if (!m)
        return NULL;
    if (!(GpusyncError = new_exc(m, "GpusyncError", NULL, "Base class of gpusync's own errors.")))
        goto fail;
    if (!(b = PyTuple_Pack(2, GpusyncError, PyExc_RuntimeError)) ||
        !(CudaError = new_exc(m, "CudaError", b, "A CUDA runtime error; the message has CUDA's text.")) ||
        !(DeadlockError = new_exc(m, "DeadlockError", b, "A bounded device spin loop timed out.")) ||
        !(NoCudaError = new_exc(m, "NoCudaError", b, "The CUDA backend cannot run here.")))
        goto fail;
    Py_CLEAR(b);
    if (!(b = PyTuple_Pack(2, GpusyncError, PyExc_ValueError)) ||
        !(UnsupportedDeviceError =
              new_exc(m, "UnsupportedDeviceError", b, "The strategy needs a feature this device lacks.")) ||
        !(CooperativeLaunchError =
              new_exc(m, "CooperativeLaunchError", b, "The grid cannot be co-resident or launched cooperatively.")))
        goto fail;
    Py_CLEAR(b);
    if (add_names(m, "DTYPES", gs_dtype_name) < 0 || add_names(m, "BINS_KINDS", gs_bins_kind_name) < 0 ||
        add_names(m, "STATISTICS", gs_statistic_name) < 0 || add_names(m, "STRATEGIES", strategy_name_of) < 0 ||
        add_names(m, "COUNTER_KINDS", gs_counter_kind_name) < 0 || add_names(m, "AXIS_OPS", axis_op_name_of) < 0 ||
        PyModule_AddIntConstant(m, "BINCOUNT_FIRST_BINS", GS_BINCOUNT_FIRST_BINS) < 0 || add_first_dtypes(m) < 0 ||
        PyModule_AddIntConstant(m, "HIST_STATIC_SMEM", GS_HIST_STATIC_SMEM) < 0)
        goto fail;
    { /* threading.main_thread().ident: the thread Python runs signal handlers in */
        PyObject *thr = PyImport_ImportModule("threading"), *mt = NULL, *id = NULL;
        if (thr && (mt = PyObject_CallMethod(thr, "main_thread", NULL)) && (id = PyObject_GetAttrString(mt, "ident")))
            main_thread_ident = PyLong_AsUnsignedLong(id);
        Py_XDECREF(id);
        Py_XDECREF(mt);
        Py_XDECREF(thr);
        if (PyErr_Occurred())
            goto fail;
    }
    if (PyType_Ready(&front_type) < 0)
        goto fail;
    Py_INCREF(&front_type);
    if (PyModule_AddObject(m, "front", (PyObject *)&front_type) < 0) {
        Py_DECREF(&front_type);
        goto fail;
    }
    gs_set_interrupt_hook(interrupt_hook);
    return m;
fail:
    Py_XDECREF(b);
    Py_DECREF(m);
    return NULL;
}
