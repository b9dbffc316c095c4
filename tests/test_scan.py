"""gs.cumsum against NumPy: every dtype, strategy and awkward size, result
dtypes, wrap-around, float accuracy, device arrays, >2^31 elements, bad input
and time-outs; sum(strategy="grid"); barrier_benchmark("auto")."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusync as gs
from conftest import random_array

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]
# around every tile size (4096 float32, 16384 uint8, 2048 float64 on the GPU) and the CPU's threading threshold
SIZES = [0, 1, 2, 31, 257, 2047, 2049, 4095, 4097, 16385, 65537, 300_007]
STRATS = ["auto", "lookback", "barrier", "relaunch"]


def _expected(a):
    """NumPy's cumsum; floats as the exactly rounded float64 running sum."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.cumsum(a.astype(np.float64)).astype(a.dtype)
    return np.cumsum(a)


def _check(got, a):
    ref = _expected(a)
    assert got.dtype == np.cumsum(a).dtype and got.shape == ref.shape
    if ref.dtype.kind == "f":
        # float64 accumulation in another order: a few units in the last place of the running sum's scale
        scale = np.cumsum(np.abs(np.asarray(a, np.float64)))
        tol = {2: 1e-3, 4: 1e-6, 8: 1e-13}[ref.dtype.itemsize]
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        finite = np.isfinite(ref)
        assert np.all(err[finite] <= tol * scale[finite] + np.abs(ref[finite].astype(np.float64)) * tol)
        np.testing.assert_array_equal(np.isfinite(got), finite)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.sanitizer) if n == 4097 else n for n in SIZES])
def test_cumsum_matches_numpy(backend, dtype, n):
    a = random_array(np.random.default_rng(n), dtype, n)
    if np.dtype(dtype) == np.float16:
        a = (a / 64).astype(np.float16)
    for s in STRATS:
        _check(gs.cumsum(a, strategy=s), a)


@pytest.mark.parametrize("strategy", ["auto", "lookback", "barrier", "relaunch"])
def test_one_cpu_thread_scans_in_numpy_order(strategy, monkeypatch):
    """On one CPU thread (one slice: no slice sums to pass on) a float64
    cumsum adds in NumPy's order, so it equals NumPy's bit for bit; on
    several threads each slice starts from the sum of the ones before it."""
    a = np.random.default_rng(3).standard_normal(200_011) * 1e3
    for threads in (1, 2, 3):
        monkeypatch.setenv("GPUSYNC_NUM_THREADS", str(threads))
        with gs.use_backend("cpu"):
            got = gs.cumsum(a, strategy=strategy)
        if threads == 1:
            assert gs.last_plan()["threads"] == 1
            np.testing.assert_array_equal(got, np.cumsum(a))
        np.testing.assert_allclose(got, np.cumsum(a), rtol=0, atol=1e-12 * np.abs(a).sum())  # other orders of adds


def test_result_dtypes_and_wraparound(backend):
    for dt in DTYPES:
        assert gs.cumsum(np.ones(3, dt)).dtype == np.cumsum(np.ones(3, dt)).dtype
    big = np.array([2**63 - 1, 1, 5], np.int64)  # wraps like NumPy
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(gs.cumsum(big), np.cumsum(big))
    u = np.full(100_000, 2**64 - 1, np.uint64)
    for s in STRATS:
        np.testing.assert_array_equal(gs.cumsum(u, strategy=s), np.cumsum(u))
    i8 = np.full(70_000, -128, np.int8)  # int8 sums go to int64 without wrapping at 8 bits
    np.testing.assert_array_equal(gs.cumsum(i8), np.cumsum(i8))


def test_float32_accumulates_in_float64(backend):
    # NumPy's running float32 sum stalls at 2^24; ours rounds the float64 sum once per element
    a = np.ones(20_000_001, np.float32)
    got = gs.cumsum(a)
    assert got[-1] == np.float32(20_000_001) and np.cumsum(a)[-1] == np.float32(2**24)
    np.testing.assert_array_equal(got[:1000], np.arange(1, 1001, dtype=np.float32))


def test_float_specials(backend):
    a = np.array([1.0, np.inf, 2.0, -np.inf, 3.0], np.float64)
    np.testing.assert_array_equal(gs.cumsum(a), np.cumsum(a))
    b = np.array([1.0, np.nan, 2.0], np.float32)
    np.testing.assert_array_equal(np.isnan(gs.cumsum(b)), [False, True, True])


def test_nd_strided_and_views(backend):
    rng = np.random.default_rng(3)
    m = rng.integers(0, 100, (300, 70), dtype=np.int32)
    np.testing.assert_array_equal(gs.cumsum(m), np.cumsum(m))             # axis=None flattens
    np.testing.assert_array_equal(gs.cumsum(m[:, 3]), np.cumsum(m[:, 3]))  # strided column
    v = np.arange(100_001, dtype=np.float64)[1:]                            # misaligned view
    _check(gs.cumsum(v), v)
    np.testing.assert_array_equal(gs.cumsum(m[5], axis=0), np.cumsum(m[5], axis=0))
    np.testing.assert_array_equal(gs.cumsum([1, 2, 3]), np.cumsum([1, 2, 3]))


def test_bad_input(backend):
    with pytest.raises(ValueError, match="strategy must be one of"):
        gs.cumsum(np.ones(3), strategy="grid")
    with pytest.raises(TypeError, match="not supported"):
        gs.cumsum(np.ones(3, np.clongdouble))  # complex64 / complex128 are: tests/test_complex.py
    np.testing.assert_array_equal(gs.cumsum(np.ones((3, 3)), axis=1), np.cumsum(np.ones((3, 3)), axis=1))
    with pytest.raises(np.exceptions.AxisError):
        gs.cumsum(np.ones(3), axis=1)
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        gs.cumsum(np.ones(3), axis=0.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-2**62, 2**62), max_size=5000), st.sampled_from(STRATS))
def test_property_int64_exact(values, strategy):
    a = np.array(values, np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(gs.cumsum(a, strategy=strategy), np.cumsum(a))


@pytest.mark.sanitizer
def test_sum_grid_strategy(backend):
    a = np.arange(1_000_003, dtype=np.int64)
    assert gs.sum(a, strategy="grid") == a.sum()
    f = np.random.default_rng(1).standard_normal(999_999)
    assert gs.sum(f, strategy="grid", deterministic=True) == gs.sum(f, strategy="two-pass", deterministic=True)
    assert gs.dot(f, f, strategy="grid") == pytest.approx(np.dot(f, f), rel=1e-12)


def test_barrier_auto(backend):
    r = gs.barrier_benchmark("auto", blocks=2, rounds=50)
    assert r["stale"] == 0
    assert r["strategy"] == ("cooperative" if backend == "cuda" else "sense") and r["note"] == ""


# ---------------------------------------------------------------------------
# GPU only


@pytest.mark.gpu
def test_barrier_auto_falls_back_to_relaunch():
    with gs.use_backend("cuda"):
        maxb = gs.barrier_benchmark("cooperative", rounds=1)["max_blocks"]
        r = gs.barrier_benchmark("auto", blocks=maxb + 1, rounds=20)
        assert r["strategy"] == "relaunch" and "fell back to relaunch" in r["note"] and r["stale"] == 0
        with pytest.raises(gs.CooperativeLaunchError):
            gs.barrier_benchmark("sense", blocks=maxb + 1)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.sanitizer) if d in ("int8", "float32") else d
                                   for d in ("int8", "int32", "uint32", "float16", "float32", "float64")])
def test_cupy_in_cupy_out(dtype):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(11)
    a = random_array(rng, dtype, 1_000_003)
    if np.dtype(dtype) == np.float16:
        a = (a / 64).astype(np.float16)
    d = cp.asarray(a)
    for s in STRATS:
        r = gs.cumsum(d, strategy=s)
        assert isinstance(r, cp.ndarray) and r.device.id == d.device.id
        _check(r.get(), a)
    _check(gs.cumsum(d[1::3]).get(), a[1::3])   # strided device view
    _check(gs.cumsum(d[1:]).get(), a[1:])       # misaligned device view


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float16, np.float32,
                                   np.float64], ids=lambda d: np.dtype(d).name)
def test_gpu_lookback_time_out_path_is_complete(dtype, monkeypatch):
    """A look-back that times out sums the input before its tile itself (the host no longer waits to check
    for a time-out): GPUSYNC_SCAN_FALLBACK=1 sends every tile down that path -- device arrays, strided views
    and staged host input."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_SCAN_FALLBACK", "1")
    rng = np.random.default_rng(9)
    for n in (4097, 16385, 100_003):
        a = random_array(rng, dtype, n)
        if np.dtype(dtype) == np.float16:
            a = (a / 64).astype(np.float16)
        _check(gs.cumsum(cp.asarray(a), strategy="lookback").get(), a)
        _check(gs.cumsum(cp.asarray(a)[1::2], strategy="lookback").get(), a[1::2])
        with gs.use_backend("cuda"):  # host input staged to the GPU (not the CPU engine)
            _check(gs.cumsum(a, strategy="lookback"), a)


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    t = torch.arange(100_000, dtype=torch.int32, device="cuda")
    r = gs.cumsum(t)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.int64
    np.testing.assert_array_equal(r.cpu().numpy(), np.cumsum(np.arange(100_000, dtype=np.int32)))


@pytest.mark.gpu
def test_gpu_host_input_is_staged_in_chunks():
    # > GS_STAGE_BYTES of output: several chunks chained by the carry
    a = np.ones(40_000_000, np.int32)
    for s in STRATS:
        r = gs.cumsum(a, strategy=s)
        assert r[-1] == 40_000_000 and r[33_554_431] == 33_554_432 and r[33_554_432] == 33_554_433


@pytest.mark.gpu
def test_gpu_lookback_survives_many_tiles_and_repeats():
    cp = pytest.importorskip("cupy")
    d = cp.ones(50_000_000, cp.uint8)  # 16,984 tiles of 128 x 23
    for _ in range(5):
        r = gs.cumsum(d, strategy="lookback")
        assert int(r[-1]) == 50_000_000
        assert bool(cp.all(r == cp.arange(1, 50_000_001, dtype=cp.uint64)))


@pytest.mark.gpu
@pytest.mark.slow
def test_cumsum_more_than_2_31_elements():
    cp = pytest.importorskip("cupy")
    n = (1 << 31) + 4099
    a = cp.ones(n, dtype=cp.int8)
    a[-2:] = 3
    for s in STRATS:
        r = gs.cumsum(a, strategy=s)
        assert r.dtype == cp.int64
        assert int(r[(1 << 31) - 1]) == 1 << 31 and int(r[-1]) == n + 4, s
        del r
    del a
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
@pytest.mark.parametrize("delay", ["0", "1", "20000"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.uint8])
def test_gpu_lookback_nap_changes_nothing_but_time(delay, dtype, monkeypatch):
    """The look-back's nap before its first poll (GPUSYNC_SCAN_DELAY_NS: none,
    1 ns, 20 us) only moves when a tile reads its predecessors: the same
    results on every tile shape (4-byte, 8-byte outputs and inputs)."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_SCAN_DELAY_NS", delay)
    rng = np.random.default_rng(int(delay) + 7)
    h = (rng.random(3_000_017) * 10).astype(dtype)
    got = cp.asnumpy(gs.cumsum(cp.asarray(h), strategy="lookback"))
    if h.dtype.kind == "f":
        np.testing.assert_allclose(got, np.cumsum(h.astype(np.float64)), rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, np.cumsum(h))


def _peak_bytes(call):
    """The peak of Python-tracked allocations (NumPy's included) during call()."""
    import tracemalloc
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("strategy", STRATS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 4097, 300_007])
def test_host_out_written_in_place(backend, dtype, n, strategy):
    """A host out of the scan's own dtype is written in place, on each engine
    (the cuda one copies its chunks back into out): the result is out, and
    the call allocates no temporary of the result's size (before: a new
    result, then a copy into out)."""
    a = random_array(np.random.default_rng(n + 1), dtype, n, -1000, 1000)
    out = np.full(n, 7, np.cumsum(a).dtype)
    assert gs.cumsum(a, out=out, strategy=strategy) is out
    _check(out, a)
    if n >= 4097:
        assert _peak_bytes(lambda: gs.cumsum(a, out=out, strategy=strategy)) < out.nbytes // 4
        _check(out, a)
    # a 2-D input's flattened scan into a flat view of a 2-D out
    if n == 300_007:
        b = a[:300_000].reshape(300, 1000)
        o = np.empty((300, 1000), out.dtype)
        flat = o.reshape(-1)
        assert gs.cumsum(b, axis=None, out=flat) is flat
        _check(o.reshape(-1), b.reshape(-1))


def test_tuple_out_is_refused_as_numpy():
    """np.cumsum takes no tuple out (reductions do): NumPy's TypeError."""
    from conftest import assert_raises_like_numpy
    b = np.arange(12.0).reshape(3, 4)
    assert_raises_like_numpy(lambda: np.cumsum(b, out=(np.empty(12),)), lambda: gs.cumsum(b, out=(np.empty(12),)))
    assert_raises_like_numpy(lambda: np.cumsum(b, axis=1, out=(np.empty((3, 4)),)),
                             lambda: gs.cumsum(b, axis=1, out=(np.empty((3, 4)),)))


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_host_out_overlapping_the_input(dtype):
    """out sharing memory with the input (in place, shifted by one either way)
    takes a temporary: NumPy's result every time."""
    for n in (5, 4097, 300_007):
        base = random_array(np.random.default_rng(n), dtype, n + 1, -1000, 1000)
        for src, dst in ((slice(0, n), slice(0, n)), (slice(0, n), slice(1, n + 1)), (slice(1, n + 1), slice(0, n))):
            ours, ref = base.copy(), base.copy()
            r = gs.cumsum(ours[src], out=ours[dst])
            np.cumsum(ref[src], out=ref[dst])
            assert r.base is ours or r is ours[dst] or np.shares_memory(r, ours)
            if np.dtype(dtype).kind == "f":
                np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12 * np.abs(base).sum())
            else:
                np.testing.assert_array_equal(ours, ref)


def test_host_out_of_another_dtype_or_layout_still_copies_correctly():
    a = np.arange(1, 10_001, dtype=np.int32)
    for out in (np.empty(10_000, np.float64), np.empty(20_000, np.int64)[::2], np.empty(10_000, np.int32)):
        np.testing.assert_array_equal(gs.cumsum(a, out=out), np.cumsum(a, out=out.copy()))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_host_out_along_an_axis_written_in_place(backend, dtype, axis):
    """cumsum along an axis into a host out of the result's dtype: written in
    place (no result-sized temporary), NumPy's values; an out overlapping the
    input, a transposed input and a strided out take the temporary."""
    rng = np.random.default_rng(3)
    a = random_array(rng, dtype, 600 * 500, -100, 100).reshape(600, 500)
    rt = np.cumsum(a[:1, :1], axis=axis).dtype
    out = np.empty(a.shape, rt)
    assert gs.cumsum(a, axis=axis, out=out) is out
    ref = np.cumsum(a, axis=axis) if rt.kind != "f" else np.cumsum(a.astype(np.float64), axis=axis).astype(rt)
    # floats: summed in another order (the GPU's segmented scan): a few units of the running sum of |a|
    scale = np.cumsum(np.abs(a.astype(np.float64)), axis=axis)
    tol = {"i": 0, "f": 1e-6 if rt == np.float32 else 1e-13}[rt.kind]

    def close(o):
        err = np.abs(o.astype(np.float64) - ref.astype(np.float64))
        assert (err <= tol * (scale + np.abs(ref.astype(np.float64)))).all(), err.max()

    close(out)
    assert _peak_bytes(lambda: gs.cumsum(a, axis=axis, out=out)) < out.nbytes // 4
    close(out)
    for src, dst in ((a.copy(), None), (a.T.copy().T, np.empty(a.shape, rt)), (a, np.empty((600, 1000), rt)[:, ::2])):
        o = src if dst is None and rt == src.dtype else (np.empty(a.shape, rt) if dst is None else dst)
        got = gs.cumsum(src, axis=axis, out=o)
        assert got is o
        close(o)
