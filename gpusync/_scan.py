"""cumsum: np.cumsum with the blocks of the grid handing each other their
prefixes by decoupled look-back, a grid barrier or kernel relaunches."""
from __future__ import annotations

import operator

import numpy as np

from . import _arrays, _complex, _core, _devfast, _dispatch
from . import _axis as _nd
from ._arrays import DeviceArray

STRATEGIES = _dispatch.STRATEGIES["cumsum"]


_cumsum_dtype = _nd.cumsum_dtype  # NumPy's result dtype of a plain cumsum (its one cache)


def _axis(axis, ndim):
    """gpusync.dask.cumsum's axis check: it scans 1-D arrays (or the flattened
    array with axis=None); NumPy's TypeError / AxisError otherwise."""
    if axis is None:
        return None
    ax = operator.index(axis)
    if not -max(ndim, 1) <= ax < max(ndim, 1):
        raise np.exceptions.AxisError(ax, max(ndim, 1))
    if ndim > 1:
        raise NotImplementedError("cumsum: gpusync.dask scans 1-D arrays (or the flattened array with axis=None); "
                                  f"got axis={axis} for a {ndim}-D array")
    return ax


def _subclass_cumsum(a, axis, dtype, out, strategy, stream):
    """np.cumsum of an ndarray subclass, by NumPy's rules: its own cumsum
    where its class has one (a masked array keeps its mask), NumPy's
    retry without it where that method refuses the arguments (TypeError);
    NumPy's own function where the class takes over ufuncs (add.accumulate);
    else the scan of its data through its __array_wrap__ (np.matrix: a
    1 x n matrix of a flat scan, and an out of that shape; a user's class:
    itself with the input's attributes)."""
    own = _arrays.own_method(a, "cumsum")
    if own is not None:
        try:
            return own(axis=axis, dtype=dtype, out=out)
        except TypeError:  # NumPy's _wrapit: the method refused these arguments -- ndarray's, wrapped (out too)
            return _arrays.wrap_like(a, cumsum(np.asarray(a), axis, dtype, out, strategy=strategy, stream=stream))
    if _arrays.any_ufunc_override(a, out):
        return np.cumsum(a, axis=axis, dtype=dtype, out=out)
    base = np.asarray(a)
    if out is None:
        return _arrays.wrap_like(a, cumsum(base, axis, dtype, None, strategy=strategy, stream=stream))
    # NumPy checks out against the wrapped result's shape (np.matrix's 1 x n for a flat scan)
    flat_shape = (base.size,) if axis is None else base.shape
    want = np.empty(flat_shape, np.int8).view(type(a)).shape if axis is None else flat_shape
    oshape = tuple(np.shape(out))
    if isinstance(out, np.ndarray) and oshape == tuple(want) and oshape != tuple(flat_shape):
        cumsum(base, axis, dtype, out.view(np.ndarray).reshape(flat_shape), strategy=strategy, stream=stream)  # (1 x n)
        return out
    if oshape != tuple(want):
        raise ValueError(f"cumsum: out has shape {oshape}, expected {tuple(want)}")
    return cumsum(base, axis, dtype, out, strategy=strategy, stream=stream)


@_arrays.takes_stream
def cumsum(a, axis=None, dtype=None, out=None, *, strategy="auto", stream=None):
    """Cumulative sum of the elements, like ``np.cumsum(a, axis, dtype, out)``.

    NumPy's parameters: `axis` None scans the flattened array, an int (or
    negative int) scans along that axis -- one segmented-scan kernel over a
    strided view, every line scanned independently; `dtype` the result and
    accumulator dtype; `out` an array of the result's shape (NumPy, CuPy or
    PyTorch) written in place and returned.

    The result dtype is NumPy's: bool and signed integers narrower than 64
    bits give int64, unsigned ones uint64, floats keep their dtype.  Integer
    prefixes wrap modulo 2^64 like NumPy's.  float16 and float32 inputs
    accumulate in float64 and every output is rounded once, so they are far
    more accurate than NumPy's running float32 sum (results agree with
    ``np.cumsum(a.astype(np.float64)).astype(a.dtype)`` to rounding); float64
    agrees with NumPy to rounding, not bit for bit, because the blocks add in
    a different order.  complex64 / complex128 input keeps its dtype: a 1-D
    (or flattened) array is scanned as its real and its imaginary parts by
    the strategy kernels, along an axis of an N-D array as its (..., 2) float
    view; a real input with a complex `dtype` is scanned in the float of
    that width.

    `strategy` picks how the blocks learn the sum of everything before them:

    ``"lookback"`` (and ``"auto"``)
        one pass: each tile publishes its sum, looks back over its
        predecessors' published sums and prefixes (release/acquire flags) and
        publishes its own prefix.  Reads the input once.
    ``"barrier"``
        one persistent kernel of co-resident blocks: sum your chunk, grid
        barrier, add the sums before you, scan your chunk.  Reads it twice.
    ``"relaunch"``
        the same with kernel boundaries instead of the barrier (three kernels).

    Host input gives a NumPy array; CuPy / PyTorch / Numba input an array of
    that library on its device and stream.  On the GPU, ``"barrier"`` waits
    for the stream to check its spin time-out flag (a
    :class:`gpusync.DeadlockError`); ``"lookback"`` and ``"relaunch"`` return
    without waiting (a GPU look-back that times out sums the input before its
    tile itself, so the output is always complete).  On CPU threads every
    strategy returns when the output is written, and a spin time-out raises
    :class:`gpusync.DeadlockError`.
    """
    if strategy != "auto":  # "auto" is always valid: the per-call fast paths skip the check
        _dispatch.check_strategy("cumsum", strategy)
    if out is not None and isinstance(out, np.ndarray) and out.ndim == 0:  # a cumsum is never 0-d
        # (NumPy 2.4.6's accumulate crashes on a 0-d out, numpy#32545; a masked array's cumsum reaches it)
        raise ValueError("cumsum: out has shape (); a cumsum's result has at least one dimension")
    if type(a) is not np.ndarray and _arrays.subclass(a) or out is not None and _arrays.any_ufunc_override(out):
        return _subclass_cumsum(a, axis, dtype, out, strategy, stream)
    if dtype is not None and type(a) is np.ndarray and isinstance(dtype, (str, type, np.dtype)) and \
            _arrays.same_dtype(dtype, _cumsum_dtype(a.dtype)):
        dtype = None  # NumPy's own result dtype (float64 of float64, int64 of int32): the fast paths
    if stream is None and axis is None and dtype is None and out is None:
        if strategy == "auto":
            r = _core.fast_cumsum(a)  # the C fast path (_dispatch.py); NotImplemented: the general path
            if r is not NotImplemented:
                return r
            if type(a) is np.ndarray and a.ndim == 1 and a.strides[0] > 0:  # a[::k]: its contiguous copy
                r = _core.fast_cumsum(np.ascontiguousarray(a))
                if r is not NotImplemented:
                    return r
        r = _devfast.cumsum_(a, _cumsum_dtype, strategy)  # device arrays, every strategy (run as named)
        if r is not NotImplemented:
            return r
    elif stream is None and dtype is None and out is None and strategy == "auto":
        r = _core.fast_reduce_axis(a, axis, 2)  # the C fast path: along one int axis of a NumPy array
        if r is not NotImplemented:
            return r
        r = _devfast.reduce_axis_(a, axis, _nd.CUMSUM, _cumsum_dtype, "cumsum")  # one axis of a device array
        if r is not NotImplemented:
            return r
    elif stream is None and dtype is None and strategy == "auto" and type(out) is type(a):
        r = _devfast.reduce_axis_(a, axis, _nd.CUMSUM, _cumsum_dtype, "cumsum", out)  # out=: a device array, in place
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):  # NumPy's axis / dtype / out rules: _axis.cumsum
        if _complex.takes(a, dtype, out):  # complex input, dtype or out: the float scan of the (..., 2) real view
            return _complex.cumsum(a, axis, dtype, out, lambda x, rt, into=None: _cumsum_impl(x, strategy, into))
        return _nd.cumsum(a, axis, dtype, out, lambda x, rt, into=None: _cumsum_impl(x, strategy, into))


def _cumsum_impl(x, strategy="auto", into=None):
    """The flattened scan with the strategy's look-back / barrier / relaunch;
    into: None, or the flat host array it writes in place (_axis._scan_into)."""
    out_dtype = _cumsum_dtype(np.dtype(x.dtype))
    src = x if isinstance(x, DeviceArray) else np.ascontiguousarray(x).reshape(-1)

    def call(be, ins, outs, s, stream):
        return _core.cumsum(be, ins[0], outs[0], s, stream)

    (out,) = _dispatch.run("cumsum", [src], [(src.size, out_dtype)], call, strategy=strategy, names=["a"],
                           into=None if into is None else [into])
    return out


# the common calls' fast path straight from the call, no Python frame (_core.front; the function above runs the rest)
def _cumsum_device(a, axis=None):
    """The front's device hook: the flattened scan, or one int axis."""
    if axis is None:
        return _devfast.cumsum_(a, _cumsum_dtype)
    return _devfast.reduce_axis_(a, axis, _nd.CUMSUM, _cumsum_dtype, "cumsum")


cumsum = _core.front("cumsum", cumsum, None, _cumsum_device)
