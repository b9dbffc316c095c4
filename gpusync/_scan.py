"""cumsum: np.cumsum with the blocks of the grid handing each other their
prefixes by decoupled look-back, a grid barrier or kernel relaunches."""
from __future__ import annotations

import functools
import operator

import numpy as np

from . import _arrays, _backend, _core
from ._arrays import DeviceArray, Lib

STRATEGIES = ("auto", "lookback", "barrier", "relaunch")

last_strategy = {"cumsum": None}


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
    with _arrays.call_stream(stream, a):
        return _cumsum_impl(a, axis, strategy=strategy)


def _cumsum_impl(a, axis=None, strategy="auto"):
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise ValueError(f"cumsum: strategy must be one of {', '.join(map(repr, STRATEGIES))}; got {strategy!r}")
    x = _arrays.checked_input(a, "a", "cumsum")
    _axis(axis, len(x.shape))
    out_dtype = _cumsum_dtype(np.dtype(x.dtype))
    be = _backend.backend()
    if isinstance(x, DeviceArray):
        lib = Lib.of(x.lib)
        if be == "cpu":
            return lib.from_host(cumsum(x.to_host(), strategy=strategy), x.device)
        out = lib.empty(x.length, out_dtype, x.device)
        last_strategy["cumsum"] = _core.cumsum("cuda", x.desc(), _arrays.as_input(out, "out").desc(), strategy,
                                               x.stream)
        return out
    src = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(src.shape[0], out_dtype)
    last_strategy["cumsum"] = _core.cumsum(be, src, out, strategy, _arrays.host_stream())
    return out
