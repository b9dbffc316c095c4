"""gs.sum and gs.dot against NumPy: every dtype, strategy and awkward size,
result dtypes, overflow, accuracy, determinism, bad input, lock time-out."""
import warnings

import numpy as np
import pytest

import gpusync as gs
from gpusync import _core
from conftest import random_array

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]
SIZES = [0, 1, 31, 33, 255, 257, 1023, 4097, 100_003]


def reduce_strategies(backend):
    return list(gs.REDUCE_STRATEGIES)  # every public strategy runs on every backend


def _close(got, ref, dtype, n):
    dtype = np.dtype(dtype)
    assert np.asarray(got).dtype == np.asarray(ref).dtype
    if dtype.kind == "f":
        tol = {2: 2e-3, 4: 1e-6, 8: 1e-12}[dtype.itemsize]
        np.testing.assert_allclose(np.float64(got), np.float64(ref), rtol=tol, atol=tol * np.sqrt(max(n, 1)) * 10)
    else:
        assert got == ref


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_sum_matches_numpy(backend, dtype, n):
    a = random_array(np.random.default_rng(n), dtype, n)
    ref = np.sum(a)
    for s in reduce_strategies(backend):
        _close(gs.sum(a, strategy=s), ref, dtype, n)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 33, 1025, 70_001])
def test_dot_matches_numpy(backend, dtype, n):
    rng = np.random.default_rng(n + 7)
    a, b = random_array(rng, dtype, n), random_array(rng, dtype, n)
    if np.dtype(dtype) == np.float16:
        a, b = (a / 8).astype(np.float16), (b / 8).astype(np.float16)
    with np.errstate(over="ignore"):
        ref = np.dot(a, b)
    for s in reduce_strategies(backend):
        got = gs.dot(a, b, strategy=s)
        if np.dtype(dtype) == np.float16:  # NumPy accumulates float16 in float16
            exact = np.float16(np.dot(a.astype(np.float64), b.astype(np.float64)))
            assert got == exact
        else:
            _close(got, ref, dtype, n)


def test_result_dtypes_follow_numpy(backend):
    for dt in DTYPES:
        a = np.ones(5, dt)
        assert gs.sum(a).dtype == np.sum(a).dtype
        assert gs.dot(a, a).dtype == np.dot(a, a).dtype
    assert gs.dot(np.ones(3, np.int32), np.ones(3, np.float32)).dtype == np.float64
    assert gs.dot(np.ones(3, np.int8), np.ones(3, np.float32)).dtype == np.float32
    assert gs.dot(np.ones(3, bool), np.ones(3, np.int16)) == np.dot(np.ones(3, bool), np.ones(3, np.int16))


def test_integer_overflow_wraps_like_numpy(backend):
    a = np.full(1000, np.iinfo(np.int64).max, np.int64)
    assert gs.sum(a) == np.sum(a)
    u = np.full(70_000, np.iinfo(np.uint64).max, np.uint64)
    assert gs.sum(u) == np.sum(u)
    b = np.full(100_000, 100, np.int8)
    with np.errstate(over="ignore"):
        assert gs.dot(b, b) == np.dot(b, b)
    assert gs.dot(np.array([True, False]), np.array([False, True])) == np.False_
    assert gs.dot(np.array([True, True]), np.array([False, True])) == np.True_


def test_strided_and_nd(backend):
    a = np.arange(100_000, dtype=np.float64).reshape(400, 250)
    assert gs.sum(a) == np.sum(a)
    assert gs.sum(a[:, 3]) == np.sum(a[:, 3])
    assert gs.dot(a[:, 3], a[::-1, 7]) == np.dot(a[:, 3], a[::-1, 7])
    x = np.arange(1, 100_001, dtype=np.float32)
    assert gs.dot(x[1:], x[:-1]) == np.float32(np.dot(x[1:].astype(np.float64), x[:-1].astype(np.float64)))


def _exact_halves(rng, n, subnormals=True):
    """float16 values whose sums and products-of-pairs sums are exact in float64 (multiples of 2^-24 below
    4 in magnitude; products multiples of 2^-30, the sums of up to 10^6 of them below 2^23): normal halves
    k/64, subnormals s x 2^-24 (s < 1024) where `subnormals`, and -0.0."""
    x = (rng.integers(-256, 257, n) / 64.0).astype(np.float16)
    k = rng.integers(0, 4, n)
    if subnormals:
        x[k == 1] = (rng.integers(-1023, 1024, int((k == 1).sum())) * 2.0**-24).astype(np.float16)
    x[k == 2] = -0.0
    return x


@pytest.mark.parametrize("n", [0, 1, 7, 255, 256, 257, 4097, 100_003, 1_000_003])
def test_float16_sum_and_dot_round_the_exact_sum_once(backend, n):
    """float16 sums and dots accumulate in float64 and round once to float16 (the sum docstring's rule):
    on values whose float64 accumulation is exact -- subnormals and -0.0 among them -- the result is the
    exact sum (math.fsum) rounded to float16, with every strategy, deterministic or not, the squared norm
    (x . x) too, and strided views alike (the contiguous kernels: F16C where the CPU has it)."""
    import math

    rng = np.random.default_rng(n + 16)
    x, y = _exact_halves(rng, n), _exact_halves(rng, n, subnormals=False)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(over="ignore"):  # (x . x of a million: beyond float16, inf)
        want_sum, want_dot, want_xx = (np.float16(math.fsum(v)) for v in (x64, x64 * y64, x64 * x64))
    for s in reduce_strategies(backend):
        for det in (False, True) if s in ("auto", "two-pass") else (False,):
            got = gs.sum(x, strategy=s, deterministic=det)
            assert got.dtype == np.float16 and got == want_sum, (s, det, got, want_sum)
            got = gs.dot(x, y, strategy=s, deterministic=det)
            assert got.dtype == np.float16 and got == want_dot, (s, det, got, want_dot)
            assert gs.dot(x, x, strategy=s, deterministic=det) == want_xx, (s, det)
    big_x, big_y = np.repeat(x, 3), np.repeat(y, 3)[::-1].copy()  # the same values as strided views
    assert gs.sum(big_x[1::3]) == want_sum and gs.dot(big_x[::3], big_y[::-3]) == want_dot
    assert gs.dot(big_x[2::3], big_x[::3], strategy="two-pass") == want_xx


@pytest.mark.parametrize("n", [1, 7, 4097, 100_003])
def test_float16_inf_nan_and_overflow_like_numpy(backend, n):
    """inf, -inf and NaN anywhere in a float16 sum or dot (the first element, inside a vector block, the
    tail) give NumPy's float64 result rounded to float16: inf, NaN for inf - inf and 0 x inf; a finite
    float64 sum beyond float16's range rounds to inf, as NumPy's float16 sum overflows."""
    rng = np.random.default_rng(n)
    base = (rng.standard_normal(n) * 4).astype(np.float16)
    ones = np.ones(n, np.float16)
    for where in sorted({0, n // 2, n - 1}):
        for vals in ((np.inf,), (-np.inf,), (np.nan,), (np.inf, -np.inf), (np.inf, 0.0)):
            x = base.copy()
            y = ones.copy()
            x[where] = vals[0]
            if len(vals) > 1 and n > 1:
                j = (where + n // 3 + 1) % n
                (x if vals[1] != 0.0 else y)[j if vals[1] != 0.0 else where] = vals[1]
            with np.errstate(invalid="ignore", over="ignore"):
                want_sum = np.float16(np.sum(x.astype(np.float64)))
                want_dot = np.float16(np.dot(x.astype(np.float64), y.astype(np.float64)))
            for s in ("auto", "two-pass", "atomic"):
                np.testing.assert_array_equal(gs.sum(x, strategy=s), want_sum)
                np.testing.assert_array_equal(gs.dot(x, y, strategy=s), want_dot)
            np.testing.assert_array_equal(gs.dot(x[::-1], y[::-1]), want_dot)
    big = np.full(n + 2, 60000.0, np.float16)
    with np.errstate(over="ignore"):
        assert gs.sum(big) == np.float16(np.sum(big.astype(np.float64))) == np.sum(big) == np.inf
        assert gs.dot(big, big) == np.inf


_STRIDED_DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", _STRIDED_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 7, 4097, 100_003])
def test_strided_dot_matches_numpy_and_its_copy(backend, dtype, n):
    """Strided 1-D views, negative steps and broadcast (zero-stride) ones too, go to the engine as they are
    (no copy on the host; the GPU engines get contiguous copies): the result is np.dot's (dtype, integer
    wrap-around, bool's "any pair"), and on the CPU engine for floats bit for bit that of the contiguous
    copies (the same pairwise sums), on the fast path and the general one (a strategy, deterministic)."""
    rng = np.random.default_rng(n * 7 + np.dtype(dtype).num)
    big = random_array(rng, dtype, 7 * n + 5)
    other = random_array(rng, dtype, 7 * n + 5)
    if np.dtype(dtype) == np.float16:
        big, other = (big / 8).astype(np.float16), (other / 8).astype(np.float16)
    pairs = [(big[::2][:n], other[1::3][:n]), (big[::-3][:n], other[::-1][:n]), (big[::7][:n], other[5::7][:n]),
             (big[:n], np.broadcast_to(other[3], (n,)))]
    for x, y in pairs:
        assert x.shape == y.shape == (n,)
        with np.errstate(over="ignore"):
            ref = np.dot(x, y)
        xc, yc = x.copy(), y.copy()
        for kw in ({}, {"strategy": "two-pass"}, {"deterministic": True}, {"strategy": "atomic"}):
            got = gs.dot(x, y, **kw)
            assert got.dtype == ref.dtype, (kw, got.dtype, ref.dtype)
            if np.dtype(dtype).kind == "f":
                if backend == "cpu" and kw.get("strategy") != "atomic":  # (atomic: partials in any order)
                    threads = gs.last_plan()["threads"]
                    copy = gs.dot(xc, yc, **kw)
                    if gs.last_plan()["threads"] == threads:  # (the same pieces: a pool that grew between the
                        assert got.tobytes() == copy.tobytes(), kw  # two calls splits them otherwise)
                # NumPy accumulates float16 (float32: BLAS) in the input's dtype: the float64 dot, rounded
                exact = np.dot(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
                _close(got, exact, dtype, n)
            else:
                assert got == ref, (kw, got, ref)
        if np.dtype(dtype).kind in "iu":
            assert gs.sum(x) == np.sum(x) and gs.sum(x, strategy="two-pass") == np.sum(x)


def test_strided_host_dot_reads_the_views_in_place():
    """The general path (a strategy given, or above the fast path's size limit) hands strided 1-D host views
    to the CPU engine without the contiguous copy it made before (8 MB each here): the copy cost more than
    the dot (1e7-element float64 x[::2] . y[::2], 16-core Xeon host: 6.89 ms, NumPy 2.31)."""
    import tracemalloc

    x, y = np.arange(2_000_000, dtype=np.float64), np.ones(3_000_000)
    with gs.use_backend("cpu"):
        want = gs.dot(x[::2].copy(), y[::-3].copy(), strategy="two-pass")
        gs.dot(x[::2], y[::-3], strategy="two-pass")  # (the plan cached)
        tracemalloc.start()
        try:
            got = gs.dot(x[::2], y[::-3], strategy="two-pass")
            s = gs.sum(x[::-2], strategy="two-pass")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert got == want == np.dot(x[::2], y[::-3]) and s == np.sum(x[::-2])
    assert peak < 1_000_000, peak


@pytest.mark.parametrize("n", [1, 255, 256, 257, 8191, 100_003, 1_000_003])
def test_float32_squared_norm_is_the_dot_of_a_copy(n):
    """x . x converts each float32 term once (the same operand twice): its float64 accumulation -- before the
    rounding to float32 -- has the same bits as the dot of x with a copy of itself, whatever the tail, on one
    thread or two; gs.dot's float32 result too."""
    x = (np.random.default_rng(n).standard_normal(n) * 1e3).astype(np.float32)
    y = x.copy()
    for threads in (1, 2):
        acc = []
        with gs.use_backend("cpu"):
            _core.cpu_threads(threads)
            try:
                for b in (x, y):
                    out = np.empty(1, np.float64)
                    _core.reduce("cpu", x, b, out, "auto", False, 0)
                    acc.append(out[0])
            finally:
                _core.cpu_threads(0)
        assert acc[0].tobytes() == acc[1].tobytes(), (threads, acc)
    with gs.use_backend("cpu"):
        assert gs.dot(x, x).tobytes() == gs.dot(x, y).tobytes()
    assert abs(float(gs.dot(x, x)) - np.dot(x.astype(np.float64), y)) <= np.spacing(np.float32(np.dot(x, y)))


def test_float32_more_accurate_than_numpy(backend):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(2_000_000) * 1e3 + 1e4).astype(np.float32)
    exact = np.sum(a.astype(np.float64))
    ours = abs(float(gs.sum(a)) - exact)
    numpys = abs(float(np.sum(a)) - exact)
    assert ours <= numpys
    assert ours <= 0.5 * np.spacing(np.float32(exact)) * 1.01  # one rounding of a float64 sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_deterministic_bit_identical(backend, dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(1_234_567) * (1e6 if dtype != np.float16 else 1e3)).astype(dtype)
    b = (rng.standard_normal(1_234_567)).astype(dtype)
    sums = {gs.sum(a, strategy=s, deterministic=True).tobytes() for s in
            ("auto", "two-pass", "threadfence", "grid")
            for _ in range(3)}
    dots = {gs.dot(a, b, strategy=s, deterministic=True).tobytes() for s in
            ("auto", "two-pass", "threadfence", "grid")
            for _ in range(3)}
    assert len(sums) == 1 and len(dots) == 1


def test_deterministic_rejects_order_dependent_strategies(backend):
    a = np.ones(10, np.float32)
    for s in ("atomic", "mutex"):
        with pytest.raises(ValueError, match="deterministic"):
            gs.sum(a, strategy=s, deterministic=True)
    # exact integer sums are deterministic with every strategy
    assert gs.sum(np.ones(10, np.int32), strategy="atomic", deterministic=True) == 10


def test_bad_input(backend):
    with pytest.raises(ValueError, match="strategy"):
        gs.sum(np.ones(3), strategy="nope")
    with pytest.raises(ValueError, match="not aligned"):
        gs.dot(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="1-D"):
        gs.dot(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match="not supported"):
        gs.sum(np.ones(3, np.clongdouble))  # complex64 / complex128 are: tests/test_complex.py
    with pytest.raises(TypeError):
        gs.sum(np.array(["a", "b"]))
    assert gs.sum(np.array([], np.float32)) == 0 and gs.sum(np.array([], np.float32)).dtype == np.float32
    assert gs.dot(np.array([]), np.array([])) == 0.0


def test_mutex_timeout_is_deadlock_error_and_next_call_works(backend):
    with pytest.raises(gs.DeadlockError, match="never released"):
        gs._core._test_deadlock(backend, 50.0)
    a = np.arange(10_000, dtype=np.int64)
    assert gs.sum(a, strategy="mutex") == np.sum(a)


def test_last_strategy_reported(backend):
    gs.sum(np.ones(10), strategy="two-pass")
    assert gs.last_plan()["strategy_used"] == "two-pass"
    gs.dot(np.ones(10), np.ones(10))
    assert gs.last_plan()["op"] == "dot"
    assert gs.last_plan()["strategy_used"] in ("two-pass", "threadfence")


def test_warp_strategy_runs_on_every_backend(backend):
    """Issue 12 row 15: 'warp' is in REDUCE_STRATEGIES, so it runs on the CPU
    backend too, as the closest CPU technique, said in the plan."""
    assert gs.sum(np.ones(3), strategy="warp") == 3.0
    plan = gs.last_plan()
    if backend == "cpu":
        assert plan["strategy_used"] == "atomic"
        assert any("warp" in n for n in plan["notes"])
    assert gs.dot(np.arange(4.0), np.arange(4.0), strategy="warp") == 14.0


def test_counters_demo(backend):
    from gpusync import demo

    rows = demo.counters(64, 128, verbose=False)
    by = {r["kind"]: r for r in rows}
    assert by["atomic"]["value"] == by["mutex"]["value"] == 64 * 128
    assert 0 < by["race"]["value"] <= 64 * 128
    assert by["race"]["lost"] == 64 * 128 - by["race"]["value"]


# ---------------------------------------------------------------- device arrays (CUDA)

DEVICE_REDUCE_STRATS = ["auto", "atomic", "mutex", "two-pass", "threadfence", "grid", "warp"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.sanitizer) if d in (np.int8, np.float32) else d
                                   for d in (np.bool_, np.int8, np.int32, np.uint32, np.int64, np.float16,
                                             np.float32, np.float64)], ids=lambda d: np.dtype(d).name)
def test_device_cupy_in_cupy_out(cp, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(1_000_003) / 8).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0, 2 if dtype == np.bool_ else 100, 1_000_003).astype(dtype)
    d = cp.asarray(a)
    for s in DEVICE_REDUCE_STRATS:
        got = gs.sum(d, strategy=s)
        assert isinstance(got, cp.ndarray) and got.shape == () and got.dtype == np.sum(a).dtype
        ref = np.sum(a.astype(np.float64)) if a.dtype.kind == "f" else np.sum(a)
        np.testing.assert_allclose(float(got), float(ref), rtol=1e-3 if dtype == np.float16 else 1e-6)
        got = gs.dot(d, d, strategy=s)
        ref = np.dot(a.astype(np.float64), a.astype(np.float64)) if a.dtype.kind == "f" else np.dot(a, a)
        np.testing.assert_allclose(float(got), float(ref), rtol=1e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_device_strided_and_misaligned(cp):
    a = cp.arange(3_000_000, dtype=cp.float32) % 1000
    for s in DEVICE_REDUCE_STRATS:
        for x, y in ((a[1:], a[:-1]), (a[::3], a[1::3]), (a[5:-3], a[7:-1])):
            ref = np.dot(cp.asnumpy(x).astype(np.float64), cp.asnumpy(y).astype(np.float64))
            assert float(gs.dot(x, y, strategy=s)) == pytest.approx(ref, rel=1e-7)
            assert float(gs.sum(x, strategy=s)) == pytest.approx(float(cp.asnumpy(x).astype(np.float64).sum()))


@pytest.mark.gpu
def test_device_torch_in_torch_out(cuda):
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


@pytest.mark.gpu
def test_deterministic_across_strategies_grids_and_host(cp):
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


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_mutex_timeout_on_gpu_then_everything_works(cp):
    with pytest.raises(gs.DeadlockError):
        gs._core._test_deadlock("cuda", 20.0)
    a = cp.arange(1_000_000, dtype=cp.int64)
    assert int(gs.sum(a, strategy="mutex")) == 1_000_000 * 999_999 // 2
    h, _ = gs.histogram(a % 7, bins=7, range=(0, 7))
    assert int(h.sum()) == 1_000_000


@pytest.mark.gpu
@pytest.mark.slow
def test_reduce_more_than_2_31_elements(cp):
    n = (1 << 31) + 4097
    a = cp.ones(n, dtype=cp.int8)
    a[-3:] = 5
    for s in DEVICE_REDUCE_STRATS:
        assert int(gs.sum(a, strategy=s)) == n + 12, s
    assert int(gs.sum(a, deterministic=True)) == n + 12
    del a
    b = cp.full(n, 0.5, dtype=cp.float32)
    for s in ("auto", "two-pass", "atomic"):
        assert gs.sum(b, strategy=s).get() == np.float32(n * 0.5)
    assert float(gs.dot(b, b, deterministic=True)) == pytest.approx(n * 0.25, rel=1e-7)
    del b
    cp.get_default_memory_pool().free_all_blocks()


# ---- sum(a, dtype=...) of a whole array: the fast route (_reduce._sum_as) ---------------------------------

_AS_INPUTS = {"bool": lambda r, n: r.integers(0, 2, n).astype(bool),
              "int8": lambda r, n: r.integers(-128, 128, n).astype(np.int8),
              "uint16": lambda r, n: r.integers(0, 2**16, n).astype(np.uint16),
              "int32": lambda r, n: r.integers(-2**31, 2**31, n).astype(np.int32),
              "int64": lambda r, n: r.integers(-2**62, 2**62, n),
              "uint64": lambda r, n: r.integers(0, 2**63, n).astype(np.uint64),
              "float16": lambda r, n: r.random(n).astype(np.float16),
              "float32": lambda r, n: r.standard_normal(n).astype(np.float32),
              "float64": lambda r, n: r.standard_normal(n) * 1e10}
_AS_DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", int,
              float, "f4"]


def _same_sum(got, ref, x):
    """got == ref: exactly for integers; floats within the rounding of a sum in ref's dtype (eps * sum |x|)."""
    assert type(got) is type(ref), (type(got), type(ref))
    if np.dtype(type(ref)).kind == "f":
        with np.errstate(over="ignore"):
            scale = float(np.abs(np.asarray(x, np.float64)).sum())
        atol = 4 * np.finfo(type(ref)).eps * scale
        np.testing.assert_allclose(got, ref, rtol=np.finfo(type(ref)).eps, atol=atol, equal_nan=True)
    else:
        assert got == ref


@pytest.mark.parametrize("xdt", list(_AS_INPUTS))
@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_sum_with_a_dtype_is_numpys(xdt, n):
    """NumPy's sum in `dtype` (each element cast to it): integers wrap in it, floats round as its sum;
    inputs that overflow float16 give NumPy's inf / NaN."""
    x = _AS_INPUTS[xdt](np.random.default_rng(n), n)
    for d in _AS_DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ref = np.sum(x, dtype=d)
            except TypeError as e:
                with pytest.raises(TypeError):
                    gs.sum(x, dtype=d)
                continue
            _same_sum(gs.sum(x, dtype=d), ref, x)


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("xdt", ["int8", "int32", "int64", "float16", "float32", "float64"])
def test_sum_with_a_dtype_of_device_arrays(lib, xdt):
    from conftest import to_host, to_kind

    x = _AS_INPUTS[xdt](np.random.default_rng(4), 100_003)
    dx = to_kind(x, lib)
    for d in ["int8", "int32", "int64", "uint64", "float16", "float32", "float64"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = np.sum(x, dtype=d)
            if lib == "torch" and np.dtype(d) == np.uint64:
                continue  # (torch has no CUDA uint64 result to compare)
            if x.dtype.kind == "f" and np.dtype(d).kind in "iu":
                continue  # (out-of-range float -> int casts: x86's and the GPU's differ, both undefined in C)
            got = gs.sum(dx, dtype=d)
        assert type(got).__module__.split(".")[0] == lib
        _same_sum(np.asarray(to_host(got))[()], ref, x)
