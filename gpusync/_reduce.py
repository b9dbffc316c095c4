"""sum and dot: NumPy's result dtypes and overflow behaviour, reduced on the
GPU (or CPU threads) with a selectable inter-block finishing technique."""
from __future__ import annotations

import functools
import sys

import numpy as np

from . import _arrays, _axis, _complex, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib

STRATEGIES = _dispatch.STRATEGIES["sum"]
DETERMINISTIC_STRATEGIES = ("auto", "two-pass", "threadfence", "grid")


@functools.lru_cache(maxsize=None)
def _sum_dtype(dt: np.dtype) -> np.dtype:
    return np.add.reduce(np.zeros(1, dt)).dtype  # bool, small ints -> int64/uint64


@functools.lru_cache(maxsize=None)
def _dot_dtype(da: np.dtype, db: np.dtype) -> np.dtype:
    return np.dot(np.zeros(1, da), np.zeros(1, db)).dtype


def _host_flat(x: np.ndarray, dtype) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=dtype).reshape(-1)


def _host_view(x: np.ndarray, dtype) -> np.ndarray:
    """`x` itself when it is 1-D of `dtype` with a stride of whole elements,
    of any sign (x[::2], x[::-3]; as_input made it native and aligned): the
    CPU engine reads element i at i x stride in place, into the sums its
    contiguous copy gives (the GPU engines get that copy: _dispatch); else
    _host_flat's copy.  The general path (a strategy or deterministic given,
    a size past the C fast path's limit) copied every strided input first:
    10^7 float64 x[::2] . y[::2] with strategy="two-pass" took 69-71 ms on
    the 2-core development host, 24-27 ms without the copy."""
    if x.ndim == 1 and x.dtype == dtype and x.strides[0] % x.itemsize == 0:
        return x
    return _host_flat(x, dtype)


def _run(func, arrays, out_dtype, strategy, deterministic):
    """Reduce host arrays or device views (all one kind) into one element."""
    acc = np.dtype(np.float64) if np.dtype(out_dtype).kind == "f" else np.dtype(out_dtype)

    def call(be, ins, outs, s, stream):
        return _core.reduce(be, ins[0], ins[1] if len(ins) > 1 else None, outs[0], s, bool(deterministic), stream)

    (out,) = _dispatch.run(func, arrays, [(1, out_dtype)], call, strategy=strategy, names=["a", "b"][:len(arrays)],
                           merge=not deterministic, part_dtypes=[acc])
    return _dispatch.scalar(out)




def _all_axes(axis: tuple, ndim: int) -> bool:
    """Whether a tuple `axis` names each of ndim axes exactly once (valid ints;
    anything else: no -- the general path gives NumPy's error)."""
    if len(axis) != ndim or any(type(x) is not int or not -ndim <= x < ndim for x in axis):
        return False
    return len({x % ndim for x in axis}) == ndim


@_arrays.takes_stream
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True, *,  # noqa: A001
        strategy="auto", deterministic=False, stream=None):
    """Sum of the elements of `a`, like ``np.sum(a, axis, dtype, out, keepdims, initial, where)``.

    NumPy's parameters: `axis` (None, an int, a negative int or a tuple of
    ints) picks the axes summed; `dtype` the accumulator and result dtype;
    `out` an array (NumPy, CuPy or PyTorch) written in place and returned;
    `keepdims` keeps the summed axes with length 1; `initial` is added to
    every sum; `where` (a boolean mask broadcast against `a`) picks the
    elements summed.  Sums over some axes run as one segmented kernel over
    a strided view (no transpose when the summed axes are adjacent; axes
    that are not, e.g. (0, 2) of a 3-D array, are gathered by one
    transposed copy first); `strategy` and `deterministic` concern the sum
    of all elements with the other parameters at their defaults -- the
    segmented kernel always adds in a fixed order.

    The result dtype is NumPy's: bool and signed integers narrower than 64
    bits give int64, unsigned ones uint64, floats keep their dtype.  Integer
    sums are exact modulo 2^64 (NumPy's wrap-around).  float16 and float32
    inputs are accumulated in float64 and rounded once at the end, so the
    result is usually the correctly rounded sum -- more accurate than NumPy's
    pairwise float32 sum.  complex64 / complex128 input keeps its dtype: it is
    summed as its (..., 2) float view (real and imaginary parts, the
    segmented kernel whatever the strategy), as is a real input with a
    complex `dtype` (in the float of that width); a real `dtype` or `out`
    for complex input takes the real parts with NumPy's ComplexWarning.  A
    float sum of a NumPy array into an integer or bool `out` is NumPy's own
    call: NumPy truncates its running float sum into `out` after each buffer
    of its iterator (8192 elements), so its result is not the truncated sum
    (8193 x 0.7 gives 5734), and gpusync returns exactly that.

    `strategy` picks how the blocks' partial sums are combined: ``"atomic"``,
    ``"mutex"`` (a spin lock), ``"two-pass"`` (second kernel), ``"threadfence"``
    (the last block to finish adds the partials), ``"grid"`` (one launch of
    co-resident blocks: partials, a grid barrier, block 0 adds them),
    ``"warp"`` (one atomic per warp) or ``"auto"``.  With
    ``deterministic=True`` (strategies ``two-pass``, ``threadfence``,
    ``grid`` and ``auto``) float results are bit-identical run to run,
    between those strategies and across GPUs: fixed tiles, fixed order.

    float64 sums whose partial sums overflow: for host input the sum is
    taken again scaled by 2^-64, so the result is +-inf with the sign of the
    exact sum when that exceeds float64's range and the finite sum when only
    partial sums overflowed (NumPy's pairwise sum may give inf or NaN there);
    device input is summed once (no host wait) and may give +-inf or NaN.

    Host input gives a NumPy scalar; a CuPy / PyTorch input a 0-d array of
    that library on its device, computed on its stream without waiting
    (except strategies ``"mutex"`` and ``"grid"``, which check their spin
    loops' time-out).
    """
    if keepdims is not False and keepdims is not True:
        keepdims = _axis.keepdims_flag(keepdims)
    if out is not None:
        out = _axis._out_obj(out)  # (a tuple: NumPy's TypeError, the complex path too)
    if type(a) is list or type(a) is tuple:
        a = np.asarray(a)  # NumPy's own first step (its errors for ragged input too)
    if type(a) is not np.ndarray and (own := _arrays.own_method(a, "sum")) is not None:
        # a masked array's sum leaves out its masked elements: NumPy's rule, the subclass's own method, with the
        # arguments NumPy passes it (those given: keepdims / initial / where at their defaults are not)
        if strategy != "auto":
            _dispatch.check_strategy("sum", strategy)
        kw = {k: v for k, v, d in (("keepdims", keepdims, False), ("where", where, True)) if v is not d}
        if not (type(initial) is int and initial == 0):
            kw["initial"] = initial
        if dtype is not None:  # (NumPy passes dtype only when given: a method may not take it)
            kw["dtype"] = dtype
        return own(axis=axis, out=out, **kw)
    elif ((type(a) is not np.ndarray or out is not None or where is not True) and
          _arrays.any_ufunc_override(a, out, where)) or _truncates_into(a, out, dtype):
        # NumPy's sum is add.reduce, which a class of a, out or where takes over (astropy's units) or refuses;
        # or a float sum NumPy truncates into an integer out buffer by buffer: NumPy's own
        if strategy != "auto":
            _dispatch.check_strategy("sum", strategy)
        kw = {} if type(initial) is int and initial == 0 else {"initial": initial}  # (as NumPy: only when given)
        return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where, **kw)
    elif type(a) is not np.ndarray and _arrays.subclass(a):
        # a subclass that keeps ndarray's sum (np.memmap, a user's class): the sum of its data, through its
        # __array_wrap__ as NumPy's add.reduce (its class and attributes; a memmap's scalar); `out` as given
        r = sum(np.asarray(a), axis, dtype, out, keepdims, initial, where, strategy=strategy,
                deterministic=deterministic, stream=stream)
        return r if out is not None else _arrays.wrap_like(a, r)
    if type(a) is np.ndarray:  # other spellings of the whole default sum
        if type(axis) is tuple and _all_axes(axis, a.ndim):
            axis = None  # every axis once
        if isinstance(dtype, (str, type, np.dtype)) and _arrays.same_dtype(dtype, _sum_dtype(a.dtype)):
            dtype = None  # NumPy's own result dtype (float32 of float32, int64 of int32)
    # NumPy's defaults for everything but axis, dtype and keepdims, and gpusync's own options at theirs: the fast paths
    rest = out is None and where is True and type(initial) is int and initial == 0
    fast = rest and stream is None and strategy == "auto" and not deterministic
    plain = rest and not keepdims and axis is None and dtype is None
    if fast and axis is None and dtype is None:
        r = _core.fast_sum(a)  # the C fast path (_dispatch.py); NotImplemented: the general path
        if r is not NotImplemented:
            return np.asarray(r).reshape((1,) * a.ndim) if keepdims and a.ndim else r  # NumPy's keepdims shape
        if not keepdims:
            r = _devfast.sum_(a, _sum_dtype)  # device arrays' fast path
            if r is not NotImplemented:
                return r
            r = _complex.plain_sum(a)  # complex: one read of the real view on the host, the library's own on device
            if r is not NotImplemented:
                return r
    elif fast and not keepdims and axis is None and isinstance(dtype, (str, type, np.dtype)):
        r = _sum_as(a, dtype)  # sum(a, dtype=...) of a whole host or device array
        if r is not NotImplemented:
            return r
    elif fast and not keepdims and axis is not None and dtype is None:
        r = _core.fast_reduce_axis(a, axis, False)  # the C fast path: one int axis of a NumPy array
        if r is not NotImplemented:
            return r
        r = _devfast.reduce_axis_(a, axis, _axis.SUM, _sum_dtype, "sum")  # one axis of a device array
        if r is not NotImplemented:
            return r
        r = _axis.host_axis(a, axis, _axis.SUM, _sum_dtype)  # one axis of a NumPy array
        if r is not NotImplemented:
            return r
    elif (out is not None and type(out) is type(a) and where is True and type(initial) is int and initial == 0
          and stream is None and strategy == "auto" and not deterministic and not keepdims and dtype is None):
        r = _devfast.reduce_axis_(a, axis, _axis.SUM, _sum_dtype, "sum", out)  # out=: a device array, in place
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):
        if _complex.takes(a, dtype, out):  # complex input, dtype or out: float sums of the (..., 2) real view
            _dispatch.check_strategy("sum", strategy)
            _check_deterministic("sum", strategy, deterministic and plain, "c")
            return _complex.sum(a, axis, dtype, out, keepdims, initial, where)
        if plain:
            return _sum_impl(a, strategy=strategy, deterministic=deterministic)
        _dispatch.check_strategy("sum", strategy)  # NumPy's axis / dtype / out / ... rules: _axis.reduce
        return _axis.reduce("sum", _axis.SUM, a, axis, dtype, out, keepdims, initial, where)


_MANTISSA = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


_CAST_BYTES = 1 << 18  # 64-bit integer inputs up to this: cast first (1,000 int64: 7.5 us against 15 with min/max)


@functools.lru_cache(maxsize=None)
def _int_magnitude(xdt: np.dtype) -> int:
    """The largest |value| an integer (or bool) dtype holds."""
    if xdt.kind == "b":
        return 1
    info = np.iinfo(xdt)
    return max(-int(info.min), int(info.max))


def _exact_int_bound(x, xdt, d, n):
    """Whether the float `d` sum of integer (or bool) `x` is its exact
    integer sum: every element is exact in `d` and no partial sum reaches
    2^mantissa, so NumPy's float additions round nothing and the 64-bit
    integer sum, converted once, is NumPy's result bit for bit.  Decided by
    the dtype's range where that suffices, else (64-bit data, host only) by
    one min / max read on the CPU engine's threads."""
    top = 1 << _MANTISSA[d]
    big = _int_magnitude(xdt)
    if big <= top and n * big <= top:
        return True
    if x is None or not n or (xdt.itemsize < 8 and big > top) or x.nbytes <= _CAST_BYTES:
        return False  # (small 64-bit inputs: the copy the cast makes costs less than the min / max call)
    from ._histogram import _minmax  # (one pass, the engine's threads)

    lo, hi = _minmax(x)
    big = max(abs(int(lo)), abs(int(hi)))
    return n * big <= top


def _sum_as(a, dtype):
    """sum(a, dtype=dtype) of a whole NumPy, CuPy or CUDA PyTorch array, the
    other arguments at their defaults, by NumPy's rule -- each element cast
    to `dtype`, the sum taken in it -- or NotImplemented (the general path:
    ~100 us of argument handling a call, 0.07-0.26x NumPy / CuPy at 10^3 to
    10^7 int64 -> float64 in r272):

    * integer `dtype`, integer or bool input: the 64-bit sum (exact modulo
      2^64) cast to `dtype` -- NumPy's wrapping sum in `dtype` has the same
      low bits;
    * float `dtype` at least as wide as a float input: its float64
      accumulation (float32 / float16 sums' own) rounded once to `dtype`;
    * float `dtype` of integers whose float sum rounds nothing
      (_exact_int_bound): the integer sum, converted once;
    * other float sums of integers, and float `dtype` narrower than the float
      input: the input cast to `dtype` first (host: one copy, as NumPy's
      buffered cast), then the sum of that; device integers: the library's
      own sum in `dtype` (one fused read: CuPy 46 us at 10^7 int64 against
      94 us for a cast and a sum, r273)."""
    try:
        d = np.dtype(dtype)
    except TypeError:
        return NotImplemented
    host = type(a) is np.ndarray
    if host:
        xdt = a.dtype
        lib = None
    else:
        lib = type(a).__module__.split(".")[0]
        if lib not in ("cupy", "torch") or (lib == "torch" and not getattr(a, "is_cuda", False)):
            return NotImplemented
        xdt = _complex._np_dtype(a)
    k, dk = xdt.kind, d.kind
    if not d.isnative or k not in "biuf" or dk not in "iuf":
        return NotImplemented
    if dk in "iu" and k == "f":  # (NumPy truncates each float to the integer first: the general path)
        return NotImplemented
    n = a.size if host or lib == "cupy" else a.numel()
    if dk == "f" and k != "f" and _exact_int_bound(a if host else None, xdt, d, n):
        r = _core.fast_sum(a) if host else _devfast.sum_(a, _sum_dtype)
        if r is NotImplemented:
            return NotImplemented
        return np.asarray(r).astype(d)[()] if host else r.astype(d) if lib == "cupy" else r.to(_torch_dtype(d))
    if dk == "f" and (k != "f" or d.itemsize < xdt.itemsize):  # NumPy's cast of each element, then its sum
        if host:
            b = a.astype(d)
            r = _core.fast_sum(b)
            return r if r is not NotImplemented else _sum_impl(b)  # (inf / NaN, overflow: the 1-D path's rules)
        if k != "f" and d.itemsize >= 4:  # (float16: the libraries add in float32, past NumPy's inf / NaN)
            return a.sum(dtype=d) if lib == "cupy" else a.sum(dtype=_torch_dtype(d))
        b = a.astype(d) if lib == "cupy" else a.to(_torch_dtype(d))
        return _devfast.sum_(b, _sum_dtype)
    if host:  # integers: the wrapping 64-bit sum; floats: the float64 accumulation
        r = _core.fast_sum(a, dk == "f")
        return r if r is NotImplemented else np.asarray(r).astype(d)[()]
    return _devfast.sum_(a, lambda _dt: d)


def _torch_dtype(d):
    return getattr(sys.modules["torch"], d.name)


def _truncates_into(a, out, dtype) -> bool:
    """Whether NumPy sums NumPy array `a` in floats into an integer (or bool) ndarray `out`: it truncates its
    running float sum into `out` after each buffer of its iterator (np.getbufsize(), 8192 elements; after
    every outer step when out is larger), so from 8193 elements on its result is not the truncated sum.
    (A `dtype` NumPy takes for none: False, its own error comes from the general path.)"""
    if out is None or type(a) is not np.ndarray or not isinstance(out, np.ndarray) or out.dtype.kind not in "biu":
        return False
    try:
        return (a.dtype if dtype is None else np.dtype(dtype)).kind == "f"
    except TypeError:
        return False


def _sum_impl(a, strategy="auto", deterministic=False):
    _dispatch.check_strategy("sum", strategy)
    x = _arrays.checked_input(a, "a", "sum")
    _check_deterministic("sum", strategy, deterministic, x.dtype.kind)
    out_dtype = _sum_dtype(x.dtype)
    arrays = [x if isinstance(x, DeviceArray) else _host_view(x, x.dtype)]
    total = _run("sum", arrays, out_dtype, strategy, deterministic)
    if out_dtype == np.float64 and not isinstance(x, DeviceArray) and not np.isfinite(total):
        total = _rescaled_sum(arrays[0], strategy, deterministic)
    return total


def _check_deterministic(func, strategy, deterministic, kind):
    """ValueError for deterministic=True with a strategy that adds floats in no fixed order."""
    if deterministic and strategy not in DETERMINISTIC_STRATEGIES and kind in ("f", "c"):
        raise ValueError(f"{func}: strategy {strategy!r} cannot be deterministic for floating-point input; "
                         f"use one of {', '.join(repr(s) for s in DETERMINISTIC_STRATEGIES)}")


_SUM_SCALE = 2.0**-64  # n * max|x| * 2^-64 cannot overflow for any n < 2^63


def _rescaled_sum(x, strategy, deterministic):
    """A float64 sum that came out inf or NaN: add again scaled by 2^-64,
    where no partial sum can overflow, and scale back.  An inf or NaN input
    gives inf or NaN again (NumPy's result); finite inputs give the sum to
    the rounding of the float64 additions -- +-inf with the sign of the
    exact sum when its magnitude exceeds float64's range, the finite sum
    when only some partial sums overflowed -- plus an absolute error below
    n * 2^-1010 from scaling values under 2^-1010 into subnormals."""
    scaled = _run("sum", [x * _SUM_SCALE], np.dtype(np.float64), strategy, deterministic)
    with np.errstate(over="ignore"):
        return np.float64(scaled) / _SUM_SCALE


def _shape(x):
    return tuple(x.shape)


_PY_SCALARS = (int, float, bool)
_BLAS_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


@_arrays.takes_stream
def dot(a, b, out=None, *, strategy="auto", deterministic=False, stream=None):
    """Dot product of two 1-D arrays, like ``np.dot(a, b, out)``.

    A 0-d `a` or `b` (a scalar) multiplies the other, as ``np.dot`` does.
    N-D ``np.dot`` is a matrix product (GEMM) -- not a synchronization
    problem, so not gpusync's job: 2-D and higher inputs raise ValueError
    (use ``np.matmul`` / cuBLAS).  `out`: a 0-d array of exactly the result
    dtype, written in place and returned (NumPy's rule).

    The result dtype is ``np.dot``'s (the common dtype of `a` and `b`, so
    int8 . int8 is int8 and wraps around like NumPy; bool . bool is "any
    pair both true").  Inputs of different dtypes are cast to the common
    dtype first.  Floating inputs accumulate in float64 (products of float32
    are exact there).  Complex vectors (no conjugation, as ``np.dot``) are
    two float dots of their (n, 2) views: real = view(a) . view(conj(b)),
    imaginary = view(a) . swap(view(b)).  `strategy` and `deterministic` as
    in :func:`sum`.
    """
    if out is None and stream is None and strategy == "auto" and not deterministic:
        r = _core.fast_dot(a, b)
        if r is not NotImplemented:
            return r
        if type(a) in _PY_SCALARS and type(b) in _PY_SCALARS:  # np.dot of two scalars: their product (3.7 -> 0.9 us)
            return np.multiply(np.asarray(a), np.asarray(b))  # as np.dot converts them (2**63: uint64; 2**64: object)
        r = _devfast.dot_(a, b, _dot_dtype)
        if r is not NotImplemented:
            return r
        r = _complex.plain_dot(a, b)  # complex vectors: NumPy's (BLAS) / the device library's own dot
        if r is not NotImplemented:
            return r
    if (_arrays.subclass(a) or _arrays.subclass(b) or _arrays.subclass(out)) and (np.ndim(a) == 0 or np.ndim(b) == 0):
        # a scalar times an array with a subclass among them (a masked array's mask, np.matrix, an override):
        # NumPy's own product and its class rules, complex too
        return np.dot(a, b) if out is None else np.dot(a, b, out)
    with _arrays.call_stream(stream, a):
        if _complex.takes(a) or _complex.takes(b):  # complex operands: two float dots of the (n, 2) real views
            _dispatch.check_strategy("dot", strategy)
            return _complex.dot(a, b, out, lambda u, v: _dot_impl(u, v, strategy, deterministic))
        return _dot_out(a, b, out, strategy, deterministic)


def _dot_out(a, b, out, strategy, deterministic):
    _dispatch.check_strategy("dot", strategy)
    x, y = _arrays.checked_input(a, "a", "dot"), _arrays.checked_input(b, "b", "dot")
    if len(x.shape) == 0 or len(y.shape) == 0:  # np.dot of a scalar: multiply
        if isinstance(x, DeviceArray) or isinstance(y, DeviceArray):
            res = (x.obj if isinstance(x, DeviceArray) else x) * (y.obj if isinstance(y, DeviceArray) else y)
        elif type(out) is np.ndarray:  # np.dot's rules for a scalar and an out
            rt = np.result_type(x.dtype, y.dtype)
            if rt in _BLAS_DTYPES:  # BLAS types: out must be exactly the result
                if out.dtype != rt or not out.flags.c_contiguous:
                    raise ValueError("output array is not acceptable (must have the right datatype, number of "
                                     "dimensions, and be a C-Array)")
                if out.shape != np.broadcast_shapes(np.shape(x), np.shape(y)):
                    raise ValueError("output array has wrong dimensions")
            r = np.multiply(x, y, out=out)  # others: multiply into out, with its casting errors
            return r if r.ndim else r[()]  # a scalar times a scalar: the value, as np.dot returns it
        else:
            res = np.multiply(x, y)
        if out is None:
            return res
        return _axis._write_out(res, out, x if isinstance(x, DeviceArray) else y)
    if out is not None:
        rt = _dot_dtype(np.dtype(x.dtype), np.dtype(y.dtype))
        op = _axis._host_out_proxy(out)
        if op.shape != () or op.dtype != rt or not op.flags.c_contiguous:
            raise ValueError("output array is not acceptable (must have the right datatype, number of "
                             "dimensions, and be a C-Array)")
    res = _dot_impl(x, y, strategy=strategy, deterministic=deterministic)
    if out is None:
        return res
    written = _axis._write_out(res, out, x)
    return written[()] if type(written) is np.ndarray else written  # NumPy returns the value, not the 0-d out


def _dot_impl(a, b, strategy="auto", deterministic=False):
    _dispatch.check_strategy("dot", strategy)
    x, y = _arrays.checked_input(a, "a", "dot"), _arrays.checked_input(b, "b", "dot")
    sx, sy = _shape(x), _shape(y)
    if len(sx) != 1 or len(sy) != 1:
        raise ValueError(f"dot: gpusync.dot takes two 1-D arrays or a scalar; got shapes {sx} and {sy}. "
                         "N-D np.dot is a matrix product (GEMM), which is not gpusync's job: use np.matmul, "
                         "cupy.matmul or torch.matmul")
    if sx[0] != sy[0]:
        raise ValueError(f"shapes {sx} and {sy} not aligned: {sx[0]} (dim 0) != {sy[0]} (dim 0)")
    rt = _dot_dtype(np.dtype(x.dtype), np.dtype(y.dtype))
    _check_deterministic("dot", strategy, deterministic, rt.kind)
    arrays = []
    for v in (x, y):
        if isinstance(v, DeviceArray):
            if v.dtype != rt:
                v = _arrays.as_input(Lib.of(v.lib).astype(v.obj, rt), "a")
            arrays.append(v)
        else:
            arrays.append(_host_view(v, rt))
    return _run("dot", arrays, rt, strategy, deterministic)


# the common calls' fast path straight from the call, no Python frame (_core.front; the functions above run the rest)
def _sum_device(a, axis=None):
    """The front's device hook: the whole array (complex: the library's own
    sum, without the Python function's ~13 us, r273), or one int axis."""
    if axis is None:
        r = _devfast.sum_(a, _sum_dtype)
        return _complex.plain_sum(a) if r is NotImplemented else r
    return _devfast.reduce_axis_(a, axis, _axis.SUM, _sum_dtype, "sum")


def _dot_device(a, b):
    """The front's device hook: two vectors (complex: the library's own dot)."""
    r = _devfast.dot_(a, b, _dot_dtype)
    return _complex.plain_dot(a, b) if r is NotImplemented else r


sum = _core.front("sum", sum, None, _sum_device)  # noqa: A001
dot = _core.front("dot", dot, None, _dot_device)
