"""packbits, count_nonzero (warp votes) and occupancy (resource partitioning)."""
from __future__ import annotations

import numpy as np

from . import _arrays, _backend, _core, _dispatch
from ._arrays import DeviceArray


def _threshold(threshold, dtype):
    """`a > threshold` as NumPy compares it, as the float64 the core compares
    each element (converted to float64) with.  NumPy compares in
    ``np.result_type(a, threshold)`` (NEP 50: a Python float is rounded to a
    float array's dtype, a NumPy float64 scalar is not; integer arrays with a
    float compare in float64).  An integer threshold with an integer array
    compares exactly: out-of-range thresholds become +-inf, and the float64
    comparison is exact for |threshold| < 2^53 (beyond that, 64-bit integer
    arrays are compared after rounding to float64 -- see the docstring)."""
    if threshold is None:
        return None
    if isinstance(threshold, (str, bytes)) or not isinstance(threshold, (bool, int, float, np.bool_, np.integer,
                                                                         np.floating)):
        raise TypeError(f"threshold must be a real number, got {threshold!r}")
    dtype = np.dtype(dtype)
    is_int = isinstance(threshold, (bool, int, np.bool_, np.integer))
    if is_int and dtype.kind in "biu":
        t = int(threshold)
        info = np.iinfo(np.uint8 if dtype.kind == "b" else dtype)
        if t >= info.max:
            return float("inf")  # nothing is greater
        if t < info.min:
            return float("-inf")  # everything is
        return float(t)
    cmp = np.result_type(dtype, threshold)  # NumPy 2: Python scalars are weak
    if cmp.kind != "f":
        cmp = np.dtype(np.float64)
    with np.errstate(over="ignore"):
        return float(cmp.type(threshold))


def _host(x):
    return x if isinstance(x, DeviceArray) else np.ascontiguousarray(x).reshape(-1)


@_arrays.takes_stream
def packbits(a, bitorder="big", *, threshold=None, stream=None):
    """``np.packbits(a != 0, bitorder=bitorder)`` for a 1-D array of any
    dtype -- or of ``a > threshold`` -- built on warp ballots.

    Returns ceil(len(a) / 8) uint8, bits of the last byte past the end zero.
    ``threshold`` compares like NumPy, in ``np.result_type(a, threshold)``
    (a Python float is rounded to a float array's dtype first, a NumPy
    float64 scalar is not; NaN gives all zeros).  Exact except for 64-bit
    integer arrays with an integer threshold of magnitude >= 2^53, which
    are compared after rounding both to float64.  Device arrays give device arrays,
    enqueued on their stream without waiting.
    """
    if stream is None and threshold is None and bitorder == "big":
        r = _core.fast_packbits(a)  # the C fast path (_dispatch.py); NotImplemented: the general path
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):
        return _packbits_impl(a, bitorder, threshold=threshold)


def _packbits_impl(a, bitorder="big", threshold=None):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    x = _arrays.checked_input(a, "a", "packbits")
    if len(x.shape) != 1:
        raise ValueError(f"packbits: expected a 1-D array, got {len(x.shape)} dimensions "
                         "(flatten it first, as np.packbits with axis=None does)")
    thr = _threshold(threshold, x.dtype)
    nbytes = (x.shape[0] + 7) // 8

    def call(be, ins, outs, s, stream):
        _core.packbits(be, ins[0], thr, bitorder == "little", outs[0], stream)
        return "ballot"

    (out,) = _dispatch.run("packbits", [_host(x)], [(nbytes, np.uint8)], call, names=["a"])
    return out


@_arrays.takes_stream
def count_nonzero(a, *, threshold=None, stream=None):
    """``np.count_nonzero(a)`` -- or of ``a > threshold`` -- over all
    elements, with one warp ballot and popcount per 32 elements and one
    atomic per warp.  Host input gives an int; a device array a 0-d int64
    array of its library (no host sync).  ``threshold`` compares as in
    :func:`packbits`."""
    if stream is None and threshold is None:
        r = _core.fast_count_nonzero(a)
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):
        return _count_nonzero_impl(a, threshold=threshold)


def _count_nonzero_impl(a, threshold=None):
    x = _arrays.checked_input(a, "a", "count_nonzero")
    thr = _threshold(threshold, x.dtype)

    def call(be, ins, outs, s, stream):
        _core.count_nonzero(be, ins[0], thr, outs[0], stream)
        return "ballot"

    (out,) = _dispatch.run("count_nonzero", [_host(x)], [(1, np.int64)], call, names=["a"], merge=True)
    return int(out[0]) if isinstance(out, np.ndarray) else _dispatch.scalar(out)


_AUTO = {"histogram": "shared", "bincount": "shared", "sum": "threadfence", "dot": "threadfence",
         "binned_statistic": "shared"}


def kernels():
    """The names ``"op:strategy"`` that :func:`occupancy` describes."""
    return _core.kernel_names(_backend.backend()).split(",")


def occupancy(op, block_size=None, strategy=None):
    """Resource partitioning of one of gpusync's kernels on this GPU (the
    resource partitioning the original article on warps describes).

    `op` is ``"histogram"``, ``"sum"``, ``"dot"``, ``"binned_statistic"``,
    ``"packbits"`` or ``"count_nonzero"`` (with `strategy`, or as
    ``"op:strategy"``; default the one ``auto`` picks for a typical input).
    Returns registers per thread, static and dynamic shared memory per block,
    the blocks per SM each resource allows (threads, the blocks-per-SM limit,
    registers, shared memory), the active blocks and warps per SM and the
    theoretical occupancy from the occupancy API, the limiting resource, and
    the block size ``cudaOccupancyMaxPotentialBlockSize`` suggests.
    `block_size` (a multiple of 32) asks "what if"; default: as gpusync
    launches it.  Needs the cuda backend.
    """
    names = kernels()
    name = op
    if ":" not in op:
        if op == "bincount":
            op = "histogram"
        cands = [n for n in names if n.split(":")[0] == op]
        if strategy is not None:
            name = f"{op}:{strategy}"
        elif len(cands) == 1:
            name = cands[0]
        elif op in _AUTO:
            name = f"{op}:{_AUTO[op]}"
    if name not in names and op in names:
        name = op
    if name not in names:
        raise ValueError(f"occupancy: unknown kernel {name!r}; valid: {', '.join(names)}")
    if block_size is not None and (int(block_size) != block_size or block_size < 32 or block_size % 32):
        raise ValueError("occupancy: block_size must be a positive multiple of 32")
    return _core.occupancy(_backend.backend(), name, int(block_size or 0))
