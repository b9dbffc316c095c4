"""cumsum: np.cumsum with the blocks of the grid handing each other their
prefixes by decoupled look-back, a grid barrier or kernel relaunches."""
from __future__ import annotations

import functools
import operator

import numpy as np

from . import _arrays, _core, _dispatch
from ._arrays import DeviceArray

STRATEGIES = _dispatch.STRATEGIES["cumsum"]


@functools.lru_cache(maxsize=None)
def _cumsum_dtype(dt: np.dtype) -> np.dtype:
    return np.cumsum(np.zeros(1, dt)).dtype  # bool, small ints -> int64 / uint64


def _axis(axis, ndim):
    if axis is None:
        return None
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"cumsum: axis must be an integer or None, got {axis!r}") from None
    if not -max(ndim, 1) <= ax < max(ndim, 1):
        raise np.exceptions.AxisError(ax, max(ndim, 1))
    if ndim > 1:
        raise NotImplementedError("cumsum: gpusync scans 1-D arrays (or the flattened array with axis=None); "
                                  f"got axis={axis} for a {ndim}-D array")
    return ax


@_arrays.takes_stream
def cumsum(a, axis=None, *, strategy="auto", stream=None):
    """Cumulative sum of the elements, like ``np.cumsum(a)`` (1-D arrays, or
    any array flattened when ``axis`` is None).

    The result dtype is NumPy's: bool and signed integers narrower than 64
    bits give int64, unsigned ones uint64, floats keep their dtype.  Integer
    prefixes wrap modulo 2^64 like NumPy's.  float16 and float32 inputs
    accumulate in float64 and every output is rounded once, so they are far
    more accurate than NumPy's running float32 sum (results agree with
    ``np.cumsum(a.astype(np.float64)).astype(a.dtype)`` to rounding); float64
    agrees with NumPy to rounding, not bit for bit, because the blocks add in
    a different order.

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
    that library on its device and stream.  The call waits for the stream to
    check the spin loops' time-out flag (a :class:`gpusync.DeadlockError`).
    """
    if stream is None and axis is None and strategy == "auto":
        r = _core.fast_cumsum(a)  # the C fast path (_dispatch.py); NotImplemented: the general path
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):
        return _cumsum_impl(a, axis, strategy=strategy)


def _cumsum_impl(a, axis=None, strategy="auto"):
    _dispatch.check_strategy("cumsum", strategy)
    x = _arrays.checked_input(a, "a", "cumsum")
    _axis(axis, len(x.shape))
    out_dtype = _cumsum_dtype(np.dtype(x.dtype))
    src = x if isinstance(x, DeviceArray) else np.ascontiguousarray(x).reshape(-1)

    def call(be, ins, outs, s, stream):
        return _core.cumsum(be, ins[0], outs[0], s, stream)

    (out,) = _dispatch.run("cumsum", [src], [(src.size, out_dtype)], call, strategy=strategy, names=["a"])
    return out
