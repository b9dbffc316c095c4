"""binned_statistic_2d / binned_statistic_dd against SciPy: statistics x
bins forms x sizes, several values arrays, expand_binnumbers, reuse of a
result, callables, bad input; host and device inputs."""
import numpy as np
import pytest
import scipy.stats

import gpusync as gs
from test_axis import to_host, to_kind  # noqa: F401

STATS = ["count", "sum", "mean", "std", "min", "max", "median"]



def _same(got, ref):
    assert np.shape(to_host(got.statistic)) == np.shape(ref.statistic)
    np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)


@pytest.mark.parametrize("statistic", ["count", "mean", "min", "std"])
def test_nonfinite_sample_with_a_number_per_dimension(backend, kind, statistic, scipy_rules):
    """SciPy 1.17 checks that the sample is finite only where `bins` is one
    int: with bins=[nx, ny] and a range, NaN and inf are outliers of its
    edges.  SciPy 1.18 (gh-23751) refuses a NaN whatever `bins` is and bins
    inf as an outlier.  The reference where the installed SciPy's rules are
    not the ones under test: SciPy on NaN replaced by +inf (1.17's outlier)
    and on the sample without its NaN (1.18: inf alone, which every release
    bins as an outlier where bins is not one int)."""
    rng = np.random.default_rng(3)
    x, y = rng.random((2, 1000))
    y[[3, 500]], x[7], y[999] = np.inf, -np.inf, np.nan
    v = rng.standard_normal(1000)
    y_nan = y
    for bins in ([2, 3], [4, np.array([0, 0.5, 1.0])]):
        if scipy_rules:  # 1.18: the NaN refused, the inf's outliers
            with pytest.raises(ValueError, match="NaN"):
                gs.binned_statistic_2d(to_kind(x, kind), to_kind(y_nan, kind), to_kind(v, kind), statistic, bins,
                                       [(0, 1), (0, 1)])
            y = np.where(np.isnan(y_nan), 0.5, y_nan)
        try:
            ref = scipy.stats.binned_statistic_2d(x, y, v, statistic, bins, [(0, 1), (0, 1)])
        except ValueError as e:
            assert "NaN" in str(e)
            ref = scipy.stats.binned_statistic_2d(x, np.where(np.isnan(y), np.inf, y), v, statistic, bins,
                                                  [(0, 1), (0, 1)])
        got = gs.binned_statistic_2d(to_kind(x, kind), to_kind(y, kind), to_kind(v, kind), statistic, bins,
                                     [(0, 1), (0, 1)])
        _same(got, ref)
        np.testing.assert_array_equal(to_host(got.y_edge), ref.y_edge)
    with pytest.raises(ValueError):  # bins one int: SciPy's check (1.18: the NaN)
        gs.binned_statistic_2d(to_kind(x, kind), to_kind(y_nan, kind), to_kind(v, kind), statistic, 2,
                               [(0, 1), (0, 1)])


@pytest.mark.parametrize("statistic", STATS)
@pytest.mark.parametrize("n", [1, 31, 33, 100_000])
def test_2d_matches_scipy(backend, kind, statistic, n):
    rng = np.random.default_rng(n)
    x, y = rng.random((2, n))
    v = rng.standard_normal(n)
    for bins in (4, [3, 5], [np.array([0, 0.3, 0.6, 1.0]), 4], np.linspace(0, 1, 6)):
        for rg in (None, [(0.1, 0.9), (0, 1)]):
            ref = scipy.stats.binned_statistic_2d(x, y, v, statistic, bins, rg)
            got = gs.binned_statistic_2d(to_kind(x, kind), to_kind(y, kind), to_kind(v, kind), statistic, bins, rg)
            _same(got, ref)
            np.testing.assert_array_equal(to_host(got.x_edge), ref.x_edge)
            np.testing.assert_array_equal(to_host(got.y_edge), ref.y_edge)


@pytest.mark.parametrize("statistic", STATS)
def test_dd_several_values_expand_reuse(backend, statistic):
    rng = np.random.default_rng(9)
    s = rng.random((5000, 3)).astype(np.float32)
    vals = rng.standard_normal((2, 5000))
    ref = scipy.stats.binned_statistic_dd(s, vals, statistic, [2, 3, 4], expand_binnumbers=True)
    got = gs.binned_statistic_dd(s, vals, statistic, [2, 3, 4], expand_binnumbers=True)
    _same(got, ref)
    for a, b in zip(got.bin_edges, ref.bin_edges):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    first = scipy.stats.binned_statistic_dd(s, vals[0], statistic, 4)
    again = gs.binned_statistic_dd(s, vals[1], "mean", binned_statistic_result=gs.binned_statistic_dd(
        s, vals[0], statistic, 4))
    _same(again, scipy.stats.binned_statistic_dd(s, vals[1], "mean", binned_statistic_result=first))


def test_callable_and_bad_input(backend):
    rng = np.random.default_rng(2)
    x, y, v = rng.random((3, 300))
    gs._binstat_more._warned.discard("nanmax")
    with pytest.warns(RuntimeWarning, match="not accelerated"):
        got = gs.binned_statistic_2d(x, y, v, np.nanmax, 3)
    _same(got, scipy.stats.binned_statistic_2d(x, y, v, np.nanmax, 3))
    for call, exc in [(lambda m: m.binned_statistic_2d(x, y, v, "nope"), ValueError),
                      (lambda m: m.binned_statistic_2d(x, y, v[:10], "mean"), AttributeError),
                      (lambda m: m.binned_statistic_dd(np.stack([x, y], 1), v, "mean", [2, 3, 4]), AttributeError),
                      (lambda m: m.binned_statistic_dd(np.stack([x, y], 1), v, "mean", 3, [(0, 1)]), ValueError)]:
        with pytest.raises(exc) as ref:
            call(scipy.stats)
        with pytest.raises(exc) as ours:
            call(gs)
        assert str(ours.value) == str(ref.value)
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="non-finite|NaN"):  # (SciPy 1.17: "non-finite", 1.18: "NaN")
        gs.binned_statistic_2d(bad, y, v, "mean", 3)


def test_reused_result_checks_the_sample(kind, scipy_rules):
    """binned_statistic_result reuses an earlier result's bins, but SciPy still checks the sample first:
    NaN raises under 1.18's rules whatever the bins, NaN / inf under 1.17's where bins is one int -- for
    device samples too (no binning of them to report it: one min / max pass)."""
    rng = np.random.default_rng(4)
    x, y, v = rng.random((3, 500))
    first = gs.binned_statistic_dd([to_kind(x, kind), to_kind(y, kind)], to_kind(v, kind), "mean", 4)
    for bad, bins in ((np.nan, 4), (np.nan, [4, 4]), (np.inf, 4)):
        yb = y.copy()
        yb[9] = bad
        raises = (bad != bad and (scipy_rules or bins == 4)) or (bad == np.inf and not scipy_rules)
        call = lambda: gs.binned_statistic_dd([to_kind(x, kind), to_kind(yb, kind)], to_kind(v, kind), "sum",  # noqa: E731
                                              bins, binned_statistic_result=first)
        if raises:
            with pytest.raises(ValueError, match="NaN|non-finite"):
                call()
        else:
            call()
