"""cumsum: np.cumsum with the blocks of the grid handing each other their
prefixes by decoupled look-back, a grid barrier or kernel relaunches."""
from __future__ import annotations

import functools

import numpy as np

from . import _arrays, _axis, _backend, _core
from ._arrays import DeviceArray, Lib

STRATEGIES = ("auto", "lookback", "barrier", "relaunch")

last_strategy = {"cumsum": None}


@functools.lru_cache(maxsize=None)
def _cumsum_dtype(dt: np.dtype) -> np.dtype:
    return np.cumsum(np.zeros(1, dt)).dtype  # bool, small ints -> int64 / uint64


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
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise ValueError(f"cumsum: strategy must be one of {', '.join(map(repr, STRATEGIES))}; got {strategy!r}")
    with _arrays.call_stream(stream, a):
        return _axis.cumsum(a, axis, dtype, out, lambda x, rt: _cumsum_impl(x, strategy, rt))


def _cumsum_impl(x, strategy, out_dtype):
    """The 1-D (or flattened) scan with the strategy's look-back / barrier / relaunch."""
    be = _backend.backend()
    if isinstance(x, DeviceArray):
        lib = Lib.of(x.lib)
        if be == "cpu":
            return lib.from_host(_cumsum_impl(x.to_host(), strategy, out_dtype), x.device)
        out = lib.empty(x.length, out_dtype, x.device)
        last_strategy["cumsum"] = _core.cumsum("cuda", x.desc(), _arrays.as_input(out, "out").desc(), strategy,
                                               x.stream)
        return out
    src = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(src.shape[0], out_dtype)
    last_strategy["cumsum"] = _core.cumsum(be, src, out, strategy, _arrays.host_stream())
    return out
