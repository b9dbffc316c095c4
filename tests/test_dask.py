"""gpusync.dask: chunked histogram, bincount, sum, dot and binned_statistic
against NumPy / the single-array calls, on Dask's local schedulers."""
import numpy as np
import pytest

import gpusync as gs

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
gsd = pytest.importorskip("gpusync.dask")


@pytest.fixture(params=["synchronous", "threads"])
def scheduler(request):
    with dask.config.set(scheduler=request.param):
        yield request.param


def test_histogram_and_bincount(backend, scheduler):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, 1_000_003).astype(np.uint8)
    x = da.from_array(a, chunks=70_000)
    h, e = gsd.histogram(x, bins=256, range=(0, 256))
    rh, re = np.histogram(a, 256, (0, 256))
    np.testing.assert_array_equal(h, rh)
    np.testing.assert_array_equal(e, re)
    f = rng.standard_normal(300_001)
    fx = da.from_array(f, chunks=40_000)
    h, e = gsd.histogram(fx, bins=37)  # range from the data, like NumPy
    rh, re = np.histogram(f, 37)
    np.testing.assert_array_equal(h, rh)
    np.testing.assert_array_equal(e, re)
    w = rng.random(300_001)
    h, _ = gsd.histogram(fx, bins=10, range=(-2, 2), weights=da.from_array(w, chunks=55_555))
    np.testing.assert_allclose(h, np.histogram(f, 10, (-2, 2), weights=w)[0], rtol=1e-12)
    hd, _ = gsd.histogram(fx, bins=10, range=(-2, 2), density=True)
    np.testing.assert_allclose(hd, np.histogram(f, 10, (-2, 2), density=True)[0], rtol=1e-12)
    b = rng.integers(0, 1000, 500_000)
    b[123] = 5000  # the largest value sits in one chunk only
    np.testing.assert_array_equal(gsd.bincount(da.from_array(b, chunks=60_000)), np.bincount(b))
    np.testing.assert_array_equal(gsd.bincount(da.from_array(b, chunks=60_000), minlength=9000),
                                  np.bincount(b, minlength=9000))
    ww = rng.random(500_000)
    np.testing.assert_allclose(gsd.bincount(da.from_array(b, chunks=60_000), weights=da.from_array(ww, chunks=1000)),
                               np.bincount(b, weights=ww), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.float32, np.float64])
def test_sum_and_dot(backend, scheduler, dtype):
    rng = np.random.default_rng(1)
    a = (rng.integers(-100, 100, 400_001) if np.dtype(dtype).kind in "iu" else rng.standard_normal(400_001))
    a = a.astype(dtype)
    b = a[::-1].copy()
    x, y = da.from_array(a, chunks=33_333), da.from_array(b, chunks=50_000)
    s = gsd.sum(x)
    assert s.dtype == np.sum(a).dtype
    with np.errstate(over="ignore"):
        d, rd = gsd.dot(x, y), np.dot(a, b)
    assert d.dtype == rd.dtype
    if np.dtype(dtype).kind == "f":
        assert s == pytest.approx(gs.sum(a), rel=1e-6 if dtype == np.float32 else 1e-12)
        assert d == pytest.approx(gs.dot(a, b), rel=1e-6 if dtype == np.float32 else 1e-12)
    else:
        assert s == np.sum(a) and d == rd  # exact, wrapping like NumPy


def test_binned_statistic_all_stats(backend, scheduler):
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2)
    xs = rng.random(200_003)
    vs = rng.standard_normal(200_003)
    vs[17] = np.nan  # a NaN value: its bin's sum/mean/std/max are NaN, min skips it
    x, v = da.from_array(xs, chunks=30_000), da.from_array(vs, chunks=45_000)
    for st in ("count", "sum", "mean", "std", "var", "min", "max"):
        got = gsd.binned_statistic(x, v, st, bins=20)
        ref = scipy_stats.binned_statistic(xs, vs, st if st != "var" else "std", bins=20)
        want = ref.statistic ** 2 if st == "var" else ref.statistic
        np.testing.assert_allclose(got.statistic, want, rtol=1e-9, equal_nan=True, err_msg=st)
        np.testing.assert_array_equal(got.bin_edges, ref.bin_edges)
        np.testing.assert_array_equal(got.binnumber, ref.binnumber)


def test_bad_input():
    with pytest.raises(TypeError, match="dask.array"):
        gsd.sum(np.ones(3))
    with pytest.raises(ValueError, match="not aligned"):
        gsd.dot(da.ones(3, chunks=2), da.ones(4, chunks=2))
    with pytest.raises(ValueError, match="bin estimators"):
        gsd.histogram(da.ones(3, chunks=2), bins="auto")


@pytest.mark.gpu
def test_cupy_chunks_on_the_gpu(scheduler):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, 2_000_001).astype(np.uint8)
    x = da.from_array(cp.asarray(a), chunks=300_000, asarray=False)
    with gs.use_backend("cuda"):
        np.testing.assert_array_equal(gsd.bincount(x), np.bincount(a))
        assert gsd.sum(x) == a.sum(dtype=np.uint64)
        h, _ = gsd.histogram(x, bins=64, range=(0, 256))
        np.testing.assert_array_equal(h, np.histogram(a, 64, (0, 256))[0])
