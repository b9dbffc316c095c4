"""GPU-only behaviour: device arrays in place (CuPy, PyTorch, Numba), results
in the caller's library, streams and CUDA graphs (no hidden sync), > 2^31
elements, the cluster strategy, memory errors."""
import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy") if gs.cuda_available() else None


def _strategies():
    s = ["auto", "global", "shared", "warp"]
    if gs.device_info()["compute_capability"][0] >= 9:
        s.append("cluster")
    return s


@pytest.fixture(autouse=True)
def _cuda():
    with gs.use_backend("cuda"):
        yield


DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cupy_in_cupy_out(dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(100_003) * 40).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0, 120, 100_003).astype(dtype)
    d = cp.asarray(a)
    for s in _strategies():
        for kw in ({"bins": 50}, {"bins": 128, "range": (0, 128)}, {"bins": [0, 3, 10, 11, 90]}):
            h, e = gs.histogram(d, strategy=s, **kw)
            assert isinstance(h, cp.ndarray) and isinstance(e, cp.ndarray)
            ref, ref_e = np.histogram(a, **kw)
            np.testing.assert_array_equal(cp.asnumpy(h), ref, err_msg=f"{s} {kw}")
            np.testing.assert_array_equal(cp.asnumpy(e), ref_e)
        if np.dtype(dtype).kind in "iu":
            got = gs.bincount(d, strategy=s)
            assert isinstance(got, cp.ndarray)
            np.testing.assert_array_equal(cp.asnumpy(got), np.bincount(a))


def test_device_strided_and_nd():
    a = cp.arange(300_000, dtype=cp.float32).reshape(600, 500) % 977
    for view in (a, a[:, 7], a[::-2, ::3], a.T):
        h, e = gs.histogram(view, bins=33)
        ref, ref_e = np.histogram(cp.asnumpy(view), bins=33)
        np.testing.assert_array_equal(cp.asnumpy(h), ref)


def test_device_weights_and_density():
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal(200_001), rng.random(200_001).astype(np.float32)
    for s in _strategies():
        h, _ = gs.histogram(cp.asarray(a), bins=40, weights=cp.asarray(w), strategy=s)
        ref, _ = np.histogram(a, bins=40, weights=w)
        assert h.dtype == ref.dtype
        np.testing.assert_allclose(cp.asnumpy(h), ref, rtol=1e-4)
        got = gs.bincount(cp.asarray((a * 10 + 50).clip(0).astype(np.int32)), weights=cp.asarray(w), strategy=s)
        np.testing.assert_allclose(cp.asnumpy(got), np.bincount((a * 10 + 50).clip(0).astype(np.int32), weights=w),
                                   rtol=1e-9)
    d, _ = gs.histogram(cp.asarray(a), bins=40, density=True)
    np.testing.assert_allclose(cp.asnumpy(d), np.histogram(a, bins=40, density=True)[0], rtol=1e-10)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    t = torch.randint(0, 256, (1_000_003,), dtype=torch.uint8, device="cuda")
    h, e = gs.histogram(t, bins=256, range=(0, 256))
    assert isinstance(h, torch.Tensor) and h.device.type == "cuda" and h.dtype == torch.int64
    ref = np.histogram(t.cpu().numpy(), bins=256, range=(0, 256))[0]
    np.testing.assert_array_equal(h.cpu().numpy(), ref)
    b = gs.bincount(t.to(torch.int64))
    np.testing.assert_array_equal(b.cpu().numpy(), np.bincount(t.cpu().numpy()))
    f = torch.randn(10_000, device="cuda")
    hw, _ = gs.histogram(f, bins=10, range=(-2, 2), weights=f.abs())
    assert hw.dtype == torch.float32


def test_numba_in_numba_out():
    cuda = pytest.importorskip("numba.cuda")
    a = np.random.default_rng(2).integers(0, 1000, 50_000)
    d = cuda.to_device(a)
    h, _ = gs.histogram(d, bins=10)
    np.testing.assert_array_equal(h.copy_to_host(), np.histogram(a, bins=10)[0])


def test_dlpack_only_producer():
    torch = pytest.importorskip("torch")

    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    t = torch.arange(1000, device="cuda") % 17
    got = gs.bincount(OnlyDLPack(t))
    np.testing.assert_array_equal(cp.asnumpy(cp.asarray(got)), np.bincount(t.cpu().numpy()))


def test_non_default_stream():
    a = cp.random.randint(0, 256, 5_000_000, dtype=cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        h, _ = gs.histogram(a, bins=256, range=(0, 256))
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(h), np.bincount(cp.asnumpy(a), minlength=256))


def test_graph_capture_no_hidden_sync():
    """With bins and range given, a histogram of a device array is pure
    enqueued work: it can be captured in a CUDA graph and replayed."""
    torch = pytest.importorskip("torch")
    x = torch.randint(0, 256, (4_000_000,), dtype=torch.uint8, device="cuda")
    f = torch.randn(1_000_000, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm up outside the capture
        gs.histogram(x, bins=256, range=(0, 256))
        gs.histogram(f, bins=100, range=(-3, 3))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, e = gs.histogram(x, bins=256, range=(0, 256))
        hf, ef = gs.histogram(f, bins=100, range=(-3, 3))
    for _ in range(2):
        x.random_(0, 256)
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(h.cpu().numpy(), np.histogram(x.cpu().numpy(), 256, (0, 256))[0])
        np.testing.assert_array_equal(hf.cpu().numpy(), np.histogram(f.cpu().numpy(), 100, (-3, 3))[0])
        np.testing.assert_array_equal(ef.cpu().numpy(), np.histogram(f.cpu().numpy(), 100, (-3, 3))[1])


def test_cluster_strategy_limits():
    info = gs.device_info()
    x = cp.arange(100_000) % 65536
    if info["compute_capability"][0] < 9:
        with pytest.raises(gs.UnsupportedDeviceError, match="compute capability"):
            gs.bincount(x, strategy="cluster")
        return
    np.testing.assert_array_equal(cp.asnumpy(gs.bincount(x, strategy="cluster")), np.bincount(cp.asnumpy(x)))
    with pytest.raises(ValueError, match="strategy 'cluster' holds at most"):
        gs.bincount(cp.array([10_000_000]), strategy="cluster")
    with pytest.raises(ValueError, match="strategy 'shared' holds at most"):
        gs.bincount(cp.array([1_000_000]), strategy="shared")
    # still usable afterwards
    np.testing.assert_array_equal(cp.asnumpy(gs.bincount(cp.array([1, 1, 2]))), [0, 2, 1])


def test_host_input_on_gpu_matches():
    a = np.random.default_rng(3).integers(0, 256, 3_000_001).astype(np.uint8)
    for s in _strategies():
        np.testing.assert_array_equal(gs.bincount(a, strategy=s), np.bincount(a))
    assert gs.backend() == "cuda"


def test_out_of_memory_is_memoryerror_and_recovers():
    free, total = cp.cuda.runtime.memGetInfo()
    # a host input whose histogram (int64 bins) needs more device memory than the card has
    with pytest.raises(MemoryError):
        gs.bincount(np.array([total // 8 + (1 << 27)]))
    np.testing.assert_array_equal(gs.bincount(np.array([0, 1, 1])), [1, 2])


@pytest.mark.slow
def test_more_than_2_31_elements():
    n = (1 << 31) + 4097
    a = cp.empty(n, dtype=cp.uint8)
    a[: 1 << 30] = 7
    a[1 << 30:] = 200
    a[-5:] = 3
    expect = np.zeros(256, np.int64)
    expect[7] = 1 << 30
    expect[200] = n - (1 << 30) - 5
    expect[3] = 5
    for s in _strategies():
        got = gs.bincount(a, minlength=256, strategy=s)
        np.testing.assert_array_equal(cp.asnumpy(got), expect, err_msg=s)
        h, _ = gs.histogram(a, bins=256, range=(0, 256), strategy=s)
        np.testing.assert_array_equal(cp.asnumpy(h), expect, err_msg=s)
    del a
    cp.get_default_memory_pool().free_all_blocks()
