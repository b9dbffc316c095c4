"""GPU-only behaviour of sum, dot and binned_statistic: device arrays in
place with results in the caller's library, streams, CUDA-graph capture
(no hidden sync), > 2^31 elements, strategies only the GPU has."""
import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy") if gs.cuda_available() else None
STRATS = ["auto", "atomic", "mutex", "two-pass", "threadfence", "grid", "warp"]


@pytest.fixture(autouse=True)
def _cuda():
    with gs.use_backend("cuda"):
        yield


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint32, np.int64, np.float16, np.float32,
                                   np.float64], ids=lambda d: np.dtype(d).name)
def test_cupy_in_cupy_out(dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(1_000_003) / 8).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0, 2 if dtype == np.bool_ else 100, 1_000_003).astype(dtype)
    d = cp.asarray(a)
    for s in STRATS:
        got = gs.sum(d, strategy=s)
        assert isinstance(got, cp.ndarray) and got.shape == () and got.dtype == np.sum(a).dtype
        ref = np.sum(a.astype(np.float64)) if a.dtype.kind == "f" else np.sum(a)
        np.testing.assert_allclose(float(got), float(ref), rtol=1e-3 if dtype == np.float16 else 1e-6)
        got = gs.dot(d, d, strategy=s)
        ref = np.dot(a.astype(np.float64), a.astype(np.float64)) if a.dtype.kind == "f" else np.dot(a, a)
        np.testing.assert_allclose(float(got), float(ref), rtol=1e-3 if dtype == np.float16 else 1e-6)


def test_device_strided_and_misaligned():
    a = cp.arange(3_000_000, dtype=cp.float32) % 1000
    for s in STRATS:
        for x, y in ((a[1:], a[:-1]), (a[::3], a[1::3]), (a[5:-3], a[7:-1])):
            ref = np.dot(cp.asnumpy(x).astype(np.float64), cp.asnumpy(y).astype(np.float64))
            assert float(gs.dot(x, y, strategy=s)) == pytest.approx(ref, rel=1e-7)
            assert float(gs.sum(x, strategy=s)) == pytest.approx(float(cp.asnumpy(x).astype(np.float64).sum()))


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    t = torch.randn(1_000_001, device="cuda")
    r = gs.dot(t, t)
    assert isinstance(r, torch.Tensor) and r.dim() == 0 and r.dtype == torch.float32
    assert float(r) == pytest.approx(float((t.double() * t.double()).sum()), rel=1e-6)
    st = gs.binned_statistic(t, t, "mean", bins=10)
    ref = gs.binned_statistic(t.cpu().numpy(), t.cpu().numpy(), "mean", bins=10)
    assert isinstance(st.statistic, torch.Tensor)
    np.testing.assert_allclose(st.statistic.cpu().numpy(), ref.statistic, rtol=1e-9)
    np.testing.assert_array_equal(st.binnumber.cpu().numpy(), ref.binnumber)


def test_deterministic_across_strategies_grids_and_host():
    rng = np.random.default_rng(9)
    a = (rng.standard_normal(5_000_001) * 1e8).astype(np.float64)
    d = cp.asarray(a)
    bits = {gs.sum(d, strategy=s, deterministic=True).get().tobytes() for s in
            ("auto", "two-pass", "threadfence", "grid")
            for _ in range(5)}
    assert len(bits) == 1
    # a different grid (offset view, other stream) -- tiles keep the result
    s2 = cp.cuda.Stream(non_blocking=True)
    with s2:
        again = gs.sum(d, strategy="two-pass", deterministic=True)
    s2.synchronize()
    assert again.get().tobytes() in bits


def test_graph_capture_threadfence_no_hidden_sync():
    torch = pytest.importorskip("torch")
    x = torch.randn(4_000_000, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        gs.dot(x, x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        r = gs.dot(x, x, strategy="threadfence")
        r2 = gs.sum(x, strategy="two-pass", deterministic=True)
    for _ in range(2):
        x.normal_()
        g.replay()
        torch.cuda.synchronize()
        assert float(r) == pytest.approx(float((x.double() ** 2).sum()), rel=1e-6)
        assert float(r2) == pytest.approx(float(x.double().sum()), rel=1e-5, abs=1e-3)


def test_mutex_timeout_on_gpu_then_everything_works():
    with pytest.raises(gs.DeadlockError):
        gs._core._test_deadlock("cuda", 20.0)
    a = cp.arange(1_000_000, dtype=cp.int64)
    assert int(gs.sum(a, strategy="mutex")) == 1_000_000 * 999_999 // 2
    h, _ = gs.histogram(a % 7, bins=7, range=(0, 7))
    assert int(h.sum()) == 1_000_000


def test_binned_statistic_device_all_stats():
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


def test_counters_on_gpu_lose_updates_only_when_racing():
    from gpusync import demo

    r = demo.race_counter(1024, 256)
    assert r["lost"] > 0  # thousands of threads interleave their load-add-store
    assert demo.atomic_counter(1024, 256)["lost"] == 0
    assert demo.mutex_counter(64, 256)["lost"] == 0


@pytest.mark.slow
def test_reduce_more_than_2_31_elements():
    n = (1 << 31) + 4097
    a = cp.ones(n, dtype=cp.int8)
    a[-3:] = 5
    for s in STRATS:
        assert int(gs.sum(a, strategy=s)) == n + 12, s
    assert int(gs.sum(a, deterministic=True)) == n + 12
    del a
    b = cp.full(n, 0.5, dtype=cp.float32)
    for s in ("auto", "two-pass", "atomic"):
        assert gs.sum(b, strategy=s).get() == np.float32(n * 0.5)
    assert float(gs.dot(b, b, deterministic=True)) == pytest.approx(n * 0.25, rel=1e-7)
    del b
    cp.get_default_memory_pool().free_all_blocks()
