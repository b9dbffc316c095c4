"""The lock-free privatized binned statistic (issues 14 and 15): every
statistic against SciPy for bins 1 .. 4096, sizes 0 .. 10^5, float32 and
float64, NaN / inf values, NumPy / CuPy / PyTorch inputs, 1-D and 2-D.

count, min and max must equal SciPy's exactly; sum and mean within the
bound of a float64 sum in any order ((m - 1) 2^-53 sum|v| per bin of m
values, tested with a factor 4 of slack); std within 1e-9 relative for the
well-conditioned data here and after the second pass for the
ill-conditioned case (csrc/cuda/binstat_priv.cu states the bound).
"""
import numpy as np
import pytest
import scipy.stats

import gpusync as gs
from gpusync import _binstat
from conftest import scipy_binned_statistic
from test_axis import to_host, to_kind

STATS = ["count", "sum", "mean", "std", "min", "max"]
EPS = 2.0 ** -53



def _bound(x, v, stat, **kw):
    """Per-bin error bound of a float64 sum of the bin's values in any order."""
    with np.errstate(all="ignore"):
        a = scipy_binned_statistic(x, np.abs(np.asarray(v, np.float64)), "sum", **kw).statistic
        m = scipy_binned_statistic(x, v, "count", **kw).statistic
    b = 4 * np.maximum(m, 1) * EPS * a
    if stat == "mean":
        b = b / np.maximum(m, 1)
    return b + 1e-300


def _compare(got, ref, x, v, stat, **kw):
    g = np.asarray(to_host(got.statistic))
    assert g.dtype == np.float64 and g.shape == ref.statistic.shape
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
    if stat in ("count", "min", "max"):
        np.testing.assert_array_equal(g, ref.statistic)  # NaN in the same places, values exactly equal
    elif stat in ("sum", "mean"):
        r = ref.statistic
        assert np.array_equal(np.isnan(g), np.isnan(r))
        fin = np.isfinite(r)
        np.testing.assert_array_equal(g[~fin & ~np.isnan(r)], r[~fin & ~np.isnan(r)])
        err = np.abs(g[fin] - r[fin])
        bound = _bound(x, v, stat, **kw)[fin]
        assert (err <= bound).all(), (err.max(), bound[np.argmax(err - bound)])
    else:
        np.testing.assert_allclose(g, ref.statistic, rtol=1e-9, atol=0, equal_nan=True)


@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize("nbins", [1, 7, 100, 1000, 4096])
@pytest.mark.parametrize("n", [0, 1, 31, 33, 100_000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_privatized_matches_scipy(backend, kind, stat, nbins, n, dtype):
    rng = np.random.default_rng(n * 7 + nbins)
    x = rng.standard_normal(n).astype(dtype)
    v = (rng.standard_normal(n) * 5 + 2).astype(dtype)
    for strategy in ("auto", "privatized"):
        kw = dict(bins=nbins, range=(-2.5, 2.5))
        got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, strategy=strategy, **kw)
        _compare(got, scipy_binned_statistic(x, v, stat, **kw), x, v, stat, **kw)
        if n:
            kw = dict(bins=nbins)
            got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, strategy=strategy, **kw)
            _compare(got, scipy_binned_statistic(x, v, stat, **kw), x, v, stat, **kw)


@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize("layout", ["one value", "sorted", "runs of 100", "alternating"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_warp_groups_in_one_bin(backend, kind, stat, layout, dtype):
    """Data whose warps' groups of points fall into one bin (one value,
    sorted), mostly do (runs) or never do (alternating bins): the warp's one
    aggregated add and the per-point adds give SciPy's statistics, 1-D and
    2-D, with NaN values among them."""
    rng = np.random.default_rng(len(layout) + len(stat))
    n = 200_003
    if layout == "one value":
        x = np.full(n, 0.3)
    elif layout == "sorted":
        x = np.sort(rng.random(n))
    elif layout == "runs of 100":
        x = np.repeat(rng.random(n // 100 + 1), 100)[:n]
    else:
        x = np.where(np.arange(n) % 2 == 0, 0.25, 0.75)
    x = x.astype(dtype)
    v = (rng.standard_normal(n) * 3 + 1).astype(dtype)
    v[::4099] = np.nan
    kw = dict(bins=64, range=(0, 1))
    got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, **kw)
    _compare(got, scipy_binned_statistic(x, v, stat, **kw), x, v, stat, **kw)
    y = x[::-1].copy()
    ref = scipy.stats.binned_statistic_2d(x, y, v, stat, 16, [(0, 1), (0, 1)])
    got = gs.binned_statistic_2d(to_kind(x, kind), to_kind(y, kind), to_kind(v, kind), stat, 16, [(0, 1), (0, 1)])
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
    np.testing.assert_allclose(np.asarray(to_host(got.statistic)), ref.statistic, rtol=1e-9, equal_nan=True)


@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_inf_values_and_x(backend, kind, stat, dtype):
    rng = np.random.default_rng(3)
    n = 50_000
    x = rng.random(n).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    v[::997] = np.nan
    v[5::1999] = np.inf
    v[7::2503] = -np.inf
    v[11::3001] = -0.0
    x[::1013] = np.nan  # outliers with explicit edges
    x[3::1511] = np.inf
    x[4::1777] = 1.0  # on the last edge: the last bin
    edges = np.linspace(0, 1, 65).astype(dtype)
    if _binstat.nan_only():  # SciPy 1.18: a NaN in x raises whatever the bins; the rest with +inf for it
        with pytest.raises(ValueError, match="NaN"):
            gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=edges)
        x = np.where(np.isnan(x), dtype(np.inf), x)
    for strategy in ("auto", "privatized"):
        with np.errstate(all="ignore"):
            got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=edges, strategy=strategy)
            ref = scipy_binned_statistic(x, v, stat, bins=edges)
        g = to_host(got.statistic)
        np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
        assert np.array_equal(np.isnan(g), np.isnan(ref.statistic))
        if stat in ("count", "min", "max"):
            np.testing.assert_array_equal(g, ref.statistic)
        else:
            np.testing.assert_allclose(g, ref.statistic, rtol=1e-9, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("stat", ["std", "mean"])
def test_large_mean_small_spread(backend, kind, dtype, stat):
    """Bins whose mean is 10^6 (float64) / 10^4 (float32) times their
    spread: std takes the second pass (SciPy's two-pass formula)."""
    rng = np.random.default_rng(5)
    n = 100_000
    x = rng.random(n).astype(dtype)
    big = 1e6 if dtype == np.float64 else 1e4
    v = (big + rng.standard_normal(n)).astype(dtype)
    for nbins in (1, 7, 1000):
        got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=nbins)
        ref = scipy.stats.binned_statistic(x, v, stat, bins=nbins)
        np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-9, equal_nan=True)


@pytest.mark.gpu
def test_auto_takes_privatized_and_mutex_strategies_stay(backend):
    if backend != "cuda":
        pytest.skip("the GPU's strategies")
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(2)
    x, v = rng.random(100_000), rng.standard_normal(100_000)
    xd, vd = cp.asarray(x), cp.asarray(v)
    for stat in STATS:
        gs.binned_statistic(xd, vd, stat, bins=1000)
        assert gs.last_plan()["strategy_used"] == "privatized"
        ref = scipy.stats.binned_statistic(x, v, stat, bins=1000).statistic
        for s in ("shared", "global"):
            got = gs.binned_statistic(xd, vd, stat, bins=1000, strategy=s)
            assert gs.last_plan()["strategy_used"] == s
            np.testing.assert_allclose(to_host(got.statistic), ref, rtol=1e-9, atol=1e-12, equal_nan=True)
    # too many bins for a block: privatized is refused by name, auto takes the global mutexes
    with pytest.raises(ValueError, match="privatized"):
        gs.binned_statistic(xd, vd, "std", bins=200_000, strategy="privatized")
    got = gs.binned_statistic(xd, vd, "std", bins=200_000)
    assert gs.last_plan()["strategy_used"] != "privatized"


def test_privatized_on_the_cpu_engine(backend):
    rng = np.random.default_rng(4)
    x, v = rng.random(10_000), rng.standard_normal(10_000)
    for stat in STATS:
        got = gs.binned_statistic(x, v, stat, bins=50, strategy="privatized")
        ref = scipy.stats.binned_statistic(x, v, stat, bins=50)
        np.testing.assert_allclose(got.statistic, ref.statistic, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize("n", [0, 1, 31, 33, 100_000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2d_privatized_matches_scipy(backend, kind, stat, n, dtype):
    rng = np.random.default_rng(n + 1)
    x, y = rng.random((2, n)).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    v[::97] = np.nan
    for bins, rg in ((64, [(0, 1), (0, 1)]), ([3, 5], [(0.1, 0.9), (0, 1)]), ([np.linspace(0, 1, 17), 8], None)):
        if rg is None and n == 0:
            continue
        with np.errstate(all="ignore"):
            ref = scipy.stats.binned_statistic_2d(x, y, v, stat, bins, rg)
        got = gs.binned_statistic_2d(to_kind(x, kind), to_kind(y, kind), to_kind(v, kind), stat, bins, rg)
        g = to_host(got.statistic)
        assert g.shape == ref.statistic.shape
        np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
        np.testing.assert_array_equal(to_host(got.x_edge), ref.x_edge)
        np.testing.assert_array_equal(to_host(got.y_edge), ref.y_edge)
        if stat in ("count", "min", "max"):
            np.testing.assert_array_equal(g, ref.statistic)
        else:
            np.testing.assert_allclose(g, ref.statistic, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.gpu
def test_dd_strided_sample_several_values_expand(backend):
    if backend != "cuda":
        pytest.skip("device arrays run on the cuda backend")
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(8)
    s = rng.random((20_000, 3))
    vals = rng.standard_normal((2, 20_000))
    for stat in STATS:
        ref = scipy.stats.binned_statistic_dd(s, vals, stat, [4, 5, 6], expand_binnumbers=True)
        got = gs.binned_statistic_dd(cp.asarray(s), cp.asarray(vals), stat, [4, 5, 6], expand_binnumbers=True)
        np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-9, atol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)


def test_std_overflow_is_inf_as_scipy(backend, kind):
    """A bin of finite values whose squared deviations (or whose sum)
    overflow: SciPy's std is inf; bins of well-behaved values stay finite and
    empty bins NaN (only float64 values above 2^500 take the host fix-up)."""
    x = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 1.3, 1.4])
    v = np.array([1e200, -1e200, 3.0, 1e308, 1e308, 1.0, 2.0, 5.0, 7.0])
    edges = [0, 0.5, 1.0, 1.2, 1.5]
    for stat in ("std", "max"):  # (sum / mean of 1e200, -1e200, 3 depend on the order of additions)
        with np.errstate(all="ignore"):
            ref = scipy.stats.binned_statistic(x, v, stat, bins=edges)
        got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=edges)
        np.testing.assert_array_equal(to_host(got.statistic), ref.statistic)


@pytest.mark.parametrize("stat", STATS + ["var"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_fused_op_equals_scipy_bit_for_bit(stat, dtype):
    """ops->binned_statistic_dd of the CPU backend (the reference of the
    fused kernel): SciPy's arithmetic in SciPy's order, bit for bit."""
    from gpusync import _binstat, _core

    rng = np.random.default_rng(11)
    n = 20_000
    x, y = rng.random((2, n)).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    v[::101] = np.nan
    v[3::211] = -0.0
    x[::307] = np.nan
    x[5::401] = 1.0
    ex, ey = np.linspace(0, 1, 9).astype(dtype), np.linspace(0.1, 0.9, 6).astype(dtype)
    tops = np.array([_binstat._top(ex, np.dtype(dtype)), _binstat._top(ey, np.dtype(dtype))])
    e_all = np.concatenate([ex, ey]).astype(np.float64)
    ne = np.array([len(ex), len(ey)], np.int64)
    res = np.empty(8 * 5)
    flat = np.empty(n, np.int64)
    _core.binned_statistic_dd("cpu", [x, y], e_all, ne, tops, v, _core.STATISTICS[stat], res, flat, None, 0)
    with np.errstate(all="ignore"):
        ref = scipy.stats.binned_statistic_2d(np.where(np.isnan(x), np.inf, x), y, v,
                                              "std" if stat == "var" else stat, [ex, ey])
    want = ref.statistic ** 2 if stat == "var" else ref.statistic
    np.testing.assert_array_equal(flat, ref.binnumber)
    if stat == "var":
        np.testing.assert_allclose(res.reshape(8, 5), want, rtol=1e-14, equal_nan=True)
    else:
        np.testing.assert_array_equal(res.reshape(8, 5), want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nonfinite_x_is_reported_by_the_kernel(kind, dtype, monkeypatch):
    """bins a number with range given: SciPy's check that x is finite comes
    from the privatized kernel's own report (no min / max pass over x), with
    the errors of the min / max check, dimension by dimension."""
    from gpusync import _binstat, _binstat_dd

    if kind == "numpy":
        pytest.skip("host x is checked on the host")
    rng = np.random.default_rng(12)
    n = 50_003
    x, y = rng.random((2, n)).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    dv = to_kind(v, kind)

    def no_pass(*a, **k):
        raise AssertionError("a min / max pass ran")

    def want(*cols):  # the min / max check's first error
        try:
            for c in cols:
                _binstat._check_finite(c.min(), c.max(), c.dtype)
        except ValueError as e:
            return str(e)
        return None

    for where, val in (("x", np.nan), ("x", np.inf), ("x", -np.inf), ("y", np.nan), ("y", -np.inf), (None, 0)):
        xx, yy = x.copy(), y.copy()
        if where == "x":
            xx[n // 3] = val
        elif where == "y":
            yy[7] = val
            xx[n - 1] = np.inf  # then x's error comes first
        calls = [((xx,), lambda a: gs.binned_statistic(a[0], dv, "mean", 16, (0, 1)),
                  lambda: gs.binned_statistic(xx, v, "mean", 16, (0, 1))),
                 ((xx, yy), lambda a: gs.binned_statistic_2d(a[0], a[1], dv, "mean", 8, [(0, 1), (0, 1)]),
                  lambda: scipy.stats.binned_statistic_2d(xx, yy, v, "mean", 8, [(0, 1), (0, 1)]))]
        for cols, fn, host in calls:
            w = want(*cols)
            ref = host() if w is None else None
            with monkeypatch.context() as mp:
                mp.setattr(_binstat, "_minmax", no_pass)
                mp.setattr(_binstat_dd, "_minmax_many", no_pass)
                if w is None:
                    got = fn([to_kind(c, kind) for c in cols])
                    assert gs.last_plan()["strategy_used"] == "privatized"
                    np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-6,
                                               equal_nan=True)
                else:
                    with pytest.raises(ValueError) as e:
                        fn([to_kind(c, kind) for c in cols])
                    assert str(e.value) == w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stat", ["mean", "std", "count", "min", "var"])
def test_device_fast_paths(kind, dtype, stat):
    """A repeated device binned_statistic / binned_statistic_2d with bins
    numbers and range given takes the device fast path (its plan says so)
    with the general path's results: SciPy's statistic, edges and bin
    numbers as fresh arrays of the input's library, and SciPy's error for
    NaN / inf x; what it does not take (other dtypes, expanded bin numbers,
    a strategy) gets the same answers from the general path."""
    if kind == "numpy":
        pytest.skip("the device fast path")
    rng = np.random.default_rng(21)
    n = 100_003
    xh, yh = (rng.random((2, n)) * 1.2 - 0.1).astype(dtype)
    vh = rng.standard_normal(n).astype(dtype)
    xh[::997] = 0.5  # values on edges
    x, y, v = (to_kind(a, kind) for a in (xh, yh, vh))
    sstat = "std" if stat == "var" else stat

    def close(got, want):
        got = to_host(got)
        want = want ** 2 if stat == "var" else want
        if stat in ("count", "min"):
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)

    ref1 = scipy.stats.binned_statistic(xh, vh, sstat, 50, (0, 1))
    ref2 = scipy.stats.binned_statistic_2d(xh, yh, vh, sstat, [40, 30], [(0, 1), (0.1, 0.9)])
    seen = []
    for k in range(3):
        g1 = gs.binned_statistic(x, v, stat, 50, (0, 1))
        assert gs.last_plan()["op"] == "binned_statistic"
        if k:
            assert "the device fast path" in gs.last_plan()["notes"]
        g2 = gs.binned_statistic_2d(x, y, v, stat, [40, 30], [(0, 1), (0.1, 0.9)])
        assert gs.last_plan()["op"] == "binned_statistic_dd"
        if k:
            assert "the device fast path" in gs.last_plan()["notes"]
        assert type(g1.statistic) is type(x) and type(g2.x_edge) is type(x) and type(g2.binnumber) is type(x)
        close(g1.statistic, ref1.statistic)
        np.testing.assert_array_equal(to_host(g1.bin_edges), ref1.bin_edges)
        np.testing.assert_array_equal(to_host(g1.binnumber), ref1.binnumber)
        close(g2.statistic, ref2.statistic)
        np.testing.assert_array_equal(to_host(g2.x_edge), ref2.x_edge)
        np.testing.assert_array_equal(to_host(g2.y_edge), ref2.y_edge)
        np.testing.assert_array_equal(to_host(g2.binnumber), ref2.binnumber)
        seen.append(g1.bin_edges)
    seen[0][0] = 12345  # fresh edges each call
    np.testing.assert_array_equal(to_host(gs.binned_statistic(x, v, stat, 50, (0, 1)).bin_edges), ref1.bin_edges)
    # non-finite x after the fast path's plans are made: SciPy's rules (conftest.scipy_binned_statistic) --
    # 1-D bins a number: NaN raises, inf raises before SciPy 1.18 and is an outlier from it; 2-D bins=[40, 30]
    # (not one int): NaN an outlier before 1.18 and refused from it, inf an outlier under both
    for bad_value in (np.inf, np.nan):
        bad = xh.copy()
        bad[77] = bad_value
        raises1 = bad_value != bad_value or not _binstat.nan_only()
        raises2 = bad_value != bad_value and _binstat.nan_only()
        if raises1:
            with pytest.raises(ValueError, match="non-finite|NaN"):
                gs.binned_statistic(to_kind(bad, kind), v, stat, 50, (0, 1))
        else:
            g = gs.binned_statistic(to_kind(bad, kind), v, stat, 50, (0, 1))
            r = scipy_binned_statistic(bad, vh, sstat, 50, (0, 1))
            close(g.statistic, r.statistic)
            np.testing.assert_array_equal(to_host(g.binnumber), r.binnumber)
        if raises2:
            with pytest.raises(ValueError, match="NaN"):
                gs.binned_statistic_2d(to_kind(bad, kind), y, v, stat, [40, 30], [(0, 1), (0.1, 0.9)])
        else:
            g = gs.binned_statistic_2d(to_kind(bad, kind), y, v, stat, [40, 30], [(0, 1), (0.1, 0.9)])
            r = scipy.stats.binned_statistic_2d(np.where(np.isnan(bad), np.inf, bad), yh, vh, sstat, [40, 30],
                                                [(0, 1), (0.1, 0.9)])  # (NaN: 1.17's outlier, as +inf)
            close(g.statistic, r.statistic)
            np.testing.assert_array_equal(to_host(g.binnumber), r.binnumber)
    # the general path's cases: mixed dtypes, expanded bin numbers, a strategy
    v2 = to_kind(vh.astype(np.float64 if dtype == np.float32 else np.float32), kind)
    close(gs.binned_statistic(x, v2, stat, 50, (0, 1)).statistic,
          scipy.stats.binned_statistic(xh, to_host(v2), sstat, 50, (0, 1)).statistic)
    e = gs.binned_statistic_2d(x, y, v, stat, [40, 30], [(0, 1), (0.1, 0.9)], expand_binnumbers=True)
    np.testing.assert_array_equal(to_host(e.binnumber), scipy.stats.binned_statistic_2d(
        xh, yh, vh, sstat, [40, 30], [(0, 1), (0.1, 0.9)], expand_binnumbers=True).binnumber)
    assert "the device fast path" not in gs.last_plan()["notes"]
    close(gs.binned_statistic(x, v, stat, 50, (0, 1), strategy="privatized").statistic, ref1.statistic)
    assert "the device fast path" not in gs.last_plan()["notes"]


def test_device_edges_are_taken(kind):
    """Edges given as a device array of the input's library (CuPy / PyTorch
    users keep their edges there): read once, the same answers as NumPy edges."""
    if kind == "numpy":
        pytest.skip("device edges")
    rng = np.random.default_rng(5)
    xh, vh = rng.random(10_000), rng.standard_normal(10_000)
    e = np.array([0, 0.1, 0.25, 0.5, 0.9, 1.0])
    ref = scipy.stats.binned_statistic(xh, vh, "mean", e)
    got = gs.binned_statistic(to_kind(xh, kind), to_kind(vh, kind), "mean", to_kind(e, kind))
    np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-12)
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_var_in_n_dimensions(kind, d):
    """``"var"`` (gpusync's square of SciPy's std) in binned_statistic_dd and
    binned_statistic_2d as in binned_statistic: std squared, NaN where empty."""
    rng = np.random.default_rng(d)
    sample = rng.random((2_001, d))
    v = rng.standard_normal(2_001)
    want = scipy.stats.binned_statistic_dd(sample, v, "std", 4).statistic ** 2
    got = gs.binned_statistic_dd([to_kind(sample[:, k].copy(), kind) for k in range(d)], to_kind(v, kind), "var", 4)
    np.testing.assert_allclose(to_host(got.statistic), want, rtol=1e-9, atol=1e-15, equal_nan=True)
    if d == 2:
        got = gs.binned_statistic_2d(to_kind(sample[:, 0].copy(), kind), to_kind(sample[:, 1].copy(), kind),
                                     to_kind(v, kind), "var", [3, 5], [(0, 1), (0.1, 0.9)])
        want = scipy.stats.binned_statistic_2d(sample[:, 0], sample[:, 1], v, "std", [3, 5],
                                               [(0, 1), (0.1, 0.9)]).statistic ** 2
        np.testing.assert_allclose(to_host(got.statistic), want, rtol=1e-9, atol=1e-15, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("var", [False, True])
def test_std_of_sparse_ill_conditioned_bins(backend, kind, dtype, var):
    """Every bin's mean 10^6 (10^4 for float32) times its spread or more:
    the dense bins of a normal x take the second pass, the sparse tail bins
    (1 .. 16 points, among them single points: std 0) take their values from
    the cells of one point; every bin as SciPy's two-pass formula.  Also a
    bin of infinite, NaN and overflowing values among few points."""
    rng = np.random.default_rng(11)
    n = 600_000
    x = rng.standard_normal(n).astype(dtype)
    big = 1e6 if dtype == np.float64 else 1e4
    v = (big + rng.standard_normal(n)).astype(dtype)
    kw = dict(bins=1000, range=(-5.5, 5.5))
    stat = "var" if var else "std"
    for cut in (None, "nonfinite"):
        if cut:
            tail = np.flatnonzero(np.abs(x) > 4.2)[:6]
            v[tail[0]] = np.inf
            v[tail[1]] = np.nan
            v[tail[2:4]] = np.finfo(dtype).max
        sx, sv = to_kind(x, kind), to_kind(v, kind)
        with np.errstate(all="ignore"):
            got = gs.binned_statistic(sx, sv, stat, **kw)
            ref = scipy.stats.binned_statistic(x, v, "std", **kw)  # (np.var would add float32 in float32)
            if var:
                ref = ref._replace(statistic=ref.statistic ** 2)
        g = np.asarray(to_host(got.statistic))
        np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
        cnt = np.bincount(ref.binnumber, minlength=1002)[1:-1]
        assert ((cnt >= 1) & (cnt <= 16)).sum() >= 20  # the sparse bins this test is about
        assert (g[(cnt == 1) & np.isfinite(ref.statistic)] == 0).all()
        np.testing.assert_allclose(g, ref.statistic, rtol=1e-9, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2d_std_of_sparse_bins(backend, kind, dtype):
    rng = np.random.default_rng(12)
    n = 400_000
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    v = (1e3 + rng.random(n)).astype(dtype)
    rng_ = [(-4.5, 4.5), (-4.5, 4.5)]
    got = gs.binned_statistic_2d(to_kind(x, kind), to_kind(y, kind), to_kind(v, kind), "std", 40, rng_)
    ref = scipy.stats.binned_statistic_2d(x, y, v, "std", 40, rng_)
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
    np.testing.assert_allclose(np.asarray(to_host(got.statistic)), ref.statistic, rtol=1e-7 if dtype == np.float32
                               else 1e-9, equal_nan=True)


@pytest.mark.parametrize("window", ["1", "0"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("edges", ["linspace", "far from 0", "tiny span", "uneven", "float32 values"])
def test_points_on_and_next_to_every_edge(backend, kind, dtype, edges, window, monkeypatch):
    """Points on every edge and one float step either side of it, among
    enough others that the kernel bins without reading edges where the
    guess's window proves the bin (guess.cuh; GPUSYNC_BINSTAT_WINDOW=1 takes
    it on every device, 0 never): every bin number and count as SciPy's."""
    monkeypatch.setenv("GPUSYNC_BINSTAT_WINDOW", window)
    nb = 100
    if edges == "linspace":
        e = np.linspace(-3.0, 7.0, nb + 1)
    elif edges == "far from 0":  # (edges that are distinct in the data's precision, as SciPy requires)
        e = np.linspace(1e6, 1e6 + (1 if dtype == np.float64 else 100), nb + 1)
    elif edges == "tiny span":
        e = np.linspace(1.0, 1.0 + (1e-9 if dtype == np.float64 else 1e-3), nb + 1)
    elif edges == "uneven":
        e = np.cumsum(np.r_[0.0, np.random.default_rng(1).random(nb) + 0.01])
    else:
        e = np.linspace(-3.0, 7.0, nb + 1).astype(np.float32).astype(np.float64)
    ed = e.astype(dtype)
    near = np.concatenate([ed, np.nextafter(ed, np.inf), np.nextafter(ed, -np.inf)]).astype(dtype)
    rng = np.random.default_rng(nb)
    fill = (e[0] + (e[-1] - e[0]) * rng.random(60_000)).astype(dtype)
    x = rng.permutation(np.concatenate([np.tile(near, 20), fill])).astype(dtype)
    v = rng.standard_normal(x.size).astype(dtype)
    for stat in ("count", "mean"):
        got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=e)
        ref = scipy_binned_statistic(x, v, stat, bins=e)
        np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
        if stat == "count":
            np.testing.assert_array_equal(np.asarray(to_host(got.statistic)), ref.statistic)
    rng2 = (float(e[0]), float(e[-1]))
    got = gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), "count", bins=nb, range=rng2)
    ref = scipy_binned_statistic(x, v, "count", bins=nb, range=rng2)
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_std_few_points_sharing_a_copy_or_many(backend, kind, dtype):
    """Ill-conditioned bins (mean 10^6 / 10^4 times the spread) of 2 points
    side by side (one thread's pair of points: one copy of the partials, not
    two single ones: the second pass), of 2 points far apart (two single
    copies), of 16 and of 17 points: SciPy's two-pass value every time."""
    rng = np.random.default_rng(21)
    nb = 400
    centers = (np.arange(nb) + 0.5) / nb
    parts = []
    for b in range(nb):
        k = 2 if b < 300 else (16 if b < 350 else 17)
        parts.append(np.full(k, centers[b]))
    pair_bins = np.concatenate(parts[:150])  # each bin's two points adjacent, at an even index
    rest = rng.permutation(np.concatenate(parts[150:]))
    x = np.concatenate([pair_bins, rest]).astype(dtype)
    big = 1e6 if dtype == np.float64 else 1e4
    v = (big + rng.standard_normal(x.size)).astype(dtype)
    kw = dict(bins=nb, range=(0, 1))
    ref = scipy.stats.binned_statistic(x, v, "std", **kw).statistic
    # (two float64 values 10^6 apart by ~0.01: SciPy's own mean rounds by half a unit of 2 * 10^6, so any
    # two-pass order differs from it by that much in absolute terms)
    atol = 2 * float(np.spacing(2 * big)) if dtype == np.float64 else 0
    for stat in ("std", "var"):
        got = np.asarray(to_host(gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, **kw).statistic))
        np.testing.assert_allclose(np.sqrt(got) if stat == "var" else got, ref, rtol=1e-9, atol=atol)


@pytest.mark.gpu
@pytest.mark.parametrize("spread", ["well conditioned", "ill conditioned"])
def test_std_of_host_input_of_several_chunks(spread):
    """Host float32 input past one 256 MiB staging chunk on the GPU engine:
    the second pass stages the input again only when a bin is marked (one
    wait for the count of marked bins first); NumPy's two-pass std either way."""
    n = 70_000_000
    rng = np.random.default_rng(8)
    x = rng.random(n, dtype=np.float32)
    v = rng.standard_normal(n, dtype=np.float32)
    if spread == "ill conditioned":
        v += np.float32(1e4)
    with gs.use_backend("cuda"):
        got = gs.binned_statistic(x, v, "std", bins=64, range=(0, 1))
    b = np.asarray(got.binnumber) - 1
    assert b.min() >= 0 and b.max() <= 63
    vd = v.astype(np.float64)
    cnt = np.bincount(b, minlength=64)
    mean = np.bincount(b, vd, minlength=64) / cnt
    ref = np.sqrt(np.bincount(b, (vd - mean[b]) ** 2, minlength=64) / cnt)
    np.testing.assert_allclose(np.asarray(got.statistic), ref, rtol=1e-6)


@pytest.mark.gpu
def test_cupy_conversions_keep_float32_subnormals():
    """CuPy builds its kernels with -ftz=true, so its own float32 <-> float64 astype flushes float32
    subnormals to zero (cupy/cupy#8382); gpusync's conversions of CuPy arrays (_arrays' Lib.astype: x and
    values of mixed dtypes, say) keep them, as NumPy does."""
    cp = pytest.importorskip("cupy")
    from gpusync._arrays import Lib

    lib = Lib.of("cupy")
    f32 = np.array([1e-45, -3e-44, 1e-40, -1.1754942e-38, 1.17549435e-38, 0.0, -0.0, 1.5, np.inf, -np.inf, np.nan],
                   np.float32)
    got = lib.astype(cp.asarray(f32), np.float64).get()
    np.testing.assert_array_equal(got, f32.astype(np.float64))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(f32))
    with np.errstate(over="ignore"):
        f64 = np.array([1e-45, 7e-46, 7.01e-46, 2.1e-45, 2.9e-45, -3e-44, 1.1754942e-38, 1.1754943e-38, 1e-300,
                        -1e-320, 0.0, -0.0, 1.5, 1e300, -np.inf, np.nan])
        want = f64.astype(np.float32)
    got = lib.astype(cp.asarray(f64), np.float32).get()
    np.testing.assert_array_equal(got, want)  # (rounded half to even into the subnormals, as NumPy)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    strided = cp.asarray(np.repeat(f32, 2))[::2]  # a strided view converts too
    np.testing.assert_array_equal(lib.astype(strided, np.float64).get(), f32.astype(np.float64))
    # the statistic of float32 subnormal values with float64 x: the values as NumPy converts them
    x = np.linspace(0, 1, 1000)
    v = (np.arange(1000) % 7 + 1).astype(np.float32) * np.float32(1e-45)
    for be in ("cuda", "cpu"):
        with gs.use_backend(be):
            for stat in ("sum", "min", "mean"):
                r = gs.binned_statistic(cp.asarray(x), cp.asarray(v), stat, bins=5)
                np.testing.assert_array_equal(r.statistic.get(), scipy_binned_statistic(x, v, stat, bins=5).statistic)


@pytest.mark.gpu
def test_cupy_median_of_float32_subnormals():
    """The per-bin median of CuPy float32 values takes SciPy's float32 midpoint without CuPy's flush of
    subnormals (its kernels build with -ftz=true)."""
    cp = pytest.importorskip("cupy")
    x = np.repeat(np.arange(6.0), 4)
    tiny = np.float32(1e-45)
    v = np.array([1, 2, 3, 4, 1, 1, 2, 2, 5, 7, 9, 11, 3, 3, 3, 3, 1, 2, 2, 2, 8, 1, 6, 2], np.float32) * tiny
    v[16:20] = np.array([1e-38, 1.2e-38, 1.17e-38, 1.18e-38], np.float32)  # around the least normal
    with np.errstate(all="ignore"):
        ref = scipy.stats.binned_statistic(x, v, "median", bins=6)
    got = gs.binned_statistic(cp.asarray(x), cp.asarray(v), "median", bins=6)
    np.testing.assert_array_equal(got.statistic.get(), ref.statistic)
    assert (ref.statistic > 0).all()
