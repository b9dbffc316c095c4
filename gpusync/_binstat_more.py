"""binned_statistic's 'median' and callable statistics (issue 15).

median: the bin numbers come from gpusync's binning kernel; the values are
then ordered by (bin number, value) with two stable sorts of the array's own
library (NumPy on the host, CuPy on the device) -- a segmented sort -- and
each bin's middle one or two values are read at its offset, exactly as
SciPy's ``binned_statistic_dd`` does it (its lexsort / unique / floor-ceil
midpoint), so results match SciPy bit for bit, NaN placement included.

A callable statistic runs SciPy's own code on the host, with a one-time
warning that it is not accelerated, so code written for SciPy keeps working.
"""
from __future__ import annotations

import warnings

import numpy as np

_warned = set()


def _xp(arr):
    mod = type(arr).__module__.split(".")[0]
    if mod == "cupy":
        return __import__("cupy")
    return np


def median(binnumber, values, nbins):
    """SciPy's per-bin median of `values` (NaN for empty bins) for bin
    numbers 0 (below), 1..nbins, nbins + 1 (above)."""
    xp = _xp(values)
    n = values.shape[0]
    result = xp.full(nbins + 2, xp.nan, dtype=xp.float64)
    if n == 0:
        return result[1:-1]
    v = values  # SciPy takes the midpoint in the values' own dtype, then stores it as float64
    i1 = xp.argsort(v, kind="stable") if xp is np else xp.argsort(v)  # CuPy's sort is stable (radix)
    i2 = xp.argsort(binnumber[i1], kind="stable") if xp is np else xp.argsort(binnumber[i1])
    order = i1[i2]
    counts = xp.bincount(binnumber, minlength=nbins + 2)
    starts = xp.cumsum(counts) - counts
    has = counts > 0
    mid = starts[has] + (counts[has] - 1) / 2
    vs = v[order]
    lo = vs[xp.floor(mid).astype(xp.int64)]
    hi = vs[xp.ceil(mid).astype(xp.int64)]
    if xp is not np and v.dtype == xp.float32:
        # CuPy's float32 arithmetic and casts flush subnormals (-ftz=true): SciPy's float32 midpoint built
        # from exact conversions -- the float64 sum of two float32 is exact, each rounding to float32 as
        # NumPy's float32 add and halving round
        from ._arrays import Lib

        cv = Lib.of("cupy").astype
        s = cv(cv(cv(lo, np.float64) + cv(hi, np.float64), np.float32), np.float64) / 2
        result[has] = cv(cv(s, np.float32), np.float64)
    else:
        result[has] = (lo + hi) / 2
    return result[1:-1]


def scipy_callable(x, values, statistic, bins, range_):  # noqa: A002
    """SciPy's own binned_statistic for a callable statistic, on the host."""
    import scipy.stats

    warn_once(statistic, stacklevel=5)
    return scipy.stats.binned_statistic(x, values, statistic, bins, range_)


def warn_once(statistic, stacklevel=5):
    """The one-time note that a callable statistic is not accelerated."""
    name = getattr(statistic, "__name__", repr(statistic))
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"gpusync: the callable statistic {name!r} runs SciPy's own code on the host "
                      "(not accelerated)", RuntimeWarning, stacklevel=stacklevel)
