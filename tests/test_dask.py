"""gpusync.dask: lazy graphs whose .compute() equals the single-array gpusync
call on the concatenated array (and NumPy / SciPy), on the synchronous
scheduler and on dask.distributed (a LocalCluster of two worker processes:
real scheduler, workers, serialization; workers here have no GPU, so NumPy
chunks run on the CPU engine)."""
import builtins
import os
import warnings

import numpy as np
import pytest

import gpusync as gs

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
gsd = pytest.importorskip("gpusync.dask")


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      worker_dashboard_address=None)
        client = distributed.Client(lc, set_as_default=False)
    try:
        yield client
    finally:  # bounded: a worker restarted by the fault test must not hold the suite
        for closing in (client, lc):
            try:
                closing.close(timeout=20)
            except Exception:  # noqa: BLE001 - teardown only
                pass


@pytest.fixture(params=["synchronous", "distributed"])
def scheduler(request):
    if request.param == "distributed":
        client = request.getfixturevalue("cluster")
        with dask.config.set(scheduler=client):
            yield client
    else:
        with dask.config.set(scheduler="synchronous"):
            yield None


def _eq(got, want):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


def test_histogram_equals_the_single_call(scheduler):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, 100_007).astype(np.uint8)
    x = da.from_array(a, chunks=15_000)
    h, e = gsd.histogram(x, bins=256, range=(0, 256))
    assert isinstance(h, da.Array) and isinstance(e, da.Array)  # lazy
    h, e = dask.compute(h, e)
    rh, re = gs.histogram(a, bins=256, range=(0, 256))
    _eq(h, rh)
    _eq(e, re)
    f = rng.standard_normal(50_001)
    for dt in (np.float64, np.float32):
        fx = da.from_array(f.astype(dt), chunks=13_000)
        h, e = dask.compute(*gsd.histogram(fx, bins=37))  # range from the data
        rh, re = np.histogram(f.astype(dt), 37)
        _eq(h, rh)
        _eq(e, re)
    i = rng.integers(-50, 1000, 50_000)
    h, e = dask.compute(*gsd.histogram(da.from_array(i, chunks=7_000), bins=11))
    _eq(h, np.histogram(i, 11)[0])
    _eq(e, np.histogram(i, 11)[1])
    edges = np.array([-3.0, -1, 0, 0.5, 2, 9])
    h, e = dask.compute(*gsd.histogram(da.from_array(f, chunks=9_999), bins=edges))
    _eq(h, np.histogram(f, edges)[0])
    _eq(e, edges)
    h, e = dask.compute(*gsd.histogram(da.from_array(f, chunks=9_999), bins=[]))  # NumPy: empty results
    rh, re = gs.histogram(f, bins=[])
    _eq(h, rh)
    _eq(e, re)


def test_histogram_float32_edges_row6(scheduler):
    """issue 12 row 6: the edges are decided once, by gs.histogram's code."""
    a = np.array([0.1, 0.29999998, 0.7], np.float32)
    h, e = dask.compute(*gsd.histogram(da.from_array(a, chunks=1), bins=3))
    _eq(h, np.array([1, 1, 1]))
    _eq(h, gs.histogram(a, bins=3)[0])
    _eq(e, np.histogram(a, bins=3)[1])


def test_histogram_weights_density_bool(scheduler):
    rng = np.random.default_rng(1)
    f = rng.standard_normal(80_001)
    w = rng.random(80_001).astype(np.float32)
    fx, wx = da.from_array(f, chunks=10_000), da.from_array(w, chunks=7_777)
    h = gsd.histogram(fx, bins=10, range=(-2, 2), weights=wx)[0].compute()
    ref = np.histogram(f, 10, (-2, 2), weights=w.astype(np.float64))[0]
    assert h.dtype == np.float32  # the weights' dtype, like gs.histogram / NumPy
    np.testing.assert_allclose(h, ref.astype(np.float32), rtol=1e-6)
    iw = rng.integers(0, 9, 80_001)
    _eq(gsd.histogram(fx, bins=10, range=(-2, 2), weights=da.from_array(iw, chunks=9_000))[0].compute(),
        np.histogram(f, 10, (-2, 2), weights=iw)[0])
    hd = gsd.histogram(fx, bins=10, range=(-2, 2), density=True)[0].compute()
    np.testing.assert_allclose(hd, np.histogram(f, 10, (-2, 2), density=True)[0], rtol=1e-14)
    b = rng.random(1000) < 0.3
    with pytest.warns(RuntimeWarning, match="Converting input"):
        h, e = gsd.histogram(da.from_array(b, chunks=300), bins=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rh, re = np.histogram(b, 2)
    _eq(h.compute(), rh)
    _eq(e.compute(), re)


@pytest.mark.parametrize("estimator", ["sqrt", "sturges", "rice"])
def test_histogram_estimators_from_count_min_max(scheduler, estimator):
    """NumPy's estimators that read only size, min and max: exact, lazily."""
    rng = np.random.default_rng(10)
    for data in (rng.standard_normal(20_001).astype(np.float32), rng.integers(-5, 30, 5_000), np.full(99, 3.0)):
        x = da.from_array(data, chunks=3_000)
        for r in (None, (-1, 2)):
            h, e = gsd.histogram(x, bins=estimator, range=r)
            assert np.isnan(h.shape[0])  # the number of bins comes from the data
            h, e = dask.compute(h, e)
            rh, re = gs.histogram(data, bins=estimator, range=r)
            _eq(h, rh)
            _eq(e, re)
            _eq(e, np.histogram_bin_edges(data, bins=estimator, range=r))


def test_histogram_nan_data_raises_at_compute(scheduler):
    f = np.array([0.0, np.nan, 1.0])
    h, e = gsd.histogram(da.from_array(f, chunks=2), bins=4)  # no error: nothing computed yet
    with pytest.raises(ValueError, match="autodetected range"):
        gs.histogram(f, bins=4)
    with pytest.raises(ValueError, match="autodetected range"):
        dask.compute(h, e)


def test_bincount(scheduler):
    rng = np.random.default_rng(2)
    b = rng.integers(0, 1000, 200_000)
    b[123] = 5000  # the largest value sits in one chunk only
    x = da.from_array(b, chunks=30_000)
    got = gsd.bincount(x)
    assert isinstance(got, da.Array) and np.isnan(got.shape[0])  # length known after compute
    _eq(got.compute(), gs.bincount(b))
    _eq(gsd.bincount(x, minlength=9000).compute(), np.bincount(b, minlength=9000))
    ww = rng.random(200_000)
    got = gsd.bincount(x, weights=da.from_array(ww, chunks=17_000)).compute()  # rechunked like x
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.bincount(b, weights=ww), rtol=1e-12)
    u8 = rng.integers(0, 200, 100_000).astype(np.uint8)
    _eq(gsd.bincount(da.from_array(u8, chunks=9_000)).compute(), np.bincount(u8))
    raw = u8.view(np.bool_)  # bytes other than 0 and 1 are True: counted as 1
    _eq(gsd.bincount(da.from_array(raw, chunks=9_000)).compute(), np.bincount(raw))


def test_bincount_negative_int8_row2(scheduler):
    """issue 12 row 2, through gpusync.dask: the chunk's gs.bincount raises."""
    a = np.array([-1, 2], np.int8)
    try:
        gs.bincount(a)
    except ValueError:
        pass
    else:
        pytest.xfail("gs.bincount itself still drops negative int8 values (issue 12 row 2, fixed in gs)")
    with pytest.raises(ValueError, match="negative"):
        gsd.bincount(da.from_array(a, chunks=1)).compute()


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.int64, np.float32, np.float64])
def test_sum_dot_count_nonzero(scheduler, dtype):
    rng = np.random.default_rng(3)
    a = (rng.integers(-100, 100, 100_001) if np.dtype(dtype).kind in "iub" else rng.standard_normal(100_001))
    a = a.astype(dtype)
    b = a[::-1].copy()
    x, y = da.from_array(a, chunks=13_333), da.from_array(b, chunks=20_000)
    s, d, c = gsd.sum(x), gsd.dot(x, y), gsd.count_nonzero(x)
    assert all(isinstance(r, da.Array) and r.shape == () for r in (s, d, c))
    s, d, c = dask.compute(s, d, c)
    rs, rd = gs.sum(a), gs.dot(a, b)
    assert type(s) is type(rs) and type(d) is type(rd)
    if np.dtype(dtype).kind == "f":
        assert s == pytest.approx(rs, rel=1e-6 if dtype == np.float32 else 1e-12)
        assert d == pytest.approx(rd, rel=1e-6 if dtype == np.float32 else 1e-12)
    else:
        assert s == rs == np.sum(a)
        with np.errstate(over="ignore"):
            assert d == rd == np.dot(a, b)  # exact, wrapping like NumPy
    # (an intp scalar, as NumPy 2's and dask's own)
    assert c == gs.count_nonzero(a) == np.count_nonzero(a) and type(c) is type(np.count_nonzero(a))
    assert gsd.count_nonzero(x, threshold=0).compute() == np.count_nonzero(a > 0)


def test_dot_int8_wraps_row7(scheduler):
    """issue 12 row 7: int8 . int8 wraps in int8 like NumPy (not OverflowError)."""
    a = np.full(100, 100, np.int8)
    got = gsd.dot(da.from_array(a, chunks=7), da.from_array(a, chunks=30)).compute()
    assert got == np.int8(64) and got.dtype == np.int8
    assert got == np.dot(a, a)


def test_cumsum(scheduler):
    rng = np.random.default_rng(4)
    a = rng.integers(-1000, 1000, 50_001).astype(np.int32)
    x = da.from_array(a, chunks=6_000)
    for method in ("sequential", "blelloch"):
        got = gsd.cumsum(x, method=method)
        assert isinstance(got, da.Array)
        _eq(got.compute(), gs.cumsum(a))
    u = np.full(1000, 2**63, np.uint64)  # wraps modulo 2^64 like NumPy
    _eq(gsd.cumsum(da.from_array(u, chunks=77)).compute(), np.cumsum(u))
    m = rng.integers(0, 9, (40, 30))
    _eq(gsd.cumsum(da.from_array(m, chunks=(7, 11))).compute(), np.cumsum(m))  # flattened, C order
    f = rng.random(20_000).astype(np.float32)
    got = gsd.cumsum(da.from_array(f, chunks=3_000)).compute()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, gs.cumsum(f), rtol=1e-5)
    with pytest.raises(Exception, match="axis"):
        gsd.cumsum(da.from_array(m, chunks=7), axis=1)


def test_binned_statistic(scheduler):
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    xs = rng.random(60_003)
    vs = rng.standard_normal(60_003)
    vs[17] = np.nan  # a NaN value: its bin's sum/mean/std/max are NaN, min skips it
    x, v = da.from_array(xs, chunks=9_000), da.from_array(vs, chunks=14_000)
    for st in ("count", "sum", "mean", "std", "var", "min", "max"):
        got = gsd.binned_statistic(x, v, st, bins=20)
        assert isinstance(got.binnumber, da.Array) and got.binnumber.chunks == x.chunks  # lazy, not gathered
        stat, edges, binnumber = dask.compute(*got)
        one = gs.binned_statistic(xs, vs, st, bins=20)
        ref = scipy_stats.binned_statistic(xs, vs, st if st != "var" else "std", bins=20)
        want = ref.statistic ** 2 if st == "var" else ref.statistic
        if st in ("count", "min", "max"):
            _eq(stat, one.statistic)
        np.testing.assert_allclose(stat, want, rtol=1e-9, equal_nan=True, err_msg=st)
        _eq(edges, one.bin_edges)
        _eq(binnumber, one.binnumber)
        _eq(binnumber, ref.binnumber)
    e = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    got = dask.compute(*gsd.binned_statistic(x, v, "count", bins=e))
    one = gs.binned_statistic(xs, vs, "count", bins=e)
    for g, o in zip(got, one):
        _eq(g, o)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_histogramdd_and_2d_equal_numpy(scheduler, dtype):
    rng = np.random.default_rng(6)
    s = (rng.standard_normal((20_001, 3)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        s[5, 1] = np.nan  # NumPy: an outlier
    x = da.from_array(s, chunks=(3_000, 2))
    for bins, rng_ in ((7, None), ((3, np.array([-5.0, 0, 1, 30]), 4), None), (5, [(-1, 1), None, (0, 3)])):
        if rng_ is not None and rng_[1] is None and np.dtype(dtype).kind == "f":
            rng_ = [rng_[0], (-30, 30), rng_[2]]  # NaN data needs an explicit range there
        if rng_ is None and np.dtype(dtype).kind == "f" and isinstance(bins, int):
            continue
        h, e = gsd.histogramdd(x, bins=bins, range=rng_)
        assert isinstance(h, da.Array) and h.ndim == 3
        h, e = dask.compute(h, e)
        rh, re = np.histogramdd(s, bins=bins, range=rng_)
        _eq(h, rh)
        for g, r in zip(e, re):
            _eq(g, r)
    w = rng.random(20_001)
    col0, col2 = s[:, 0], s[:, 2]
    x0, x2 = da.from_array(col0, chunks=4_000), da.from_array(col2, chunks=6_000)
    rng2 = [(-20, 20), (-15, 25)]
    h, xe, ye = dask.compute(*gsd.histogram2d(x0, x2, bins=(6, 9), range=rng2, weights=da.from_array(w, chunks=5_000),
                                              density=True))
    rh, rxe, rye = np.histogram2d(col0, col2, bins=(6, 9), range=rng2, weights=w, density=True)
    np.testing.assert_allclose(h, rh, rtol=1e-12)
    _eq(xe, rxe)
    _eq(ye, rye)
    if np.dtype(dtype).kind != "f":
        h, xe, ye = dask.compute(*gsd.histogram2d(x0, x2, bins=5))
        rh, rxe, rye = np.histogram2d(col0, col2, bins=5)
        _eq(h, rh)
        _eq(xe, rxe)
        _eq(ye, rye)


def test_graph_is_lazy_and_small():
    calls = []

    def spy(b):
        calls.append(len(b))
        return b

    x = da.from_array(np.arange(100_000) % 251, chunks=1_000).map_blocks(spy)
    results = [gsd.histogram(x, bins=10)[0], gsd.bincount(x), gsd.sum(x), gsd.dot(x, x), gsd.count_nonzero(x),
               gsd.cumsum(x), gsd.binned_statistic(x, x, "mean", bins=4).statistic,
               gsd.histogramdd(da.stack([x, x], axis=1), bins=3)[0]]
    assert all(n <= 1 for n in calls)  # only Dask's meta probes (0 or 1 element), no data
    h = gsd.sum(x, split_every=4)
    ours = [k for k in dict(h.__dask_graph__()) if str(k[0] if isinstance(k, tuple) else k).startswith("gsd-")]
    assert len(ours) == 100 + (25 + 7 + 2 + 1) + 1  # a partial per block, a tree of 4-way combines, the result
    with dask.config.set(scheduler="synchronous"):
        assert h.compute() == np.sum(np.arange(100_000) % 251)
    assert all(isinstance(r, da.Array) for r in results)
    # one-block results compute to their block without Dask's finalize task (one scheduler hop less);
    # many-block ones (binned_statistic's binnumber, cumsum) are plain Arrays
    from dask.delayed import single_key
    bs = gsd.binned_statistic(x, x, "mean", bins=4)
    for r in results[:5] + [results[6], bs.bin_edges]:
        assert type(r) is gsd.OneBlockArray and r.__dask_postcompute__() == (single_key, ()), r
    # (a 2-D block stays a plain Array: older Dask applied the postcompute to its nested key list)
    assert type(bs.binnumber) is da.Array and type(results[5]) is da.Array and type(results[7]) is da.Array
    with dask.config.set(scheduler="synchronous"):
        got = dask.compute(results[0], results[2], bs.binnumber)
    np.testing.assert_array_equal(got[0], np.histogram(np.arange(100_000) % 251, bins=10)[0])
    assert got[1] == np.sum(np.arange(100_000) % 251) and got[2].shape == (100_000,)


class _Other(np.ndarray):
    """A chunk of a foreign array type (stands for CuPy among NumPy chunks)."""


def test_mixed_chunk_kinds_are_refused():
    a = np.arange(100)
    x = da.from_array(a, chunks=10).map_blocks(lambda b, block_info=None: b.view(_Other)
                                                if block_info[0]["chunk-location"][0] == 3 else b,
                                                meta=np.empty(0, a.dtype))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError, match="mixed NumPy/CuPy"):
            gsd.sum(x).compute()
        with pytest.raises(TypeError, match="mixed NumPy/CuPy"):
            gsd.histogram(x, bins=5, range=(0, 100))[0].compute()


def test_bad_input():
    with pytest.raises(TypeError, match="dask.array"):
        gsd.sum(np.ones(3))
    with pytest.raises(ValueError, match="not aligned"):
        gsd.dot(da.ones(3, chunks=2), da.ones(4, chunks=2))
    with pytest.raises(ValueError, match="needs all the data"):
        gsd.histogram(da.ones(3, chunks=2), bins="auto")
    with pytest.raises(ValueError, match="not a valid estimator"):
        gsd.histogram(da.ones(3, chunks=2), bins="nope")
    with pytest.raises(ValueError):  # NumPy's message for bins, at graph time
        gsd.histogram(da.ones(3, chunks=2), bins=0)
    with pytest.raises(ValueError, match="strategy"):
        gsd.histogram(da.ones(3, chunks=2), strategy="nope")
    with pytest.raises(ValueError, match="too deep"):
        gsd.bincount(da.ones((3, 3), dtype=int, chunks=2))
    with pytest.raises(ValueError, match="split_every"):
        gsd.sum(da.ones(30, chunks=2), split_every=1)
    with pytest.raises(ValueError, match="statistic"):
        gsd.binned_statistic(da.ones(3, chunks=2), da.ones(3, chunks=2), "median")


# --------------------------------------------------------------------------
# dask.distributed only: faults and placement


def _kill_once(block, marker):
    """Kill this worker process the first time (marker file absent); never
    the test process (Dask may call it there on a tiny block for its meta)."""
    from distributed import get_worker
    try:
        get_worker()
    except ValueError:
        return block
    if block.size:
        try:  # (created exclusively: of two workers running this at once, one dies)
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return block
        os._exit(1)
    return block


def test_worker_killed_mid_computation_result_still_exact(cluster, tmp_path):
    a = np.random.default_rng(7).integers(0, 256, 200_000).astype(np.uint8)
    marker = str(tmp_path / "killed")
    x = da.from_array(a, chunks=20_000).map_blocks(_kill_once, marker, meta=np.empty(0, np.uint8))
    h, e = gsd.histogram(x, bins=256, range=(0, 256))
    # bounded: a cluster that does not recover fails the test instead of holding the suite
    h, e, s = [f.result(timeout=120) for f in cluster.compute([h, e, gsd.sum(x)])]
    assert os.path.exists(marker)  # a worker did die
    _eq(h, gs.histogram(a, bins=256, range=(0, 256))[0])
    assert s == a.sum(dtype=np.uint64)


def test_persisted_chunks_are_read_one_task_per_worker_thread(cluster):
    """A persisted array: each worker's chunks are reduced in one task per
    worker thread (the scheduler's per-task cost paid per worker, not per
    chunk); results equal the single call's, weights and the data-dependent
    edges' min/max pass included."""
    import distributed
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, 300_007).astype(np.uint8)
    f = rng.standard_normal(300_007)
    x = cluster.persist(da.from_array(a, chunks=10_000))
    fx = cluster.persist(da.from_array(f, chunks=10_000))
    w = da.from_array(f, chunks=7_000)  # not persisted: its blocks follow x's groups
    for fut in distributed.futures_of([x, fx]):  # persisted: every chunk held by a worker
        fut.result()
    nthreads = builtins.sum(cluster.nthreads().values())
    s = gsd.sum(x)
    groups = {k[0] for k in dict(s.__dask_graph__()) if isinstance(k, tuple) and "-group" in k[0]}
    nparts = [k for k in dict(s.__dask_graph__()) if isinstance(k, tuple) and "-group" in k[0]]
    assert len(groups) == 1 and 1 <= len(nparts) <= nthreads  # 31 chunks, at most one task per worker thread
    def grouped(arr):
        return any(isinstance(k, tuple) and "-group" in k[0] for k in dict(arr.__dask_graph__()))
    assert grouped(gsd.dot(fx, fx))  # both operands placed alike
    # weights still to compute: one task per chunk (a group would gather a worker's share of them at once)
    assert not grouped(gsd.histogram(x, bins=16, range=(0, 256), weights=w)[0])
    with dask.config.set(scheduler=cluster):
        got = dask.compute(s, gsd.bincount(x, minlength=300), gsd.dot(fx, fx), gsd.count_nonzero(x),
                           *gsd.histogram(fx, bins=37), gsd.histogram(x, bins=16, range=(0, 256), weights=w)[0],
                           *gsd.histogram(fx, bins="rice"), gsd.histogram2d(fx, fx * 2, bins=7)[0])
    s, b, d, c, h, e, hw, hr, er, h2 = got
    assert s == a.sum(dtype=np.uint64)
    _eq(b, np.bincount(a, minlength=300))
    assert d == pytest.approx(float(np.dot(f, f)), rel=1e-12)
    assert c == np.count_nonzero(a)
    rh, re = np.histogram(f, bins=37)
    _eq(h, rh)
    _eq(e, re)
    np.testing.assert_allclose(hw, np.histogram(a, bins=16, range=(0, 256), weights=f)[0], rtol=1e-12, atol=1e-9)
    rh, re = np.histogram(f, bins="rice")
    _eq(hr, rh)
    _eq(er, re)
    _eq(h2, np.histogram2d(f, f * 2, bins=7)[0])


def test_workers_without_gpu_use_the_cpu_engine(cluster):
    gpu = cluster.run(gs.cuda_available)
    a = np.random.default_rng(8).standard_normal(100_000)
    x = da.from_array(a, chunks=10_000)
    with dask.config.set(scheduler=cluster):
        h, e = dask.compute(*gsd.histogram(x, bins=64))
    _eq(h, gs.histogram(a, bins=64)[0])
    if not any(gpu.values()):  # this machine: every worker counts NumPy chunks with the CPU engine
        assert set(cluster.run(gs.backend).values()) == {"cpu"}


# --------------------------------------------------------------------------
# CuPy chunks (GPU machine)


@pytest.mark.gpu
def test_cupy_chunks_stay_on_the_gpu(scheduler):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, 2_000_001).astype(np.uint8)
    f = rng.standard_normal(500_001).astype(np.float32)
    x = da.from_array(cp.asarray(a), chunks=300_000, asarray=False)
    fx = da.from_array(cp.asarray(f), chunks=70_000, asarray=False)
    b = gsd.bincount(x).compute()
    assert isinstance(b, cp.ndarray)
    _eq(b.get(), np.bincount(a))
    s = gsd.sum(x).compute()
    assert isinstance(s, cp.ndarray) and int(s) == a.sum(dtype=np.uint64)
    h, e = dask.compute(*gsd.histogram(fx, bins=64))
    rh, re = np.histogram(f, 64)
    _eq(h.get(), rh)
    _eq(e.get(), re)
    bs = gsd.binned_statistic(fx, fx, "mean", bins=16)
    st, be, bn = dask.compute(*bs)
    one = gs.binned_statistic(cp.asarray(f), cp.asarray(f), "mean", bins=16)
    assert isinstance(bn, cp.ndarray)
    _eq(bn.get(), one.binnumber.get())
    np.testing.assert_allclose(st.get(), one.statistic.get(), rtol=1e-9)
    hd, ed = dask.compute(*gsd.histogramdd(da.stack([fx, fx * 2], axis=1), bins=5))
    rh, re = np.histogramdd(np.stack([f, f * 2], axis=1), bins=5)
    _eq(hd.get(), rh)
    c = gsd.cumsum(x).compute()
    _eq(c.get(), np.cumsum(a))


@pytest.mark.gpu
def test_persisted_cupy_chunks_on_two_workers(cluster):
    """Persisted CuPy chunks on two worker processes (one GPU between them):
    each worker's chunks are read in one task, the partials meet on one
    worker, and every result is a CuPy array equal to the single call's."""
    cp = pytest.importorskip("cupy")
    import distributed
    if not all(cluster.run(gs.cuda_available).values()):
        pytest.skip("the LocalCluster's workers see no GPU")
    rng = np.random.default_rng(12)
    a = rng.integers(0, 256, 1_000_003).astype(np.uint8)
    i16 = rng.integers(0, 3000, 500_001).astype(np.int16)
    f = rng.standard_normal(400_001)
    x = cluster.persist(da.from_array(cp.asarray(a), chunks=100_000, asarray=False))
    xi = cluster.persist(da.from_array(cp.asarray(i16), chunks=50_000, asarray=False))
    fx = cluster.persist(da.from_array(cp.asarray(f), chunks=50_000, asarray=False))
    for fut in distributed.futures_of([x, xi, fx]):  # persisted: every chunk held by a worker
        fut.result()
    holders = {w for ws in cluster.who_has(x).values() for w in ws}
    s = gsd.sum(x)
    group_keys = [k for k in dict(s.__dask_graph__()) if isinstance(k, tuple) and "-group" in k[0]]
    assert len(group_keys) == len(holders), (group_keys, holders)  # one task per worker (one thread each)
    with dask.config.set(scheduler=cluster):
        got = dask.compute(s, gsd.bincount(x, minlength=300), gsd.bincount(xi), gsd.dot(fx, fx), gsd.sum(fx),
                           gsd.count_nonzero(x), gsd.histogram(fx, bins=37, range=(-4, 4))[0])
    for v in got:
        assert isinstance(v, cp.ndarray), type(v)
    sv, b, bi, d, sf, c, h = (v.get() for v in got)
    ca, cf = cp.asarray(a), cp.asarray(f)
    assert int(sv) == int(gs.sum(ca)) == a.sum(dtype=np.uint64)
    _eq(b, gs.bincount(ca, minlength=300).get())
    _eq(bi, np.bincount(i16))
    assert float(d) == pytest.approx(float(gs.dot(cf, cf)), rel=1e-12)
    assert float(sf) == pytest.approx(float(gs.sum(cf)), rel=1e-12)
    assert int(c) == np.count_nonzero(a)
    _eq(h, np.histogram(f, bins=37, range=(-4, 4))[0])


@pytest.mark.gpu
def test_mixed_numpy_cupy_chunks_raise():
    cp = pytest.importorskip("cupy")
    a = np.arange(1000, dtype=np.float32)
    x = da.from_array(a, chunks=100).map_blocks(
        lambda b, block_info=None: cp.asarray(b) if block_info[0]["chunk-location"][0] % 2 else b,
        meta=np.empty(0, np.float32))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError, match="mixed NumPy/CuPy"):
            gsd.sum(x).compute()


# ---- a differential fuzz of gpusync.dask against NumPy / dask.array (session 48)

@pytest.mark.parametrize("chunks", [(3, 0, 1), (4, 0, 5), (0, 1, 0), (0, 1, 0, 1, 0), (0, 9, 0), (4, 5, 0)])
@pytest.mark.parametrize("method", ["sequential", "blelloch"])
def test_cumsum_with_empty_chunks(chunks, method):
    """An empty chunk carried an empty total into the next one (dask's cumreduction takes a block's last
    element): the blocks after it were dropped or raised."""
    a = np.arange(1, sum(chunks) + 1)
    r = gsd.cumsum(da.from_array(a, chunks=(chunks,)), method=method)
    assert r.shape == (a.size,)
    np.testing.assert_array_equal(r.compute(), np.cumsum(a))


def test_count_nonzero_result_converts_like_dasks():
    c = gsd.count_nonzero(da.from_array(np.arange(5), chunks=2))
    assert int(c) == 4 and float(c) == 4.0 and __import__("operator").index(c) == 4
    assert c.compute() == np.count_nonzero(np.arange(5))


def test_split_every_takes_numpy_integers_and_dasks_dict():
    x = da.from_array(np.arange(10.0), chunks=3)
    for s in (np.int64(4), {0: 4}, 2, 5):
        assert gsd.sum(x, split_every=s).compute() == 45.0
    for bad in (1, True, 2.5, {}, "a", None):
        with pytest.raises(ValueError, match="split_every"):
            gsd.sum(x, split_every=bad)


@pytest.mark.parametrize("values", [[np.inf, 1.0, 2.0], [1e308, -1e308, 0.0], [np.inf, -np.inf, 1.0],
                                    [-np.inf, 3.0, 5.0], [1.0, 2.0, 4.0]])
def test_binned_statistic_mean_merges_non_finite_chunks_like_the_single_call(values):
    x, v = np.array([0.1, 0.2, 0.3]), np.array(values)
    want = gs.binned_statistic(x, v, "mean", bins=1).statistic
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no overflow warning from the merge)
        got = gsd.binned_statistic(da.from_array(x, chunks=1), da.from_array(v, chunks=1), "mean",
                                   bins=1).statistic.compute()
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_histogramdd_lazy_edges_declare_numpys_dtype(dtype):
    s = (np.random.default_rng(0).standard_normal((10, 2)) * 10).astype(dtype)
    for kw in ({"bins": 3}, {"bins": 3, "range": [(0, 1), (0, 1)]}, {"bins": [3, np.array([0.0, 1.0])]}):
        _, edges = gsd.histogramdd(da.from_array(s, chunks=5), **kw)
        for e, w in zip(edges, np.histogramdd(s, **kw)[1]):
            assert e.dtype == e.compute().dtype == w.dtype


def test_weighted_bincount_of_an_empty_array_declares_numpys_dtype():
    x, w = np.array([], np.uint8), np.array([])
    r = gsd.bincount(da.from_array(x), weights=da.from_array(w), minlength=3)
    want = np.bincount(x, w, 3)
    assert r.dtype == r.compute().dtype == want.dtype
    np.testing.assert_array_equal(r.compute(), want)


@pytest.mark.parametrize("values", [[1e308] * 8 + [-1e308] * 8, [-1e308] * 9 + [1e308] * 8, [1e308] * 16,
                                    [1.5e308, 1.5e308, -1.5e308, 3.0], [np.inf, -np.inf] * 4, [np.nan, 1.0] * 4,
                                    [5e-324] * 16])
@pytest.mark.parametrize("chunks", [1, 3, 8])
def test_float64_sum_whose_chunk_partials_overflow_gives_the_single_calls_sum(values, chunks):
    a = np.array(values)
    with np.errstate(all="ignore"):
        want = gs.sum(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no overflow / invalid warning from the partials)
        got = gsd.sum(da.from_array(a, chunks=chunks)).compute()
    assert type(got) is np.float64
    assert (np.isnan(got) and np.isnan(want)) or got == want


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_binned_statistic_nonfinite_x_follows_scipy_rules(bad, scipy_rules):
    """Non-finite x under either rule set (gpusync._binstat.nan_only): SciPy 1.18 refuses NaN whatever the
    bins and bins +-inf as outliers, the equal-width range that of the finite values over all chunks (a chunk
    of inf's only included); 1.17 refuses both where bins is a number."""
    from conftest import scipy_binned_statistic

    rng = np.random.default_rng(8)
    x = rng.random(1000) * 3 - 1
    x[[5, 600]] = [bad, -bad]
    x[256:384] = bad  # one chunk of nothing but the bad value
    v = rng.standard_normal(1000)
    dx, dv = da.from_array(x, chunks=128), da.from_array(v, chunks=128)
    for kw in ({"bins": 7}, {"bins": 7, "range": (0, 1)}, {"bins": np.linspace(-1, 2, 6)}):
        try:
            ref = scipy_binned_statistic(x, v, "mean", **kw)
        except ValueError:
            with pytest.raises(ValueError):
                dask.compute(*gsd.binned_statistic(dx, dv, "mean", **kw))
            continue
        stat, edges, bn = dask.compute(*gsd.binned_statistic(dx, dv, "mean", **kw))
        np.testing.assert_array_equal(edges, ref.bin_edges)
        np.testing.assert_array_equal(bn, ref.binnumber)
        np.testing.assert_allclose(stat, ref.statistic, rtol=1e-12, equal_nan=True)
