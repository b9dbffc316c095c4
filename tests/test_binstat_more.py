"""binned_statistic 'median' (gpusync's bin numbers + a segmented sort) and
callable statistics (SciPy's own code, one warning) against SciPy."""
import warnings

import numpy as np
import pytest
import scipy.stats

import gpusync as gs
from test_axis import to_host, to_kind  # noqa: F401



@pytest.mark.parametrize("n", [1, 31, 33, 100_000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_median_matches_scipy(backend, kind, n, dtype):
    rng = np.random.default_rng(n)
    x = rng.random(n).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    if n > 10:
        v[5] = np.nan  # SciPy's rule: sorted last inside its bin
        v[7:9] = 0.25  # ties
    for bins in (1, 10, [0, 0.1, 0.5, 0.5001, 1.0], 200):
        for rg in (None, (0.2, 0.8)):
            ref = scipy.stats.binned_statistic(x, v, "median", bins, rg)
            got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), "median", bins, rg)
            np.testing.assert_array_equal(to_host(got.statistic), ref.statistic)
            np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
            np.testing.assert_array_equal(to_host(got.bin_edges), ref.bin_edges)
    got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), np.median, 7)
    np.testing.assert_array_equal(to_host(got.statistic), scipy.stats.binned_statistic(x, v, "median", 7).statistic)


def test_callable_runs_scipy_with_one_warning(backend):
    rng = np.random.default_rng(3)
    x, v = rng.random(500), rng.standard_normal(500)

    def spread(a):
        return np.ptp(a) if len(a) else np.nan

    gs._binstat_more._warned.discard("spread")
    with pytest.warns(RuntimeWarning, match="not accelerated"):
        got = gs.binned_statistic(x, v, spread, 8)
    ref = scipy.stats.binned_statistic(x, v, spread, 8)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gs.binned_statistic(x, v, spread, 8)  # once only
