"""binned_statistic: ``scipy.stats.binned_statistic`` for one-dimensional x,
with the per-bin state updated under per-bin mutexes.

The edges and bin numbers follow SciPy's own rules (scipy/stats/
_binned_statistic.py), reproduced here so that SciPy is not needed at run
time: equal-width edges from ``np.linspace`` in x's float dtype, bin numbers
from ``np.digitize``, and values "on" the last edge -- equal to it after
``np.around`` to a precision derived from the smallest bin width -- moved
into the last bin.  That last rule becomes one number, `top`: the largest
value of x's dtype that SciPy still puts into the last bin.

Non-finite x follows the SciPy installed (:func:`nan_only`): SciPy 1.18
(gh-23751) refuses a NaN in x whatever the bins are and bins +-inf as
outliers (with ``range=None`` the range is that of the finite values);
earlier releases refuse NaN and inf where `bins` is a number and bin NaN
with explicit edges as an outlier (bin ``nbins + 1``).
"""
from __future__ import annotations

import functools
import operator
import re
import sys
from collections import namedtuple

import numpy as np

from . import _arrays, _backend, _binstat_more, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib
from ._histdd import DEVICE_PLANS_MAX, device_plan  # (one lookup for every device fast path)
from ._histogram import _edges_for, _edges_formula, _minmax

STATISTICS = tuple(sorted(_core.STATISTICS, key=_core.STATISTICS.get))  # codes defined once in C
STRATEGIES = _dispatch.STRATEGIES["binned_statistic"]

BinnedStatisticResult = namedtuple("BinnedStatisticResult", ("statistic", "bin_edges", "binnumber"))

_RULES: list = []  # [nan_only()], read once (tests set it to check both rule sets)


def nan_only() -> bool:
    """Whether SciPy's rules for non-finite x are 1.18's (gh-23751): a NaN
    anywhere in x raises whatever `bins` is, and +-inf is an outlier like any
    value beyond the edges, the range of ``range=None`` that of the finite
    values.  Before 1.18 a NaN or inf in x raised where `bins` is an int
    (index_bins), and NaN with explicit edges was an outlier (SciPy's
    digitize).  gpusync follows the SciPy installed -- the scipy.stats a user
    checks it against -- and 1.18's rules where SciPy is not installed."""
    if not _RULES:
        try:
            from importlib.metadata import version

            v = version("scipy")
        except Exception:  # noqa: BLE001 (no metadata: an imported SciPy's own version, else none)
            v = getattr(sys.modules.get("scipy"), "__version__", "")
        m = re.match(r"(\d+)\.(\d+)", v)
        _RULES.append(m is None or (int(m.group(1)), int(m.group(2))) >= (1, 18))
    return _RULES[0]


def index_bins(bins) -> bool:
    """Whether `bins` is an int to SciPy (operator.index takes it: int, NumPy integers, bool) -- where SciPy
    1.17 checks x for NaN / inf; a float such as 2.0 makes as many equal-width bins without that check."""
    try:
        operator.index(bins)
    except TypeError:
        return False
    return True



def _edges(xmin, xmax, x_dtype, bins, range_):
    """SciPy's _bin_edges for one dimension."""
    edges_dtype = x_dtype if np.issubdtype(x_dtype, np.floating) else np.dtype(float)
    if range_ is not None:  # SciPy checks the range first, even where explicit edges make it unused
        if len(range_) != 2:
            raise ValueError(f"range given for {len(range_)} dimensions; 1 required")
        if range_[1] < range_[0]:
            raise ValueError("In range, start must be <= stop")
    if np.ndim(bins) != 0:
        if type(bins) is not np.ndarray and hasattr(bins, "__cuda_array_interface__"):
            bins = _arrays.as_input(bins, "bins").to_host()  # device edges (CuPy / PyTorch): read once
        return np.asarray(bins, edges_dtype)
    if range_ is None:
        smin, smax = float(xmin), float(xmax)
    else:
        smin, smax = float(range_[0]), float(range_[1])
    if smin == smax:
        smin, smax = smin - 0.5, smax + 0.5
    return np.linspace(smin, smax, int(bins) + 1, dtype=edges_dtype)


_ORD_INT = {2: np.int16, 4: np.int32, 8: np.int64}  # a float's bits as the signed integer of its width


def _ordinal(v: np.ndarray) -> np.ndarray:
    """Integers in the order of the floats (for a binary search over them)."""
    it = _ORD_INT[v.dtype.itemsize]
    i = v.view(it).astype(np.int64)
    sign = np.int64(np.iinfo(it).min)
    return np.where(i < 0, sign - i, i)


def _from_ordinal(o: int, dt: np.dtype):
    it = _ORD_INT[np.dtype(dt).itemsize]
    sign = int(np.iinfo(it).min)
    i = o if o >= 0 else sign - o
    return np.array([i], dtype=it).view(dt)[0]


def _top(edges: np.ndarray, x_dtype: np.dtype) -> float:
    """The largest x (of x's dtype) that SciPy's on-edge rule puts into the
    last bin: x >= e[-1] and around(x, d) == around(e[-1], d)."""
    dmin = np.diff(edges).min()
    if dmin == 0:
        raise ValueError("The smallest edge difference is numerically 0.")
    decimal = int(-np.log10(dmin)) + 6
    return _top_cached(edges[-1:].tobytes(), edges.dtype.str, decimal, np.dtype(x_dtype).str)


@functools.lru_cache(maxsize=256)
def _top_cached(last_bytes, edges_dtype, decimal, x_dtype):
    with np.errstate(all="ignore"):  # np.around overflows near the dtype's maximum: that is "not equal"
        return _top_search(last_bytes, edges_dtype, decimal, x_dtype)


def _top_search(last_bytes, edges_dtype, decimal, x_dtype):
    last = np.frombuffer(last_bytes, dtype=edges_dtype)[0]
    x_dtype = np.dtype(x_dtype)
    target = np.around(last, decimal)
    if x_dtype.kind == "f":
        dt = np.dtype(x_dtype)

        def ok(o):
            t = _from_ordinal(o, dt)
            return bool(t >= last and np.around(np.array([t], dt), decimal)[0] == target)

        lo = int(_ordinal(np.array([last], dt))[0])  # e[-1] itself (exact in x's dtype)
        if not ok(lo):
            return float(last)
        hi = int(_ordinal(np.array([np.finfo(dt).max], dt))[0])
    else:
        if not np.isfinite(last):
            return float(last)
        info = np.iinfo(x_dtype)
        lo = max(int(np.ceil(last)), int(info.min))  # the smallest x of x's dtype at or above e[-1]
        if lo > info.max:
            return float(last)

        def ok(t):
            return bool(np.around(np.array([t], x_dtype), decimal)[0] == target)

        if not ok(lo):
            return float(last)
        hi = int(info.max)
    if ok(hi):
        lo = hi
    while hi - lo > 1:  # ok(lo), not ok(hi)
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return float(_from_ordinal(lo, np.dtype(x_dtype))) if x_dtype.kind == "f" else float(lo)


def _may_overflow(values):
    """Whether squared deviations of these values can overflow float64 (a
    finite |value| above 2^500); else a NaN std/var is an empty bin or NaN data."""
    with np.errstate(invalid="ignore", over="ignore"):  # (2^500 is inf as float32: nothing is above it)
        big = np.abs(values) > 2.0**500
    return bool((big & np.isfinite(values)).any())


def _huge(values):
    """_may_overflow for host or device values, without copying device
    values to the host (only float64 can exceed 2^500): for device values
    one min/max pass, and an elementwise test only when NaN or inf is among
    them."""
    if np.dtype(values.dtype) != np.float64:
        return False
    if isinstance(values, DeviceArray):
        if values.length == 0:
            return False
        lo, hi = _minmax(values)  # one read of the values (a NaN makes lo NaN)  # synchronize!
        if np.isfinite(lo) and np.isfinite(hi):  # every value finite: the largest |value| is |lo| or |hi|
            return bool(max(abs(float(lo)), abs(float(hi))) > 2.0**500)
        # NaN or inf among the values: which finite ones are huge takes the elementwise test
        if values.lib == "cupy":
            import cupy as cp

            a = cp.abs(values.obj)
            return bool(cp.any((a > 2.0**500) & (a < cp.inf)))
        if values.lib == "torch":
            a = values.obj.abs()
            return bool(((a > 2.0**500) & (a < float("inf"))).any())
        return _may_overflow(values.to_host())
    return _may_overflow(np.asarray(values))


def _overflowed_spread(result, values, binnumber, nb):
    """SciPy's std of a bin of finite values is never NaN: it sums the squared
    deviations from the bin's mean, and an overflow there is +inf.  The
    running (Welford) update overflows to inf - inf = NaN (or -inf) instead;
    such bins -- non-empty, every value finite, NaN or negative result --
    are +inf."""
    cnt = np.bincount(binnumber, minlength=nb + 2)[1:nb + 1]
    bad = np.bincount(binnumber[~np.isfinite(values)], minlength=nb + 2)[1:nb + 1]
    out = np.array(result, np.float64, copy=True)
    out[~(out >= 0) & (cnt > 0) & (bad == 0)] = np.inf
    return out


@_arrays.takes_stream
def binned_statistic(x, values, statistic="mean", bins=10, range=None, *, strategy="auto", stream=None):  # noqa: A002
    """Compute a binned statistic, like ``scipy.stats.binned_statistic``.

    `statistic` is ``"count"``, ``"sum"``, ``"mean"``, ``"std"``, ``"median"``
    (bin numbers from gpusync's kernel, then a segmented sort -- two stable
    sorts of NumPy / CuPy -- and SciPy's midpoint rule), ``"min"``, ``"max"``,
    a callable (SciPy's own code on the host, with a one-time warning that
    it is not accelerated) (SciPy's meanings: empty bins give 0 for count and sum, NaN for
    the others; a NaN value makes its bin's sum, mean, std and max NaN, while
    min skips it) or ``"var"`` (the square of ``"std"``; not in SciPy).
    `bins` is a number of equal-width bins or the sequence of edges, `range`
    ``(lower, upper)``; x outside the edges is not counted, and x equal to the
    upper edge (to SciPy's rounding) falls into the last bin.  Non-finite x
    follows the SciPy installed (1.18's rules without SciPy): from SciPy 1.18
    (gh-23751) NaN x is a ValueError whatever `bins` is and +-inf x an
    outlier (bin 0 / nbins + 1; with ``range=None`` the equal-width bins
    span the finite values); before 1.18, with `bins` an int NaN or
    infinite x is a ValueError, and with explicit edges (or a float number
    of bins, which SciPy does not check) NaN x is an outlier
    (bin number nbins + 1), as SciPy's digitize makes it.  Where SciPy's rounding overflows (``np.around`` of float16 x,
    of integers near their dtype's limit, or of values near the float
    maximum) SciPy drops x equal to the last edge; gpusync keeps it in the
    last bin.  ``std``/``var`` of a bin of finite values whose squared
    deviations overflow is inf, as SciPy gives.  bool x is a TypeError
    (SciPy fails on it too); bool values count as 0.0 / 1.0, as in SciPy.
    SciPy's one-dimension spellings ``bins=[n]``, ``bins=[edges]`` and
    ``range=[(lower, upper)]`` are taken.

    `strategy`: ``"privatized"`` (lock-free; what ``"auto"`` takes on the GPU
    whenever the bins fit a block's shared memory -- about 4,096 to 10,000
    bins, by statistic) keeps per-bin partials in each block's shared
    memory, updated with shared-memory atomics (count and float64 sums; for
    std the float64 sum of values and of squares, with a second pass of
    SciPy's own formula for bins whose mean is large against their spread;
    min/max as atomicMin/Max of the floats' bits as ordered integers), and
    adds them to global partials with atomics (csrc/cuda/binstat_priv.cu:
    the bounds are there; float sums vary in the last bits from run to run);
    the seed's mutex techniques: ``"shared"`` keeps every bin's state in
    each block's shared memory, updated under per-bin shared-memory mutexes,
    and merges the blocks' states under per-bin global mutexes (parallel
    Welford merge); ``"global"`` takes the global per-bin mutex for every
    value; ``"auto"``.  On the CPU engine ``"privatized"`` runs as
    ``"shared"``: private bins for each of a fixed number of parts of the
    points (set by the points, the bins and the thread limit), added in part
    order, so its sums are the same bits in every call.

    Returns ``(statistic, bin_edges, binnumber)``: float64 per bin, the edges
    (x's float dtype), and SciPy's int64 bin number of each value (0 below,
    1..nbins, nbins + 1 above or NaN).  Device input gives device results
    (equal-width edges written on the device).  The call waits for the GPU
    when `bins` is a number (SciPy's range and its check that x is finite
    read x's min and max; with `range` given that read follows the
    statistic's launch), for std / var of float64 values (the overflow
    check), and with the mutex strategies (their time-out flag); the
    privatized strategy with explicit edges returns without waiting.
    """
    # SciPy bins a scalar or 0-d x (and values) as one sample, whatever the statistic (host values: a device
    # array, even one that offers DLPack alone, is its library's to read)
    x, values = (np.atleast_1d(v) if np.ndim(v) == 0 and _arrays._device_target(v) is None else v
                 for v in (x, values))
    bins0 = bins
    bins, range = _scipy_1d(bins, range)
    # bins=[n] with a range: SciPy's per-dimension number, which it does not check for NaN / inf x (they are
    # outliers); its dd route, as for (V, N) values, keeps that rule
    per_dim = bins is not bins0 and np.ndim(bins) == 0 and range is not None
    if per_dim or np.ndim(values) >= 2 and np.ndim(x) == 1:  # (np.ndim reads a device array's .ndim: no copy)
        # several value arrays (SciPy's (V, N) values): SciPy's own route, binned_statistic_dd of [x]
        from . import _binstat_dd
        r = _binstat_dd.binned_statistic_dd([x], values, statistic,
                                            bins=bins if np.ndim(bins) == 0 and not per_dim else [bins],
                                            range=None if range is None else [range], strategy=strategy,
                                            stream=stream)
        return BinnedStatisticResult(r.statistic, r.bin_edges[0], r.binnumber)
    fast = None
    if stream is None and strategy == "auto" and type(statistic) is str:
        fast, hit = device_plan(_fast1d, x, bins, range, statistic)
        if hit is not None:
            r = _devfast.binned_statistic_(x, values, hit)  # device arrays' fast path
            if r is not NotImplemented:
                return r
    with _arrays.call_stream(stream, x):
        if isinstance(statistic, str) and statistic == "median" or statistic is np.median:
            return _median(x, values, bins, range, strategy)
        if callable(statistic):
            return _callable(x, values, statistic, bins, range)
        res = _binned_statistic_impl(x, values, statistic, bins, range, strategy=strategy)
    if fast is not None and fast not in _fast1d and len(_fast1d) < DEVICE_PLANS_MAX:
        _remember1d(fast, values, bins, range)
    return res


def _scipy_1d(bins, range_):  # noqa: A002
    """SciPy's 1-D spellings of `bins` and `range`: a `bins` sequence of one
    entry (``[5]``, ``[edges]``) and a `range` of one pair (``[(lo, hi)]``)
    are the one dimension's specs, which SciPy hands to
    binned_statistic_dd as they are: unwrapped here."""
    if isinstance(bins, (list, tuple)) or isinstance(bins, np.ndarray) and bins.ndim >= 1:
        if len(bins) == 1:
            bins = bins[0]
    if range_ is not None:
        try:
            if len(range_) == 1:
                range_ = range_[0]
        except TypeError:
            pass
    return bins, range_


_fast1d: dict = {}  # (dtype, statistic, bins key, range key) -> the device fast path's plan (gpusync/_devfast.py)


def _remember1d(fast, values, bins, range):  # noqa: A002
    """After a general-path binned_statistic of device arrays that ran the
    privatized kernel: the fast path's plan of the same dtype, statistic,
    bins and range, when bins is a number and range is given (no data
    min/max in the edges: the kernel's report checks that x is finite) and
    values have x's float dtype."""
    dt, statistic = fast[0], fast[1]
    if (np.ndim(bins) != 0 or range is None or dt.kind != "f" or dt.itemsize not in (4, 8)
            or _devfast.numpy_dtype(values) != dt or _backend.backend() != "cuda" or statistic not in STATISTICS
            or not (nan_only() or index_bins(bins))):  # (SciPy 1.17 does not check x where bins is a float)
        return
    plan = _dispatch.last_plan()
    if plan is None or plan["engine"] != "cuda" or plan["strategy_used"] != "privatized":
        return
    try:
        edges, top = _edges_top(np.zeros(1, dt), bins, range, defer=True)
    except (TypeError, ValueError):
        return
    formula = _edges_formula(edges)  # (None: no formula gives NumPy's edges; copied per call)
    _fast1d[fast] = (dt, np.ascontiguousarray(edges, dtype=np.float64), top, _core.STATISTICS[statistic],
                     [(formula, edges)])
    _dispatch.fast_ready()  # the device fast path on (not under a forced cpu backend; GPUSYNC_DEBUG per call)


def _median(x, values, bins, range, strategy):  # noqa: A002
    """'median': gpusync's bin numbers, then a segmented sort (_binstat_more)."""
    _, edges, binnumber = _binned_statistic_impl(x, values, "count", bins, range, strategy=strategy)
    vv = _arrays.checked_input(values, "values", "binned_statistic")
    obj = vv.obj if isinstance(vv, DeviceArray) else vv
    nb = len(edges) - 1
    if isinstance(vv, DeviceArray) and vv.lib != "cupy":  # no segmented sort through this library: on the host
        lib = Lib.of(vv.lib)
        res = _binstat_more.median(lib.to_host(binnumber), vv.to_host(), nb)
        return BinnedStatisticResult(lib.from_host(res, vv.device), edges, binnumber)
    return BinnedStatisticResult(_binstat_more.median(binnumber, obj, nb), edges, binnumber)


def _callable(x, values, statistic, bins, range):  # noqa: A002
    xv, vv = _arrays.as_input(x, "x"), _arrays.as_input(values, "values")
    host = [v.to_host() if isinstance(v, DeviceArray) else v for v in (xv, vv)]
    res = _binstat_more.scipy_callable(host[0], host[1], statistic, bins, range)
    if isinstance(xv, DeviceArray):
        lib = Lib.of(xv.lib)
        return BinnedStatisticResult(*(lib.from_host(np.asarray(r), xv.device) for r in res))
    return BinnedStatisticResult(*res)


def _as_float64(v):
    """A float64 copy of a host array or DeviceArray (its library's astype)."""
    if not isinstance(v, DeviceArray):
        return np.asarray(v, np.float64)
    return Lib.of(v.lib).astype(v.obj, np.float64)


def _binned_statistic_impl(x, values, statistic="mean", bins=10, range=None, strategy="auto"):
    if statistic not in STATISTICS:
        if callable(statistic) or statistic == "median":
            raise ValueError(f"statistic {statistic!r} is not supported by gpusync "
                             f"(supported: {', '.join(STATISTICS)}); use scipy.stats.binned_statistic")
        raise ValueError(f"invalid statistic {statistic!r}")
    _dispatch.check_strategy("binned_statistic", strategy)
    xv = _arrays.checked_input(x, "x", "binned_statistic")
    vv = _arrays.checked_input(values, "values", "binned_statistic")
    if np.dtype(xv.dtype) == np.bool_:  # SciPy's arithmetic on the edges fails for bool too
        raise TypeError("binned_statistic: x has dtype bool, which is not supported "
                        "(scipy.stats.binned_statistic cannot bin it either); convert it to a number type")
    if np.dtype(vv.dtype) == np.bool_:  # SciPy's statistics of bool values are those of 0.0 / 1.0
        vv = _arrays.checked_input(_as_float64(vv), "values", "binned_statistic")
    for v, name in ((xv, "x"), (vv, "values")):
        if len(v.shape) != 1:
            raise ValueError(f"binned_statistic: {name} must be 1-D; got shape {tuple(v.shape)}")
    if vv.shape[0] != xv.shape[0]:
        raise ValueError("The number of `values` elements must match the length of each `sample` dimension.")
    on_device = isinstance(xv, DeviceArray)
    if on_device != isinstance(vv, DeviceArray):
        raise ValueError("binned_statistic: x and values must both be host arrays or both device arrays")
    if on_device and vv.device != xv.device:
        raise ValueError(f"binned_statistic: x on device {xv.device}, values on device {vv.device}")

    x_dtype = np.dtype(xv.dtype)
    n = xv.shape[0]
    # SciPy's check of x for non-finite values where it needs no range from x (bins a number and range
    # given; SciPy 1.18: explicit edges too) runs after the statistic -- from the binning's own report where
    # the engine gives one (the privatized kernel; CPU threads), else a min / max pass (on a device it then
    # overlaps the kernel)
    defer = _checks_finite(xv, bins) and not (np.ndim(bins) == 0 and range is None)
    try:
        edges, top = _edges_top(xv, bins, range, defer=defer)
    except ValueError:
        if defer:
            _check_finite(*_minmax(xv), x_dtype)  # SciPy's first error  # synchronize!
        raise
    nb = len(edges) - 1
    # one float dtype for both arrays at the C API (conversions are exact)
    work = np.dtype(np.float32) if (x_dtype == np.float32 and np.dtype(vv.dtype) == np.float32) else np.dtype(np.float64)
    stat_code = _core.STATISTICS[statistic]
    e64 = np.ascontiguousarray(edges, dtype=np.float64)
    if on_device:
        lib = Lib.of(xv.lib)
        xd = xv if xv.dtype == work else _arrays.as_input(lib.astype(xv.obj, work), "x")
        vd = vv if vv.dtype == work else _arrays.as_input(lib.astype(vv.obj, work), "values")
    else:
        xd = np.ascontiguousarray(xv, dtype=work).reshape(-1)
        vd = np.ascontiguousarray(vv, dtype=work).reshape(-1)

    # the privatized kernel and the CPU engine report NaN / inf x as they bin them (SciPy's check without a
    # second read of x: a min / max pass was 14 of 74 ms of a 10^7-point host call on one thread)
    nf = flag = None
    if defer:
        nf = Lib.of(xv.lib).empty(1, np.int32, xv.device) if on_device else np.zeros(1, np.int32)
        flag = _arrays.as_input(nf, "nonfinite").desc() if on_device else nf
    reporter = "cuda" if on_device else "cpu"  # (the engine that bins x where x lives)

    def call(be, ins, outs, s, stream):
        return _core.binned_statistic(be, ins[0], ins[1], e64, top, stat_code, outs[0], outs[1],
                                      flag if be == reporter else None, s, stream)

    result, binnumber = _dispatch.run("binned_statistic", [xd, vd], [(nb, np.float64), (n, np.int64)], call,
                                      strategy=strategy, names=["x", "values"], bins=nb)
    plan = _dispatch.last_plan()
    one_pass = plan["engine"] == "cuda" and plan["strategy_used"] == "privatized"
    if defer:
        if on_device and one_pass:
            _check_nonfinite(int(Lib.of(xv.lib).to_host(nf)[0]), [0])  # synchronize! (after the launch)
        elif not on_device and plan["engine"] in ("caller", "cpu"):  # (every point binned by the C call: reported)
            _check_nonfinite(int(nf[0]), [0])
        else:
            _check_finite(*_minmax(xv), x_dtype)  # synchronize! (after the statistic's launch)
    # std / var of float64 values: the privatized kernel gives SciPy's inf for a bin of finite values whose
    # sums overflow (its second pass); the other strategies' Welford update gives NaN there, mended here
    if statistic in ("std", "var") and np.dtype(vv.dtype) == np.float64 and not one_pass:
        lib = Lib.of(xv.lib) if on_device else None
        rh = lib.to_host(result).reshape(-1) if on_device else result  # synchronize! (the call waits anyway)
        # (empty bins are NaN too: the values come to the host only when some |value| > 2^500)
        if not (rh >= 0).all() and _huge(vv if on_device else vd):
            vh = vv.to_host() if on_device else vd
            bh = lib.to_host(binnumber).reshape(-1) if on_device else binnumber
            fixed = _overflowed_spread(rh, vh, bh, nb)
            result = lib.from_host(fixed, xv.device) if on_device else fixed
    # device input: equal-width edges written on the device by their formula (no host copy, no wait)
    edges_out = _edges_for(xv, edges, np.ndim(bins) == 0) if on_device else edges
    return BinnedStatisticResult(result, edges_out, binnumber)


def _checks_finite(xv, bins):
    """Whether SciPy checks x for non-finite values (float x, non-empty; SciPy 1.18: for NaN whatever the
    bins; earlier: for NaN and inf where bins is a number)."""
    return np.dtype(xv.dtype).kind == "f" and xv.shape[0] > 0 and (nan_only() or index_bins(bins))


# SciPy's error for a NaN in the sample where it checks that the sample is finite
NAN_SAMPLE = ("The sample on which `values` is to be binned contains at least one NaN, and the "
              "meaning is ambiguous. Consider removing or replacing with numerical outliers.")


def _check_finite(lo, hi, x_dtype):
    """SciPy's errors for NaN / infinite x (from x's min and max; NaN propagates into both): NaN's, and
    before SciPy 1.18 inf's (nan_only)."""
    if np.dtype(x_dtype).kind != "f":
        return
    if np.isnan(lo):
        raise ValueError(NAN_SAMPLE)
    if not (np.isfinite(lo) and np.isfinite(hi)) and not nan_only():
        raise ValueError("x contains non-finite values.")


def _finite_range(xv, lo, hi):
    """SciPy 1.18's range of x for equal-width bins where `range` is None: the min and max of its finite
    values (lo, hi: x's min and max, NaN-free).  # synchronize! (device input, only where x holds an inf)"""
    if np.isfinite(lo) and np.isfinite(hi):
        return lo, hi
    h = xv.to_host() if isinstance(xv, DeviceArray) else np.asarray(xv)
    f = h[np.isfinite(h)]
    if f.size == 0:  # SciPy: nanmin of no finite value is NaN, its edges NaN, then int(NaN) raises
        raise ValueError("x holds no finite value: the range of its bins cannot be found (SciPy's nanmin is NaN)")
    return f.min(), f.max()


def _check_nonfinite(bits, dims):
    """SciPy's errors for NaN / infinite x from the privatized kernel's
    report (bit 2d: dimension d holds a NaN, bit 2d + 1: it holds +-inf),
    dimension by dimension as _check_finite would find them."""
    for d in dims:
        if bits >> (2 * d) & 1:
            _check_finite(np.nan, np.nan, np.float64)
        if bits >> (2 * d + 1) & 1:
            _check_finite(0.0, np.inf, np.float64)  # (SciPy 1.18: an outlier, no error)


def _edges_top(xv, bins, range, lohi=None, defer=False):  # noqa: A002
    """SciPy's edges of one dimension (x's float dtype) and `top` (the
    largest x SciPy puts into the last bin), with SciPy's errors.  x's min
    and max are read when SciPy needs them: for the range when it is None,
    for the check that x is finite when bins is a number -- `lohi` when the
    caller read them already (several dimensions at once); with `defer`
    the caller checks finiteness itself (after its launch)."""
    x_dtype = np.dtype(xv.dtype)
    n = xv.shape[0]
    if range is None and n == 0:  # SciPy reads x's min and max even when it does not need them
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    lo = hi = None
    if (n and np.ndim(bins) == 0 and range is None) or (_checks_finite(xv, bins) and not defer):
        # (explicit edges need the range of neither; the non-finite check only SciPy 1.18's NaN one; integers
        # are finite)
        lo, hi = lohi if lohi is not None else _minmax(xv)  # synchronize! (device input)
        _check_finite(lo, hi, x_dtype)
        if np.ndim(bins) == 0 and range is None and x_dtype.kind == "f":
            lo, hi = _finite_range(xv, lo, hi)  # (SciPy 1.18: inf's are outliers of the finite values' range)
    if np.ndim(bins) != 0 and np.ndim(bins) != 1:
        raise ValueError("binned_statistic: bins must be an integer or a 1-D sequence of edges")
    if np.ndim(bins) == 0:  # equal-width edges: one computation per (range, dtype, bins), then a copy
        if range is not None:
            lo = hi = None  # (the range decides the edges)
        try:
            key = (None if lo is None else float(lo), None if hi is None else float(hi), x_dtype.str,
                   int(bins), None if range is None else tuple(range))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            edges, top = _uniform_edges_top(*key)
            return edges.copy(), top
    return _checked_edges_top(lo, hi, x_dtype, bins, range)


@functools.lru_cache(maxsize=64)
def _uniform_edges_top(lo, hi, x_dtype, bins, range):  # noqa: A002
    return _checked_edges_top(lo, hi, np.dtype(x_dtype), bins, range)


def _checked_edges_top(lo, hi, x_dtype, bins, range):  # noqa: A002
    with np.errstate(invalid="ignore"):
        edges = _edges(lo, hi, x_dtype, bins, range)
    if len(edges) < 2:
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    with np.errstate(invalid="ignore"):
        steps = np.diff(edges)
    if np.any(steps < 0) and np.any(steps > 0) or np.any(np.isnan(steps)):
        raise ValueError("bins must be monotonically increasing or decreasing")
    if np.any(steps == 0):
        raise ValueError("The smallest edge difference is numerically 0.")
    if not np.all(steps > 0):
        raise ValueError("binned_statistic: bins must increase monotonically (gpusync does not take "
                         "decreasing or repeated edges)")
    return edges, _top(edges, x_dtype)
