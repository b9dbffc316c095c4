"""gs.histogram against np.histogram: dtypes x strategies x sizes, weights,
density, edges, NaN/inf, errors (run on every available backend)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusync as gs
from gpusync import _histogram
from conftest import assert_raises_like_numpy, random_array, strategies_for, to_host, to_kind

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]
SIZES = [0, 1, 31, 33, 1000, 10**6]


def check(a, **kw):
    """gs.histogram(a, **kw) equals np.histogram(a, **kw) (or raises alike)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np_kw = {k: v for k, v in kw.items() if k != "strategy"}
        try:
            ref_h, ref_e = np.histogram(a, **np_kw)
        except Exception:
            assert_raises_like_numpy(lambda: np.histogram(a, **np_kw), lambda: gs.histogram(a, **kw))
            return None
        h, e = gs.histogram(a, **kw)
    assert h.dtype == ref_h.dtype and e.dtype == ref_e.dtype
    np.testing.assert_array_equal(e, ref_e)
    if h.dtype.kind == "f":
        np.testing.assert_allclose(h, ref_h, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(h, ref_h)
    return h


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_dtypes_sizes_strategies(backend, dtype, n):
    rng = np.random.default_rng(n + 7)
    a = random_array(rng, dtype, n)
    for s in strategies_for(backend):
        check(a, bins=17, strategy=s)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64])
def test_range_and_many_bins(backend, dtype):
    rng = np.random.default_rng(3)
    a = random_array(rng, dtype, 100_003, low=-50 if np.dtype(dtype).kind == "i" else None,
                     high=300 if np.dtype(dtype).itemsize > 1 else None)
    for s in strategies_for(backend):
        for bins, rng_ in [(256, (0, 256)), (128, (0, 128)), (10, (-3.5, 7.25)), (1000, None), (3, (5, 5))]:
            check(a, bins=bins, range=rng_, strategy=s)


def test_every_byte_value(backend):
    """All 256 values of each 8-bit type, on edges that hit values exactly."""
    for dt in (np.uint8, np.int8):
        a = np.arange(256, dtype=np.uint8).view(dt).repeat(3)
        for bins, r in [(256, (0, 256)), (255, (0, 255)), (7, (-10, 100)), (1, None), (64, (-128, 127.5))]:
            for s in strategies_for(backend):
                check(a, bins=bins, range=r, strategy=s)


def test_non_contiguous_and_nd(backend):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 41))
    check(a, bins=12)
    check(a[:, 3], bins=12)
    check(a[::-3, ::2], bins=[-2, -1, 0, 0.5, 3])
    b = np.arange(1000, dtype=np.int32)[::7]
    check(b, bins=10, range=(0, 1000))


def test_edges_array(backend):
    rng = np.random.default_rng(6)
    a = rng.standard_normal(50_001).astype(np.float32)
    for edges in ([-1, 0, 1], [-np.inf, 0, np.inf], [0, 0, 1, 1, 2], np.linspace(-3, 3, 1001),
                  np.array([-2, -1.5, 0.25, 0.3, 4], dtype=np.float32), [1, 2, 3]):
        for s in strategies_for(backend):
            check(a, bins=edges, strategy=s)
    ints = rng.integers(-10, 10, 10_000)
    check(ints, bins=[-5, 0, 3, 9])
    check(ints, bins=np.arange(-10, 11))


def test_weights_and_density(backend):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(20_000)
    for wdt in (np.float64, np.float32, np.int32, np.int64, np.uint8, np.bool_, np.float16):
        w = random_array(rng, wdt, a.size, low=0, high=5) if np.dtype(wdt).kind in "iu" else (
            rng.random(a.size).astype(wdt) if wdt != np.bool_ else rng.random(a.size) > 0.5)
        for s in strategies_for(backend):
            h, e = gs.histogram(a, bins=20, weights=w, strategy=s)
            ref, ref_e = np.histogram(a, bins=20, weights=w)
            assert h.dtype == ref.dtype
            tol = 1e-3 if wdt in (np.float32, np.float16) else 1e-9
            np.testing.assert_allclose(h.astype(float), ref.astype(float), rtol=tol, atol=tol)
            np.testing.assert_array_equal(e, ref_e)
    for kw in ({}, {"weights": rng.random(a.size)}, {"bins": [-1, 0, 0.5, 2]}):
        h, e = gs.histogram(a, density=True, **kw)
        ref, _ = np.histogram(a, density=True, **kw)
        np.testing.assert_allclose(h, ref, rtol=1e-10)


def test_nan_inf(backend):
    a = np.array([np.nan, 1.0, 2.0, np.inf, -np.inf, 3.0, np.nan])
    for s in strategies_for(backend):
        check(a, bins=3, range=(0, 4), strategy=s)
        check(a, bins=[-np.inf, 0, 2, np.inf], strategy=s)
        check(a.astype(np.float32), bins=[0, 1, 2, 3], strategy=s)
    assert_raises_like_numpy(lambda: np.histogram(a), lambda: gs.histogram(a))
    b = np.array([1.0, np.inf])
    assert_raises_like_numpy(lambda: np.histogram(b), lambda: gs.histogram(b))


def test_bool_input_warns_like_numpy(backend):
    a = np.array([True, False, True, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        h, e = gs.histogram(a, bins=2)
    with pytest.warns(RuntimeWarning):
        ref, ref_e = np.histogram(a, bins=2)
    np.testing.assert_array_equal(h, ref)
    np.testing.assert_array_equal(e, ref_e)


def test_string_bins(backend):
    a = np.random.default_rng(2).standard_normal(5000)
    for b in ("auto", "fd", "sturges", "sqrt"):
        check(a, bins=b)


def test_float_edge_exactness(backend):
    """Values sitting exactly on float32 / float64 edges land where NumPy puts them."""
    for dt in (np.float32, np.float64, np.float16):
        _, e = np.histogram(np.zeros(0, dt), bins=37, range=(np.float64(-1.3), 2.9))
        a = np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)]).astype(dt)
        for s in strategies_for(backend):
            check(a, bins=37, range=(-1.3, 2.9), strategy=s)
            check(a, bins=37, strategy=s)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.histogram([1, 2], bins=0),
        lambda m: m.histogram([1, 2], bins=-3),
        lambda m: m.histogram([1, 2], bins=2.5),
        lambda m: m.histogram([1, 2], bins=[2, 1]),
        lambda m: m.histogram([1, 2], bins=[[1, 2]]),
        lambda m: m.histogram([1, 2], range=(2, 1)),
        lambda m: m.histogram([1, 2], range=(0, np.inf)),
        lambda m: m.histogram([1, 2], range=(np.nan, 1)),
        lambda m: m.histogram([1, 2], weights=[1, 2, 3]),
        lambda m: m.histogram(np.array([1e30, 1e30], np.float32) + np.array([0, 1e24], np.float32),
                              bins=10**8),
    ],
)
def test_errors_match_numpy(backend, call):
    assert_raises_like_numpy(lambda: call(np), lambda: call(gs))


def test_bad_dtypes_and_strategy(backend):
    for bad in (np.array([1 + 2j]), np.array(["a", "b"]), np.array([object()], dtype=object)):
        with pytest.raises(TypeError, match="a has dtype"):
            gs.histogram(bad)
    with pytest.raises(TypeError, match="weights"):
        gs.histogram([1, 2], weights=np.array([1j, 2j]))
    for bad in ("fastest", None, 3):
        with pytest.raises(ValueError, match="strategy must be one of"):
            gs.histogram([1, 2], strategy=bad)


def test_empty(backend):
    check(np.zeros(0), bins=5)
    check(np.zeros(0, np.uint8), bins=5, range=(0, 10))
    check(np.zeros(0), bins=[0, 1, 2])
    check(np.zeros(0), bins=4, weights=np.zeros(0))


@settings(max_examples=60, deadline=None)
@given(
    a=st.one_of(
        hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(0, 300),
                   elements=st.floats(allow_nan=True, allow_infinity=True, width=32)),
        hnp.arrays(st.sampled_from([np.uint8, np.int8, np.int16, np.int32, np.int64]), st.integers(0, 300)),
    ),
    bins=st.integers(1, 40),
    lo=st.floats(-1e3, 1e3),
    width=st.floats(1e-3, 1e4),
    strategy=st.sampled_from(["auto", "global", "shared", "warp"]),
)
def test_property_matches_numpy(a, bins, lo, width, strategy):
    """For any data and range, counts equal NumPy's and sum to the kept values."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            ref = np.histogram(a, bins=bins, range=(lo, lo + width))
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)[:20]):
                gs.histogram(a, bins=bins, range=(lo, lo + width), strategy=strategy)
            return
        h, e = gs.histogram(a, bins=bins, range=(lo, lo + width), strategy=strategy)
    np.testing.assert_array_equal(h, ref[0])
    np.testing.assert_array_equal(e, ref[1])
    kept = np.count_nonzero((a.astype(e.dtype) >= e[0]) & (a.astype(e.dtype) <= e[-1]))
    assert h.sum() == kept


# ---------------------------------------------------------------- device arrays (CUDA)

DEVICE_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                 np.float16, np.float32, np.float64]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.sanitizer)
                                   if d in (np.uint8, np.float32, np.int64) else d
                                   for d in DEVICE_DTYPES], ids=lambda d: np.dtype(d).name)
def test_device_cupy_in_cupy_out(cp, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(100_003) * 40).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0, 120, 100_003).astype(dtype)
    d = cp.asarray(a)
    for s in strategies_for("cuda"):
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


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_device_strided_and_nd(cp):
    a = cp.arange(300_000, dtype=cp.float32).reshape(600, 500) % 977
    for view in (a, a[:, 7], a[::-2, ::3], a.T):
        h, e = gs.histogram(view, bins=33)
        ref, ref_e = np.histogram(cp.asnumpy(view), bins=33)
        np.testing.assert_array_equal(cp.asnumpy(h), ref)


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_device_weights_and_density(cp):
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal(200_001), rng.random(200_001).astype(np.float32)
    for s in strategies_for("cuda"):
        h, _ = gs.histogram(cp.asarray(a), bins=40, weights=cp.asarray(w), strategy=s)
        ref, _ = np.histogram(a, bins=40, weights=w)
        assert h.dtype == ref.dtype
        np.testing.assert_allclose(cp.asnumpy(h), ref, rtol=1e-4)
        got = gs.bincount(cp.asarray((a * 10 + 50).clip(0).astype(np.int32)), weights=cp.asarray(w), strategy=s)
        np.testing.assert_allclose(cp.asnumpy(got), np.bincount((a * 10 + 50).clip(0).astype(np.int32), weights=w),
                                   rtol=1e-9)
    d, _ = gs.histogram(cp.asarray(a), bins=40, density=True)
    np.testing.assert_allclose(cp.asnumpy(d), np.histogram(a, bins=40, density=True)[0], rtol=1e-10)


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_device_torch_in_torch_out(cuda):
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


@pytest.mark.gpu
def test_numba_in_numba_out(cuda):
    cuda = pytest.importorskip("numba.cuda")
    a = np.random.default_rng(2).integers(0, 1000, 50_000)
    d = cuda.to_device(a)
    h, _ = gs.histogram(d, bins=10)
    np.testing.assert_array_equal(h.copy_to_host(), np.histogram(a, bins=10)[0])


@pytest.mark.gpu
def test_dlpack_only_producer(cp):
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


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_cluster_strategy_limits(cp):
    info = gs.device_info()
    x = cp.arange(100_000) % 65536
    if info["compute_capability"][0] < 9:
        with pytest.raises(gs.UnsupportedDeviceError, match="compute capability"):
            gs.bincount(x, strategy="cluster")
        return
    np.testing.assert_array_equal(cp.asnumpy(gs.bincount(x, strategy="cluster")), np.bincount(cp.asnumpy(x)))
    # (values 0 .. max: a lone value far from 0 is counted in one bin, min .. max alone, which fits)
    with pytest.raises(ValueError, match="strategy 'cluster' holds at most"):
        gs.bincount(cp.array([0, 10_000_000]), strategy="cluster")
    with pytest.raises(ValueError, match="strategy 'shared' holds at most"):
        gs.bincount(cp.array([0, 1_000_000]), strategy="shared")
    np.testing.assert_array_equal(cp.asnumpy(gs.bincount(cp.array([10_000_000]), strategy="cluster")),
                                  np.bincount([10_000_000]))
    # still usable afterwards
    np.testing.assert_array_equal(cp.asnumpy(gs.bincount(cp.array([1, 1, 2]))), [0, 2, 1])


@pytest.mark.gpu
@pytest.mark.slow
def test_more_than_2_31_elements(cp):
    n = (1 << 31) + 4097
    a = cp.empty(n, dtype=cp.uint8)
    a[: 1 << 30] = 7
    a[1 << 30:] = 200
    a[-5:] = 3
    expect = np.zeros(256, np.int64)
    expect[7] = 1 << 30
    expect[200] = n - (1 << 30) - 5
    expect[3] = 5
    for s in strategies_for("cuda"):
        got = gs.bincount(a, minlength=256, strategy=s)
        np.testing.assert_array_equal(cp.asnumpy(got), expect, err_msg=s)
        h, _ = gs.histogram(a, bins=256, range=(0, 256), strategy=s)
        np.testing.assert_array_equal(cp.asnumpy(h), expect, err_msg=s)
    del a
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                   "float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 65_537, 1_000_003])
def test_host_minmax_equals_numpy(dtype, n):
    """The CPU engine's minmax (bincount's length, the autodetected range): NumPy's min and max, in the dtype,
    for contiguous and strided input; a NaN makes both NaN."""
    from gpusync import _core

    rng = np.random.default_rng(n)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    kind = np.dtype(dtype).kind
    a = (rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True) if info is not None
         else rng.random(n) > 0.5 if kind == "b" else (rng.random(n) * 1000 - 300).astype(dtype))
    for x in (a, a[::3]):
        got = np.frombuffer(_core.minmax("cpu", x, 0), dtype=x.dtype)
        assert got[0] == x.min() and got[1] == x.max()
        lo, hi = _histogram._minmax(x)
        assert lo == x.min() and hi == x.max() and np.asarray(lo).dtype == x.dtype
    if kind == "f":
        a[n // 2] = np.nan
        assert np.isnan(np.frombuffer(_core.minmax("cpu", a, 0), dtype=a.dtype)).all()


def test_cpu_estimate_matches_numpy_on_shifted_and_narrow_ranges():
    """The CPU engine's equal-width estimate (AVX-512 where the CPU has it,
    else the scalar loop: the same steps and rounding) against NumPy: seeded
    runs over offsets and widths from 1e-300 to 1e9, 1 to 4,096 bins, values
    on the edges, outside, NaN and +-inf, float32 and float64, lengths that
    are not multiples of the vector width."""
    rng = np.random.default_rng(123)
    with gs.use_backend("cpu"):
        for trial in range(400):
            n = int(rng.integers(1, 700))
            nb = int(rng.choice([1, 2, 3, 7, 10, 100, 255, 1000, 4096]))
            lo = float(rng.choice([0.0, 1.0, -1e6, 1e9, 1e-300, 3.5]))
            hi = lo + float(rng.choice([1.0, 1e-6, 1e6, 0.1, 7.0, 1e-12]))
            dt = np.float32 if trial % 2 else np.float64
            x = lo + (hi - lo) * (rng.random(n) * 1.4 - 0.2)
            k = max(1, n // 5)
            x[rng.integers(0, n, k)] = rng.choice(np.linspace(lo, hi, nb + 1), k)
            x[rng.integers(0, n, max(1, n // 50))] = rng.choice([np.nan, np.inf, -np.inf, lo, hi])
            x = x.astype(dt)
            try:
                want = np.histogram(x, nb, (lo, hi))
            except ValueError:  # NumPy's own refusal (a range that float32 cannot tell apart)
                with pytest.raises(ValueError):
                    gs.histogram(x, nb, (lo, hi))
                continue
            got = gs.histogram(x, nb, (lo, hi))
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("bounds", [(0.16, 0.84), (-3.3, 4.1), (0.1, 0.7), (1 / 3, 2 / 3), (1e-3, 2.5e-3),
                                    (-1.0, 1.0)], ids=str)
@pytest.mark.parametrize("bins", [1, 10, 100, 1000])
def test_float32_decimal_ranges_take_the_equal_width_bins(kind, bounds, bins):
    """float32 data with a range whose bounds are no float32 values: NumPy's float32 edges are np.linspace's
    float64 arithmetic on the float64 bounds, rounded -- a formula _uniform_formula now finds (from the range
    given, or the shortest decimals of the first and last edge), so these take the equal-width kernels
    instead of a binary search over the edges (H200, r123: 256M float32, 10 bins of (0.16, 0.84) 1.13 ms
    against 0.28 ms for (0, 1)).  Counts and edges are NumPy's: values on every edge, next to each, the
    bounds themselves, outside, NaN, +-inf; device inputs get their edges from the formula's kernel."""
    lo, hi = bounds
    rng = np.random.default_rng(bins)
    e = np.histogram_bin_edges(np.zeros(1, np.float32), bins, bounds)
    assert e.dtype == np.float32
    _, desc, _ = _histogram.plan_edges(np.dtype(np.float32), bins, bounds)
    assert desc[0] == _histogram._UNIFORM, desc[:2]
    assert _histogram._edges_formula(e, desc) is not None
    if bounds != (1 / 3, 2 / 3):  # (short decimals: found from the edges alone too)
        assert _histogram._edges_formula(e) is not None
    a = np.concatenate([(lo + (hi - lo) * (rng.random(50_001) * 1.4 - 0.2)).astype(np.float32), e,
                        np.nextafter(e, np.float32(np.inf)), np.nextafter(e, np.float32(-np.inf)),
                        np.float32([lo, hi, np.nan, np.inf, -np.inf])])
    want = np.histogram(a, bins, bounds)
    x = a if kind == "numpy" else to_kind(a, kind)
    got = gs.histogram(x, bins, bounds)
    np.testing.assert_array_equal(to_host(got[0]), want[0])
    np.testing.assert_array_equal(to_host(got[1]), want[1])
    assert to_host(got[1]).dtype == np.float32


@pytest.mark.parametrize("case", [
    (np.float32, [1000.2], 4, (np.float64(1000.1), 1000.2)),          # NumPy keeps float32(1000.2) > 1000.2
    (np.float64, [np.float32(0.0025)], 4, (0.0025, np.float32(7.4025))),  # linspace in float32: e0 < 0.0025
    (np.float64, [1225456900.0], 10, (np.float32(-7.527807e9), 1225456945)),
    (np.float32, [-5.16, -5.67, np.float32(-5.16)], 50, (np.float64(-5.67), -5.16)),
], ids=["f32-top", "f64-bottom", "f64-int-top", "f32-both"])
def test_range_bounds_of_mixed_precision(kind, case):
    """A range mixing a Python number with a NumPy scalar: NumPy keeps a >= range[0] and a <= range[1], each
    bound compared in its own precision (NEP 50), which can differ from [edges[0], edges[-1]] by a few values
    next to a bound (review34); gpusync corrects its counts by those values (_keep_slivers), weighted too."""
    dt, extra, bins, bounds = case
    rng = np.random.default_rng(3)
    lo, hi = float(bounds[0]), float(bounds[1])
    a = np.concatenate([np.asarray(extra, dt), (lo + (hi - lo) * rng.random(5000)).astype(dt),
                        np.asarray([lo, hi], dtype=np.float64).astype(dt)])
    e = np.histogram_bin_edges(a, bins, bounds)
    a = np.concatenate([a, e.astype(dt), np.nextafter(e.astype(dt), dt(np.inf)), np.nextafter(e.astype(dt), dt(-np.inf))])
    w = rng.random(len(a))
    x = a if kind == "numpy" else to_kind(a, kind)
    wx = w if kind == "numpy" else to_kind(w, kind)
    for _ in range(2):  # (the second call: no fast plan for these bounds either)
        want = np.histogram(a, bins, bounds)
        got = gs.histogram(x, bins, bounds)
        np.testing.assert_array_equal(to_host(got[0]), want[0])
        np.testing.assert_array_equal(to_host(got[1]), want[1])
    np.testing.assert_allclose(to_host(gs.histogram(x, bins, bounds, weights=wx)[0]),
                               np.histogram(a, bins, bounds, weights=w)[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_host(gs.histogram(x, bins, bounds, density=True)[0]),
                               np.histogram(a, bins, bounds, density=True)[0], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("bins,range_", [(10, (0, 1)), (100, (-2.5, 7)), (7, (0.16, 0.84)), (1000, (-3, 3)),
                                         (10, (0, 10))])  # (int32: unit-width integer bins, no formula)
def test_counting_call_writes_the_edges_of_its_formula(dtype, bins, range_):
    """The C entry's optional `edges` (what the device fast path passes, so
    that the kernel zeroing the counts writes them): NumPy's edges, and the
    counts unchanged; a description without a formula is refused."""
    from gpusync import _core

    edges, desc, uniform = _histogram._plan(np.empty(0, dtype), bins, range_)
    x = (np.random.default_rng(bins).standard_normal(20_001) * 2).astype(dtype)
    ref_c, ref_e = np.histogram(x, bins, range_)
    out = np.empty(len(edges) - 1, np.int64)
    got = np.full(len(edges), np.nan, ref_e.dtype)
    if desc[0] != _histogram._UNIFORM:
        with pytest.raises(ValueError, match="equal-width"):
            _core.histogram("cpu", x, None, out, desc, "auto", 0, got)
        # the same description carrying its edges' formula (what the device fast path's plans hold)
        desc = _histogram._carrying_formula(desc, _histogram._edges_formula(edges))
    _core.histogram("cpu", x, None, out, desc, "auto", 0, got)
    np.testing.assert_array_equal(got, ref_e)
    np.testing.assert_array_equal(out, ref_c)
    with pytest.raises(ValueError, match="nbins \\+ 1"):
        _core.histogram("cpu", x, None, out, desc, "auto", 0, got[:-1])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int64])
@pytest.mark.parametrize("bins,range_", [(256, (0, 256)), (10, (0, 256)), (16, (0, 16)), (300, (-20, 280)),
                                         (7, (3, 10)), (5, (0.5, 5.5))])
def test_fast_plans_carry_the_edges_formula(dtype, bins, range_):
    """The device fast path's plans: a direct or lut description carries its edges' formula, so that the
    counting call writes NumPy's edges (one C call, no uniform_edges launch); the counts are unchanged, and a
    host call with the plan in place still matches NumPy."""
    from gpusync import _core

    x = np.random.default_rng(bins).integers(-30, 300, 5001).astype(dtype)
    ref_c, ref_e = np.histogram(x, bins, range_)
    gs.histogram(x, bins, range_, strategy="global")  # the general path makes the plan
    key = _histogram._plan_key(x, bins, range_)
    edges, desc, formula = _histogram._fast_plans[key]
    np.testing.assert_array_equal(edges, ref_e)
    if desc[0] in (_histogram._DIRECT, _histogram._LUT):
        assert formula is desc
    if formula is desc:
        out = np.empty(bins, np.int64)
        got = np.full(bins + 1, np.nan, ref_e.dtype)
        _core.histogram("cpu", x, None, out, desc, "auto", 0, got)
        np.testing.assert_array_equal(got, ref_e)
        np.testing.assert_array_equal(out, ref_c)
    c, e = gs.histogram(x, bins, range_)
    np.testing.assert_array_equal(c, ref_c)
    np.testing.assert_array_equal(e, ref_e)


@pytest.mark.parametrize("bound", [object(), [0.0], np.zeros(1)])
def test_plan_keys_only_for_value_bounds(bound):
    """A plan is kept only for range bounds that hash by value (Python and NumPy numbers): an
    object hashed by identity would be kept alive by the plan and miss its changes."""
    from gpusync import _devfast
    dt = np.dtype(np.float64)
    assert _devfast.plan_key(dt, 10, (bound, 1.0)) is None and _devfast.plan_key(dt, 10, (0.0, bound)) is None
    for lo in (0, 0.0, np.float32(0), np.int64(0)):
        assert _devfast.plan_key(dt, 10, (lo, 1.0)) == (dt, 10, type(lo), lo, float, 1.0)
    assert _devfast.plan_key(dt, np.int64(10), (0.0, 1.0)) is None  # (NumPy ints as bins: the general path)
    assert _devfast.plan_key(dt, 10, [0.0, 1.0]) is None


@pytest.mark.parametrize("data", ["uniform", "one value", "zipf", "sorted"])
@pytest.mark.parametrize("nbins", [16_384, 40_000])
def test_auto_histogram_where_one_copy_of_the_bins_fits(kind, backend, data, nbins):
    """auto between ~12,800 and ~56,000 bins: one copy of the counts fits a block, and auto takes
    `shared` there (mid_bins_H100_r179.txt); every distribution -- one value and zipf too -- equals
    NumPy on every engine and input library."""
    rng = np.random.default_rng(nbins)
    n = 300_007
    x = {"uniform": lambda: rng.integers(0, nbins, n), "one value": lambda: np.full(n, nbins // 3),
         "zipf": lambda: np.minimum(rng.zipf(1.3, n) - 1, nbins - 1),
         "sorted": lambda: np.sort(rng.integers(0, nbins, n))}[data]().astype(np.int32)
    want_h, want_e = np.histogram(x, nbins, (0, nbins))
    h, e = gs.histogram(to_kind(x, kind), nbins, (0, nbins))
    np.testing.assert_array_equal(to_host(h), want_h)
    np.testing.assert_array_equal(to_host(e), want_e)
    if kind != "numpy":  # (a host input may run on the CPU engine: its own strategies)
        assert gs.last_plan()["strategy_used"] == "shared"


@pytest.mark.gpu
@pytest.mark.parametrize("bins,weighted,want", [(120_000, False, "global"), (300_000, False, "global"),
                                                (65_536, True, "cluster"), (131_073, True, "global"),
                                                (200_000, True, "global")])
def test_auto_past_one_block_takes_what_holds_the_bins(cp, monkeypatch, bins, weighted, want):
    """Past one block's shared memory (and the 16-bit halves): auto's pick holds the bins -- weighted
    sums a cluster only where one holds them (8 x 16,384 float64 sums on sm_90), counts global atomics
    (a cluster of 4+ blocks lost to them).  auto once asked the cluster for up to 464,896 counts or
    232,448 sums, which it holds only up to 262,144 / 131,072: those calls failed."""
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")  # (the general path, whose plan names the strategy that ran)
    rng = np.random.default_rng(bins)
    x = rng.random(400_003)
    w = rng.random(x.size) if weighted else None
    got, edges = gs.histogram(cp.asarray(x), bins, (0.0, 1.0), weights=None if w is None else cp.asarray(w))
    ref, ref_edges = np.histogram(x, bins, (0.0, 1.0), weights=w)
    if weighted:
        np.testing.assert_allclose(got.get(), ref, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got.get(), ref)
    np.testing.assert_array_equal(edges.get(), ref_edges)
    if gs.device_info()["compute_capability"][0] >= 9 and gs.device_info()["shared_memory_per_block_optin"] >= 227 * 1024:
        assert gs.last_plan()["strategy_used"] == want, gs.last_plan()


@pytest.mark.parametrize("bad", [5, -2, 2**31 - 1])
def test_a_lookup_table_is_checked_at_the_c_entry(bad, backend):
    """The C entry refuses a lookup-table description whose entries are not bins (0 .. nbins - 1) or -1, one for
    inputs wider than a byte, and 8-bit inputs with a description other than a direct one or a table
    (gs_hist_bins_check: both engines, before any count is written out of range)."""
    from gpusync import _core

    lut = np.full(256, -1, np.int32)
    lut[:5] = np.arange(5)
    x = np.arange(300) % 256
    u8 = x.astype(np.uint8)
    out = np.zeros(5, np.int64)
    ok = _histogram._bins_tuple(_histogram._LUT, 5, lut=lut.tobytes())
    _core.histogram(backend, u8, None, out, ok, "auto", 0)
    np.testing.assert_array_equal(out, np.bincount(u8[u8 < 5], minlength=5))
    wrong = lut.copy()
    wrong[200] = bad
    with pytest.raises(ValueError, match=r"lut\[200\]"):
        _core.histogram(backend, u8, None, out, _histogram._bins_tuple(_histogram._LUT, 5, lut=wrong.tobytes()), "auto",
                        0)
    with pytest.raises(ValueError, match="8-bit inputs only"):
        _core.histogram(backend, x.astype(np.int16), None, out, ok, "auto", 0)
    # 8-bit inputs are binned by their raw byte: an equal-width description would be read as a direct one
    uniform = _histogram._bins_tuple(_histogram._UNIFORM, 5, start=0.0, step=1.0, stop=5.0, scale=1.0)
    with pytest.raises(ValueError, match="raw byte"):
        _core.histogram(backend, u8, None, out, uniform, "auto", 0)


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("dt,bins,rng_", [(np.float64, 100, (0.0, 1.0)), (np.float32, 37, (-0.5, 1.5)),
                                          (np.int32, 50, (0, 50)), (np.uint8, 256, (0, 256)),
                                          (np.uint8, 64, (0, 256)), (np.int16, 30, (-7, 23))])
def test_weighted_device_fast_path(lib, dt, bins, rng_):
    """float64 weights of a device array, no engine forced: the second call takes the planned fast path
    (_devfast.histogram_w_: one C call, the edges written by the zeroing kernel or their own formula) --
    NumPy's sums, dtype and edges."""
    r = np.random.default_rng(bins)
    x = (r.random(30_001) * 2 - 0.5).astype(dt) if np.dtype(dt).kind == "f" else \
        r.integers(max(rng_[0] - 3, np.iinfo(dt).min), min(rng_[1] + 3, np.iinfo(dt).max), 30_001).astype(dt)
    w = r.standard_normal(30_001)
    ref, ref_e = np.histogram(x, bins, rng_, weights=w)
    dx, dw = to_kind(x, lib), to_kind(w, lib)
    for call in range(2):
        got, e = gs.histogram(dx, bins, rng_, weights=dw)
        assert type(got).__module__.split(".")[0] == lib
        np.testing.assert_allclose(to_host(got), ref, rtol=1e-10, atol=1e-9)
        assert to_host(got).dtype == ref.dtype
        np.testing.assert_array_equal(to_host(e), ref_e)
        assert to_host(e).dtype == ref_e.dtype
    assert gs.last_plan()["notes"] == ["the device fast path"]


# ---- edge arrays: the CPU engine's edge index (csrc/cpu/edge_index.h)

def _skewed_edge_sets():
    """Edge arrays of every shape the edge index tells apart: near-uniform,
    crowded near a point (cubic), spaced by ratios (log, negative log),
    repeated edges (NumPy allows equal consecutive edges), infinite and
    signed-zero outer edges, a span that overflows, a single bin."""
    rng = np.random.default_rng(20)
    return {
        "uniform-looking": np.linspace(-3, 3, 51) + np.r_[0, 1e-12 * np.ones(49), 0],
        "cubic": np.linspace(-3, 3, 51) ** 3 / 9,
        "log": np.logspace(-3, 3, 201),
        "geom": np.geomspace(1e-5, 1e5, 37),
        "negative-log": -np.logspace(3, -3, 101),
        "repeated": np.array([-2.0, -1, -1, -1, 0, 0, 0.5, 2, 2]),
        "repeated-top": np.array([0.0, 1, 2, 2]),
        "random-1001": np.sort(rng.standard_normal(1001)),
        "rounded-unique": np.unique(np.round(rng.standard_normal(300), 1)),
        "two-clusters": np.concatenate([np.linspace(0, 1e-9, 50), np.linspace(1, 2, 50)]),
        "infinite": np.array([-np.inf, -1, 0, 1, np.inf]),
        "signed-zeros": np.array([-1.0, -0.0, 0.0, 1.0]),
        "huge-span": np.array([-1e308, -1.0, 0.0, 1e308]),
        "one-bin": np.array([-0.5, 0.5]),
    }


def _values_for(rng, edges, n):
    """Values that hit every edge exactly, fall between, below, above, NaN, +-inf, -0.0."""
    fin = edges[np.isfinite(edges)]
    lo, hi = fin.min(), fin.max()
    spread = rng.standard_normal(n) * (min(hi - lo, 1e300) / 4 + 1) + (lo / 2 + hi / 2)
    x = np.concatenate([spread, rng.choice(edges, n), np.exp(rng.standard_normal(n) * 3),
                        [np.nan, np.inf, -np.inf, -0.0, 0.0, lo, hi, np.nextafter(hi, np.inf),
                         np.nextafter(lo, -np.inf)]])
    return rng.permutation(x)[:max(n, 9)]


@pytest.mark.parametrize("name", sorted(_skewed_edge_sets()))
@pytest.mark.parametrize("n", [1, 40, 1000, 30_001, 300_001])
def test_edge_arrays_match_numpy_exactly(name, n):
    """Skewed, repeated and on-edge cases, float64 / float32 / integer input:
    the same bins as np.histogram, with the guess table (inputs long enough
    to pay for it, with one or several threads) and without it (short
    inputs: the branchless binary search), every strategy."""
    edges = _skewed_edge_sets()[name]
    rng = np.random.default_rng(n)
    x = _values_for(rng, edges, n)
    with np.errstate(all="ignore"):
        ints = np.nan_to_num(np.clip(x, -2**62, 2**62), posinf=0, neginf=0).astype(np.int64)
    for a in (x, x.astype(np.float32), ints, ints.astype(np.int32)):
        for s in ["auto"] if n > 30_001 else strategies_for("cpu"):
            got = gs.histogram(a, edges, strategy=s)[0]
            with np.errstate(all="ignore"):
                ref = np.histogram(a, edges)[0]
            np.testing.assert_array_equal(got, ref, err_msg=f"{name} n={n} {a.dtype} strategy={s}")


@pytest.mark.parametrize("name", ["cubic", "log", "repeated", "random-1001"])
def test_edge_arrays_weighted(name):
    """Weighted sums on edge arrays land in NumPy's bins (NumPy adds them as
    differences of a sorted cumulative sum: equal up to rounding)."""
    edges = _skewed_edge_sets()[name]
    rng = np.random.default_rng(21)
    for n in (50, 30_001):
        x = _values_for(rng, edges, n)
        for w in (rng.random(x.size), rng.random(x.size).astype(np.float32), rng.integers(0, 5, x.size)):
            with np.errstate(all="ignore"):
                ref = np.histogram(x, edges, weights=w)[0]
            got = gs.histogram(x, edges, weights=w)[0]
            assert got.dtype == ref.dtype
            # (float32: NumPy's float32 running sum rounds at its total's scale)
            tol = 1e-5 * float(w.sum()) if w.dtype == np.float32 else 1e-9
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=tol)
            # the bins that got weight are NumPy's: compare with the counts
            cnt = np.histogram(x, edges, weights=(w != 0).astype(np.int64))[0]
            np.testing.assert_array_equal(gs.histogram(x, edges, weights=(w != 0).astype(np.int64))[0], cnt)


def test_edge_arrays_of_64_bit_integers_past_2_53():
    """int64 / uint64 data against integer edges NumPy compares exactly
    (GS_BINS_EDGES_INT): the edge index's key cells on the integers."""
    rng = np.random.default_rng(22)
    for e in (np.array([-2**62, -2**60, -5, 0, 2**55, 2**55, 2**55 + 1, 2**62], dtype=np.int64),
              np.sort(rng.integers(-2**62, 2**62, 300, dtype=np.int64)),
              np.array([0, 2**60, 2**63 - 1], dtype=np.int64)):
        for n in (10, 1000, 30_001):
            x = rng.choice(np.concatenate([rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64), rng.choice(e, n),
                                           rng.choice(e, n) + rng.integers(-2, 3, n)]), n)
            np.testing.assert_array_equal(gs.histogram(x, e)[0], np.histogram(x, e)[0])
            xu, eu = x.view(np.uint64), np.sort(e.view(np.uint64))
            np.testing.assert_array_equal(gs.histogram(xu, eu)[0], np.histogram(xu, eu)[0])


def test_edge_arrays_on_cpu_threads():
    """The table is built once and read by every thread: the counts of a
    pool-sized input equal NumPy's at 1 and 2 threads."""
    from gpusync import _core

    rng = np.random.default_rng(23)
    for name in ("cubic", "log", "repeated"):
        edges = _skewed_edge_sets()[name]
        x = _values_for(rng, edges, 400_000)
        ref = np.histogram(x, edges)[0]
        for threads in (1, 2):
            _core.cpu_threads(threads)
            try:
                out = np.empty(len(edges) - 1, np.int64)
                bins = _histogram._describe_bins(x.dtype, np.asarray(edges, np.float64), False)
                _core.histogram("cpu", x, None, out, bins, "auto", 0)
            finally:
                _core.cpu_threads(0)
            np.testing.assert_array_equal(out, ref, err_msg=f"{name} threads={threads}")
