"""Several GPUs in one process (run where the machine has two or more):
device arrays are computed on their own device whatever the current one is,
stream= and results follow them, host arrays go to the current device, and
Dask chunks spread over the GPUs are reduced each on its own."""
import os

import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy") if gs.cuda_available() else None
if cp is not None and cp.cuda.runtime.getDeviceCount() < 2:
    pytest.skip("needs two GPUs", allow_module_level=True)


@pytest.fixture(autouse=True)
def _cuda():
    with gs.use_backend("cuda"):
        yield


def test_device_array_on_the_other_gpu():
    a = np.random.default_rng(0).integers(0, 256, 3_000_001, dtype=np.uint8)
    with cp.cuda.Device(1):
        d = cp.asarray(a)
        f = cp.asarray(a.astype(np.float32))
    with cp.cuda.Device(0):  # current device 0, data on 1
        h, e = gs.histogram(d, bins=256, range=(0, 256))
        s = gs.sum(f)
        c = gs.cumsum(d)
        st = gs.binned_statistic(f, f, "mean", bins=16).statistic
    for r in (h, e, s, c, st):
        assert r.device.id == 1
    np.testing.assert_array_equal(h.get(), np.bincount(a, minlength=256))
    assert float(s.get()) == pytest.approx(float(a.sum()), rel=1e-7)
    np.testing.assert_array_equal(c.get(), np.cumsum(a, dtype=np.uint64))
    assert np.isfinite(st.get()).any()


def test_stream_of_the_other_gpu():
    a = np.arange(1_000_000) % 97
    with cp.cuda.Device(1):
        d = cp.asarray(a)
        cp.cuda.Device().synchronize()  # s1 is not ordered after the null stream's copy
        s1 = cp.cuda.Stream(non_blocking=True)
    got = gs.bincount(d, stream=s1)
    s1.synchronize()
    assert got.device.id == 1
    np.testing.assert_array_equal(got.get(), np.bincount(a))


def test_arrays_on_two_gpus_are_refused():
    with cp.cuda.Device(0):
        a = cp.ones(1000, cp.float32)
    with cp.cuda.Device(1):
        b = cp.ones(1000, cp.float32)
    with pytest.raises(ValueError):
        gs.dot(a, b)


def test_host_arrays_use_the_current_gpu():
    a = np.random.default_rng(1).integers(0, 256, 8 << 20, dtype=np.uint8)  # staged
    for dev in (1, 0):
        with cp.cuda.Device(dev):
            np.testing.assert_array_equal(gs.bincount(a, minlength=256), np.bincount(a, minlength=256))
            assert gs.sum(a) == a.sum(dtype=np.uint64)


def test_dask_chunks_spread_over_gpus():
    da = pytest.importorskip("dask.array")
    import dask
    import gpusync.dask as gsd

    ngpu = cp.cuda.runtime.getDeviceCount()
    host = np.random.default_rng(2).integers(0, 200, 16 << 20, dtype=np.uint8)

    def place(block, block_info=None):
        with cp.cuda.Device(block_info[0]["chunk-location"][0] % ngpu):
            return cp.asarray(block)

    x = da.from_array(host, chunks=1 << 20).map_blocks(place, dtype=np.uint8, meta=cp.empty(0, cp.uint8))
    with dask.config.set(scheduler="threads"):
        x = x.persist()
        devices = {b.device.id for b in dask.compute(*x.to_delayed().ravel())}
        assert devices == set(range(ngpu))
        # lazy results; partials made on different GPUs are combined on one
        np.testing.assert_array_equal(cp.asnumpy(gsd.bincount(x, minlength=256).compute()),
                                      np.bincount(host, minlength=256))
        assert int(gsd.sum(x).compute()) == host.sum(dtype=np.uint64)
        h, e = dask.compute(*gsd.histogram(x, bins=50))
        rh, re = np.histogram(host, bins=50)
        np.testing.assert_array_equal(cp.asnumpy(h), rh)
        np.testing.assert_array_equal(cp.asnumpy(e), re)
        blocks = dask.compute(*gsd.cumsum(x).to_delayed().ravel())  # each on its chunk's GPU
        np.testing.assert_array_equal(np.concatenate([cp.asnumpy(b) for b in blocks]),
                                      np.cumsum(host, dtype=np.uint64))


def _random_chunk(block_info=None):
    """Chunk i: made where the task runs (a dask-cuda worker's GPU)."""
    import cupy

    i = block_info[None]["chunk-location"][0]
    return cupy.random.default_rng(i).integers(0, 256, block_info[None]["chunk-shape"][0], dtype=cupy.uint8)


def test_dask_cuda_local_cluster():
    """One worker per GPU (dask-cuda), data made on the workers' GPUs; the
    results equal NumPy's on the same data."""
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    import dask
    import dask.array as da
    import gpusync.dask as gsd

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    n, k = 1 << 22, 8
    with dask_cuda.LocalCUDACluster(n_workers=2, dashboard_address=None) as lc, distributed.Client(lc) as client:
        x = da.map_blocks(_random_chunk, chunks=((n,) * k,), dtype=np.uint8, meta=cp.empty(0, cp.uint8))
        x = client.persist(x)
        distributed.wait(x)
        assert len({w for ws in client.who_has(x).values() for w in ws}) == 2  # spread over both GPUs
        whole = np.concatenate([cp.random.default_rng(i).integers(0, 256, n, dtype=cp.uint8).get()
                                for i in range(k)])
        with dask.config.set(scheduler=client):
            b, s, (h, e), d = dask.compute(gsd.bincount(x), gsd.sum(x),
                                           gsd.histogram(x, bins=256, range=(0, 256)), gsd.dot(x, x))
            hh, ee = dask.compute(*gsd.histogram(x.astype(np.float32), bins=100))  # edges from the data
        assert isinstance(b, cp.ndarray)
        np.testing.assert_array_equal(b.get(), np.bincount(whole))
        assert int(s) == whole.sum(dtype=np.uint64)
        np.testing.assert_array_equal(h.get(), np.histogram(whole, 256, (0, 256))[0])
        assert int(d) == np.dot(whole, whole)
        rh, re = np.histogram(whole.astype(np.float32), bins=100)
        np.testing.assert_array_equal(hh.get(), rh)
        np.testing.assert_array_equal(ee.get(), re)


def _slow_chunk(block):
    """A chunk task that takes a while (so a worker can be killed mid-way)."""
    import time
    time.sleep(0.25)
    return block


def test_dask_cuda_worker_killed_mid_computation():
    """One dask-cuda worker is SIGKILLed while the computation runs: its
    nanny restarts it on the same GPU, Dask reruns the lost tasks (chunks
    included: they are pure) and the results are still exact."""
    import signal
    import time

    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    import dask.array as da
    import gpusync.dask as gsd

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    n, k = 1 << 20, 16
    lc = dask_cuda.LocalCUDACluster(n_workers=2, dashboard_address=None)
    client = distributed.Client(lc, set_as_default=False)
    try:
        x = da.map_blocks(_random_chunk, chunks=((n,) * k,), dtype=np.uint8, meta=cp.empty(0, cp.uint8))
        y = x.map_blocks(_slow_chunk, meta=cp.empty(0, cp.uint8))
        futures = client.compute([gsd.bincount(y, minlength=256), gsd.sum(y),
                                  gsd.histogram(y, bins=256, range=(0, 256))[0]])
        pids = client.run(os.getpid)
        time.sleep(1.0)  # a few chunk tasks done, the rest running or queued
        assert not all(f.done() for f in futures)
        os.kill(pids[sorted(pids)[0]], signal.SIGKILL)
        b, s, h = (f.result(timeout=180) for f in futures)
        assert set(client.run(os.getpid).values()) != set(pids.values())  # the nanny did restart one
    finally:
        for closing in (client, lc):
            try:
                closing.close(timeout=30)
            except Exception:  # noqa: BLE001 - teardown only
                pass
    whole = np.concatenate([cp.random.default_rng(i).integers(0, 256, n, dtype=cp.uint8).get() for i in range(k)])
    np.testing.assert_array_equal(cp.asnumpy(b), np.bincount(whole, minlength=256))
    assert int(s) == whole.sum(dtype=np.uint64)
    np.testing.assert_array_equal(cp.asnumpy(h), np.histogram(whole, 256, (0, 256))[0])
