"""binned_statistic_2d and binned_statistic_dd: SciPy's signatures, edges,
bin numbers and result types (issue 15).

SciPy's ``binned_statistic_dd`` bins each dimension independently (edges
from ``np.linspace`` in the sample's float dtype, ``np.digitize``, its
on-the-last-edge rounding rule), numbers the bins of the grid *with* one
outlier bin on each side of every dimension (C order), computes the
statistic over those flat bin numbers and cuts the outlier bins off.  Here:

1. each dimension's SciPy bin numbers (0 below, 1..n, n + 1 above) and edges
   come from gpusync's 1-D binning kernel (the one behind
   :func:`gpusync.binned_statistic`, which reproduces SciPy's rules);
2. the flat bin number is their C-order combination (on the arrays' own
   library: NumPy, or CuPy / PyTorch on the device);
3. the statistic over the flat bin numbers runs on the same kernel, with
   unit-width edges around the integers (count/sum/mean/std/min/max), or by
   the segmented sort of 'median'; several `values` arrays are one kernel
   call each; a callable runs SciPy's own code on the host.
"""
from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from . import _arrays, _backend, _binstat_more, _core, _devfast, _dispatch
from ._arrays import DeviceArray, Lib
from ._binstat import (NAN_SAMPLE, _binned_statistic_impl, _check_finite, _check_nonfinite, _checks_finite,
                       _edges, _edges_top, index_bins, nan_only)
from ._histdd import DEVICE_PLANS_MAX, ZERO_DIMS, _minmax_many, device_plan
from ._histogram import _edges_for, _edges_formula

BinnedStatisticddResult = namedtuple("BinnedStatisticddResult", ("statistic", "bin_edges", "binnumber"))
BinnedStatistic2dResult = namedtuple("BinnedStatistic2dResult", ("statistic", "x_edge", "y_edge", "binnumber"))

_KNOWN = (*_core.STATISTICS, "median")  # the kernel's statistics (codes defined once in C) and the median
_FUSED = tuple(_core.STATISTICS)  # one kernel on the GPU (csrc/cuda/binstat_priv.cu): all of the kernel's statistics
_FUSED_MAXD = 8


def _columns(sample):
    """SciPy's reading of `sample` ((N, D) array or D sequences) as D 1-D
    arrays of the sample's one dtype; host or device."""
    if isinstance(sample, (list, tuple)) and sample and any(
            hasattr(c, "__cuda_array_interface__") or (hasattr(c, "__dlpack__") and not isinstance(c, np.ndarray))
            for c in sample):
        cols = [_arrays.as_input(c, "sample") for c in sample]
        if len({c.length if isinstance(c, DeviceArray) else len(c) for c in cols}) != 1:
            raise ValueError("setting an array element with a sequence. The requested array has an inhomogeneous "
                             f"shape after 1 dimensions. The detected shape was ({len(cols)},) + inhomogeneous part.")
        dt = np.result_type(*[c.dtype for c in cols])
        return [c.obj if c.dtype == dt else Lib.of(c.lib).astype(c.obj, dt) for c in cols]
    cai = getattr(sample, "__cuda_array_interface__", None)
    if cai is not None and len(cai["shape"]) == 2:
        return [sample[:, k] for k in range(int(cai["shape"][1]))]
    try:
        _, d = sample.shape
        arr = sample
    except (AttributeError, ValueError):
        arr = np.atleast_2d(sample).T
        _, d = arr.shape
    arr = np.asarray(arr)
    return [arr[:, k] for k in range(d)]


def _xp_of(obj):
    mod = type(obj).__module__.split(".")[0]
    return mod if mod in ("cupy", "torch") else "numpy"


def binned_statistic_dd(sample, values, statistic="mean", bins=10, range=None,  # noqa: A002
                        expand_binnumbers=False, binned_statistic_result=None, *, strategy="auto", stream=None):
    """``scipy.stats.binned_statistic_dd``: a statistic of `values` in the
    bins of an N-D grid of `sample`.

    SciPy's parameters: `sample` (N, D) or D arrays of length N; `values`
    (N,) or several (V, N); `statistic` ``"count"``, ``"sum"``, ``"mean"``,
    ``"std"``, ``"median"``, ``"min"``, ``"max"``, ``"var"`` (the square of
    ``"std"``; not in SciPy) or a callable (SciPy's own
    code on the host, with a one-time warning); `bins` an int, or one int
    or edge array per dimension; `range` one ``(lower, upper)`` per
    dimension; `expand_binnumbers` returns (D, N) per-dimension bin numbers
    instead of the flat ones; `binned_statistic_result` reuses an earlier
    result's edges and bin numbers.  Returns ``(statistic, bin_edges,
    binnumber)`` with SciPy's shapes and dtypes (float64 statistics).

    gpusync: every dimension is binned by the kernel of
    :func:`gpusync.binned_statistic` (`strategy` as there) and the
    statistic runs on it over the flat bin numbers; device inputs give
    device results.
    """
    with _arrays.call_stream(stream, None):
        return _dd(sample, values, statistic, bins, range, expand_binnumbers, binned_statistic_result, strategy)


def _dd(sample, values, statistic, bins, range, expand, previous, strategy):  # noqa: A002
    if not callable(statistic) and statistic not in _KNOWN:
        raise ValueError(f"invalid statistic {statistic!r}")
    cols = _columns(sample)
    d = len(cols)
    if d == 0:  # an (N, 0) sample: SciPy's error (np.atleast_2d's)
        raise ValueError(ZERO_DIMS)
    if callable(statistic) and statistic is not np.median:
        hosts = [Lib.of(_xp_of(c)).to_host(c) if _xp_of(c) != "numpy" else c for c in cols]
        import scipy.stats

        _binstat_more.warn_once(statistic)
        vh = values if _xp_of(values) == "numpy" else Lib.of(_xp_of(values)).to_host(values)
        return scipy.stats.binned_statistic_dd(np.stack(hosts, 1), vh, statistic, bins, range, expand, previous)
    try:
        bins = bins.__index__()
    except (AttributeError, TypeError):
        pass
    # the SciPy installed decides (_binstat.nan_only): 1.18 refuses a NaN in the sample whatever `bins` is
    # and bins +-inf as outliers (gh-23751); earlier releases check that the sample is finite only where
    # `bins` as a whole is one int, and with a number per dimension and a range bin NaN / inf as outliers of
    # their equal-width edges, as for explicit edges
    whole_int = isinstance(bins, int)
    host_cols = all(_xp_of(c) == "numpy" for c in cols)
    if nan_only():
        if host_cols and any(np.isnan(c).any() for c in cols if c.dtype.kind == "f"):
            raise ValueError(NAN_SAMPLE)
    elif isinstance(bins, int) and host_cols and not all(
            np.isfinite(c).all() for c in cols if c.dtype.kind == "f"):
        raise ValueError(f"{sample!r} contains non-finite values.")
    if not host_cols and previous is not None and (nan_only() or whole_int):
        # device columns binned by an earlier result: no binning of them here to check them, so SciPy's
        # check (which runs first) as one min / max pass over each float column
        dcols = [_arrays.as_input(c, "sample") for c in cols]
        fl = [c for c in dcols if np.dtype(c.dtype).kind == "f" and c.shape[0]]
        for c, mm in zip(fl, _minmax_many(fl)):  # synchronize!
            _check_finite(*mm, c.dtype)
    lib = _xp_of(cols[0])
    device = lib != "numpy"
    # values: (N,) or (V, N), kept as rows
    vobj = values
    if not device:
        vobj = np.asarray(values)
        input_shape = list(vobj.shape)
        rows = np.atleast_2d(vobj)
    else:
        input_shape = list(values.shape)
        rows = values.reshape(1, -1) if len(input_shape) == 1 else values
    n = cols[0].shape[0]
    vlen = rows.shape[-1]
    if statistic != "count" and vlen != n:
        raise AttributeError("The number of `values` elements must match the length of each `sample` dimension.")
    try:
        if len(bins) != d:
            raise AttributeError("The dimension of bins must be equal to the dimension of the sample x.")
    except TypeError:
        bins = d * [bins]
    if range is not None and len(range) != d:
        raise ValueError(f"range given for {len(range)} dimensions; {d} required")
    if (previous is None and device and _backend.backend() == "cuda" and statistic in _FUSED
            and strategy in ("auto", "privatized") and d <= _FUSED_MAXD and _xp_of(rows) == lib):
        fused = _fused(cols, rows, statistic, bins, range, input_shape, expand, lib, whole_int)
        if fused is not None:
            return fused
    # 1. each dimension's SciPy bin numbers and edges
    if previous is None:
        per_dim, edges = [], []
        for k, c in enumerate(cols):
            rk = None if range is None else range[k]
            try:
                _, e, bn = _binned_statistic_impl(c, c, "count", bins[k], rk, strategy=strategy)
            except ValueError:
                if whole_int or np.ndim(bins[k]) != 0 or rk is None:
                    raise
                # (NaN / inf x: SciPy's equal-width edges given as edges, which bin them as outliers)
                dt = np.dtype(_arrays.as_input(c, "sample").dtype)
                _, e, bn = _binned_statistic_impl(c, c, "count", _edges(None, None, dt, bins[k], rk), None,
                                                  strategy=strategy)
            per_dim.append(bn)
            edges.append(e)
        nbin = [(len(e) if not device else int(e.shape[0])) + 1 for e in edges]
        # 2. the flat C-order bin number, outlier bins included
        flat = per_dim[0]
        for k in np.arange(1, d):
            flat = flat * nbin[k] + per_dim[k]
    else:
        edges = previous.bin_edges
        nbin = [len(e) + 1 for e in edges]
        flat = previous.binnumber
        if getattr(flat, "ndim", 1) == 2:
            raise ValueError("binned_statistic_result: pass a result computed with expand_binnumbers=False")
    total = math.prod(nbin)
    # 3. the statistic over the flat bin numbers, per values row
    unit = np.arange(total + 1, dtype=np.float64) - 0.5
    flat_f = flat.astype(np.float64) if lib != "torch" else flat.double()
    results = []
    vrows = rows if statistic != "count" else rows[:1]
    for v in builtins.range(vrows.shape[0]):
        vals = vrows[v] if statistic != "count" else flat_f
        if statistic == "median" or statistic is np.median:
            obj = vals if lib != "torch" else vals
            res = _binstat_more.median(flat if lib != "torch" else flat.cpu().numpy(),
                                       obj if lib != "torch" else obj.cpu().numpy(), total - 2)
            res = _concat_outliers(res, lib)
            if lib == "torch":
                res = Lib.of("torch").from_host(res, cols[0].device.index)
        else:
            res = _binned_statistic_impl(flat_f, vals, statistic, unit, (unit[0], unit[-1]), strategy=strategy).statistic
        results.append(res)
    if statistic == "count" and rows.shape[0] > 1:
        results = results * rows.shape[0]
    xp = np if lib == "numpy" else __import__(lib)
    result = xp.stack(results) if lib != "torch" else xp.stack(results)
    result = result.reshape(tuple([len(results)] + nbin))
    core = tuple([slice(None)] + d * [slice(1, -1)])
    result = result[core]
    result = result.reshape(tuple(input_shape[:-1] + [b - 2 for b in nbin]))
    binnumber = flat
    if expand and d > 1:
        binnumber = _unravel(flat, nbin, lib)
    return BinnedStatisticddResult(result, list(edges), binnumber)


def _fused(cols, rows, statistic, bins, range, input_shape, expand, lib, whole_int=True):  # noqa: A002
    """The whole statistic in one kernel per values row (lock-free
    privatized bins, csrc/cuda/binstat_priv.cu): every dimension binned by
    SciPy's rules, the flat bin number written, the inner bins' partials in
    shared memory.  None when the bins do not fit a block (the caller then
    takes the per-dimension pipeline)."""
    L = Lib.of(lib)
    cvs = [_arrays.as_input(c, "sample") for c in cols]
    if any(np.dtype(c.dtype).kind not in "iuf" for c in cvs):
        return None
    d, n = len(cvs), cvs[0].shape[0]
    dev, stream = cvs[0].device, cvs[0].stream
    # x's min and max of every dimension SciPy reads them for, in one pass and one wait: all of them
    # for the ranges when range is None; with range given only SciPy's check that the sample is
    # finite needs them, and that check runs after the kernels' launch (the pass and the wait overlap them)
    check = [k for k, c in enumerate(cvs) if _checks_finite(c, bins[k])]
    lohi = {}
    if range is None:  # (SciPy 1.18: explicit-edge dimensions' NaN check in the same pass)
        want = [k for k, c in enumerate(cvs) if n and (np.ndim(bins[k]) == 0 or k in check)]
        lohi = dict(zip(want, _minmax_many([cvs[k] for k in want])))  # synchronize!
        check = []

    def check_finite():
        for k, mm in zip(check, _minmax_many([cvs[k] for k in check])):  # synchronize!
            _check_finite(*mm, cvs[k].dtype)

    # after the launch the kernel's own report replaces the min / max pass (it bins every x anyway)
    nf = L.empty(1, np.int32, dev) if check else None

    edges, tops = [], []
    try:
        for k, c in enumerate(cvs):
            e, t = _edges_top(c, bins[k], None if range is None else range[k], lohi.get(k), defer=bool(check))
            edges.append(e)
            tops.append(t)
    except ValueError:
        if check:
            check_finite()  # SciPy's first error
        raise
    nb = [len(e) - 1 for e in edges]
    inner = math.prod(nb)
    vrows = [_arrays.as_input(rows[v], "values") for v in builtins.range(rows.shape[0] if statistic != "count" else 1)]
    if any(np.dtype(v.dtype).kind not in "iuf" for v in vrows):
        return None
    f32 = np.dtype(cvs[0].dtype) == np.float32 and (statistic == "count" or all(
        np.dtype(v.dtype) == np.float32 for v in vrows))
    work = np.dtype(np.float32) if f32 else np.dtype(np.float64)
    cw = [c if c.dtype == work else _arrays.as_input(L.astype(c.obj, work), "sample") for c in cvs]
    e_all = np.ascontiguousarray(np.concatenate([np.asarray(e, np.float64) for e in edges]))
    ne = np.array([len(e) for e in edges], np.int64)
    tp = np.array(tops, np.float64)
    code = _core.STATISTICS[statistic]
    flat = L.empty(n, np.int64, dev)
    results = []
    for i, v in enumerate(vrows):
        vw = cw[0] if statistic == "count" else (v if v.dtype == work else _arrays.as_input(L.astype(v.obj, work),
                                                                                             "values"))
        res = L.empty(inner, np.float64, dev)
        try:
            _core.binned_statistic_dd("cuda", [c.desc() for c in cw], e_all, ne, tp, vw.desc(), code,
                                      _arrays.as_input(res, "result").desc(),
                                      _arrays.as_input(flat, "binnumber").desc() if i == 0 else None,
                                      _arrays.as_input(nf, "nonfinite").desc() if i == 0 and check else None,
                                      stream)
        except _core.UnsupportedDeviceError:  # the bins do not fit a block's shared memory
            return None
        # (std of float64 values whose sums overflow: the kernel's second pass gives SciPy's inf)
        results.append(res)
    if check:
        bits = int(L.to_host(nf)[0])  # synchronize! (after the launches)
        if bits and not whole_int and not nan_only():  # SciPy 1.17 bins NaN / inf here (no check): the
            return None  # per-dimension pipeline does (before the record: the plan is the pipeline's)
        _check_nonfinite(bits, check)
    _dispatch.record("binned_statistic_dd", engine="cuda", strategy="auto", used="privatized", n=n,
                     dtype=work, place="device", notes=["one fused kernel over all dimensions per values row"])
    if statistic == "count" and rows.shape[0] > 1:
        results = results * rows.shape[0]
    shape = tuple(input_shape[:-1] + nb)
    if len(results) == 1:  # one values row: the kernel's result itself (no stacking copy)
        result = results[0].reshape(shape)
    else:
        xp = np if lib == "numpy" else __import__(lib)
        result = xp.stack(results).reshape(shape)
    binnumber = flat
    if expand and d > 1:
        binnumber = _unravel(flat, [b + 2 for b in nb], lib)
    # equal-width edges written on the device by their formula (no host copy, no wait)
    return BinnedStatisticddResult(result, [_edges_for(cvs[0], e, np.ndim(bins[k]) == 0)
                                            for k, e in enumerate(edges)], binnumber)


def _concat_outliers(res, lib):
    """median() returns bins 1..total-2 of a flat range 0..total-1: put NaN
    back at both ends so it reshapes like the kernel's statistics."""
    return np.concatenate([[np.nan], np.asarray(res if lib != "cupy" else res.get()), [np.nan]]) \
        if lib != "cupy" else __import__("cupy").concatenate(
            [__import__("cupy").full(1, np.nan), res, __import__("cupy").full(1, np.nan)])


def _unravel(flat, nbin, lib):
    if lib == "numpy":
        return np.asarray(np.unravel_index(flat, nbin))
    if lib == "cupy":
        cp = __import__("cupy")
        return cp.stack(cp.unravel_index(flat, tuple(nbin)))
    torch = __import__("torch")
    out, rest = [], flat
    for b in reversed(nbin):
        out.append(rest % b)
        rest = torch.div(rest, b, rounding_mode="floor")
    return torch.stack(out[::-1])


def binned_statistic_2d(x, y, values, statistic="mean", bins=10, range=None,  # noqa: A002
                        expand_binnumbers=False, *, strategy="auto", stream=None):
    """``scipy.stats.binned_statistic_2d``: :func:`binned_statistic_dd` of
    ``[x, y]``; `bins` an int, ``[nx, ny]``, one edge array for both or
    ``[x_edge, y_edge]``.  Returns ``(statistic, x_edge, y_edge,
    binnumber)``."""
    fast = None
    if stream is None and strategy == "auto" and not expand_binnumbers and type(statistic) is str:
        fast, hit = device_plan(_fast2d, x, bins, range, statistic)
        if hit is not None:
            r = _devfast.binned_statistic_2d_(x, y, values, hit)  # device arrays' fast path
            if r is not NotImplemented:
                return r
    res = _binned_statistic_2d(x, y, values, statistic, bins, range, expand_binnumbers, strategy, stream)
    if fast is not None and fast not in _fast2d and len(_fast2d) < DEVICE_PLANS_MAX:
        _remember2d(fast, y, values, bins, range)
    return res


_fast2d: dict = {}  # (dtype, statistic, bins key, range key) -> the device fast path's plan (gpusync/_devfast.py)


def _remember2d(fast, y, values, bins, range):  # noqa: A002
    """After a general-path binned_statistic_2d of device arrays that ran the
    fused privatized kernel: the fast path's plan of the same dtype,
    statistic, bins and range, when both dimensions' bins are numbers and
    both ranges are given (no data min/max in the edges) and y and values
    have x's float dtype."""
    dt, statistic = fast[0], fast[1]
    plan = _dispatch.last_plan()
    if (plan is None or plan["op"] != "binned_statistic_dd" or plan["engine"] != "cuda"
            or plan["strategy_used"] != "privatized" or dt.kind != "f" or dt.itemsize not in (4, 8)
            or _devfast.numpy_dtype(y) != dt or _devfast.numpy_dtype(values) != dt
            or statistic not in _core.STATISTICS):
        return
    try:
        b2 = [bins, bins] if np.ndim(bins) == 0 else list(bins)
        if len(b2) != 2 or any(np.ndim(b) != 0 for b in b2) or range is None or len(range) != 2:
            return
        et = [_edges_top(np.zeros(1, dt), b2[k], range[k], defer=True) for k in (0, 1)]
    except (TypeError, ValueError):
        return
    formulas = [_edges_formula(e) for e, _ in et]  # (None: no formula gives NumPy's edges; copied per call)
    e_all = np.ascontiguousarray(np.concatenate([np.asarray(e, np.float64) for e, _ in et]))
    ne = np.array([len(e) for e, _ in et], np.int64)
    tops = np.array([t for _, t in et], np.float64)
    _fast2d[fast] = (dt, e_all, ne, tops, _core.STATISTICS[statistic], (len(et[0][0]) - 1, len(et[1][0]) - 1),
                     [(f, e) for f, (e, _) in zip(formulas, et)], np.ndim(bins) == 0 and index_bins(bins))
    _dispatch.fast_ready()  # the device fast path on (not under a forced cpu backend; GPUSYNC_DEBUG per call)


def _binned_statistic_2d(x, y, values, statistic, bins, range, expand_binnumbers, strategy, stream):  # noqa: A002
    """binned_statistic_2d's general path."""
    try:  # SciPy's own reading of `bins`
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        xedges = yedges = np.asarray(bins, float)
        bins = [xedges, yedges]
    medians, edges, binnumbers = binned_statistic_dd([x, y], values, statistic, bins, range,
                                                     expand_binnumbers=expand_binnumbers, strategy=strategy,
                                                     stream=stream)
    return BinnedStatistic2dResult(medians, edges[0], edges[1], binnumbers)
