"""histogram and bincount: NumPy's semantics in Python, counting in C/CUDA.

NumPy compatibility lives here: the edges come from ``np.histogram_bin_edges``
itself (called on a two-element proxy [min, max] of the input's dtype, or on
an empty one when ``range`` is given), so edges, dtypes and error messages
are NumPy's own.  Then we describe to the core how a value becomes a bin:

* ``LUT``     8-bit inputs: the bin of each of the 256 byte values;
* ``DIRECT``  integers on unit-width integer edges (and bincount): x - offset;
* ``UNIFORM`` equal-width bins whose edges a closed formula reproduces bit for
              bit (verified here), so kernels need no edge array;
* ``EDGES``   anything else: binary search in the edges;
* ``EDGES_INT`` 64-bit integers on integer edges beyond 2^53 that NumPy
              compares exactly (in int64 / uint64): binary search in integers.

Implicit host synchronizations are marked ``# synchronize!``.
"""
from __future__ import annotations

import builtins
import functools
import math
import warnings

import numpy as np

from . import _arrays, _backend, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib

STRATEGIES = _dispatch.STRATEGIES["histogram"]

_DIRECT, _LUT, _UNIFORM, _EDGES, _EDGES_INT = (_core.BINS_KINDS[k] for k in ("direct", "lut", "uniform", "edges",
                                                                               "edges_int"))
_EXACT_INT = 2.0**53


def _bins_tuple(kind, nbins, offset=0, closed=0, lut=None, start=0.0, step=0.0, stop=0.0, scale=0.0,
                margin=0.5, arith_f32=0, edges_f32=0, edges=None):
    return (kind, int(nbins), int(offset), int(closed), lut, float(start), float(step), float(stop),
            float(scale), float(margin), int(arith_f32), int(edges_f32), edges)


def _reference_bins(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """NumPy's bin of each value (-1 when dropped): e[k] <= v < e[k+1], last closed."""
    n = len(edges) - 1
    if n < 0:  # bins=[]: no edge, no bin (NumPy gives empty counts and edges)
        return np.full(len(values), -1, np.int64)
    v = values.astype(np.result_type(values.dtype, edges.dtype), copy=False)
    k = np.searchsorted(edges, v, side="right") - 1
    k[v == edges[-1]] = n - 1
    k[~((v >= edges[0]) & (v <= edges[-1]))] = -1
    return k


def _direct_offset(edges: np.ndarray, x_dtype: np.dtype):
    """Offset when the edges are exactly the consecutive integers e0, e0+1,
    ..., e0+n AND comparing integer data of `x_dtype` with them in NumPy's
    comparison type (the result_type of data and edges) is exact, so that
    ``x - e0`` is NumPy's bin; else None.  The core subtracts in 64-bit
    two's complement, so the offset is also kept where that cannot wrap
    into the bins (unsigned data: a non-negative offset below 2^63 - n)."""
    x_dtype = np.dtype(x_dtype)
    if edges.dtype.kind not in "fiu" or len(edges) < 2 or x_dtype.kind not in "biu":
        return None
    n = len(edges) - 1
    if edges.dtype.kind == "f":
        e0 = edges[0]
        if not (np.isfinite(e0) and np.isfinite(edges[-1])) or e0 != np.floor(e0):
            return None
        e0 = int(e0)
        if max(abs(e0), abs(e0 + n)) >= _EXACT_INT:  # the float64 check below is exact only within 2^53
            return None
        if not np.array_equal(edges.astype(np.float64), np.arange(n + 1, dtype=np.float64) + float(e0)):
            return None
    else:
        e0 = int(edges[0])
        if int(edges[-1]) - e0 != n or not np.all(edges[1:] > edges[:-1]):
            return None  # increasing integers spanning n: consecutive
    cmp = np.result_type(x_dtype, edges.dtype)
    if cmp.kind == "f":  # the data are rounded to `cmp`: exact near the edges only below 2^(nmant+1)
        if max(abs(e0), abs(e0 + n)) >= 2.0 ** (np.finfo(cmp).nmant + 1):
            return None
    if x_dtype.kind == "u" or x_dtype.kind == "b":
        if e0 < 0 or e0 + n >= 2**63:
            return None
    elif max(abs(e0), abs(e0 + n)) > 2**62:
        return None
    return e0


def _uniform_formula(edges: np.ndarray, bounds=None):
    """(start, step, stop, arith_f32, edges_f32) of a formula that reproduces
    `edges` bit for bit in the kernels (see gs_uniform_edge), or None.

    np.linspace computes in float64 from the range's float64 bounds and casts
    the result to the edges' dtype, so float32 edges of a range whose bounds
    are not float32 values (range=(0.16, 0.84)) come from bounds that their
    first and last edges only approximate: the candidates are the edges' own
    ends (in their dtype, then float64), `bounds` (the range asked for, when
    the caller knows it) and, for float32 edges, the shortest decimals that
    round to their ends (what a user types).  Each is checked against every
    edge; `stop` is the last edge itself (the formula's last edge is `stop`,
    cast to the edges' dtype)."""
    if edges.dtype not in (np.float32, np.float64) or len(edges) < 2:
        return None
    n = len(edges) - 1
    first, last = edges[0], edges[-1]
    if not (np.isfinite(first) and np.isfinite(last)) or not last > first:
        return None
    f64 = np.dtype(np.float64)
    cands = [(edges.dtype, first, last), (f64, first, last)]
    if edges.dtype == np.float32:
        if bounds is not None:
            try:
                cands.append((f64, float(bounds[0]), float(bounds[1])))
            except (TypeError, ValueError, IndexError):
                pass
        cands.append((f64, float(str(first)), float(str(last))))  # (str: the shortest round-trip decimal)
    k = np.arange(n + 1, dtype=np.float64)
    for adt, s0, s1 in cands:
        start, stop = adt.type(s0), adt.type(s1)
        if not (np.isfinite(start) and np.isfinite(stop)):
            continue
        step = (stop - start) / adt.type(n)
        with np.errstate(all="ignore"):
            y = k.astype(adt) * step + start
        y[-1] = stop
        y = y.astype(edges.dtype)
        if np.array_equal(y, edges):
            return float(start), float(step), float(last), adt == np.float32, edges.dtype == np.float32
    return None


def _min_rounding_to_at_least(e: float, lo: int, hi: int):
    """The smallest integer x in [lo, hi] with float(x) >= e (float64,
    round-to-nearest-even as NumPy and C convert), or None."""
    if math.isnan(e) or float(hi) < e:
        return None
    if e <= float(lo):
        return lo
    c = min(math.ceil(e), hi)  # float(c) >= e; float() moves an integer by at most 2^11 below 2^64
    a = max(lo, c - 4096)
    while a < c:  # float(c) >= e; find the first such x in [a, c]
        m = (a + c) // 2
        if float(m) >= e:
            c = m
        else:
            a = m + 1
    return c


def _exact_bounds_bins(x_dtype: np.dtype, edges: np.ndarray, bounds):
    """64-bit integer data, equal-width bins and integer range bounds beyond
    2^53: NumPy keeps x with first <= x <= last compared exactly, and bins it
    by comparing float64(x) with the float64 edges.  Both become integer
    thresholds for EDGES_INT (t[k] = the smallest x of bin k, t[n] = the
    largest kept x); None when they do not apply or do not fit the dtype."""
    if x_dtype.itemsize != 8 or x_dtype.kind not in "iu" or bounds is None or len(edges) < 2:
        return None
    first, last = bounds
    ints = [isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_)) for b in (first, last)]
    if not any(ints) or max(abs(int(b)) if i else 0 for b, i in zip((first, last), ints)) <= 2**53:
        return None
    if first == last or len(edges) > 100_001:  # NumPy widens equal bounds by 0.5 (floats)
        return None
    info = np.iinfo(x_dtype)
    lo, hi = int(info.min), int(info.max)
    t = [max(int(first), lo) if ints[0] else _min_rounding_to_at_least(float(first), lo, hi)]
    for e in edges[1:-1]:
        t.append(_min_rounding_to_at_least(float(e), lo, hi))
    if ints[1]:
        top = min(int(last), hi)
    else:  # the largest x with float(x) <= last: one below the smallest with float(x) > last
        above = _min_rounding_to_at_least(float(np.nextafter(float(last), np.inf)), lo, hi)
        top = hi if above is None else above - 1
    if any(v is None for v in t) or t[0] > top or top < lo:
        if (t[0] is None or t[0] > hi or top < lo) and top >= lo - 1:
            t, top = [hi] * (len(edges) - 1), hi - 1  # nothing is kept: every x < t[0] or > top
        else:
            return None
    t = [max(v, t[0]) for v in t]  # non-decreasing (the first threshold is the exact bound)
    arr = np.array(t + [top], dtype=x_dtype)
    return _bins_tuple(_EDGES_INT, len(edges) - 1, edges=np.ascontiguousarray(arr).view(np.float64))


def _describe_bins(x_dtype: np.dtype, edges: np.ndarray, uniform: bool, bounds=None):
    """The core's bin description for values of `x_dtype` and these edges
    (`bounds`: the ``range`` NumPy checks the data against, for equal-width
    bins)."""
    n = len(edges) - 1
    if x_dtype.itemsize == 1:  # every byte value's bin, computed by NumPy's rules
        vals = np.arange(256, dtype=np.uint8).view(x_dtype)
        lut = _reference_bins(vals, edges).astype(np.int32)
        # unit-width integer edges on unsigned bytes: x - offset, no table
        off = _direct_offset(edges, x_dtype) if x_dtype.kind in "ub" else None
        if off is not None and 0 <= off <= 255:
            direct = np.full(256, -1, dtype=np.int64)
            raw = np.arange(256)
            d = raw - off
            direct[(d >= 0) & (d < n)] = d[(d >= 0) & (d < n)]
            direct[d == n] = n - 1
            if np.array_equal(direct, lut):
                return _bins_tuple(_DIRECT, n, offset=off, closed=1)
        return _bins_tuple(_LUT, n, lut=lut.tobytes())
    if x_dtype.kind in "iu":
        off = _direct_offset(edges, x_dtype)
        if off is not None:
            return _bins_tuple(_DIRECT, n, offset=off, closed=1)
        exact = _exact_bounds_bins(x_dtype, edges, bounds) if uniform else None
        if exact is not None:
            return exact
        cmp = np.result_type(x_dtype, edges.dtype)
        if x_dtype.itemsize == 8 and cmp.kind in "iu" and edges.size and \
                np.abs(edges.astype(np.float64)).max() >= _EXACT_INT:
            # float64 would round the data and the edges; NumPy compares them exactly in `cmp`, whose
            # signedness is the data's (int64 data: int64, uint64 data: uint64)
            return _bins_tuple(_EDGES_INT, n, edges=np.ascontiguousarray(edges.astype(cmp)).view(np.float64))
    if uniform:
        f = _uniform_formula(edges, bounds)
        if f is not None:
            start, step, stop, af32, ef32 = f
            e64 = edges.astype(np.float64)
            with np.errstate(over="ignore", divide="ignore"):
                scale = n / (e64[-1] - e64[0])
            if not scale < 2.0**127:  # subnormal-wide bins: no finite (float32) scale -- binary search
                return _bins_tuple(_EDGES, n, edges=np.ascontiguousarray(edges, dtype=np.float64))
            # how far the edges sit from their ideal positions k, in bins, plus
            # the error of a float32 estimate (relative 2^-22, kept 4x wide):
            # estimates farther than this from an integer need no correction
            dev = float(np.max(np.abs((e64 - e64[0]) * scale - np.arange(n + 1))))
            margin = min(0.5, dev + n * 2.0**-20 + 1e-7)
            return _bins_tuple(_UNIFORM, n, start=start, step=step, stop=stop, scale=scale, margin=margin,
                               arith_f32=af32, edges_f32=ef32)
    return _bins_tuple(_EDGES, n, edges=np.ascontiguousarray(edges, dtype=np.float64))


def _minmax(x):
    """(min, max) as NumPy scalars of x's dtype.  # synchronize! (device input)"""
    if isinstance(x, DeviceArray):
        raw = _core.minmax("cuda", x.desc(), x.stream)
        lo, hi = np.frombuffer(raw, dtype=x.dtype)
        return lo, hi
    if x.size and x.dtype in _HOST_MINMAX:  # one pass on the CPU engine's threads (NumPy: two, one thread)
        flat = x.reshape(-1) if x.ndim != 1 else x
        if flat.ndim == 1 and x.dtype.isnative:
            req = _dispatch.aux_threads()  # a forced engine holds for this pass too
            if req:
                _core.cpu_threads(req)
            try:
                lo, hi = np.frombuffer(_core.minmax("cpu", flat, 0), dtype=x.dtype)
            finally:
                if req:
                    _core.cpu_threads(0)
            return lo, hi
    return x.min(), x.max()


# integers: the engine's loop vectorizes (AVX2 clone) and beats NumPy's two passes on one thread even there;
# floats stay NumPy's (its min/max loops are faster than ours on one thread under strict IEEE rules)
_HOST_MINMAX = frozenset(np.dtype(t) for t in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                               "uint64"))


def _prepare(a, weights, func):
    """Normalise a and weights: flattened host arrays or device views."""
    x = _arrays.as_input(a, "a")
    w = None if weights is None else _arrays.as_input(weights, "weights")
    _arrays.check_dtype(x.dtype, "a", func)
    if w is not None:
        if tuple(w.shape) != tuple(x.shape):
            raise ValueError("weights should have the same shape as a.")
        if w.dtype.kind == "c" or not (w.dtype.kind in "biuf"):
            raise TypeError(f"{func}: weights has dtype {w.dtype}, which is not supported "
                            "(bool, integer and float weights are)")
    return x, w


def _flat_host(x):
    return np.ascontiguousarray(x).reshape(-1)


def _run(op, x, w, nbins, bins_desc, strategy, x_dtype=None):
    """Count host arrays or device views through the dispatcher; return (out, strategy used)."""
    weighted = w is not None
    out_dtype = np.float64 if weighted else np.int64
    if isinstance(x, DeviceArray):
        if x_dtype is not None:  # bool viewed as uint8
            x = DeviceArray(x.obj, x.lib, x.ptr, x.length, x.stride, np.dtype(x_dtype), x.device, x.stream, x.shape)
        if isinstance(w, DeviceArray) and w.dtype not in (np.float32, np.float64):
            w = _arrays.as_input(Lib.of(w.lib).astype(w.obj, np.float64), "weights")
    else:
        x = _flat_host(x)
        if x_dtype is not None:
            x = x.view(x_dtype)
        if w is not None and not isinstance(w, DeviceArray):
            w = _flat_host(w)
            if w.dtype not in (np.float32, np.float64):
                w = w.astype(np.float64)

    def call(be, ins, outs, s, stream):
        return _core.histogram(be, ins[0], ins[1], outs[0], bins_desc, s, stream)

    (out,) = _dispatch.run(op, [x, w], [(nbins, out_dtype)], call, strategy=strategy, names=["a", "weights"],
                           bins=nbins, merge=True)
    return out, None  # the strategy used: gs.last_plan()["strategy_used"]


@_arrays.takes_stream
def histogram(a, bins=10, range=None, density=None, weights=None, *, strategy="auto", stream=None):
    """Compute the histogram of `a`, exactly like :func:`numpy.histogram`.

    Parameters are NumPy's: `bins` is a number of equal-width bins, a
    monotonically increasing array of edges, or a NumPy bin-estimator name;
    `range` is ``(min, max)``; values outside it and NaN are ignored; the last
    bin is closed ``[e[n-1], e[n]]``.  `weights` (same shape as `a`) makes the
    result a weighted sum of `weights.dtype`; `density` normalises it.

    `strategy` picks the synchronization technique of the counting kernel:
    ``"global"`` (one global atomic per element), ``"shared"`` (per-block
    privatized histogram in shared memory, replicated per lane), ``"warp"``
    (warp-aggregated updates with ``__match_any_sync``), ``"cluster"``
    (histogram spread over a thread-block cluster's distributed shared memory;
    compute capability >= 9.0) or ``"auto"``.  All give identical integer
    counts.  Weighted sums are accumulated in float64 with atomics and cast
    to ``weights.dtype``: integer weights are exact while every bin's total
    stays within +-2^53 (NumPy's equal-width path also sums in float64; its
    edge-array path sums integer weights in their own dtype); float weights
    are not bit-reproducible run to run (the order of additions varies).
    Complex weights (NumPy sums them per bin) are not supported: a
    TypeError names them.
    Byte-swapped or unaligned input is copied once to native order.

    Returns ``(hist, bin_edges)`` as NumPy arrays for host input; for a CuPy /
    PyTorch / Numba input, arrays of that library on the input's device.  With
    a device input and `bins` and `range` given (equal-width bins), the work is
    enqueued on the input's stream and the call does not wait.  When the range
    comes from the data (``range=None``) or `bins` is a string, the call reads
    the data's min/max first.  # synchronize!
    """
    fast = None
    if stream is None and weights is None and not density:
        if strategy == "auto":
            res = _core.fast_histogram_of(a, bins, range, _fast_plans)  # a NumPy array, planned: all of it in C
            if res is not NotImplemented:
                return res
        fast = _plan_key(a, bins, range)
        if fast is not None and type(a) is not np.ndarray:
            # device arrays' fast path, an explicit strategy too (the plan does not depend on it; the general
            # path's host work grows with the bins: ~5 ms at 1M); a name that is none raises as there
            r = _devfast.histogram_(_fast_plans, a, bins, range, _dispatch.check_strategy("histogram", strategy))
            if r is not NotImplemented:
                return r
    elif stream is None and not density and type(a) is not np.ndarray and type(weights) is type(a):
        fast = _plan_key(a, bins, range)  # float64 device weights: the same plans (made by any call below)
        if fast is not None:
            r = _devfast.histogram_w_(_fast_plans, a, weights, bins, range,
                                      _dispatch.check_strategy("histogram", strategy))
            if r is not NotImplemented:
                return r
    with _arrays.call_stream(stream, a):
        res = _histogram_impl(a, bins, range, weights, density, strategy=strategy)
    if fast is not None and fast not in _fast_plans and fast[0] != np.bool_ and len(_fast_plans) < 1024:
        # (made once: a host call with a strategy named, which C's fast path leaves here, comes back every time)
        proxy = np.empty(0, dtype=fast[0])
        try:
            edges, desc, uniform = _plan(proxy, bins, range)  # the same cached plan the general path used
        except (TypeError, ValueError):
            return res
        if desc is None:  # not cacheable there: no fast plan either
            return res
        if _keep_slivers(np.dtype(fast[0]), edges, range):  # (the general path corrects these; the C one would not)
            return res
        edges.flags.writeable = False
        # device input: the edges written on the device by their formula (no host copy), by the counting (or
        # zeroing) kernel itself when the description carries it (equal-width bins; unit or byte bins, below)
        formula = _edges_formula(edges, desc) if uniform else None
        if formula is not None and desc[0] in (_DIRECT, _LUT):
            desc = formula = _carrying_formula(desc, formula)
        _fast_plans[fast] = (edges, desc, formula)
    return res


def _carrying_formula(desc, formula):
    """A direct / lut bins description that carries its edges' formula (the
    start, step, stop, arith_f32, edges_f32 of `formula`, a uniform
    description of the same edges): the kernel that counts writes the edges
    too, with no launch of their own (a device uint8 histogram of 32 MiB, 256
    bins: three graph nodes a call became two).  Their binning ignores it."""
    return desc[:5] + formula[5:8] + desc[8:10] + formula[10:12] + desc[12:]


# (dtype, bins, range with its types) -> (edges, bins description) of calls
# whose bins and range fix the edges: the fast path's cached plans
_fast_plans: dict = {}


def _plan_key(a, bins, range):
    """The _fast_plans key of histogram(a, bins, range), or None."""
    dt = a.dtype if type(a) is np.ndarray else _devfast.numpy_dtype(a)
    key = None if dt is None else _devfast.plan_key(dt, bins, range)
    try:
        hash(key)
    except TypeError:  # unhashable bounds: the general path says what is wrong with them
        return None
    return key


def _histogram_impl(a, bins=10, range=None, weights=None, density=None, strategy="auto", plan=None):
    func = "histogram"
    _dispatch.check_strategy(func, strategy)
    x, w = _prepare(a, weights, func)
    x_dtype = None
    if x.dtype == np.bool_:
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.", RuntimeWarning,
                      stacklevel=2)
        x_dtype = np.dtype(np.uint8)
        if isinstance(x, np.ndarray):
            x = x.astype(np.uint8)
            x_dtype = None
    dt = x_dtype or x.dtype
    host_flat = _flat_host(x) if isinstance(x, np.ndarray) else None
    if range is not None and np.ndim(bins) == 0 and isinstance(range, (tuple, list, np.ndarray)) and \
            len(range) == 2 and \
            all(isinstance(r, (bool, np.bool_)) for r in range) and range[0] != range[1]:
        np.subtract(range[1], range[0])  # NumPy's own TypeError: its equal-width path subtracts the bounds

    # bin edges, from NumPy itself
    if plan is not None:  # decided once by the caller for all its chunks (gpusync.dask)
        edges, desc, uniform = plan
    elif isinstance(bins, str):
        data = host_flat if host_flat is not None else x.to_host().view(dt)  # synchronize!
        wt = None
        if w is not None:
            wt = _flat_host(w) if isinstance(w, np.ndarray) else w.to_host()
        edges = np.histogram_bin_edges(data, bins=bins, range=range, weights=wt)
        uniform, desc = True, None
    else:
        if hasattr(bins, "__cuda_array_interface__") or (
            hasattr(bins, "__dlpack__") and not isinstance(bins, np.ndarray)
        ):
            bv = _arrays.as_input(bins, "bins")
            bins = bv.to_host() if isinstance(bv, DeviceArray) else bv
        if np.ndim(bins) == 0 and range is None and not isinstance(bins, (str, bytes)):
            size = x.size
            lo = hi = None
            if size:
                lo, hi = _minmax(host_flat if host_flat is not None else x)
                if x_dtype is not None:  # device bool viewed as uint8
                    lo, hi = np.uint8(lo), np.uint8(hi)
            edges, desc, uniform = plan_edges(dt, bins, range, lo, hi)
        else:
            edges, desc, uniform = plan_edges(dt, bins, range)
    device = isinstance(x, DeviceArray)
    if len(edges) < 2:  # bins=[] or one edge: NumPy's empty histogram
        hdt = np.float64 if density else (np.int64 if w is None else np.dtype(w.dtype))
        out = np.zeros(0, hdt)
        if device:
            return Lib.of(x.lib).from_host(out, x.device), Lib.of(x.lib).from_host(edges, x.device)
        return out, edges
    if desc is None:
        desc = _describe_bins(np.dtype(dt), edges, uniform, range)
    nbins = len(edges) - 1
    out, _ = _run(func, x if host_flat is None else host_flat, w, nbins, desc, strategy, x_dtype)
    slivers = _keep_slivers(np.dtype(dt), edges, range) if plan is None and np.ndim(bins) == 0 else ()
    if slivers:  # (device: the input's own array and weights; host: the prepared NumPy arrays, flat)
        if device:
            out = _apply_slivers(out, a, weights, slivers, True)
        else:
            out = _apply_slivers(out, np.asarray(x).reshape(-1), None if w is None else np.asarray(w).reshape(-1),
                                 slivers, False)

    if w is not None and np.dtype(w.dtype) != np.float64:
        out = Lib.of(x.lib).astype(out, w.dtype) if device else out.astype(w.dtype)
    edges_out = _edges_for(x, edges, uniform, desc) if device else edges
    if density:
        db = np.array(np.diff(edges), float)
        if device:
            db = _arrays.device_constant(x.lib, db, x.device)
        return out / db / out.sum(), edges_out
    return out, edges_out


def _key(v):
    """A cache key that keeps the value's type (NumPy's promotion depends on it)."""
    if isinstance(v, (bool, int, float, np.integer, np.floating)):
        return (type(v), v)
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return tuple(_key(e) for e in v)
    if isinstance(v, np.ndarray) and v.ndim == 1 and v.size <= 4096:
        return (v.dtype.str, v.tobytes())
    raise TypeError


@functools.lru_cache(maxsize=512)
def _plan_cached(proxy_dtype, proxy_bytes, bins_key, range_key, bins_h, range_h):
    bins, range = bins_h.value, range_h.value
    proxy = np.frombuffer(proxy_bytes, dtype=proxy_dtype)
    edges = np.histogram_bin_edges(proxy, bins=bins, range=range)
    edges.flags.writeable = False
    uniform = np.ndim(bins) == 0
    return edges, _describe_bins(np.dtype(proxy_dtype), edges, uniform, range), uniform


def plan_edges(dt, bins, range, lo=None, hi=None):  # noqa: A002
    """(edges, bin description, uniform) for data of dtype `dt` whose min and
    max are `lo` and `hi` (None: empty data, or `bins`/`range` fix the edges):
    the one place that decides the edges, for gs.histogram and for
    gpusync.dask (which finds lo and hi over all chunks first)."""
    proxy = np.array([lo, hi], dtype=dt) if lo is not None else np.empty(0, dtype=dt)
    return _plan(proxy, bins, range)


def _plan(proxy, bins, range):
    """(edges, bin description, uniform) for a proxy of the data; remembered
    for repeated calls with the same dtype, bins and range (the NumPy edge
    computation and the LUT cost ~100 us of host time per call)."""
    try:
        bk, rk = _key(bins if np.ndim(bins) == 0 else np.asarray(bins)), (None if range is None else _key(range))
        args = (proxy.dtype.str, proxy.tobytes(), bk, rk)
        edges, desc, uniform = _plan_cached(*args, _Hashed(bk, bins), _Hashed(rk, range))
        return edges.copy(), desc, uniform
    except TypeError:
        pass
    edges = np.histogram_bin_edges(proxy, bins=bins, range=range)
    return edges, None, np.ndim(bins) == 0


class _Hashed:
    """Carries an unhashable value through lru_cache under a hashable key."""

    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key, self.value = key, value

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return self.key == other.key


@functools.lru_cache(maxsize=256)
def _formula_cached(dtype, data):
    return _uniform_formula(np.frombuffer(data, dtype=dtype))


def _keep_slivers(dt: np.dtype, edges: np.ndarray, bounds):
    """NumPy's equal-width path keeps ``a >= range[0]`` and ``a <= range[1]``,
    each bound compared in its own precision under NEP 50, and bins what it
    keeps by the edges; every gpusync kernel keeps exactly [edges[0],
    edges[-1]].  The two agree unless the bounds mix a Python number with a
    NumPy scalar (review34: ``(np.float64(1000.1), 1000.2)`` on float32 data
    compares the upper bound in float32, above the float64 last edge).  The
    data values where they differ, as half-open intervals of `dt` values
    with what NumPy does with them: ((lo, hi, action, bin), ...); action
    "add" (NumPy counts them in `bin`, gpusync dropped them), "drop"
    (gpusync counted them in `bin`, NumPy does not), "raise" (NumPy gives
    them bin -1 and its bincount raises).  Empty in every other case."""
    if bounds is None or dt.kind != "f" or len(edges) < 2 or len(bounds) != 2:
        return ()
    r0, r1 = bounds
    if type(r0) is type(r1) or not (isinstance(r0, np.generic) or isinstance(r1, np.generic)):
        return ()
    try:
        if not r0 < r1:  # (equal bounds: NumPy widens them by 0.5)
            return ()
    except TypeError:
        return ()
    one = np.zeros(1, dt)

    def first(pred, v):  # the smallest dt value at or near v for which pred holds (pred is monotone)
        v = dt.type(v)
        for _ in builtins.range(64):
            prev = np.nextafter(v, dt.type(-np.inf))
            if pred(prev):
                v = prev
            elif pred(v):
                return v
            else:
                v = np.nextafter(v, dt.type(np.inf))
        return v

    def keeps(b, lower):  # NumPy's own comparison of a dt value with the bound b
        def pred(v):
            one[0] = v
            return bool(one >= b) if lower else not bool(one <= b)
        return pred

    e0, en = float(edges[0]), float(edges[-1])
    with np.errstate(all="ignore"):
        t_np = first(keeps(r0, True), r0)             # NumPy keeps x >= t_np
        t_gs = first(lambda v: float(v) >= e0, e0)     # gpusync keeps x >= t_gs
        u_np = first(keeps(r1, False), r1)            # NumPy drops x >= u_np (above the top)
        u_gs = first(lambda v: float(v) > en, en)      # gpusync drops x >= u_gs
    n = len(edges) - 1
    out = []
    if t_np < t_gs:
        out.append((t_np, t_gs, "raise", -1))
    elif t_gs < t_np:
        out.append((t_gs, t_np, "drop", 0))
    if u_gs < u_np:
        out.append((u_gs, u_np, "add", n - 1))
    elif u_np < u_gs:
        out.append((u_np, u_gs, "drop", n - 1))
    return tuple(out)


def _apply_slivers(out, a, weights, slivers, device):
    """Corrects `out` (counts, or float64 weight sums) by _keep_slivers' intervals: one pass over the data
    each, with the array's own library (a wait for a device input only where NumPy would raise)."""
    for lo, hi, action, k in slivers:
        if device:
            lo_, hi_ = float(lo), float(hi)  # (exact: dt values; CuPy and PyTorch compare them in the data's dtype)
        else:
            lo_, hi_ = lo, hi
        mask = (a >= lo_) & (a < hi_)
        if action == "raise":
            if bool(mask.any()):  # synchronize!
                raise ValueError("'list' argument must have no negative elements")
            continue
        if weights is None:
            c = mask.sum()
        else:
            ww = weights.reshape(mask.shape) if hasattr(weights, "reshape") else weights
            c = ww[mask].sum()
        if device:
            c = c.to(out.dtype) if hasattr(c, "to") else c.astype(out.dtype)
        else:
            c = out.dtype.type(c)
        if action == "add":
            out[k] += c
        else:
            out[k] -= c
    return out


def _edges_formula(edges: np.ndarray, desc=None):
    """The bins description whose formula reproduces `edges` exactly (for the
    uniform_edges kernel), or None when no formula does.  desc: the bins'
    description when the caller has it (an equal-width one carries the
    formula _describe_bins checked, found with the range's bounds)."""
    if desc is not None and desc[0] == _UNIFORM and desc[1] == len(edges) - 1:
        return desc
    f = _formula_cached(edges.dtype.str, edges.tobytes())
    if f is None:
        return None
    start, step, stop, af32, ef32 = f
    return _bins_tuple(_UNIFORM, len(edges) - 1, start=start, step=step, stop=stop, arith_f32=af32, edges_f32=ef32)


def _edges_for(x: DeviceArray, edges: np.ndarray, uniform: bool, bins_desc=None):
    """The edges as an array of the input's library, written on the device by
    a kernel when a formula describes them (no host copy, no wait: capturable
    in a CUDA graph); otherwise copied on the device from a kept copy of the
    same edges (_arrays.device_constant: capturable after a first call)."""
    lib = Lib.of(x.lib)
    desc = _edges_formula(edges, bins_desc) if uniform and _backend.backend() == "cuda" else None
    if desc is not None:
        out = lib.empty(len(edges), edges.dtype, x.device)
        _core.uniform_edges("cuda", desc, _dispatch.new_desc(lib, out, len(edges), edges.dtype, x.device), x.stream)
        return out
    return _arrays.device_constant(x.lib, edges, x.device)


@_arrays.takes_stream
def bincount(x, /, weights=None, minlength=0, *, strategy="auto", stream=None):
    """Count occurrences of each value in a non-negative integer array, exactly
    like :func:`numpy.bincount`.

    The result has ``max(x.max() + 1, minlength)`` bins: int64 counts, or
    float64 sums of `weights`.  Negative values raise ValueError.  `strategy`
    as in :func:`histogram`.  Reading the maximum makes the call wait for a
    device input.  # synchronize!
    """
    if stream is None and strategy == "auto" and type(minlength) is int:
        # the C fast path (_dispatch.py); float weights too
        r = _core.fast_bincount(x, minlength) if weights is None else _core.fast_bincount(x, minlength, weights)
        if r is not NotImplemented:
            return r
        if type(x) is not np.ndarray and minlength >= 0:  # device arrays' fast paths
            r = (_devfast.bincount_(x, minlength, _direct_bins) if weights is None else
                 _devfast.bincount_w_(x, weights, minlength, _direct_bins))
            if r is not NotImplemented:
                return r
    with _arrays.call_stream(stream, x):
        return _bincount_impl(x, weights, minlength, strategy=strategy)


def _bincount_impl(x, weights=None, minlength=0, strategy="auto"):
    _dispatch.check_strategy("bincount", strategy)
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    minlength = _arrays.index_int(minlength, "minlength")
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if isinstance(x, (list, tuple)) and len(x) == 0:
        x = np.zeros(0, np.intp)  # NumPy reads an empty sequence as intp (np.asarray would give float64)
    if isinstance(weights, (list, tuple)) and len(weights) == 0:
        weights = np.zeros(0)
    xa = _arrays.as_input(x, "x")
    wa = None if weights is None else _arrays.as_input(weights, "weights")
    for arr in (xa,) + (() if wa is None else (wa,)):
        nd = len(arr.shape) if isinstance(arr, DeviceArray) else arr.ndim
        if nd == 0:
            raise ValueError("object of too small depth for desired array")
        if nd > 1:
            raise ValueError("object too deep for desired array")
    if xa.dtype.kind not in "biu" or not _arrays.supported_dtype(xa.dtype):
        np.bincount(np.zeros(1, dtype=xa.dtype))  # NumPy's own TypeError for this dtype
        raise TypeError(f"Cannot cast array data from {xa.dtype!r} to dtype('int64') according to the rule 'safe'")
    n = xa.size
    if wa is not None and wa.size != n:
        raise ValueError("The weights and list don't have the same length.")
    if wa is not None and (wa.dtype.kind not in "biuf"):
        raise TypeError(f"bincount: weights has dtype {wa.dtype}, which is not supported")
    weighted = wa is not None
    device = isinstance(xa, DeviceArray)
    if n == 0:  # NumPy's result for empty input is int64, weighted or not
        out = np.zeros(minlength, dtype=np.int64)
        return Lib.of(xa.lib).from_host(out, xa.device) if device else out
    x_dtype = np.dtype(np.uint8) if xa.dtype == np.bool_ else None
    xin = xa if device else _flat_host(xa)
    if x_dtype is not None and not device:
        xin = xin.view(np.uint8)
        x_dtype = None
    isz = np.dtype(xa.dtype).itemsize
    if not weighted and (isz == 1 or (isz == 2 and strategy == "auto" and not device)):
        return _bincount_small(xa, xin, x_dtype, minlength, strategy, device)
    # the length NumPy gives the result is max(x) + 1: read min and max on the
    # device first (one read of two values), then count only max + 1 bins --
    # few bins fit shared memory, so a 16-bit input whose values use 4,096
    # bins is counted at histogram speed instead of into 65,536 bins
    lo, hi = _minmax(xa)  # synchronize! (device input)
    lo, hi = int(lo), int(hi)  # (Python ints: a bool or uint64 scalar against 2^63 would not compare)
    if lo < 0 or hi >= 2**63:  # (uint64 past int64: NumPy 2 reads it as negative)
        raise ValueError("'list' argument must have no negative elements")
    nbins = max(hi + 1, minlength)
    if _devfast.min_to_max(lo, hi):
        # identifiers far from 0: count lo .. hi alone (hi - lo + 1 bins, the device fast path's rule), then
        # place those counts into NumPy's length of zeros
        part, _ = _run("bincount", xin, wa, hi - lo + 1, _direct_bins(hi - lo + 1, offset=lo), strategy, x_dtype)
        out_dtype = np.float64 if weighted else np.int64
        if device:  # on the count's device and stream (a non-current GPU, a non-blocking stream)
            return Lib.of(xa.lib).placed(nbins, out_dtype, xa.device, lo, part, xa.stream)
        out = np.zeros(nbins, out_dtype)
        out[lo:hi + 1] = part
        return out
    out, _ = _run("bincount", xin, wa, nbins, _direct_bins(nbins), strategy, x_dtype)
    return out


def _direct_bins(nbins, offset=0):
    """The counting kernel's bins for values offset .. offset + nbins - 1 (bincount)."""
    return _bins_tuple(_DIRECT, nbins, offset=offset, closed=0)


def _bincount_small(xa, xin, x_dtype, minlength, strategy, device):
    """Unweighted bincount of 8-bit integers and bool (and 16-bit ones with
    strategy auto, which can hold 65536 bins): count every value the dtype
    can hold in one pass -- no separate pass for the maximum -- then check
    for negatives and cut NumPy's length from the counts.
    # synchronize! (device input: the counts are read back)"""
    full = _bincount_full(xa, xin, x_dtype, strategy, device)
    out = _bincount_cut(Lib.of(xa.lib).to_host(full) if device else full, xa.dtype, minlength)
    return Lib.of(xa.lib).from_host(out, xa.device) if device else out


def _bincount_full(xa, xin, x_dtype, strategy, device):
    """The count of every value xa's dtype can hold, in the core's order
    (8-bit data: by raw byte), where xa lives; no synchronization."""
    dt = np.dtype(np.uint8) if xa.dtype == np.bool_ else np.dtype(xa.dtype)
    info = np.iinfo(dt)
    if dt.itemsize == 1:  # the core bins 8-bit data by their raw byte: count bytes, then order by value
        if device:
            x_dtype = np.dtype(np.uint8)
        else:
            xin = xin.view(np.uint8)
        return _run("bincount", xin, None, 256, _bins_tuple(_DIRECT, 256, offset=0, closed=0), strategy, x_dtype)[0]
    span = int(info.max) - int(info.min) + 1
    return _run("bincount", xin, None, span, _bins_tuple(_DIRECT, span, offset=int(info.min), closed=0),
                strategy, x_dtype)[0]


def _bincount_cut(counts, dtype, minlength):
    """NumPy's bincount from _bincount_full's host counts of data of `dtype`:
    negatives refused, length max(x) + 1 or minlength."""
    dt = np.dtype(np.uint8) if dtype == np.bool_ else np.dtype(dtype)
    info = np.iinfo(dt)
    if dt == np.int8:  # raw bytes 0x80..0xff are -128..-1
        counts = np.concatenate((counts[128:], counts[:128]))
    elif np.dtype(dtype) == np.bool_:  # every nonzero byte is True: NumPy counts it as 1
        counts = np.array([counts[0], counts[1:].sum()], counts.dtype)
    neg = -int(info.min)
    if neg and counts[:neg].any():
        raise ValueError("'list' argument must have no negative elements")
    pos = counts[neg:]
    nz = np.flatnonzero(pos)
    nbins = max(int(nz[-1]) + 1 if nz.size else 0, minlength)
    out = np.zeros(nbins, np.int64)
    keep = min(nbins, pos.size)
    out[:keep] = pos[:keep]
    return out


# the common calls' fast path straight from the call, no Python frame (_core.front; the functions above run the rest)
histogram = _core.front("histogram", histogram, _fast_plans, functools.partial(_devfast.histogram_, _fast_plans))
bincount = _core.front("bincount", bincount, None, functools.partial(_devfast.bincount_, bins_desc_of=_direct_bins))
