"""gs.binned_statistic against scipy.stats.binned_statistic."""
import re

import numpy as np
import scipy.stats
import pytest

import gpusync as gs
from conftest import scipy_binned_statistic

ss = pytest.importorskip("scipy.stats")

SCIPY_STATS = ["count", "sum", "mean", "std", "min", "max"]


def _check(x, v, stat, strategy="auto", **kw):
    """gpusync's result against SciPy's (conftest's reference, under the rules gpusync follows now); where
    SciPy raises a ValueError, gpusync raises one too (None)."""
    try:
        ref = scipy_binned_statistic(x, v, stat, **kw)
    except ValueError:
        with pytest.raises(ValueError):
            gs.binned_statistic(x, v, stat, strategy=strategy, **kw)
        return None
    got = gs.binned_statistic(x, v, stat, strategy=strategy, **kw)
    np.testing.assert_array_equal(got.binnumber, ref.binnumber)
    np.testing.assert_array_equal(got.bin_edges, ref.bin_edges)
    assert got.bin_edges.dtype == ref.bin_edges.dtype
    assert got.statistic.dtype == np.float64
    np.testing.assert_allclose(got.statistic, ref.statistic, rtol=1e-9, atol=1e-9, equal_nan=True)
    return got


@pytest.mark.parametrize("stat", SCIPY_STATS)
@pytest.mark.parametrize("n", [0, 1, 37, 1000, 100_003])
def test_matches_scipy(backend, stat, n):
    rng = np.random.default_rng(n)
    x, v = rng.standard_normal(n), rng.standard_normal(n) * 5 + 2
    for strategy in ("auto", "shared", "global"):
        kw = {"strategy": strategy}
        _check(x, v, stat, bins=7, range=(-1.5, 1.5), **kw)
        if n:
            _check(x, v, stat, bins=10, **kw)
            _check(x, v, stat, bins=[-2, -0.5, 0, 0.1, 3], **kw)


@pytest.mark.parametrize("stat", SCIPY_STATS)
def test_dtypes_nan_and_edges(backend, stat, scipy_rules):
    rng = np.random.default_rng(1)
    x32 = rng.random(50_000).astype(np.float32)
    v = rng.standard_normal(50_000)
    v[::997] = np.nan
    _check(x32, v, stat, bins=33)
    _check(x32, v.astype(np.float32), stat, bins=33)
    xi = rng.integers(0, 50, 50_000)
    _check(xi, v, stat, bins=10)
    _check(xi, xi, stat, bins=[0, 10, 25, 49])  # int values, x on the last edge
    # values at, and a hair above, the last edge land in the last bin (SciPy's rounding rule);
    # infinite x: outliers with explicit edges; with a number of bins SciPy 1.17 refuses them, 1.18 bins them
    # as outliers of the finite values' range.  NaN x: 1.17 bins it as an outlier with explicit edges
    # (digitize), 1.18 refuses it whatever the bins
    x = np.array([0.0, 0.5, 1.0, 1.0 + 1e-12, 1.0 + 1e-3, -np.inf, np.inf])
    _check(x, np.arange(7.0), stat, bins=[0, 0.25, 0.5, 0.75, 1.0])
    _check(x.astype(np.float32), np.arange(7.0), stat, bins=[0, 0.25, 0.5, 0.75, 1.0])
    for dt in (np.float64, np.float32):  # (float16: SciPy's on-edge rounding overflows, test_fuzz.py says)
        for kw in ({"bins": 4, "range": (0, 1)}, {"bins": 4}, {"bins": 3, "range": (0.5, 0.5)}):
            r = _check(x.astype(dt), np.arange(7.0), stat, **kw)
            assert (r is None) == (not scipy_rules)  # 1.17: "x contains non-finite values."
    if not scipy_rules:
        with pytest.raises(ValueError, match="non-finite"):
            gs.binned_statistic(x, np.arange(7.0), stat, bins=4, range=(0, 1))
    else:  # 1.18: the range of the finite values, inf's the outlier bins 0 and 5
        r = gs.binned_statistic(x, np.arange(7.0), stat, bins=4)
        assert r.bin_edges[0] == 0.0 and r.bin_edges[-1] == 1.0 + 1e-3
        assert r.binnumber.tolist()[-2:] == [0, 5]
        with pytest.raises(ValueError, match="no finite value"):  # (SciPy 1.18: its edges are NaN)
            gs.binned_statistic(np.array([np.inf, -np.inf]), np.ones(2), stat, bins=2)
    r = _check(np.array([0.0, np.nan, 0.5]), np.arange(3.0), stat, bins=[0, 1])
    assert (r is None) == scipy_rules  # 1.18: "... contains at least one NaN ..."
    # a float number of bins: SciPy 1.17 checks x only where operator.index takes bins (NaN, inf: outliers)
    xf = np.array([0.1, np.inf, 0.5, -np.inf, 0.7])
    for b in (2.0, np.float64(3)):
        r = _check(xf, np.arange(5.0), stat, bins=b, range=(0, 1))
        assert r is not None and r.binnumber.tolist()[1] == int(b) + 1
        r = _check(np.append(xf, np.nan), np.arange(6.0), stat, bins=b, range=(0, 1))
        assert (r is None) == scipy_rules
    with pytest.raises(ValueError):
        gs.binned_statistic(np.array([0.0, np.nan]), np.ones(2), stat, bins=2)


def test_var_is_std_squared(backend):
    rng = np.random.default_rng(2)
    x, v = rng.random(10_000), rng.standard_normal(10_000)
    std = gs.binned_statistic(x, v, "std", bins=20).statistic
    var = gs.binned_statistic(x, v, "var", bins=20).statistic
    np.testing.assert_allclose(var, std ** 2, rtol=1e-12)


def test_one_bin_takes_every_value(backend):
    """All values in one bin: the per-bin lock is as contended as it gets."""
    x = np.full(300_000, 0.25)
    v = np.arange(300_000, dtype=np.float64)
    for stat in SCIPY_STATS:
        _check(x, v, stat, bins=4, range=(0, 1))


def test_scipy_one_dimension_spellings_of_bins_and_range(backend):
    """bins=[n], bins=[edges] and range=[(lo, hi)]: SciPy hands them to
    binned_statistic_dd as the one dimension's specs."""
    x = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for stat in ("mean", "count", "std", "max"):
        _check(x, v, stat, bins=[2])
        _check(x, v, stat, bins=[np.array([0, 0.5, 1])])
        _check(x, v, stat, bins=3, range=[(0, 1)])
        _check(x, v, stat, bins=3, range=np.array([[0.0, 2.0]]))
        # bins=[n] is a per-dimension number: SciPy does not check x is finite, NaN / inf are outliers
        xn = np.array([0.1, np.inf, 0.9, -np.inf, np.nan])
        _check(xn, v, stat, bins=[2], range=(0, 1))
        _check(xn, v, stat, bins=np.array([2]), range=[(0, 1)])
        with pytest.raises(ValueError):
            gs.binned_statistic(xn, v, stat, bins=2, range=(0, 1))


def test_bool_values_count_as_zero_and_one(backend):
    rng = np.random.default_rng(7)
    x, v = rng.random(1000), rng.random(1000) > 0.3
    for stat in SCIPY_STATS:
        _check(x, v, stat, bins=7)
    with pytest.raises(TypeError, match="x has dtype bool"):
        gs.binned_statistic(v, x, "mean", bins=2)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int8])
def test_ranges_below_an_integer_dtypes_minimum(backend, dtype):
    """Unsigned / small integer x on a range below the dtype's least value
    (the last bin's on-edge search once converted the edge to x's dtype and
    overflowed): every value outside, like SciPy."""
    x = np.array([0, 1, 2, 3, 0], dtype)
    v = np.arange(5, dtype=np.float64)
    for r in ((-8.9, -8.9), (-3.2, -2.7), (-3, 0), (-3.2, 0.0)):
        _check(x, v, "sum", bins=3, range=r)


def test_many_bins_uses_global(backend):
    rng = np.random.default_rng(4)
    x, v = rng.random(200_000), rng.standard_normal(200_000)
    _check(x, v, "mean", bins=5000)
    _check(x, v, "std", bins=5000)


def test_bad_input(backend):
    x = np.arange(10.0)
    with pytest.raises(ValueError, match="invalid statistic"):
        gs.binned_statistic(x, x, "nope")
    np.testing.assert_array_equal(gs.binned_statistic(x, x, "median").statistic,
                                  scipy.stats.binned_statistic(x, x, "median").statistic)
    with pytest.raises(ValueError, match="must match"):
        gs.binned_statistic(x, x[:5])
    with pytest.raises(ValueError, match="start must be <= stop"):
        gs.binned_statistic(x, x, range=(3, 1))
    with pytest.raises(ValueError, match="numerically 0"):
        gs.binned_statistic(x, x, bins=[0, 1, 1, 2])
    with pytest.raises(ValueError, match="zero-size"):
        gs.binned_statistic(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="strategy"):
        gs.binned_statistic(x, x, strategy="warp")
    with pytest.raises(ValueError, match="1-D"):
        gs.binned_statistic(np.ones((2, 2)), np.ones((2, 2)))


# ---------------------------------------------------------------- device arrays (CUDA)


@pytest.mark.gpu
@pytest.mark.sanitizer
@pytest.mark.racecheck_blind
def test_binned_statistic_device_all_stats(cp):
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal(2_000_000), rng.standard_normal(2_000_000)
    v[::1001] = np.nan
    ss = pytest.importorskip("scipy.stats")
    dx, dv = cp.asarray(x), cp.asarray(v)
    for stat in ("count", "sum", "mean", "std", "min", "max"):
        for strategy in ("shared", "global"):
            got = gs.binned_statistic(dx, dv, stat, bins=100, strategy=strategy)
            ref = ss.binned_statistic(x, v, stat, bins=100)
            np.testing.assert_allclose(got.statistic.get(), ref.statistic, rtol=1e-9, equal_nan=True)
            np.testing.assert_array_equal(got.binnumber.get(), ref.binnumber)
    x32 = dx.astype(cp.float32)
    got = gs.binned_statistic(x32, x32, "std", bins=64)
    ref = ss.binned_statistic(x.astype(np.float32), x.astype(np.float32), "std", bins=64)
    np.testing.assert_allclose(got.statistic.get(), ref.statistic, rtol=1e-6)


def test_cpu_bin_guess_matches_scipy_on_any_edges():
    """The CPU engine guesses each bin from the equal-width formula and
    checks it against the edges themselves: seeded differential runs on
    random, skewed (cumulative), equal-width and half-infinite edges, values
    on the edges, NaN x, float32 and float64, against SciPy's bin numbers and
    statistics."""
    rng = np.random.default_rng(5)
    for trial in range(120):
        n, nb = int(rng.integers(1, 2000)), int(rng.integers(1, 40))
        e = [np.sort(rng.standard_normal(nb + 1)), np.cumsum(rng.random(nb + 1) ** 4),
             np.linspace(-2, 2, nb + 1), np.concatenate([[-np.inf], np.linspace(-1, 1, nb)])][trial % 4]
        x = rng.standard_normal(n) * 2
        x[::7] = rng.choice(e, len(x[::7]))
        if trial % 5 == 0:
            x[3 % n] = np.nan
        v = rng.standard_normal(n)
        for dt in (np.float64, np.float32):
            xx, vv = x.astype(dt), v.astype(dt)
            try:
                want = scipy_binned_statistic(xx, vv, "mean", e)
            except (ValueError, OverflowError):  # SciPy refuses (edges too close; nb = 1 with an infinite edge)
                continue
            with gs.use_backend("cpu"):
                got = gs.binned_statistic(xx, vv, "mean", e)
            np.testing.assert_array_equal(got.binnumber, want.binnumber)
            np.testing.assert_allclose(got.statistic, want.statistic, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("threads", [1, 3, 4])
def test_cpu_shared_sums_in_part_order_run_after_run(threads, monkeypatch):
    """The CPU engine's privatized strategy cuts the points into parts fixed by the points, the bins and the
    thread limit (GPUSYNC_NUM_THREADS here), sums each part in element order and adds the parts in part
    order: the sums are exactly that order's (NumPy's bincount a part, then the parts added one after the
    other), the same in every call whichever threads ran them (they were merged under locks in the order the
    threads finished, and the last bits changed from run to run)."""
    monkeypatch.setenv("GPUSYNC_NUM_THREADS", str(threads))
    rng = np.random.default_rng(50)
    n, nb = 200_003, 50
    x = rng.random(n)
    v = rng.standard_normal(n) * 1e3 + rng.random(n) * 1e-3  # sums whose rounding depends on the order
    with gs.use_backend("cpu"):
        runs = [gs.binned_statistic(x, v, "sum", bins=nb, strategy="shared") for _ in range(4)]
        mean = gs.binned_statistic(x, v, "mean", bins=nb, strategy="shared").statistic
        std = [gs.binned_statistic(x, v, "std", bins=nb, strategy="shared").statistic for _ in range(3)]
    for r in runs[1:]:
        assert r.statistic.tobytes() == runs[0].statistic.tobytes()
    assert std[1].tobytes() == std[0].tobytes() and std[2].tobytes() == std[0].tobytes()
    parts = min(threads, n // (4 * nb), n // 16384)
    starts = [p * (n // parts) + min(p, n % parts) for p in range(parts + 1)]
    bn = runs[0].binnumber
    want = np.zeros(nb)
    count = np.zeros(nb)
    for p in range(parts):
        s = slice(starts[p], starts[p + 1])
        want = want + np.bincount(bn[s] - 1, weights=v[s], minlength=nb)  # (x in [0, 1): bins 1 .. nb)
        count += np.bincount(bn[s] - 1, minlength=nb)
    np.testing.assert_array_equal(runs[0].statistic, want)
    np.testing.assert_array_equal(mean, want / count)
    ref = scipy.stats.binned_statistic(x, v, "std", bins=nb).statistic
    np.testing.assert_allclose(std[0], ref, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "both", "none"])
@pytest.mark.parametrize("strategy", ["shared", "global"])
@pytest.mark.parametrize("size", ["small", "large"])  # the calling thread alone; the pool
@pytest.mark.parametrize("bins", [20, "edges"])
def test_cpu_engine_reports_nonfinite_x_as_it_bins(dtype, bad, strategy, size, bins, monkeypatch, scipy_rules):
    """SciPy's check of x for non-finite values where it needs no min / max of x (bins a number and range
    given; SciPy 1.18: explicit edges too) comes from the CPU binning's own report (_minmax is not called),
    with SciPy's errors -- the NaN one first; under 1.18's rules inf is an outlier (no error)."""
    from gpusync import _binstat

    rng = np.random.default_rng(5)
    x = rng.random(400_001 if size == "large" else 300).astype(dtype)
    v = rng.standard_normal(x.size)
    if bad in ("nan", "both"):
        x[-50] = np.nan
    if bad in ("inf", "both"):
        x[7] = np.inf
    if bad == "-inf":
        x[-2] = -np.inf
    kw = {"bins": 20, "range": (0, 1)} if bins == 20 else {"bins": np.linspace(0, 1, 21)}

    def no_pass(*a, **k):
        raise AssertionError("a min / max pass over x")

    with gs.use_backend("cpu"):
        gs.binned_statistic(v, v, "mean", bins=20)  # (the engine's lazy calibration reads x's min and max)
        monkeypatch.setattr(_binstat, "_minmax", no_pass)
        raises = (bad in ("nan", "both") and (scipy_rules or bins == 20)) or (
            bad in ("inf", "-inf") and not scipy_rules and bins == 20)
        if raises:  # SciPy raises a ValueError; gpusync's messages: the NaN one, else the non-finite one
            with pytest.raises(ValueError):
                scipy_binned_statistic(x, v, "mean", **kw)
            want = _binstat.NAN_SAMPLE if bad in ("nan", "both") else "x contains non-finite values."
            with pytest.raises(ValueError, match=re.escape(want)):
                gs.binned_statistic(x, v, "mean", strategy=strategy, **kw)
            return
        ref = scipy_binned_statistic(x, v, "mean", **kw)
        got = gs.binned_statistic(x, v, "mean", strategy=strategy, **kw)
        # (the engines that report as they bin; which one ran depends on the measured hand-off, which tests
        # run before this one move)
        assert gs.last_plan()["engine"] in ("caller", "cpu")
    np.testing.assert_allclose(got.statistic, ref.statistic, rtol=1e-12)
    np.testing.assert_array_equal(got.binnumber, ref.binnumber)


def test_cpu_small_input_is_one_running_sum_as_scipy():
    """A small input stays one part on CPU threads (at most one part per GS_CPU_BINSTAT_MIN_PART points):
    SciPy's one running sum, whose inf a split into parts would turn into inf + -inf = NaN (review50b)."""
    x = np.linspace(0, 1, 8, endpoint=False)
    v = np.array([1e308] * 4 + [-1e308] * 4)
    with gs.use_backend("cpu"):
        for stat in ("sum", "mean"):
            got = gs.binned_statistic(x, v, stat, bins=1, strategy="shared").statistic
            with np.errstate(over="ignore", invalid="ignore"):
                want = scipy.stats.binned_statistic(x, v, stat, bins=1).statistic
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [5, 1000, 100_003])
def test_skewed_edge_arrays_match_scipy(n):
    """binned_statistic bins through the CPU engine's edge index
    (csrc/cpu/edge_index.h, histogram's mechanism): cubic, log-spaced and
    random edges, values exactly on edges, on the last edge and past it --
    SciPy's bin numbers exactly, with and without the guess table."""
    rng = np.random.default_rng(40 + n)
    for edges in (np.linspace(-3, 3, 51) ** 3 / 9, np.logspace(-3, 1, 41), np.sort(rng.standard_normal(500)),
                  np.array([-2.0, -1, -0.999, 0, 1e-9, 2])):
        x = np.concatenate([rng.standard_normal(n) * 2, rng.choice(edges, n), np.exp(rng.standard_normal(n))])
        x = rng.permutation(x)[:n]
        v = rng.standard_normal(n)
        for stat in ("count", "mean", "max"):
            for strategy in ("auto", "global"):
                _check(x, v, stat, strategy=strategy, bins=edges)
                _check(x.astype(np.float32), v.astype(np.float32), stat, strategy=strategy, bins=edges)


def test_cpu_fused_dd_op_on_skewed_edges():
    """ops->binned_statistic_dd of the CPU backend (binstat_dd.c) bins through
    the same edge index: SciPy's bin numbers on cubic / log-spaced edges."""
    from gpusync import _binstat, _core

    rng = np.random.default_rng(41)
    n = 30_001
    ex, ey = np.linspace(-3, 3, 21) ** 3 / 9, np.logspace(-2, 1, 17)
    x = np.concatenate([rng.standard_normal(n - 100), rng.choice(ex, 100)])
    y = np.exp(rng.standard_normal(n))
    y[::97] = rng.choice(ey, y[::97].size)
    v = rng.standard_normal(n)
    tops = np.array([_binstat._top(ex, np.dtype(np.float64)), _binstat._top(ey, np.dtype(np.float64))])
    e_all = np.concatenate([ex, ey])
    ne = np.array([len(ex), len(ey)], np.int64)
    res = np.empty(20 * 16)
    flat = np.empty(n, np.int64)
    _core.binned_statistic_dd("cpu", [x, y], e_all, ne, tops, v, _core.STATISTICS["count"], res, flat, None, 0)
    ref = scipy.stats.binned_statistic_2d(x, y, v, "count", [ex, ey])
    np.testing.assert_array_equal(flat, ref.binnumber)
    np.testing.assert_array_equal(res.reshape(20, 16), ref.statistic)
