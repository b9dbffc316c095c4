"""histogram2d and histogramdd: NumPy's semantics, counted in one fused
kernel (issue 15).

The edges come from NumPy itself: ``np.histogramdd`` run on a proxy sample
of two points per dimension -- the data's min and max, in the sample's
dtype -- so every ``bins`` form (int, per-dimension ints, edge arrays,
mixed), ``range``, NaN ranges and all their errors are NumPy's own; the
result is remembered per (dtype, bins, range, min/max), so a repeated call
runs no NumPy code for its edges (issue 14's per-call cost).  The
kernel (C API ``histogramdd``: csrc/cpu/histdd.c, csrc/cuda/histdd.cu) bins
each coordinate exactly as NumPy's searchsorted-based rule does (the last
edge closed, values outside and NaN dropped; csrc/common/histdd.h) and
counts the linear bin index into privatized bins.
"""
from __future__ import annotations

import numpy as np

from . import _arrays, _backend, _core, _costmodel, _devfast, _dispatch
from ._arrays import DeviceArray, Lib
from ._histogram import _edges_for, _edges_formula, _minmax


def _stacked_dtype(dtypes):
    """The dtype np.array / np.atleast_2d gives a list of 1-D arrays of these
    dtypes -- NumPy's histogramdd stacks its sample so.  Not
    np.result_type(*dtypes): for three or more dtypes that promotes all at
    once (int8, uint16, float32 -> float32) where stacking promotes pairwise
    (-> float64)."""
    return np.array([np.zeros(1, d) for d in dtypes]).dtype


def _is_device(obj):
    return not isinstance(obj, np.ndarray) and (hasattr(obj, "__cuda_array_interface__") or (
        hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] in (2, 13)))


ZERO_DIMS = "object of too small depth for desired array"  # NumPy's error for an (N, 0) sample


def _coords(sample, bins=None, range=None):  # noqa: A002
    """NumPy's reading of `sample` -- an (N, D) array or a sequence of D
    1-D arrays -- as D 1-D views of one dtype (host arrays or DeviceArrays);
    an (N, 0) sample raises NumPy's ValueError, after its checks of `bins`
    and `range` against the dimensions."""
    cols, d = _coords_of(sample)
    if d == 0:
        try:
            m = len(bins)
        except TypeError:
            m = 0
        if m != 0:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
        if range is not None and len(range) != 0:
            raise ValueError("range argument must have one entry per dimension")
        raise ValueError(ZERO_DIMS)
    return cols, d


def _coords_of(sample):
    if _is_device(sample):
        x = _arrays.as_input(sample, "sample")
        if len(x.shape) != 2:
            if len(x.shape) == 1:
                return [x], 1
            raise ValueError(f"histogramdd: a device sample must be (N, D); got shape {tuple(x.shape)}")
        n, d = (int(v) for v in x.shape)
        if x.stride != 1:  # a column view of a 2-D array: made contiguous by the library (as_input did)
            raise ValueError("histogramdd: device sample is not C-contiguous")
        isz = np.dtype(x.dtype).itemsize
        cols = [DeviceArray(x.obj, x.lib, x.ptr + k * isz, n, d, x.dtype, x.device, x.stream, (n,))
                for k in range(d)]
        return cols, d
    if isinstance(sample, (list, tuple)) and sample and any(_is_device(c) for c in sample):
        cols = [_arrays.as_input(c, "sample") for c in sample]
        if any(not isinstance(c, DeviceArray) for c in cols):
            raise ValueError("histogramdd: mix of host and device coordinates; put all on one side")
        if len({c.length for c in cols}) != 1 or any(len(c.shape) != 1 for c in cols):
            np.atleast_2d([np.broadcast_to(np.zeros(()), tuple(c.shape)) for c in cols])  # NumPy's error
        dt = _stacked_dtype([c.dtype for c in cols])
        cols = [c if c.dtype == dt else _arrays.as_input(Lib.of(c.lib).astype(c.obj, dt), "sample") for c in cols]
        return cols, len(cols)
    try:
        n, d = sample.shape
        arr = sample
    except (AttributeError, ValueError):
        if isinstance(sample, (list, tuple)) and sample and all(
                isinstance(c, np.ndarray) and c.ndim == 1 for c in sample) and len({len(c) for c in sample}) == 1:
            dt = _stacked_dtype([c.dtype for c in sample])  # what np.atleast_2d(sample) holds, without the copy
            # (a subclass's data as NumPy's asarray gives it: a masked column's masked values too, no method runs)
            return [_arrays.native_host(np.asarray(c).astype(dt, copy=False)) for c in sample], len(sample)
        arr = np.atleast_2d(sample).T
        n, d = arr.shape
    arr = np.asarray(arr)
    return [_arrays.native_host(arr[:, k]) for k in range(d)], d  # (unaligned columns: an aligned copy each)


def _minmax_many(cols):
    """[(min, max), ...] of the columns as NumPy scalars of their dtype; device
    columns of one dtype in one pass and one wait.  # synchronize! (device input)"""
    if 1 < len(cols) <= 16 and all(isinstance(c, DeviceArray) for c in cols) and \
            len({np.dtype(c.dtype) for c in cols}) == 1:
        v = np.frombuffer(_core.minmax_many("cuda", [c.desc() for c in cols], cols[0].stream), dtype=cols[0].dtype)
        return [(v[2 * k], v[2 * k + 1]) for k in range(len(cols))]
    return [_minmax(c) for c in cols]


_NUM = (int, float)


def _hkey(v):
    """A cache key for `bins` / `range` that keeps every value's type (NumPy's
    edges depend on it); TypeError for what is not worth a key.  The usual
    forms (a number; [[lo, hi], [lo, hi]] of Python numbers) are keyed without
    recursion: the device fast path of histogram2d keys every call."""
    t = type(v)
    if t in _NUM:
        return (t, v)
    if (t is list or t is tuple) and len(v) == 2:
        a, b = v
        ta, tb = type(a), type(b)
        if (ta is list or ta is tuple) and (tb is list or tb is tuple) and len(a) == 2 and len(b) == 2:
            (a0, a1), (b0, b1) = a, b
            if type(a0) in _NUM and type(a1) in _NUM and type(b0) in _NUM and type(b1) in _NUM:
                return (t, ((ta, ((type(a0), a0), (type(a1), a1))), (tb, ((type(b0), b0), (type(b1), b1)))))
    if v is None:
        return None
    if isinstance(v, (bool, int, float, np.integer, np.floating)):
        return (type(v), v)
    if isinstance(v, (list, tuple)) and len(v) <= 64:
        return (type(v), tuple(_hkey(e) for e in v))
    if isinstance(v, np.ndarray) and v.size <= 65536 and v.dtype.kind in "biuf":
        return (np.ndarray, v.dtype.str, v.shape, v.tobytes())
    raise TypeError


def device_plan(table, x, bins, range, *head):  # noqa: A002
    """The device fast path's lookup, one for every op that keeps one: (key,
    plan) for a device array `x` of a dtype the fast path reads -- key
    (x's NumPy dtype, *head, bins key, range key), plan table's entry or
    None -- else (None, None) (a NumPy array, another dtype, bins / range
    not worth a key).  The caller stores a plan under the key after a
    general call (at most DEVICE_PLANS_MAX per table)."""
    if type(x) is np.ndarray:
        return None, None
    dt = _devfast.numpy_dtype(x)
    if dt is None:
        return None, None
    try:
        key = (dt, *head, _hkey(bins), _hkey(range))
        return key, table.get(key)
    except TypeError:  # bins / range that are not worth a key
        return None, None


DEVICE_PLANS_MAX = 256


class _Plan:
    """NumPy's edges of one (dtype, bins, range, data min/max) and what the
    kernel takes: every dimension's edges as one float64 array, their counts."""

    __slots__ = ("edges", "e_all", "ne", "nb", "total")

    def __init__(self, edges):
        for e in edges:
            e.flags.writeable = False
        self.edges = edges
        self.e_all = np.ascontiguousarray(np.concatenate([np.asarray(e, np.float64) for e in edges]))
        self.ne = np.array([len(e) for e in edges], np.int64)
        self.nb = tuple(len(e) - 1 for e in edges)
        self.total = int(np.prod(self.nb, dtype=np.int64))


_plans: dict = {}
_PLANS_MAX = 256


def _plan(cols, d, bins, range):  # noqa: A002 - NumPy's name
    """NumPy's edges, from np.histogramdd on the data's per-dimension min and
    max (read only for dimensions without a range), remembered per (dtype,
    bins, range, min/max): a repeated call runs no NumPy code for them."""
    dt = np.dtype(cols[0].dtype)
    n = cols[0].length if isinstance(cols[0], DeviceArray) else cols[0].shape[0]
    if n == 0:
        proxy = np.empty((0, d), dt)
    else:
        proxy = np.zeros((2, d), dt)
        try:  # the data's min and max matter only for dimensions without a range
            need = range is None or any(r is None for r in range)
        except TypeError:
            need = True  # a malformed range: NumPy raises on the proxy
        if need:
            for k, (lo, hi) in enumerate(_minmax_many(cols)):  # synchronize! (device input: once)
                proxy[0, k], proxy[1, k] = lo, hi
    try:
        key = (dt.str, proxy.shape, proxy.tobytes(), _hkey(bins), _hkey(range))
        hit = _plans.get(key)
    except TypeError:
        key = hit = None
    if hit is not None:
        return hit
    with np.errstate(invalid="ignore"):
        _, edges = np.histogramdd(proxy, bins=bins, range=range)
    plan = _Plan(list(edges))
    if key is not None:
        if len(_plans) >= _PLANS_MAX:
            _plans.clear()
        _plans[key] = plan
    return plan


_EXACT_F64 = 2**53


def _needs_exact(cols, edges):
    """Whether float64 compares could differ from NumPy's: a 64-bit integer
    sample (NumPy compares it with integer edges as integers) against an
    integer edge array with an edge of magnitude 2^53 or more (below that
    every compare rounds alike: float64 holds the edges exactly, and a value
    beyond them rounds to a float no closer)."""
    if np.dtype(cols[0].dtype).kind not in "iu" or np.dtype(cols[0].dtype).itemsize != 8:
        return False
    return any(e.dtype.kind in "iu" and e.size and (int(e.max()) >= _EXACT_F64 or int(e.min()) <= -_EXACT_F64)
               for e in edges)


def _exact_counts(cols, edges, nb, w):
    """np.histogramdd's counting on host columns, in its own compares
    (np.searchsorted of each column in its edges, the last edge closed)."""
    n = cols[0].shape[0]
    idx, ok = np.zeros(n, np.intp), np.ones(n, bool)
    for c, e, m in zip(cols, edges, nb):
        k = np.searchsorted(e, c, side="right")
        k[c == e[-1]] -= 1
        ok &= (k >= 1) & (k <= m)
        idx = idx * m + (k - 1)
    counts = np.bincount(idx[ok], weights=None if w is None else w[ok], minlength=int(np.prod(nb, dtype=np.int64)))
    return counts.astype(np.float64).reshape(tuple(nb))


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, stream=None):  # noqa: A002
    """Multidimensional histogram, exactly like :func:`numpy.histogramdd`.

    NumPy's parameters: `sample` is an (N, D) array or a sequence of D
    arrays of length N (NumPy, CuPy or PyTorch); `bins` an int for every
    dimension, a sequence of ints and/or edge arrays, one per dimension;
    `range` a sequence of D ``(lower, upper)`` pairs or None entries; values
    outside and NaN are ignored, each dimension's last bin is closed;
    `density` normalises to a probability density; `weights` (N values)
    makes the result a sum of weights.  Returns ``(H, edges)``: H float64 of
    shape ``(nbins_0, ..., nbins_{D-1})`` and the list of D edge arrays.

    gpusync counts with one fused kernel: every coordinate is binned by
    NumPy's rule (a guess from equal-width edges, checked against the
    edges, or a binary search) and the C-order linear bin is counted in
    privatized bins (shared memory per block on the GPU when they fit,
    else global atomics; per thread on the CPU).  Device input gives a
    device H (float64 counts written by the kernel) and device edges
    (equal-width ones written by their formula); with every dimension's
    range given the call does not wait for the device, else one min/max
    pass over all dimensions without a range waits for it.  NumPy's edges
    are computed once per (dtype, bins, range, data min/max) and reused.
    """
    with _arrays.call_stream(stream, sample if _is_device(sample) else None):
        return _histogramdd_impl(sample, bins, range, density, weights)


def _histogramdd_impl(sample, bins, range, density, weights):  # noqa: A002
    cols, d = _coords(sample, bins, range)
    for c in cols:
        _arrays.check_dtype(c.dtype, "sample", "histogramdd")
    device = isinstance(cols[0], DeviceArray)
    n = cols[0].length if device else cols[0].shape[0]
    plan = _plan(cols, d, bins, range)
    edges = plan.edges
    nb = list(plan.nb)
    w = None
    if weights is not None:
        w = _arrays.as_input(weights, "weights")
        wn = len(w.shape)
        if wn == 0:
            raise ValueError("object of too small depth for desired array")
        if wn > 1:
            raise ValueError("object too deep for desired array")
        if (w.length if isinstance(w, DeviceArray) else w.shape[0]) != n:
            raise ValueError("The weights and list don't have the same length.")
        if isinstance(w, DeviceArray) != device:
            raise ValueError("histogramdd: sample and weights must both be host arrays or both device arrays")
        if np.dtype(w.dtype).kind not in "biuf":
            raise TypeError(f"Cannot cast array data from {np.dtype(w.dtype)!r} to dtype('float64') "
                            "according to the rule 'safe'")
    e_all, ne, total = plan.e_all, plan.ne, plan.total
    # no bins in a dimension (one edge), or 64-bit integers against integer edges beyond 2^53: NumPy's own
    # compares (np.searchsorted) on the host, not the kernels' float64 ones
    exact = total == 0 or _needs_exact(cols, edges)
    be = _backend.backend()
    notes, pred = (), None
    if not device and be == "cuda" and not exact:
        be, notes, pred = _host_engine(cols[0].dtype, d, n, total, w is not None)
    if device and be == "cuda" and not exact:
        lib = Lib.of(cols[0].lib)
        dev = cols[0].device
        wd = None
        if w is not None:
            wv = w if w.dtype == np.float64 else _arrays.as_input(lib.astype(w.obj, np.float64), "weights")
            wd = wv.desc()
        out = lib.empty(total, np.float64, dev)  # float64 counts straight from the kernel: no cast
        _core.histogramdd("cuda", [c.desc() for c in cols], e_all, ne, wd,
                          _dispatch.new_desc(lib, out, total, np.float64, dev), cols[0].stream)
        hist = out.reshape(tuple(nb))
        # equal-width edges written on the device by their formula (no host copy); others copied
        edges_out = [_edges_for(cols[0], e, True) for e in edges]
    else:
        if device:  # forced CPU backend with device input: copy, count, copy back
            hcols = [c.to_host() for c in cols]
            wh = None if w is None else w.to_host()
        else:
            hcols = cols
            wh = w
        if exact:
            hist = _exact_counts(hcols, edges, nb, None if wh is None else np.asarray(wh, np.float64))
        else:
            if be == "cuda":  # the CUDA backend stages host coordinates as contiguous blocks
                hcols = [np.ascontiguousarray(c) for c in hcols]
            if wh is not None:
                wh = np.ascontiguousarray(wh, dtype=np.float64) if be == "cuda" else np.asarray(wh, np.float64)
            # the CPU engine counts in float64 (NumPy's result type: no cast); the CUDA engine stages int64 counts
            out = np.empty(total, np.float64 if wh is not None or be == "cpu" else np.int64)
            _core.histogramdd(be, list(hcols), e_all, ne, wh, out, _arrays.host_stream())
            hist = out.astype(np.float64, copy=False).reshape(tuple(nb))
        edges_out = [e.copy() for e in edges]  # NumPy's fresh arrays (the plan keeps its own)
        if device:
            lib = Lib.of(cols[0].lib)
            hist = lib.from_host(hist, cols[0].device)
            edges_out = [lib.from_host(e, cols[0].device) for e in edges]
    on_gpu = be == "cuda" and not exact
    t = 0 if on_gpu else 1 if exact else _core.cpu_last_threads()
    if exact:
        notes = ("no bins, or a 64-bit integer sample against integer edges beyond 2^53: NumPy's compares "
                 "(np.searchsorted) on the calling thread",)
    else:
        notes = _NOTES + notes + (("device input counted on the CPU engine (forced): copied there and back",)
                                  if device and not on_gpu else ())
    _dispatch.record("histogramdd", engine="cuda" if on_gpu else "cpu" if t > 1 else "caller", strategy="auto",
                     used="exact" if exact else "privatized", n=n, dtype=_dtname(cols[0].dtype),
                     place="device" if device else "host", threads=t, predicted=pred, notes=notes)
    if density:
        s = hist.sum()
        for i in np.arange(d):
            shape = np.ones(d, int)
            shape[i] = nb[i]
            de = edges_out[i][1:] - edges_out[i][:-1] if device else np.diff(edges[i])  # (on the device: no copy)
            hist = hist / de.reshape(tuple(shape))
        hist /= s
    return hist, edges_out


def _histogram2d_bins(bins):
    """np.histogram2d's reading of `bins`: one edge array (neither an int nor
    a pair) stands for both dimensions."""
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        edges = np.asarray(bins)
        return [edges, edges]
    return bins


_NOTES = ("one fused kernel over all dimensions",)
_DTNAMES: dict = {}


def _dtname(dt) -> str:
    """str(dtype) for the plan, remembered (NumPy's str of a dtype runs
    Python code: microseconds of a small call)."""
    name = _DTNAMES.get(dt)
    if name is None:
        name = _DTNAMES[dt] = str(np.dtype(dt))
    return name


def _model_shape(itemsize, d, n, total, weighted):
    """The cost model's view of one histogramdd (csrc/cpu/histdd.c on the
    CPU, csrc/cuda/histdd.cu on the GPU): n points of d coordinates, each
    coordinate binned at the model's per-element histogram rate, so n * d
    elements of `itemsize` bytes (the weights' 8 bytes a point shared among
    them); the `total` bins come back.  The CPU engine keeps, for every
    thread beyond the first, a private copy of all the bins -- 32-bit counts,
    float64 weight sums -- that it zeroes and adds up: the model's
    private-copy term (_costmodel._cpu_time: `bins` 8-byte cells per extra
    thread at merge_bw) gets that copy's bytes / 8."""
    in_bytes = itemsize + (-(-8 // d) if weighted else 0)
    copy_bytes = total * (8 if weighted else 4)
    return _costmodel.Shape("histogram", n * d, in_bytes, 8 * total, -(-copy_bytes // 8), True, "host")


_choices: dict = {}  # the model's host engine choice per call shape and state (_host_engine)


def _host_engine(dtype, d, n, total, weighted):
    """The backend that counts host coordinates on a machine with a usable
    GPU: the cost model's choice between the CPU engine (the calling thread
    or the pool: the C engine sizes its threads) and the GPU through PCIe,
    among the engines the forced backend / GPUSYNC_ENGINE allow (no split:
    one fused kernel), for the call described by _model_shape.  Returns
    (backend, notes, the model's predicted seconds per candidate or None
    when it did not choose), remembered per shape, state and constants."""
    m = _dispatch.machine()
    forced = _backend.forced()
    key = (np.dtype(dtype).itemsize, d, n, total, weighted, forced, _dispatch.env_engine(), _dispatch._gpu_usable())
    hit = _choices.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    allowed, why = _dispatch._allowed(forced)
    engines = _dispatch.host_engines(allowed, split=False)
    notes = (why,) if why else ()
    if engines == ("cuda",) or "cuda" not in engines:
        res = ("cuda" if "cuda" in engines else "cpu"), notes, None
    else:
        ch = _costmodel.choose(m, _model_shape(np.dtype(dtype).itemsize, d, n, total, weighted), engines)
        pred = ", ".join(f"{k} {v * 1e3:.3g} ms" for k, v in ch.predicted.items())
        res = ("cuda" if ch.engine == "cuda" else "cpu"), notes + (f"the cost model chose {ch.engine} ({pred})",), \
            ch.predicted
    if len(_choices) >= _PLANS_MAX:
        _choices.clear()
    _choices[key] = (m, res)
    return res


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, stream=None):  # noqa: A002
    """Bi-dimensional histogram of `x` and `y`, exactly like
    :func:`numpy.histogram2d`: `bins` an int, ``[int, int]``, an edge array
    for both or ``[edges_x, edges_y]`` (or mixed); `range` ``[[xmin, xmax],
    [ymin, ymax]]``; `density`; `weights`.  Returns ``(H, xedges,
    yedges)``.  Counted by :func:`histogramdd`'s fused kernel.

    A repeated call on CuPy / PyTorch arrays with `bins` and `range` given
    (the device fast path) returns the three as views of one allocation,
    written by the count kernel: NumPy's values, dtypes and shapes, no
    element shared; an edge array kept alive keeps the counts' memory."""
    host = hit = None
    if type(x) is np.ndarray and type(y) is np.ndarray and weights is None and not density and stream is None:
        try:  # NumPy arrays, a repeated bins and range: the host fast path
            host = (x.dtype, y.dtype, _hkey(bins), _hkey(range))
            hit = _host2d.get(host)
        except TypeError:  # bins / range that are not worth a key
            host = hit = None
        if hit is not None:
            r = _host2d_counts(x, y, hit)
            if r is not None:
                return r
    fast = None
    if stream is None and weights is None and not density:
        fast, hit = device_plan(_fast2d, x, bins, range)
        if hit is not None:
            r = _devfast.histogram2d_(x, y, hit)  # device arrays' fast path
            if r is not NotImplemented:
                return r
    # np.histogram2d's own checks and reading of `bins`
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    bins2 = _histogram2d_bins(bins)
    with _arrays.call_stream(stream, x if _is_device(x) else None):
        hist, edges = _histogramdd_impl([x, y], bins2, range, density, weights)
    if fast is not None and len(_fast2d) < DEVICE_PLANS_MAX:
        _remember2d(fast, y, bins2, range)
        _dispatch.fast_ready()  # the device fast path on (not under a forced cpu backend; GPUSYNC_DEBUG per call)
    if host is not None and hit is None and host[0] == host[1] and host[0].isnative and len(_host2d) < _PLANS_MAX:
        _remember_host2d(host, bins2, range)
    return hist, edges[0], edges[1]


_host2d: dict = {}  # (x dtype, y dtype, bins key, range key) -> the host fast path's plan


def _remember_host2d(key, bins, range):  # noqa: A002
    """After a general-path histogram2d of two NumPy arrays of one native
    dtype (what the general path hands the engine as they are): the host
    fast path's plan of the same dtype, bins and range, when both ranges are
    given (the edges do not depend on the data)."""
    try:
        if range is None or len(range) != 2 or any(r is None for r in range):
            return
    except TypeError:
        return
    proxy = np.zeros((2, 2), key[0])
    try:
        plan = _plan([proxy[:, 0], proxy[:, 1]], 2, bins, range)  # the general path's cached plan
    except (TypeError, ValueError):
        return
    if len(plan.nb) == 2:
        _host2d[key] = plan


def _host2d_counts(x, y, plan):
    """histogram2d of two NumPy arrays of one dtype whose edges are known
    (_remember_host2d) on the CPU engine, without the general path's
    per-call work -- the same counts, edges and plan record.  None where the
    general path decides (not 1-D, lengths that differ, the GPU chosen)."""
    if x.ndim != 1 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        return None
    x, y = _arrays.native_host(x), _arrays.native_host(y)  # (an unaligned view: an aligned copy)
    n = x.shape[0]
    notes, pred = (), None
    if _backend.backend() == "cuda":
        be, notes, pred = _host_engine(x.dtype, 2, n, plan.total, False)
        if be != "cpu":
            return None
    out = np.empty(plan.total, np.float64)
    _core.histogramdd("cpu", [x, y], plan.e_all, plan.ne, None, out, _arrays.host_stream())
    t = _core.cpu_last_threads()
    _dispatch.record("histogramdd", engine="cpu" if t > 1 else "caller", strategy="auto", used="privatized", n=n,
                     dtype=_dtname(x.dtype), threads=t, notes=_NOTES + notes, predicted=pred)
    ex, ey = plan.edges
    return out.reshape(plan.nb), ex.copy(), ey.copy()  # NumPy's fresh arrays (the plan keeps its own)


_fast2d: dict = {}  # (dtype, bins key, range key) -> the device fast path's plan (gpusync/_devfast.py)


def _remember2d(fast, y, bins, range):  # noqa: A002
    """After a general-path histogram2d of device arrays: the fast path's plan
    of the same dtype, bins and range, when both ranges are given (no data
    min/max in the edges), the counts ran on the GPU and both dimensions'
    edges come from a formula (the uniform_edges kernel writes them)."""
    try:
        if range is None or len(range) != 2 or any(r is None for r in range):
            return
    except TypeError:
        return
    if _backend.backend() != "cuda" or _devfast.numpy_dtype(y) != fast[0]:
        return
    proxy = np.zeros((2, 2), fast[0])
    try:
        plan = _plan([proxy[:, 0], proxy[:, 1]], 2, bins, range)  # the general path's cached plan
    except (TypeError, ValueError):
        return
    formulas = [_edges_formula(e) for e in plan.edges]
    if len(plan.nb) == 2 and all(f is not None for f in formulas):
        # float64 edges (NumPy's for float ranges): the kernel's copy of e_all is them (_devfast.histogram2d_)
        ends = None
        if all(e.dtype == np.float64 for e in plan.edges):
            ends = (plan.total, plan.total + len(plan.edges[0]), plan.total + len(plan.e_all))
        _fast2d[fast] = (plan.e_all, plan.ne, plan.nb, formulas, plan.edges, ends)
