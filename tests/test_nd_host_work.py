"""The host work of the device N-D histograms and binned statistics (issues
14, 15): one min/max pass for every dimension (_core.minmax_many), SciPy's
finiteness check after the launch when the range is given, cached edges,
device edges written by their formula -- SciPy's and NumPy's results and
errors all the same."""
import numpy as np
import pytest
import scipy.stats

import gpusync as gs
from conftest import KINDS, scipy_binned_statistic
from gpusync import _arrays, _binstat, _core
from test_axis import to_host, to_kind

DEVICE_KINDS = [k for k in KINDS if k.id != "numpy"]


@pytest.fixture(params=DEVICE_KINDS)
def kind(request):
    if not gs.cuda_available():
        pytest.skip("needs a CUDA GPU")
    with gs.use_backend("cuda"):
        yield request.param


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint16, np.int64])
def test_minmax_many_matches_numpy(kind, dtype):
    rng = np.random.default_rng(3)
    cols = [(rng.standard_normal(n) * 50).astype(dtype) for n in (1, 7, 1000, 123_457)]
    cols.append((rng.standard_normal(4001) * 50).astype(dtype)[::3])  # strided
    if np.dtype(dtype).kind == "f":
        cols[2][17] = np.nan  # NaN propagates, as in NumPy's min / max
        cols[3][5] = -np.inf
    dev = [_arrays.as_input(to_kind(c, kind), "x") for c in cols]
    raw = _core.minmax_many("cuda", [d.desc() for d in dev], dev[0].stream)
    got = np.frombuffer(raw, dtype=dtype).reshape(-1, 2)
    for c, (lo, hi) in zip(cols, got):  # minmax's contract: a NaN makes the min NaN (callers test lo)
        np.testing.assert_array_equal([lo, hi], [c.min(), np.nanmax(c) if c.dtype.kind == "f" else c.max()])


def test_minmax_many_bad_input(kind):
    a = _arrays.as_input(to_kind(np.ones(4), kind), "x")
    b = _arrays.as_input(to_kind(np.ones(4, np.float32), kind), "x")
    with pytest.raises(ValueError):
        _core.minmax_many("cuda", [a.desc(), b.desc()], a.stream)
    with pytest.raises(ValueError):
        _core.minmax_many("cuda", [a.desc()] * 17, a.stream)


@pytest.mark.parametrize("stat", ["mean", "std", "count"])
def test_finite_check_after_launch(kind, stat):
    """bins a number: NaN / infinite x raise SciPy's error whether or not the
    range is given (given: checked after the kernel's launch), before a bad
    range's error (SciPy checks finiteness first)."""
    rng = np.random.default_rng(5)
    x, v = rng.random(10_000), rng.random(10_000)
    for bad, match in ((np.nan, "NaN"), (np.inf, "non-finite")):
        if bad == np.inf and _binstat.nan_only():  # SciPy 1.18: inf is an outlier (tests/test_binstat.py)
            continue
        xb = x.copy()
        xb[1234] = bad
        for rg in (None, (0, 1)):
            with pytest.raises(ValueError, match=match):
                gs.binned_statistic(to_kind(xb, kind), to_kind(v, kind), stat, bins=10, range=rg)
        with pytest.raises(ValueError, match=match):
            gs.binned_statistic(to_kind(xb, kind), to_kind(v, kind), stat, bins=10, range=(1, 0))
        for rg in (None, [(0, 1), (0, 1)]):
            with pytest.raises(ValueError, match="non-finite|NaN"):
                gs.binned_statistic_2d(to_kind(x, kind), to_kind(xb, kind), to_kind(v, kind), stat, 8, rg)
    with pytest.raises(ValueError, match="start must be <= stop"):
        gs.binned_statistic(to_kind(x, kind), to_kind(v, kind), stat, bins=10, range=(1, 0))
    # explicit edges: NaN x is an outlier, no error (SciPy 1.18: refused whatever the bins)
    xb = x.copy()
    xb[7] = np.nan
    if _binstat.nan_only():
        with pytest.raises(ValueError, match="NaN"):
            gs.binned_statistic(to_kind(xb, kind), to_kind(v, kind), stat, bins=[0, 0.5, 1])
        return
    got = gs.binned_statistic(to_kind(xb, kind), to_kind(v, kind), stat, bins=[0, 0.5, 1])
    ref = scipy_binned_statistic(xb, v, stat, bins=[0, 0.5, 1])  # (SciPy releases disagree: conftest.py)
    np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-9, equal_nan=True)
    np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_repeated_calls_and_device_edges(kind, dtype):
    """Repeated calls (cached plans), range given and from the data, int x
    with a range (no min/max pass at all): SciPy's / NumPy's results, edges
    of SciPy's / NumPy's dtype and values."""
    rng = np.random.default_rng(6)
    x = (rng.random(20_001) * 10).astype(dtype)
    y = (rng.random(20_001) * 3).astype(dtype)
    v = rng.standard_normal(20_001)
    xd, yd, vd = to_kind(x, kind), to_kind(y, kind), to_kind(v, kind)
    for _ in range(2):
        for rg in (None, (0, 10), (2.5, 7)):
            got = gs.binned_statistic(xd, vd, "mean", bins=13, range=rg)
            ref = scipy.stats.binned_statistic(x, v, "mean", bins=13, range=rg)
            np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-9, equal_nan=True)
            e = to_host(got.bin_edges)
            assert e.dtype == ref.bin_edges.dtype
            np.testing.assert_array_equal(e, ref.bin_edges)
        for rg in (None, [(0, 10), (0, 3)]):
            got = gs.binned_statistic_2d(xd, yd, vd, "sum", [9, 4], rg)
            ref = scipy.stats.binned_statistic_2d(x, y, v, "sum", [9, 4], rg)
            np.testing.assert_allclose(to_host(got.statistic), ref.statistic, rtol=1e-9, atol=1e-9)
            for a, b in ((got.x_edge, ref.x_edge), (got.y_edge, ref.y_edge)):
                assert to_host(a).dtype == b.dtype
                np.testing.assert_array_equal(to_host(a), b)
            np.testing.assert_array_equal(to_host(got.binnumber), ref.binnumber)
        for rg in (None, [[0, 10], [0, 3]]):
            for density in (None, True):
                h, xe, ye = gs.histogram2d(xd, yd, [16, 5], rg, density)
                rh, rxe, rye = np.histogram2d(x, y, [16, 5], rg, density)
                assert to_host(h).dtype == rh.dtype
                np.testing.assert_allclose(to_host(h), rh, rtol=1e-12)
                for a, b in ((xe, rxe), (ye, rye)):
                    assert to_host(a).dtype == b.dtype
                    np.testing.assert_array_equal(to_host(a), b)
