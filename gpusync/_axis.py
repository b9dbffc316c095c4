"""N-D reductions and scans along axes (issue 15): NumPy's axis, dtype, out,
keepdims, initial and where rules in Python; the work in one segmented
kernel over an (outer, length, inner) strided view of the input (C API
``reduce_axis``: csrc/cpu/reduce_axis.c, csrc/cuda/reduce_axis.cu).

The arguments are checked by NumPy itself on a zero-copy proxy -- a
broadcast view of the input's shape whose reduced axes have length 1 -- so
AxisError, duplicate axes, ``out`` of the wrong shape or dtype and bad
``initial`` raise NumPy's own exceptions and messages, and the result dtype
is NumPy's.  Reading the proxy costs O(size of the result), not O(input).
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import _arrays, _backend, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib

# reduce_axis's operations: the codes of gpusync.h's GS_AXIS_*, exported by the binding
SUM, COUNT_NONZERO, CUMSUM = (_core.AXIS_OPS[k] for k in ("sum", "count_nonzero", "cumsum"))


# ---- views --------------------------------------------------------------------------------------------------

def _merge(dims):
    """(extent, stride) of one axis standing for `dims` (C order), or None
    when they do not form one arithmetic progression."""
    if not dims:
        return 1, 0
    n, s = dims[-1]
    for m, t in reversed(dims[:-1]):
        if t != s * n:
            return None
        n *= m
    return n, s


def segments(shape, strides, axes):
    """(shape3, strides3) of the input as (kept before, reduced, kept after)
    when the reduced axes are adjacent (ignoring length-1 axes) and each
    group merges into one strided axis; else None (the caller copies)."""
    dims = [(n, s, i in axes) for i, (n, s) in enumerate(zip(shape, strides)) if n != 1]
    red = [i for i, d in enumerate(dims) if d[2]]
    if red and red[-1] - red[0] + 1 != len(red):
        return None
    if not red:
        return None
    lo, hi = red[0], red[-1] + 1
    groups = [_merge([(n, s) for n, s, _ in dims[a:b]]) for a, b in ((0, lo), (lo, hi), (hi, len(dims)))]
    if any(g is None for g in groups):
        return None
    return tuple(g[0] for g in groups), tuple(g[1] for g in groups)


def nd_input(a, func):
    """checked_input() that keeps an N-D device array's shape: a device array
    that is not C-contiguous is first made so by its own library (the flat
    descriptor of _arrays would otherwise flatten it)."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None and len(cai["shape"]) > 1 and cai.get("strides") is not None:
        mod = type(a).__module__.split(".")[0]
        if mod == "torch":
            a = a.contiguous()
        elif mod == "cupy":
            a = __import__("cupy").ascontiguousarray(a)
    return _arrays.checked_input(a, "a", func)


def _elem_strides(x):
    """Element strides of a host array or a (C-contiguous) device view."""
    if isinstance(x, DeviceArray):
        shape = tuple(x.shape)
        if len([n for n in shape if n != 1]) <= 1:
            st = [0] * len(shape)
            for i, n in enumerate(shape):
                if n != 1:
                    st[i] = x.stride
            return st
        return [math.prod(shape[i + 1:]) for i in range(len(shape))]
    isz = x.dtype.itemsize
    if any(s % isz for s in x.strides) or not x.flags.aligned:
        return None
    return [s // isz for s in x.strides]


def _base_desc(x, dtype=None):
    """Descriptor of the view's base element for reduce_axis (ptr, 1, 1, dtype, device)."""
    if isinstance(x, DeviceArray):
        return (x.ptr, 1, 1, _arrays.dtype_code(dtype or x.dtype), x.device)
    ptr = x.__array_interface__["data"][0]
    return (ptr, 1, 1, _arrays.dtype_code(dtype or x.dtype), -1)


def _transposed_copy(x, order):
    """A C-contiguous copy of `x` with its axes in `order` -- the fallback
    when the reduced axes cannot be one strided axis of a view."""
    if isinstance(x, DeviceArray):
        obj = x.obj
        if x.lib == "torch":
            y = obj.reshape(tuple(x.shape)).permute(*order).contiguous()
        else:
            cp = __import__("cupy")
            y = cp.ascontiguousarray(cp.transpose(cp.asarray(obj).reshape(tuple(x.shape)), order))
        return _arrays.as_input(y, "a")
    return np.ascontiguousarray(np.transpose(x, order))


def _lib_where(x: DeviceArray, mask, zero):
    lib = x.lib
    obj = x.obj
    if lib == "torch":
        torch = __import__("torch")
        m = torch.as_tensor(np.asarray(mask) if not hasattr(mask, "__cuda_array_interface__") else mask,
                            device=obj.device).to(torch.bool)
        y = torch.where(m, obj.reshape(tuple(x.shape)), torch.zeros((), dtype=obj.dtype, device=obj.device))
    else:
        cp = __import__("cupy")
        y = cp.where(cp.asarray(mask, dtype=bool), cp.asarray(obj).reshape(tuple(x.shape)), zero)
    return _arrays.as_input(y, "a")


def _astype(x, dtype):
    if isinstance(x, DeviceArray):
        return _arrays.as_input(Lib.of(x.lib).astype(x.obj, dtype).reshape(tuple(x.shape)), "a")
    return x.astype(dtype)


def _astype_obj(arr, dtype):
    if isinstance(arr, np.ndarray):
        return arr.astype(dtype)
    mod = type(arr).__module__.split(".")[0]
    return Lib.of(mod).astype(arr, dtype)


def _category_cast(x, dt):
    """Cast the input when the accumulator category of `dt` differs from the
    input's (float vs integer, or bool's logical or), as NumPy casts each
    element to the loop dtype first."""
    xd = np.dtype(x.dtype)
    if (dt.kind == "f") != (xd.kind == "f") or (dt.kind == "b" and xd.kind != "b"):
        return _astype(x, dt)
    return x


# ---- the kernel call ----------------------------------------------------------------------------------------

def _launch(x, shape3, strides3, op, out_dtype, nout, into=None):
    """Run reduce_axis into a fresh contiguous result of `nout` elements, or
    into `into` (host x only: a flat host array of out_dtype, written in
    place)."""
    be = _backend.backend()
    if isinstance(x, DeviceArray):
        lib = Lib.of(x.lib)
        if be == "cpu":  # forced CPU backend with device input: copy, compute, copy back
            host = x.to_host()  # C-contiguous in the view's logical order
            if x.stride not in (0, 1):  # a 1-D strided view: its steps become unit steps
                strides3 = tuple(s // x.stride for s in strides3)
            res = _launch_host(be, host, op, out_dtype, nout, shape3, strides3)
            return lib.from_host(res, x.device)
        out = lib.empty(nout, out_dtype, x.device)
        _core.reduce_axis("cuda", _base_desc(x), shape3, strides3, op, _arrays.as_input(out, "out").desc(),
                          x.stream)
        _dispatch.record(_OP_NAMES[op], engine="cuda", strategy="auto", used="segmented", n=math.prod(shape3),
                         dtype=np.dtype(x.dtype), place="device")  # gs.last_plan(): this call's own record
        return out
    return _launch_host(be, x, op, out_dtype, nout, shape3, strides3, into)


_OP_NAMES = {SUM: "sum", COUNT_NONZERO: "count_nonzero", CUMSUM: "cumsum"}


def _c_order(shape3, strides3):
    """Whether (outer, len, inner) with these element strides walks a
    C-contiguous block (a dimension of length 1 has any stride: _plan gives
    it 0)."""
    want = (shape3[1] * shape3[2], shape3[2], 1)
    return all(n == 1 or s == w for n, s, w in zip(shape3, strides3, want))


def _launch_host(be, x, op, out_dtype, nout, shape3, strides3, into=None):
    c_order = _c_order(shape3, strides3)
    if c_order and x.flags.c_contiguous and x.flags.aligned and x.dtype.isnative:
        # a C-contiguous view: the dispatcher picks the engine (the calling thread, the CPU pool or the
        # GPU, by the cost model of the op on as many elements), records the plan and caches it
        shape3 = tuple(int(v) for v in shape3)
        strides3 = (shape3[1] * shape3[2], shape3[2], 1)

        def call(backend, ins, outs, strategy, stream):
            _core.reduce_axis(backend, _base_desc(ins[0]), shape3, strides3, op, outs[0], stream)
            return "segmented"

        return _dispatch.run(_OP_NAMES[op], [x.reshape(-1)], [(nout, out_dtype)], call,
                             into=None if into is None else [into])[0]
    if be == "cuda" and not c_order:
        # the CUDA backend stages a host view as one block: make it C-contiguous
        # and, since (outer, len, inner) then merges, describe it afresh
        x = np.ascontiguousarray(x)
        strides3 = (shape3[1] * shape3[2], shape3[2], 1)
    out = np.empty(nout, out_dtype) if into is None else into
    _core.reduce_axis(be, _base_desc(x), tuple(int(v) for v in shape3), tuple(int(v) for v in strides3), op, out,
                      _arrays.host_stream())
    return out


def _plan(x, axes):
    """(input, shape3, strides3, kept axes) with the reduced axes as one
    strided axis; a transposed copy when that is impossible."""
    shape = tuple(x.shape)
    kept = [i for i in range(len(shape)) if i not in axes]
    st = _elem_strides(x)
    seg = None if st is None else segments(shape, st, set(axes))
    if seg is None:
        if all(shape[i] == 1 for i in axes) and st is not None:  # nothing to add up: a copy-free (outer, 1, 1)
            m = _merge([(shape[i], st[i]) for i in kept if shape[i] != 1])
            if m is not None:
                return x, (m[0], 1, 1), (m[1], 0, 0), kept
        # not one strided axis (e.g. axes (0, 2) of a 3-D array): a transposed contiguous copy
        x = _transposed_copy(x, kept + sorted(axes))
        nk = math.prod(shape[i] for i in kept)
        nr = math.prod(shape[i] for i in axes)
        return x, (nk, nr, 1), (nr, 1, 0), kept
    return x, seg[0], seg[1], kept


# ---- sum and count_nonzero along axes ----------------------------------------------------------------------

def _out_obj(out):
    if isinstance(out, tuple):  # np.sum's rule (a ufunc's reduce takes a 1-tuple, np.sum and ndarray.sum do not)
        raise TypeError("out must be an array, not a tuple (NumPy: return arrays must be of ArrayType)")
    return out


def _out_loop(default, xdt, outp):
    """The accumulator of a sum / cumsum of an `xdt` input into `outp` (a
    proxy of out, or None) with no dtype given: NumPy's loop for that out
    (dtype defaults to out's: an int64 sum into a float64 out adds floats, a
    float16 one into float32 adds float32, a complex64 one into complex128
    adds complex128) where it is wider than the default -- a float loop for
    integer input, a wider float or complex for float or complex input; a
    real input's complex loop (a complex out) adds in the float of the same
    width, since the imaginary parts are zero; otherwise the default
    (integer sums wrap alike in any width, and a float64 sum is cast to a
    narrower out at the end: more accurate than NumPy's narrower loop)."""
    if outp is None:
        return default
    try:
        loop = np.add.resolve_dtypes((np.dtype(outp.dtype), np.dtype(xdt), None), reduction=True)[0]
    except (TypeError, ValueError):
        # no loop writes that out (float input, integer out; complex input, real out): NumPy adds in the
        # common dtype of out and input and casts the result (unsafely) into out
        try:
            loop = np.result_type(np.dtype(outp.dtype), np.dtype(xdt))
        except TypeError:
            return default
    if loop.kind == "c" and default.kind != "c":
        loop = loop.type(0).real.dtype  # a real input summed into a complex out: the float of that width
    # (no kernel adds wider than float64 / complex128: a longdouble out takes that sum, cast at the end)
    if loop.kind == "f" and (default.kind != "f" or loop.itemsize > default.itemsize):
        return loop if loop.itemsize <= 8 else np.dtype(np.float64)
    if loop.kind == "c" and loop.itemsize > default.itemsize:
        return loop if loop.itemsize <= 16 else np.dtype(np.complex128)
    return default


def _check_loop(func, loop, dtype):
    """TypeError naming the argument when the accumulator NumPy resolved
    (from `dtype`, else from `out`) is one the kernels do not compute in
    (object, longdouble, timedelta, ...; complex goes through the real
    parts): it surfaced as a KeyError of the dtype table."""
    if loop not in _arrays._DTYPE_CODES and loop.kind != "c" and loop.newbyteorder("=") not in _arrays._DTYPE_CODES:
        raise TypeError(f"{func}: the accumulator dtype {loop} (from {'dtype' if dtype is not None else 'out'}) is not "
                        "supported: bool, integer, float16/32/64 and complex are")


def keepdims_flag(keepdims):
    """`keepdims` as NumPy's reductions read it: an integer (bool included,
    NumPy's bool_ not), its TypeError for anything else -- the fast paths
    once tested it for truth, so keepdims='yes' raised on a process's first
    call (NumPy's check on the general path) and passed on later ones."""
    return bool(operator.index(keepdims))


def _axes_of(axis, ndim):
    """normalize_axis_tuple with the reductions' message for repeated axes."""
    if not isinstance(axis, (tuple, list)):
        axis = (_arrays.index_int(axis, "axis"),)  # NumPy's TypeError for a float or bool axis
    axes = normalize_axis_tuple(axis, ndim, allow_duplicate=True)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return axes


def _proxy(shape, dt, axes):
    shape = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return np.broadcast_to(np.zeros((), dt), shape)


def _numpy_check(fn, proxy, shape, **kw):
    """fn on the proxy: NumPy's result shape and dtype, or NumPy's error --
    with the message NumPy gives for the real shape (a zero-stride view of
    it, on which NumPy fails before reading anything)."""
    try:
        return fn(proxy, **kw)
    except Exception:
        full = np.broadcast_to(np.zeros((), proxy.dtype), shape)
        fn(full, **kw)
        raise


def _host_out_proxy(out):
    if out is None:
        return None
    if isinstance(out, np.ndarray):
        return out
    if hasattr(out, "__cuda_array_interface__") or hasattr(out, "__dlpack__"):
        cai = getattr(out, "__cuda_array_interface__", None)
        shape = tuple(cai["shape"]) if cai else tuple(out.shape)
        dt = np.dtype(cai["typestr"]) if cai else np.dtype(str(out.dtype).replace("torch.", ""))
        return np.empty(shape, dt)
    raise TypeError("output must be an array")


def _write_out(res, out, x):
    """Copy a computed result into the caller's `out` in place; return out."""
    if isinstance(out, np.ndarray):
        if isinstance(res, (np.ndarray, np.generic)):
            np.copyto(out, np.reshape(res, out.shape), casting="unsafe")
        else:  # device result into a host out
            np.copyto(out, Lib.of(x.lib).to_host(res).reshape(out.shape), casting="unsafe")
        return out
    mod = type(out).__module__.split(".")[0]
    if isinstance(res, (np.ndarray, np.generic)):
        res = np.asarray(res)
        res = Lib.of(mod if mod in ("cupy", "torch") else x.lib).from_host(res, _arrays.as_input(out, "out").device)
    if mod == "torch":
        out.copy_(res.reshape(out.shape))
    else:
        out[...] = res.reshape(out.shape)
    return out


def host_axis(a, axis, op, out_dtype_of):
    """sum / count_nonzero (`op`) of a C-contiguous NumPy array along one int
    axis with NumPy's other defaults: NumPy's result dtype
    (`out_dtype_of(a.dtype)`), shape and scalar for a 1-D input, through the
    dispatcher's engine choice -- without reduce()'s argument checks, which
    such a call cannot fail.  What _devfast.one_axis leaves to the general
    path (and a view that is not C-contiguous, aligned and native) returns
    NotImplemented: reduce() takes it."""
    if type(a) is not np.ndarray or not (a.flags.c_contiguous and a.flags.aligned) or not a.dtype.isnative \
            or a.dtype not in _arrays._DTYPE_CODES:
        return NotImplemented
    plan = _devfast.one_axis(a.shape, axis, a.dtype, op, out_dtype_of)
    if plan is None:
        return NotImplemented
    (outer, length, inner), res_shape, odt = plan
    res = _launch_host(None, a, op, odt, outer * inner, (outer, length, inner), (length * inner, inner, 1))
    res = res.reshape(res_shape)
    return res[()] if res.ndim == 0 else res


def _axis_args(shape, xdt, axis, out):
    """NumPy's axis rules for a reduction of an input of `shape` and dtype
    `xdt`: (axis, axes, out, out's host proxy, the input's proxy for
    NumPy's checks)."""
    ndim = len(shape)
    out = _out_obj(out)
    if ndim == 0 and axis is not None and not isinstance(axis, (tuple, list)):
        _axes_of(axis, 1)  # NumPy's reductions take an int axis 0 / -1 of a 0-d array (a tuple: AxisError)
        axis = None
    axes = tuple(range(ndim)) if axis is None else _axes_of(axis, ndim)
    outp = _host_out_proxy(out)
    # NumPy checks the arguments on the proxy; without `out` (whose shape it
    # must see) every axis may be 1 long, which keeps the check O(1)
    proxy = _proxy(shape, xdt, axes) if out is not None else np.broadcast_to(np.zeros((), xdt), (1,) * ndim)
    return axis, axes, out, outp, proxy


def _where_dtype(where):
    """The dtype of a `where` array (host, or a device mask from its
    interface, no copy); None for lists and scalars (NumPy converts them)."""
    if isinstance(where, np.ndarray):
        return where.dtype
    cai = getattr(where, "__cuda_array_interface__", None)
    return np.dtype(cai["typestr"]) if cai is not None else None


def _where_fits(where, shape):
    """Whether `where` broadcasts to the input's `shape` (never the input to where's)."""
    try:
        return np.broadcast_shapes(np.shape(where), shape) == shape
    except ValueError:
        return False


def sum_args(func, shape, xdt, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True, src=None):
    """NumPy's checks of a sum's arguments for an input of `shape` and dtype
    `xdt` (nothing of it is read): NumPy's own exceptions and warnings.
    Returns (axis, axes, out, ref, loop, init): `ref` NumPy's result on the
    proxy (its dtype; with `out` its shape), `loop` the accumulator dtype
    (dtype=, else the input's sum dtype or, with `out`, the loop NumPy
    resolves for it), `init` the `initial` in that dtype (None: the default
    0, which adds nothing).  `src`: the input, when it is a host array that
    `out` may overlap."""
    axis, axes, out, outp, proxy = _axis_args(shape, xdt, axis, out)
    # initial=0 (the default) adds nothing, so -0.0 sums keep their sign as in NumPy
    kw = {} if (type(initial) is int and initial == 0) else {"initial": initial}
    # NumPy's check writes its result into the out it is given: where out may overlap the input, a stand-in
    # of its shape, dtype and writeability (gs.sum(x, 0, out=x[0]) read row 0 as zeros: the check had written
    # them); else out itself (a stand-in of a 2M-element out cost 4-7 ms)
    # -- and where `where` will fail its checks below, which come after NumPy's (its order of errors), so that
    # out stays untouched as NumPy leaves it
    wdt = fits = None
    if where is not True:
        wdt, fits = _where_dtype(where), _where_fits(where, shape)
    chk = outp
    if isinstance(outp, np.ndarray) and outp is out and (
            (where is not True and (not fits or (wdt is not None and not np.can_cast(wdt, np.bool_, "safe")))) or
            (isinstance(src, np.ndarray) and np.may_share_memory(out, src))):
        chk = np.empty(outp.shape, outp.dtype)
        chk.flags.writeable = outp.flags.writeable
    ref = _numpy_check(np.sum, proxy, shape, axis=axis, dtype=dtype, out=chk, keepdims=keepdims, **kw)
    loop = np.dtype(dtype) if dtype is not None else _out_loop(np.add.reduce(np.zeros(1, xdt)).dtype, xdt,
                                                               outp if out is not None else None)
    if loop.kind == "f" and kw and np.iscomplexobj(initial) and out is not None and outp.dtype.kind == "c":
        loop = np.result_type(loop, np.complex64)  # a complex initial into a complex out: complex adds
    _check_loop(func, loop, dtype)
    if kw and initial is None and math.prod(shape[i] for i in axes) == 0:
        # initial=None: NumPy's "no initial value", an error for an empty reduction (the proxy has no empty axis)
        np.sum(np.broadcast_to(np.zeros((), xdt), shape), axis=axis, dtype=dtype, initial=None)
    init = None if not kw or initial is None else np.sum(np.zeros(0, loop), dtype=loop, initial=initial)
    if where is not True:
        if wdt is not None and not np.can_cast(wdt, np.bool_, "safe"):
            raise TypeError(f"{func}: where has dtype {wdt}; NumPy casts it to bool by the 'safe' rule, which "
                            f"{wdt} does not allow (a bool mask is needed)")
        if not fits:  # `where` broadcasts to a's shape, never a to where's: NumPy's own error, before any read
            np.sum(np.broadcast_to(np.zeros((), xdt), shape), axis=axis,
                   where=np.broadcast_to(True, np.shape(where)))  # (a host mask of where's shape: any library)
            raise ValueError(f"{func}: where of shape {np.shape(where)} does not broadcast to {shape}")
    return axis, axes, out, ref, loop, init


def reduce(func, op, a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
    """sum / count_nonzero of `a` along `axis` by NumPy's rules."""
    _dispatch.fast_ready()  # the next call of a device array may take _devfast.reduce_axis_
    x = nd_input(a, func)
    shape, xdt = tuple(x.shape), np.dtype(x.dtype)
    if op == COUNT_NONZERO:
        axis, axes, out, _outp, proxy = _axis_args(shape, xdt, axis, out)
        ref = _numpy_check(np.count_nonzero, proxy, shape, axis=axis, keepdims=keepdims)
        loop = np.dtype(np.intp)
        init = None
    else:
        axis, axes, out, ref, loop, init = sum_args(func, shape, xdt, axis, dtype, out, keepdims, initial, where,
                                                    src=x)
        if where is not True:
            if isinstance(x, DeviceArray):
                x = _lib_where(x, where, x.dtype.type(0))
            else:
                x = np.where(where, x, x.dtype.type(0))
        x = _category_cast(x, loop)
    if out is not None:
        res_shape = np.shape(ref)
    elif keepdims:
        res_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    else:
        res_shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    nout = math.prod(res_shape)
    xin, shape3, strides3, _kept = _plan(x, set(axes))
    acc = np.dtype(np.int64) if op == COUNT_NONZERO else loop
    flat = _launch(xin, shape3, strides3, op, acc, nout)
    device = isinstance(x, DeviceArray)
    if init is not None and math.prod(x.shape[i] for i in axes) == 0:
        # an empty reduction is its initial itself (-0.0 stays -0.0, as in NumPy); a Python scalar for device arrays
        flat[...] = init.item() if device and hasattr(init, "item") else init
    elif init is not None and init != 0:
        if device:
            try:
                flat += Lib.of(x.lib).from_host(np.asarray(init, loop), x.device)
            except (NotImplementedError, RuntimeError, TypeError):
                # PyTorch has no CUDA add for some dtypes (uint16, uint32, uint64):
                # add in place through a CuPy view of the same memory (DLPack)
                cp = __import__("cupy")
                view = cp.from_dlpack(flat)
                view += cp.asarray(np.asarray(init, loop))
        else:
            np.add(flat, init, out=flat, casting="unsafe")
    if out is not None:
        return _write_out(flat, out, x)
    if device:
        return flat.reshape(res_shape)
    res = flat.reshape(res_shape)
    return res[()] if res.ndim == 0 else res


# ---- cumsum along an axis -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _cumsum_result(xdt, dtype, odt):
    np.cumsum(np.zeros(1, xdt), dtype=dtype, out=None if odt is None else np.empty(1, odt))  # its errors
    return np.cumsum(np.zeros(1, xdt), dtype=dtype).dtype


def cumsum_dtype(xdt, dtype=None, odt=None):
    """NumPy's cumsum result dtype for an input of `xdt`, `dtype=` and an out
    of `odt` -- or its TypeError for a dtype add cannot accumulate in or
    write (str, datetime, void: their result was cast to it), in native order
    as NumPy's own (bool, small ints -> int64 / uint64).  Asked of NumPy once
    per combination (6.7 us a call; an error is not cached)."""
    return _cumsum_result(np.dtype(xdt), None if dtype is None else np.dtype(dtype), odt)


def cumsum_args(shape, xdt, axis, dtype, out):
    """NumPy's axis, dtype and out rules of a cumsum of an input of `shape`
    and dtype `xdt` (nothing of it is read): (ax, shape, result shape, rt,
    out) -- ax the normalized axis (None: the flattened scan), shape (1,)
    for a 0-d input scanned along an axis, rt the accumulator and result
    dtype (dtype=, else NumPy's cumsum dtype or, with `out`, the loop NumPy
    resolves for it)."""
    if isinstance(out, tuple):  # np.cumsum takes no tuple out (a reduction does)
        raise TypeError("output must be an array")
    full_shape = tuple(shape)
    if axis is None:
        res_shape = (math.prod(shape),)
        ax = None
    else:
        ax = normalize_axis_index(_arrays.index_int(axis, "axis"), max(len(shape), 1))  # NumPy's TypeError / AxisError
        if not shape:  # NumPy: a 0-d array scans as 1-D
            shape = (1,)
        res_shape = shape
    rt = cumsum_dtype(xdt, dtype, None if out is None else np.dtype(_host_out_proxy(out).dtype))
    if out is not None:
        outp = _host_out_proxy(out)
        if dtype is None:
            rt = _out_loop(rt, xdt, outp)
        if tuple(outp.shape) != tuple(res_shape):  # NumPy's error (raised before it reads anything)
            if len(outp.shape):  # (a 0-d out crashes NumPy 2.4.6's accumulate itself: numpy#32545)
                full = np.broadcast_to(np.zeros((), xdt), full_shape)
                np.cumsum(full, axis=axis, dtype=dtype, out=np.empty(outp.shape, outp.dtype))
            raise ValueError(f"cumsum: out has shape {tuple(outp.shape)}, expected {tuple(res_shape)}")
    _check_loop("cumsum", rt, dtype)
    return ax, shape, res_shape, rt, out


def _scan_into(out, x, dt):
    """The flat view of a host `out` that the scan of host `x` (1-D, or
    along an axis: its C-order result) can write in place -- C-contiguous,
    aligned, native, of the dtype `dt` the scan writes, and sharing no
    memory with x (a scan on CPU threads or the GPU reads parts of its input
    after others wrote their output) -- else None (a temporary, then
    _write_out's copy)."""
    if type(out) is not np.ndarray or type(x) is not np.ndarray or out.dtype != dt:
        return None
    if not (out.flags.c_contiguous and out.flags.aligned and out.flags.writeable) or not out.dtype.isnative:
        return None
    if np.may_share_memory(out, x):
        return None
    return out.reshape(-1)


def cumsum(a, axis, dtype, out, flat_scan):
    """np.cumsum by NumPy's rules; `flat_scan(x, out_dtype, into)` scans a
    1-D array into a new array, or into `into` (a flat host array of
    out_dtype, not None only for host x) in place.  (A host out written in
    place holds part of the result when the scan raises partway -- a
    barrier's time-out, a CUDA error with the engine forced -- where a
    temporary left it untouched.)"""
    _dispatch.fast_ready()  # the next call of a device array may take _devfast.reduce_axis_ (as reduce does)
    x = nd_input(a, "cumsum")
    ax, shape, res_shape, rt, out = cumsum_args(tuple(x.shape), np.dtype(x.dtype), axis, dtype, out)
    x = _category_cast(x, rt)
    if ax is None or len(shape) == 1:
        if rt.kind == "f" and rt.itemsize > np.dtype(x.dtype).itemsize:
            x = _astype(x, rt)  # the 1-D scan writes its input's dtype: a wider float's prefixes need a wider input
        natural = np.cumsum(np.zeros(1, x.dtype)).dtype  # what the 1-D scan kernels write
        into = _scan_into(out, x, natural) if natural == rt else None  # (else a cast after the scan)
        flat = flat_scan(x, natural, into)
        if into is not None:  # the scan wrote the caller's out itself: no temporary, no copy
            return out
        if natural != rt:  # integers wrap alike; a narrower float: prefixes summed wide, each rounded once
            flat = _astype_obj(flat, rt)
    else:
        st = _elem_strides(x)
        seg = None if st is None else segments(shape, st, {ax})
        n_before, n_after = math.prod(shape[:ax]), math.prod(shape[ax + 1:])
        if seg is not None and seg[0] == (n_before, shape[ax], n_after):
            xin, shape3, strides3 = x, seg[0], seg[1]
        else:  # the kept axes do not merge (or length-1 axes moved them): a C-contiguous copy
            xin = x if isinstance(x, DeviceArray) else np.ascontiguousarray(x)
            shape3 = (n_before, shape[ax], n_after)
            strides3 = (shape[ax] * n_after, n_after, 1)
        into = _scan_into(out, xin, rt)
        flat = _launch(xin, shape3, strides3, CUMSUM, rt, math.prod(shape), into)
        if into is not None:  # the segmented scan wrote the caller's out itself
            return out
    if out is not None:
        return _write_out(flat, out, x)
    return flat.reshape(res_shape)
