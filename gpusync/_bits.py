"""packbits, count_nonzero (warp votes) and occupancy (resource partitioning)."""
from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from . import _arrays, _axis, _backend, _complex, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib


def _threshold(threshold, dtype):
    """`a > threshold` as NumPy compares it, as the float64 the core compares
    each element (converted to float64) with.  NumPy compares in
    ``np.result_type(a, threshold)`` (NEP 50: a Python float is rounded to a
    float array's dtype, a NumPy float64 scalar is not; integer arrays with a
    float compare in float64).  An integer threshold with an integer array
    compares exactly: out-of-range thresholds become +-inf, and the float64
    comparison is exact for |threshold| < 2^53 (beyond that, 64-bit integer
    arrays take _exact_int_mask first)."""
    if threshold is None:
        return None
    if type(threshold) is float:  # the common case, without result_type: weak, so a float array's own dtype
        dtype = np.dtype(dtype)
        if dtype.kind != "f" or dtype.itemsize == 8:
            return threshold  # float64, and integer / bool arrays compare in float64
        with np.errstate(over="ignore"):
            return float(dtype.type(threshold))
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


def _exact_int_mask(x, threshold):
    """`x > threshold` computed exactly by the array's own library, for the
    one case the core's float64 comparison cannot get right: a 64-bit
    integer array against an integer threshold inside the dtype's range of
    magnitude >= 2^53 (neither side is exact in float64).  None otherwise.
    The mask (bool, same element order) then goes through the core with no
    threshold: one extra pass, only in this case."""
    if threshold is None or not isinstance(threshold, (int, np.integer)) or isinstance(threshold, bool):
        return None
    dt = np.dtype(x.dtype)
    if dt.kind not in "iu" or dt.itemsize != 8:
        return None
    t = int(threshold)
    info = np.iinfo(dt)
    if abs(t) < 2**53 or not info.min <= t < info.max:
        return None
    if isinstance(x, DeviceArray):
        obj = x.obj
        mask = obj > t
        return _arrays.as_input(mask, "a")
    return np.greater(x, dt.type(t)).reshape(-1)


@_arrays.takes_stream
def packbits(a, /, axis=None, bitorder="big", *, threshold=None, stream=None):
    """``np.packbits(a != 0, axis, bitorder)`` for an array of any dtype --
    or of ``a > threshold`` -- built on warp ballots.

    NumPy's parameters: `axis` None packs the flattened array, an int packs
    along that axis (each line padded with zero bits to a multiple of 8);
    `bitorder` ``"big"`` or ``"little"``.  Returns uint8, bits of a line's
    last byte past its end zero.  ``threshold`` (gpusync's) compares like
    NumPy, in ``np.result_type(a, threshold)`` (a Python float is rounded to
    a float array's dtype first, a NumPy float64 scalar is not; NaN gives all
    zeros).  Exact, also for 64-bit integer arrays against integer thresholds
    beyond 2^53 (compared as integers by the array's own library first).
    Device arrays give device arrays, enqueued on their stream without
    waiting.
    """
    if axis is None and stream is None and threshold is None and (bitorder == "big" or bitorder == "little"):
        little = bitorder == "little"
        r = _core.fast_packbits(a, little)  # the C fast path (_dispatch.py); NotImplemented: the general path
        if r is not NotImplemented:
            return r
        r = _devfast.packbits_(a, little)  # device arrays' fast path
        if r is not NotImplemented:
            return r
    elif (axis is None and stream is None and type(a) is np.ndarray and (bitorder == "big" or bitorder == "little")
          and a.dtype.kind in "biuf" and not (a.dtype.kind in "iu" and a.dtype.itemsize == 8)):
        # a > threshold on the C fast path: the float64 _threshold compares with (64-bit integer arrays
        # keep the general path, where _exact_int_mask covers thresholds beyond 2^53)
        r = _core.fast_packbits(a, bitorder == "little", _threshold(threshold, a.dtype))
        if r is not NotImplemented:
            return r
    elif (type(axis) is int and stream is None and threshold is None and type(a) is np.ndarray and a.ndim >= 2
          and (axis == -1 or axis == a.ndim - 1) and a.shape[-1] % 8 == 0 and (bitorder == "big" or bitorder == "little")):
        # along the last axis of a C-contiguous array whose lines are whole bytes: the lines pack
        # independently, so the flat pack is the answer (the C fast path; 100 x 64 bool 11.3 -> ~1 us)
        r = _core.fast_packbits(a, bitorder == "little")
        if r is not NotImplemented:
            return r.reshape(a.shape[:-1] + (a.shape[-1] // 8,))
    if type(a) is not np.ndarray and _arrays.subclass(a):  # NumPy's result keeps the input's class
        return _arrays.new_like(a, packbits(a.view(np.ndarray), axis, bitorder, threshold=threshold, stream=stream))
    if axis is not None:
        axis = _arrays.index_int(axis, "axis")  # (NumPy's TypeError for True)
    with _arrays.call_stream(stream, a):
        if not isinstance(bitorder, str):  # NumPy's TypeError (its C signature takes a str)
            raise TypeError(f"packbits: bitorder must be a str, not {type(bitorder).__name__}")
        if bitorder not in ("big", "little"):
            raise ValueError("'order' must be either 'little' or 'big'")
        x = _axis.nd_input(a, "packbits")
        nd = len(x.shape)
        if axis is None or nd <= 1:
            if axis is not None:
                normalize_axis_index(axis, max(nd, 1))
            return _packbits_impl(x if nd == 1 else _flat(x), bitorder, threshold=threshold)
        return _packbits_axis(x, normalize_axis_index(axis, nd), bitorder, threshold)


@_arrays.takes_stream
def unpackbits(a, /, axis=None, count=None, bitorder="big", *, stream=None):
    """``np.unpackbits(a, axis, count, bitorder)``: each uint8 of `a` as 8
    elements of 0 / 1 (uint8).

    NumPy's parameters: `axis` None unpacks the flattened array, an int
    unpacks along that axis; `count` keeps that many bits per line (zero-
    padded when larger), a negative one drops bits from the end; `bitorder`
    ``"big"`` or ``"little"``.  One thread per byte writes its 8 bytes in
    one store (CUDA; a table lookup on CPU threads).  Device arrays give
    device arrays, enqueued on their stream.
    """
    if axis is None and count is None and stream is None and (bitorder == "big" or bitorder == "little"):
        r = _core.fast_unpackbits(a, bitorder == "little")  # the C fast path (_dispatch.py)
        if r is not NotImplemented:
            return r
        r = _devfast.unpackbits_(a, bitorder == "little")  # device arrays' fast path
        if r is not NotImplemented:
            return r
    if type(a) is not np.ndarray and _arrays.subclass(a):  # NumPy's result keeps the input's class
        return _arrays.new_like(a, unpackbits(a.view(np.ndarray), axis, count, bitorder, stream=stream))
    if axis is not None:
        axis = _arrays.index_int(axis, "axis")  # (NumPy's TypeError for True)
    with _arrays.call_stream(stream, a):
        if not isinstance(bitorder, str):  # NumPy's TypeError (its C signature takes a str)
            raise TypeError(f"unpackbits: bitorder must be a str, not {type(bitorder).__name__}")
        if bitorder[:1] not in ("l", "b"):  # NumPy's rule: the first letter
            raise ValueError("'order' must begin with 'l' or 'b'")
        little = bitorder[0] == "l"
        x = _axis.nd_input(a, "unpackbits") if not isinstance(a, np.ndarray) else a
        if not isinstance(x, DeviceArray):
            x = np.asarray(x)
        if np.dtype(x.dtype) != np.uint8:
            raise TypeError("Expected an input array of unsigned byte data type")
        if count is not None:
            count = _arrays.index_int(count, "unpackbits: count")
        shape = tuple(x.shape)
        if axis is None or len(shape) <= 1:
            if axis is not None:
                normalize_axis_index(operator.index(axis), max(len(shape), 1))
            flat = x if len(shape) == 1 else _flat(x)
            bits = _unpack_flat(flat, little)
            return _count_last(bits, count, 8 * (flat.length if isinstance(flat, DeviceArray) else flat.size))
        ax = normalize_axis_index(operator.index(axis), len(shape))
        order = [i for i in range(len(shape)) if i != ax] + [ax]
        if isinstance(x, DeviceArray):
            obj = x.obj.reshape(shape)
            if x.lib == "torch":
                lines = obj.permute(*order).contiguous()
                bits = _unpack_flat(_arrays.as_input(lines.reshape(-1), "a"), little)
                bits = _count_last(bits.reshape(tuple(lines.shape[:-1]) + (8 * shape[ax],)), count, 8 * shape[ax])
                return bits.permute(*_inverse(order)).contiguous()
            cp = __import__("cupy")
            lines = cp.ascontiguousarray(cp.transpose(obj, order))
            bits = _unpack_flat(_arrays.as_input(lines.reshape(-1), "a"), little)
            bits = _count_last(bits.reshape(lines.shape[:-1] + (8 * shape[ax],)), count, 8 * shape[ax])
            return cp.ascontiguousarray(cp.transpose(bits, _inverse(order)))
        lines = np.ascontiguousarray(np.transpose(x, order))
        bits = _unpack_flat(lines.reshape(-1), little)
        bits = _count_last(bits.reshape(lines.shape[:-1] + (8 * shape[ax],)), count, 8 * shape[ax])
        return np.ascontiguousarray(np.transpose(bits, _inverse(order)))


def _unpack_flat(x, little):
    be = _backend.backend()
    if isinstance(x, DeviceArray):
        lib = Lib.of(x.lib)
        if be == "cpu":
            return lib.from_host(_unpack_flat(x.to_host(), little), x.device)
        out = lib.empty(8 * x.length, np.uint8, x.device)
        _core.unpackbits("cuda", x.desc(), little, _arrays.as_input(out, "out").desc(), x.stream)
        return out
    # a host input runs on the CPU engine unless the cuda backend is forced: the result is 8x the input, so the
    # GPU road would carry 9 bytes over the bus for every byte the host reads and writes itself
    forced = _dispatch.forced_backend() == "cuda" or _dispatch.env_engine() in ("cuda", "cpu+cuda")
    be = "cuda" if be == "cuda" and forced else "cpu"
    _dispatch.fast_ready()  # the general call configures the C fast path's limits
    src = np.ascontiguousarray(x) if be == "cuda" else x
    out = np.empty(8 * src.shape[0], np.uint8)
    _core.unpackbits(be, src, little, out, _arrays.host_stream())
    _dispatch.record("unpackbits", engine="cuda" if be == "cuda" else "cpu", strategy="auto", used="",
                     n=src.shape[0], dtype="uint8")
    return out


def _count_last(bits, count, nbits):
    """NumPy's `count` along the last axis of `bits` (nbits long)."""
    if count is None:
        return bits
    if count < 0:
        if -count > nbits:
            raise ValueError("-count larger than number of elements")
        return bits[..., : nbits + count]
    if count <= nbits:
        return bits[..., :count]
    mod = type(bits).__module__.split(".")[0]
    shape = tuple(bits.shape[:-1]) + (count - nbits,)
    if mod == "torch":
        torch = __import__("torch")
        return torch.cat([bits, torch.zeros(shape, dtype=bits.dtype, device=bits.device)], -1)
    xp = np if mod == "numpy" else __import__(mod)
    return xp.concatenate([bits, xp.zeros(shape, dtype=bits.dtype)], -1)


def _flat(x):
    if isinstance(x, DeviceArray):
        return _arrays.as_input(Lib.of(x.lib).ravel(x.obj), "a")
    return np.ravel(x)


def _packbits_axis(x, axis, bitorder, threshold):
    """Pack along `axis` of an N-D array: the lines moved last and padded to
    whole bytes in one copy, packed as one flat array (8-bit aligned lines
    pack independently), the result's axes moved back."""
    thr = _threshold(threshold, x.dtype)
    shape = tuple(x.shape)
    n = shape[axis]
    nbytes = (n + 7) // 8
    order = [i for i in range(len(shape)) if i != axis] + [axis]
    if isinstance(x, DeviceArray):
        lib = x.lib
        obj = x.obj.reshape(shape)
        mask = obj != 0 if thr is None else _mask_above(x, thr).obj.reshape(shape)
        if lib == "torch":
            torch = __import__("torch")
            m = mask.permute(*order).to(torch.uint8)
            lines = torch.nn.functional.pad(m, (0, nbytes * 8 - n)).contiguous()
            packed = _packbits_impl(_arrays.as_input(lines.reshape(-1), "a"), bitorder)
            res = packed.reshape(tuple(m.shape[:-1]) + (nbytes,))
            return res.permute(*_inverse(order)).contiguous()
        cp = __import__("cupy")
        m = cp.transpose(mask, order)
        pad = [(0, 0)] * (len(shape) - 1) + [(0, nbytes * 8 - n)]
        lines = cp.ascontiguousarray(cp.pad(m.astype(cp.uint8), pad))
        packed = _packbits_impl(_arrays.as_input(lines.reshape(-1), "a"), bitorder)
        return cp.ascontiguousarray(cp.transpose(packed.reshape(m.shape[:-1] + (nbytes,)), _inverse(order)))
    mask = x if thr is None else _mask_above(x, thr)
    lines = np.zeros(tuple(shape[i] for i in order[:-1]) + (nbytes * 8,), dtype=mask.dtype)
    lines[..., :n] = np.transpose(mask, order)
    packed = _packbits_impl(lines.reshape(-1), bitorder)
    return np.ascontiguousarray(np.transpose(packed.reshape(lines.shape[:-1] + (nbytes,)), _inverse(order)))


def _mask_above(x, thr):
    """`x > thr` as the core compares it: every element as float64 against
    the float64 threshold that _threshold() chose (NumPy's result)."""
    if isinstance(x, DeviceArray):
        obj = Lib.of(x.lib).astype(x.obj, np.float64).reshape(tuple(x.shape))
        return _arrays.as_input(obj > thr, "a")
    return np.greater(x, np.float64(thr))  # a float64 scalar: compared in float64


def _inverse(order):
    inv = [0] * len(order)
    for i, o in enumerate(order):
        inv[o] = i
    return inv


def _packbits_impl(a, bitorder="big", threshold=None):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    x = _arrays.checked_input(a, "a", "packbits")
    if len(x.shape) != 1:
        raise ValueError(f"packbits: expected a 1-D array, got {len(x.shape)} dimensions "
                         "(flatten it first, as np.packbits with axis=None does)")
    mask = _exact_int_mask(x, threshold)
    if mask is not None:
        x, threshold = mask, None
    thr = _threshold(threshold, x.dtype)
    nbytes = (x.shape[0] + 7) // 8

    def call(be, ins, outs, s, stream):
        _core.packbits(be, ins[0], thr, bitorder == "little", outs[0], stream)
        return "ballot"

    (out,) = _dispatch.run("packbits", [_host(x)], [(nbytes, np.uint8)], call, names=["a"])
    return out


def _intp_of(dt):
    """count_nonzero's result dtype along an axis: intp, whatever the input."""
    return _INTP


_INTP = np.dtype(np.intp)


@_arrays.takes_stream
def count_nonzero(a, axis=None, *, keepdims=False, threshold=None, stream=None):
    """``np.count_nonzero(a, axis, keepdims=keepdims)`` -- or of
    ``a > threshold`` (gpusync's; compares as in :func:`packbits`) -- over
    all elements with one warp ballot and popcount per 32 elements and one
    atomic per warp, or along `axis` (an int, negative int or tuple) by the
    segmented kernel of :func:`sum`.  Complex input counts the elements
    whose real or imaginary part is non-zero (no `threshold`).  Host input
    gives an intp scalar (axis None) or an intp array; a device array a 0-d
    int64 array of its library (no host sync) or an int64 array."""
    if keepdims is not True and keepdims is not False:
        # NumPy: with axis None a false keepdims counts everything; a true one, or any with an axis, goes to a sum,
        # which reads it as an integer
        keepdims = _axis.keepdims_flag(keepdims) if axis is not None or keepdims else False
    if (axis is not None or keepdims) and type(a) is not np.ndarray and _arrays.subclass(a):
        # NumPy counts along axes as a.astype(bool).sum(axis, dtype=intp): a subclass's own sum where it has
        # one (a masked array leaves out its masked elements, np.matrix stays 2-D), else the count of its data
        # through its __array_wrap__ (a user's class)
        if threshold is None and (_arrays.own_method(a, "sum") is not None or _arrays.ufunc_override(a)):
            return a.astype(bool, copy=False).sum(axis=axis, dtype=np.intp, keepdims=keepdims)
        return _arrays.wrap_like(a, count_nonzero(np.asarray(a), axis, keepdims=keepdims, threshold=threshold,
                                                  stream=stream))
    if axis is None and not keepdims and stream is None and threshold is None:
        r = _core.fast_count_nonzero(a)  # the C fast path (_dispatch.py)
        if r is not NotImplemented:
            return np.intp(r) if type(r) is int else r  # NumPy 2 gives an intp scalar (the fast path: int for 0-d)
        r = _devfast.count_nonzero_(a)  # device arrays' fast path
        if r is not NotImplemented:
            return r
    elif axis is not None and not keepdims and stream is None and threshold is None:
        r = _core.fast_reduce_axis(a, axis, True)  # the C fast path: one int axis of a NumPy array
        if r is not NotImplemented:
            return r
        r = _devfast.reduce_axis_(a, axis, _axis.COUNT_NONZERO, _intp_of, "count_nonzero")  # one axis, device
        if r is not NotImplemented:
            return r
        r = _axis.host_axis(a, axis, _axis.COUNT_NONZERO, _intp_of)  # one axis of a NumPy array
        if r is not NotImplemented:
            return r
    with _arrays.call_stream(stream, a):
        if _complex.takes(a):  # complex input: count its `a != 0` mask (real or imaginary part non-zero)
            a = _complex.nonzero_mask(a, threshold)
        if axis is None and not keepdims:
            return _count_nonzero_impl(a, threshold=threshold)
        x = _axis.nd_input(a, "count_nonzero")
        if threshold is not None:
            thr = _threshold(threshold, x.dtype)
            x = _mask_above(x, thr)
        return _axis.reduce("count_nonzero", _axis.COUNT_NONZERO, x.obj.reshape(tuple(x.shape))
                            if isinstance(x, DeviceArray) else x, axis, keepdims=keepdims)


def _count_nonzero_impl(a, threshold=None):
    x = _arrays.checked_input(a, "a", "count_nonzero")
    mask = _exact_int_mask(x, threshold)
    if mask is not None:
        x, threshold = mask, None
    thr = _threshold(threshold, x.dtype)

    def call(be, ins, outs, s, stream):
        _core.count_nonzero(be, ins[0], thr, outs[0], stream)
        return "ballot"

    (out,) = _dispatch.run("count_nonzero", [_host(x)], [(1, np.int64)], call, names=["a"], merge=True)
    return np.intp(out[0]) if isinstance(out, np.ndarray) else _dispatch.scalar(out)  # NumPy 2: an intp scalar


# the common calls' fast path straight from the call, no Python frame (_core.front; the functions above run the rest)
packbits = _core.front("packbits", packbits, None, _devfast.packbits_)
unpackbits = _core.front("unpackbits", unpackbits, None, _devfast.unpackbits_)
def _count_nonzero_device(a, axis=None):
    """The front's device hook: the whole array, or one int axis."""
    if axis is None:
        return _devfast.count_nonzero_(a)
    return _devfast.reduce_axis_(a, axis, _axis.COUNT_NONZERO, _intp_of, "count_nonzero")


count_nonzero = _core.front("count_nonzero", count_nonzero, None, _count_nonzero_device)
