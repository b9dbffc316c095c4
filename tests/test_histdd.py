"""histogram2d / histogramdd against NumPy: every bins form, ranges, the
closed last edge, out-of-range and NaN, dtypes, sizes, weights, density,
bad input with NumPy's exceptions and messages; host and device inputs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusync as gs
from conftest import assert_raises_like_numpy
from test_axis import to_host, to_kind  # noqa: F401 - the device-array parameter

SIZES = [0, 1, 31, 33, 100_000]



def _check2d(got, ref):
    h, xe, ye = (to_host(v) for v in got)
    rh, rxe, rye = ref
    assert h.dtype == rh.dtype and h.shape == rh.shape
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(xe, rxe)
    np.testing.assert_array_equal(ye, rye)
    assert xe.dtype == rxe.dtype and ye.dtype == rye.dtype


BINS_2D = [10, 1, [3, 5], np.linspace(-2, 2, 9), [np.array([-1.0, 0.0, 0.5, 3.0]), 4],
           [[-1, 0, 1], [0, 0.25, 1]], [7, np.array([0.1, 0.2, 0.2, 0.9])]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.int64, np.uint8, np.float16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_histogram2d_matches_numpy(backend, kind, dtype, n):
    rng = np.random.default_rng(n)
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal(n) * 1.5).astype(dtype)
        y = rng.random(n).astype(dtype)
    else:
        x = rng.integers(-3 if np.dtype(dtype).kind == "i" else 0, 4, n).astype(dtype)
        y = rng.integers(0, 3, n).astype(dtype)
    w = rng.random(n)
    xd, yd, wd = to_kind(x, kind), to_kind(y, kind), to_kind(w, kind)
    for bins in BINS_2D:
        for rg in (None, [[-1, 1], [0, 0.5]]):
            for density, weights in ((None, None), (True, None), (None, w), (True, w)):
                try:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        ref = np.histogram2d(x, y, bins, rg, density, weights)
                except ValueError as e:  # e.g. density of an empty histogram: gpusync must agree
                    with pytest.raises(type(e)):
                        gs.histogram2d(xd, yd, bins, rg, density, None if weights is None else wd)
                    continue
                with np.errstate(invalid="ignore", divide="ignore"):
                    got = gs.histogram2d(xd, yd, bins, rg, density, None if weights is None else wd)
                _check2d(got, ref)


def test_edges_nan_and_out_of_range(backend, kind):
    x = np.array([0.0, 1.0, 1.0, 0.5, np.nan, -0.1, 1.1, 0.25, 0.999999, np.inf, -np.inf])
    y = np.array([0.0, 1.0, 0.5, 1.0, 0.5, 0.5, 0.5, np.nan, 1.0, 0.5, 0.5])
    for bins in (4, 7, [np.array([0, 0.25, 0.25, 1.0]), 3]):
        ref = np.histogram2d(x, y, bins, [[0, 1], [0, 1]])
        _check2d(gs.histogram2d(to_kind(x, kind), to_kind(y, kind), bins, [[0, 1], [0, 1]]), ref)
    # float32 data against float64 edges: NumPy compares in float64
    xf = np.float32(np.linspace(0, 1, 1001))
    ref = np.histogram2d(xf, xf, np.linspace(0, 1, 30), None)
    _check2d(gs.histogram2d(to_kind(xf, kind), to_kind(xf, kind), np.linspace(0, 1, 30)), ref)
    # autodetected range of NaN data: NumPy's error
    assert_raises_like_numpy(lambda: np.histogram2d(x, y), lambda: gs.histogram2d(x, y))


@pytest.mark.parametrize("d", [1, 3, 5])
@pytest.mark.parametrize("n", [0, 33, 20_000])
def test_histogramdd_matches_numpy(backend, kind, d, n):
    rng = np.random.default_rng(d * 7 + n)
    s = rng.standard_normal((n, d))
    w = rng.random(n)
    forms = [3, [2 + k for k in range(d)], [np.sort(rng.standard_normal(4 + k)) for k in range(d)],
             [(4 if k % 2 else np.linspace(-1, 1, 6)) for k in range(d)]]
    for bins in forms:
        for rg in (None, [(-1, 1)] * d, [None if k % 2 else (-0.5, 2) for k in range(d)]):
            for weights in (None, w):
                ref_h, ref_e = np.histogramdd(s, bins, rg, None, weights)
                h, e = gs.histogramdd(to_kind(s, kind), bins, rg, None, None if weights is None else to_kind(w, kind))
                h = to_host(h)
                assert h.shape == ref_h.shape and h.dtype == ref_h.dtype
                np.testing.assert_allclose(h, ref_h, rtol=1e-12)
                for a, b in zip(e, ref_e):
                    np.testing.assert_array_equal(to_host(a), b)
    # a sequence of D coordinate arrays, and density
    if n:
        cols = [s[:, k] for k in range(d)]
        ref_h, _ = np.histogramdd(cols, 4, None, True)
        h, _ = gs.histogramdd([to_kind(c, kind) for c in cols], 4, None, True)
        np.testing.assert_allclose(to_host(h), ref_h, rtol=1e-10)


@pytest.mark.sanitizer
def test_strided_and_mixed_dtypes(backend):
    base = np.random.default_rng(4).random((3000, 4))
    s = base[::3, ::2]  # strided (N, 2) view
    np.testing.assert_array_equal(gs.histogramdd(s, 6)[0], np.histogramdd(s, 6)[0])
    x = np.random.default_rng(5).integers(0, 10, 500).astype(np.int32)
    y = np.random.default_rng(6).random(500).astype(np.float32)
    _check2d(gs.histogram2d(x, y, 5), np.histogram2d(x, y, 5))
    _check2d(gs.histogram2d(list(x[:50]), list(y[:50]), 5), np.histogram2d(list(x[:50]), list(y[:50]), 5))


def test_bad_input_like_numpy(backend):
    x, y = np.random.default_rng(1).random((2, 100))
    s = np.stack([x, y], 1)
    cases = [
        (lambda m: m.histogramdd(s, [3, 4, 5])),
        (lambda m: m.histogramdd(s, 3, [(0, 1)])),
        (lambda m: m.histogramdd(s, [0, 3])),
        (lambda m: m.histogramdd(s, [np.array([1.0, 0.0]), 3])),
        (lambda m: m.histogramdd(s, 3, None, None, np.ones(99))),
        (lambda m: m.histogramdd(s, [np.ones((2, 2)), 3])),
        (lambda m: m.histogram2d(x, y[:50])),
        (lambda m: m.histogram2d(x, y, 3, [[1, 0], [0, 1]])),
        (lambda m: m.histogramdd(s, 2.5)),
    ]
    for case in cases:
        assert_raises_like_numpy(lambda: case(np), lambda: case(gs))
    _check2d(gs.histogram2d(x, y, [0.2, 0.3, 0.4]), np.histogram2d(x, y, [0.2, 0.3, 0.4]))  # 3 entries: edges


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(0, 60), st.integers(1, 3)),
                  elements=st.floats(-4, 4, allow_nan=False) | st.sampled_from([0.0, 1.0, -1.0, np.nan])),
       st.integers(1, 9))
def test_property_histogramdd(s, nb):
    rg = [(-1, 1)] * s.shape[1]
    ref = np.histogramdd(s, nb, rg)
    got = gs.histogramdd(s, nb, rg)
    np.testing.assert_array_equal(got[0], ref[0])
    assert got[0].sum() == np.sum(np.all((s >= -1) & (s <= 1), axis=1))


def test_cached_plan_gives_fresh_edges(backend):
    """Repeated calls reuse the edges NumPy computed once (per dtype, bins,
    range and data min/max); each call still returns arrays of its own."""
    rng = np.random.default_rng(11)
    x, y = rng.random(500), rng.random(500) * 3
    for _ in range(2):
        h, xe, ye = gs.histogram2d(x, y, [5, 7], [[0, 1], [0, 3]])
        _check2d((h, xe, ye), np.histogram2d(x, y, [5, 7], [[0, 1], [0, 3]]))
        xe[:] = -1  # must not reach the next call's edges
    for scale in (1.0, 2.0, 1.0):  # range from the data: a new min/max is a new plan
        _check2d(gs.histogram2d(x * scale, y, 6), np.histogram2d(x * scale, y, 6))
    # the bounds' types matter to NumPy: (0, 1) and (0.0, 1.0) with int bins, int and float32 data
    xi = rng.integers(0, 5, 300).astype(np.int16)
    for rg in ([[0, 4], [0, 4]], [[0.0, 4.0], [0.0, 4.0]], [[np.float32(0), np.float32(4)], [0, 4]]):
        _check2d(gs.histogram2d(xi, xi, 3, rg), np.histogram2d(xi, xi, 3, rg))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 7, 4099, 65_539])
def test_vector_loads_tails_and_many_bins(backend, kind, dtype, n):
    """16-byte loads (contiguous, aligned), their n % 4 tail, unaligned views
    (scalar loads), and many bins: 256 x 256 (unweighted: 16-bit shared
    counts; weighted: a cluster's shared memory on sm_90, global atomics
    elsewhere) and 512 x 512 (unweighted too: a cluster, or global atomics),
    weighted and not: NumPy's counts exactly."""
    rng = np.random.default_rng(n)
    x = rng.random(n + 1).astype(dtype)
    y = (rng.random(n + 1) * 1.2 - 0.1).astype(dtype)
    w = rng.integers(0, 5, n + 1).astype(np.float64)
    xd, yd, wd = to_kind(x, kind), to_kind(y, kind), to_kind(w, kind)
    for sl in (slice(0, n), slice(1, n + 1)):  # aligned, then one element in: 4-byte / 8-byte aligned
        for bins in (16, 256, 512):
            for weights in (None, w):
                ref = np.histogram2d(x[sl], y[sl], bins, [[0, 1], [0, 1]], None,
                                     None if weights is None else weights[sl])
                got = gs.histogram2d(xd[sl], yd[sl], bins, [[0, 1], [0, 1]], None,
                                     None if weights is None else wd[sl])
                _check2d(got, ref)


@pytest.mark.parametrize("edges", ["float32-exact", "float64-only"])
def test_float32_edges_and_their_neighbours(backend, kind, edges):
    """float32 coordinates against edges that are all float32 values (binned in
    float32 on the GPU) and against edges that are not (float64): every edge
    itself, its float32 neighbours, the closed last edge, out of range, NaN
    and infinities land where NumPy puts them."""
    hi = 1.0 if edges == "float32-exact" else 0.3
    e = np.linspace(0, hi, 257)
    e32 = e.astype(np.float32)
    pts = np.concatenate([e32, np.nextafter(e32, np.float32(-1)), np.nextafter(e32, np.float32(2)),
                          np.float32([np.nan, np.inf, -np.inf, -0.0, 2 * hi, -hi])])
    rng = np.random.default_rng(3)
    x = rng.permutation(np.tile(pts, 3)).astype(np.float32)
    y = rng.permutation(np.tile(pts, 3)).astype(np.float32)
    for bins in (256, [256, 16], [e, 7]):
        ref = np.histogram2d(x, y, bins, [[0, hi], [0, hi]])
        _check2d(gs.histogram2d(to_kind(x, kind), to_kind(y, kind), bins, [[0, hi], [0, hi]]), ref)
    s = np.stack([x, y, x[::-1]], 1)
    ref_h, _ = np.histogramdd(s, [64, 8, 32], [(0, hi)] * 3)
    np.testing.assert_array_equal(to_host(gs.histogramdd(to_kind(s, kind), [64, 8, 32], [(0, hi)] * 3)[0]), ref_h)


@pytest.mark.gpu
@pytest.mark.parametrize("counter", ["0", "16", "32", "1"])
@pytest.mark.parametrize("bins", [(64, 64), (181, 181), (256, 256), (300, 301)])
def test_counter_widths_and_crowded_bins(monkeypatch, counter, bins):
    """Unweighted device counts in 16-bit shared halves (their 0x8000 moves
    to the result many times per block here: ten million points in one bin),
    32-bit shared counters, the automatic choice, and the overflow recount
    (GPUSYNC_HISTDD_COUNTER=1 raises every block's flag): NumPy's counts."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    rng = np.random.default_rng(sum(bins))
    spread_x, spread_y = rng.random(300_001).astype(np.float32), rng.random(300_001).astype(np.float32)
    crowd = 10_000_000
    x = cp.concatenate([cp.asarray(spread_x), cp.full(crowd, 0.3, cp.float32), cp.full(7, 0.999, cp.float32)])
    y = cp.concatenate([cp.asarray(spread_y), cp.full(crowd, 0.7, cp.float32), cp.full(7, 0.001, cp.float32)])
    ref = np.histogram2d(np.concatenate([spread_x, np.float32([0.3, 0.999])]),
                         np.concatenate([spread_y, np.float32([0.7, 0.001])]), bins, [[0, 1], [0, 1]],
                         weights=np.concatenate([np.ones(300_001), [crowd, 7]]))[0]
    h = gs.histogram2d(x, y, bins, [[0, 1], [0, 1]])[0]
    assert h.dtype == np.float64
    np.testing.assert_array_equal(cp.asnumpy(h), ref)
    hd = gs.histogramdd(cp.stack([x, y], 1), bins, [[0, 1], [0, 1]])[0]  # strided columns: scalar loads
    np.testing.assert_array_equal(cp.asnumpy(hd), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("flush", ["1", "2"])
@pytest.mark.parametrize("counter", ["0", "16", "32", "1"])
@pytest.mark.parametrize("bins", [(7, 5), (64, 64), (255, 257), (256, 256), (16, 16, 15)])
@pytest.mark.parametrize("place", ["host", "cupy"])
@pytest.mark.parametrize("n", [100_003, 2_000_003])
def test_flush_by_atomics_or_dumps(monkeypatch, flush, counter, bins, place, n):
    """Every block's shared counts reach the result either by global atomics
    (GPUSYNC_HISTDD_FLUSH=1) or through a copy summed by a second kernel
    (2): 16- and 32-bit counters, the overflow recount behind either (1:
    every block's slot raised), odd bin counts (a half-filled last word),
    host inputs (int64 counts) and device ones (float64); few points (a
    grid of few blocks: the dumps' sum writes the result, 32-bit counters
    too) and more: NumPy's counts."""
    monkeypatch.setenv("GPUSYNC_HISTDD_FLUSH", flush)
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    rng = np.random.default_rng(len(bins) * 1000 + bins[0])
    s = rng.random((n, len(bins)), dtype=np.float32) * 1.1 - 0.05  # some points outside the range
    s[::9973, 0] = 1.0  # the closed last edge
    rg = [(0, 1)] * len(bins)
    ref = np.histogramdd(s, bins, rg)[0]
    if place == "host":
        with gs.use_backend("cuda"):
            h = gs.histogramdd(s, bins, rg)[0]
    else:
        cp = pytest.importorskip("cupy")
        cols = [cp.asarray(np.ascontiguousarray(s[:, d])) for d in range(len(bins))]
        h = gs.histogramdd(cols, bins, rg)[0] if len(bins) > 2 else gs.histogram2d(*cols, bins, rg)[0]
        h = cp.asnumpy(h)
    np.testing.assert_array_equal(h, ref)


def test_values_on_uneven_float64_edges(backend, kind):
    """float64 coordinates exactly on the edges of ranges whose linspace edges
    are not dyadic (the guess window's bound must hold there: a product
    rounded before the subtraction, on any host compiler), and their
    neighbours: NumPy's bins."""
    rng = np.random.default_rng(17)
    for lo, hi, nb in [(6.158815794729875, 57.69185657338303, 27), (-3.7, 2.1, 100), (0.1, 0.7, 13)]:
        e = np.linspace(lo, hi, nb + 1)
        x = np.concatenate([e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), rng.uniform(lo, hi, 500)])
        y = rng.permutation(x)
        ref = np.histogram2d(x, y, nb, [[lo, hi], [lo, hi]])
        _check2d(gs.histogram2d(to_kind(x, kind), to_kind(y, kind), nb, [[lo, hi], [lo, hi]]), ref)


def test_plan_records_histogramdd(backend, kind):
    """gs.last_plan() after histogram2d / histogramdd names them and the
    engine that counted (it used to show the thread's previous call)."""
    rng = np.random.default_rng(5)
    x, y = rng.random(50_000), rng.random(50_000)
    gs.sum(np.ones(3))  # a different previous call
    gs.histogram2d(to_kind(x, kind), to_kind(y, kind), 8, [[0, 1], [0, 1]])
    plan = gs.last_plan()
    assert plan["op"] == "histogramdd" and plan["n"] == 50_000
    assert plan["place"] == ("host" if kind == "numpy" else "device")
    assert plan["engine"] == ("cuda" if backend == "cuda" else plan["engine"])
    assert plan["engine"] in (("cuda",) if backend == "cuda" else ("caller", "cpu"))
    assert plan["threads"] >= (0 if backend == "cuda" else 1)
    gs.histogramdd(to_kind(np.stack([x, y, x], 1), kind), 4)
    assert gs.last_plan()["op"] == "histogramdd"


@pytest.mark.gpu
@pytest.mark.parametrize("dev_kind", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bins, rng", [(256, [[0, 1], [0, 1]]), ([7, 300], ((-0.5, 1.5), (0.25, 0.75))),
                                       (64, [(0, 100), (-3, 3)])])
def test_histogram2d_device_fast_path(dev_kind, dtype, bins, rng):
    """A repeated device histogram2d with bins and range given takes the
    device fast path (its plan says so) and returns NumPy's counts and edges
    each time, as fresh arrays of the input's library; what the fast path
    does not take (other dtypes, weights, density, a stream) gets the same
    answers from the general path."""
    r = np.random.default_rng(11)
    n = 100_003
    xh = (r.random(n) * 2 - 0.25).astype(dtype)
    yh = (r.random(n) * 1.2 - 0.1).astype(dtype)
    xh[::997] = 0.5  # values on edges
    ref = np.histogram2d(xh, yh, bins, rng)
    x, y = to_kind(xh, dev_kind), to_kind(yh, dev_kind)
    seen = []
    with gs.use_backend("cuda"):
        for k in range(3):
            got = gs.histogram2d(x, y, bins, rng)
            assert type(got[0]) is type(x) and type(got[1]) is type(x)
            _check2d(got, ref)
            seen.append(got[1])
            if k:
                assert "the device fast path" in gs.last_plan()["notes"]
                assert gs.last_plan()["op"] == "histogramdd"
        seen[0][0] = 12345  # fresh edges: writing one call's result leaves the next call's alone
        _check2d(gs.histogram2d(x, y, bins, rng), ref)
        wref = np.histogram2d(xh, yh, bins, rng, weights=np.ones(n))
        _check2d(gs.histogram2d(x, y, bins, rng, weights=to_kind(np.ones(n), dev_kind)), wref)
        _check2d(gs.histogram2d(x, y, bins, rng, density=True), np.histogram2d(xh, yh, bins, rng, density=True))
        y64 = to_kind(yh.astype(np.float64), dev_kind)  # mixed dtypes: NumPy's result type, general path
        _check2d(gs.histogram2d(x, y64, bins, rng), np.histogram2d(xh, yh.astype(np.float64), bins, rng))


@pytest.mark.parametrize("n", [0, 1, 5_000, 3_000_001])
def test_core_histogramdd_writes_the_edges(backend, n):
    """_core.histogramdd's edges_out gets the edge table as given, next to the
    counts, on each engine: host arrays (copied on the host, CUDA backend
    included) and, on the GPU, device arrays (by the count kernel's block 0;
    copied when there are no points); a wrong edges_out is refused naming it."""
    from gpusync import _arrays, _core

    rng = np.random.default_rng(n)
    e = [np.linspace(-1.0, 2.0, 257), np.array([0.0, 0.1, 0.5, 0.75, 1.0])]
    e_all, ne = np.concatenate(e), np.array([len(v) for v in e], np.int64)
    x, y = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    ref = np.histogram2d(x, y, e)[0]
    code = _arrays._DTYPE_CODES
    f64, f32 = code[np.dtype(np.float64)], code[np.dtype(np.float32)]
    out, eout = np.zeros(ref.size, np.int64), np.full(len(e_all), np.nan)
    host = -1
    _core.histogramdd(backend, [(x.ctypes.data, n, 1, f32, host), (y.ctypes.data, n, 1, f32, host)], e_all, ne, None,
                      (out.ctypes.data, out.size, 1, code[np.dtype(np.int64)], host), 0,
                      (eout.ctypes.data, eout.size, 1, f64, host))
    np.testing.assert_array_equal(out.reshape(ref.shape), ref)
    np.testing.assert_array_equal(eout, e_all)
    with pytest.raises(ValueError, match="edges_out"):
        _core.histogramdd(backend, [(x.ctypes.data, n, 1, f32, host), (y.ctypes.data, n, 1, f32, host)], e_all, ne,
                          None, (out.ctypes.data, out.size, 1, code[np.dtype(np.int64)], host), 0,
                          (eout.ctypes.data, eout.size - 1, 1, f64, host))
    if backend != "cuda":
        return
    cp = pytest.importorskip("cupy")
    dx, dy = cp.asarray(x), cp.asarray(y)
    buf = cp.full(ref.size + len(e_all), cp.nan)
    dev, ptr = dx.device.id, buf.data.ptr
    _core.histogramdd("cuda", [(dx.data.ptr, n, 1, f32, dev), (dy.data.ptr, n, 1, f32, dev)], e_all, ne, None,
                      (ptr, ref.size, 1, f64, dev), cp.cuda.get_current_stream().ptr,
                      (ptr + 8 * ref.size, len(e_all), 1, f64, dev))
    got = cp.asnumpy(buf)
    np.testing.assert_array_equal(got[:ref.size].reshape(ref.shape), ref)
    np.testing.assert_array_equal(got[ref.size:], e_all)


@pytest.mark.gpu
@pytest.mark.parametrize("dev_kind", ["cupy", "torch"])
@pytest.mark.parametrize("n", [0, 1, 2_000_000, 12_000_003])
def test_histogram2d_fast_path_counts_and_edges_in_one_buffer(dev_kind, n):
    """The device fast path's counts and float64 edges share one allocation
    (the count kernel writes the edges): each is NumPy's, of NumPy's shape,
    with no element shared between them -- also with no points (the edges
    then copied), with few points (the blocks' atomics into a zeroed result)
    and with 12M points, half of them in one bin: the blocks dump their
    16-bit halves, whose sum writes the result unzeroed, and ~45,000 points a
    block in that bin settle 0x8000 into each block's carry log."""
    r = np.random.default_rng(n)
    xh, yh = r.random(n).astype(np.float32), r.random(n).astype(np.float32)
    xh[: n // 2] = 0.3
    yh[: n // 2] = 0.7
    rng = [[0, 1], [-0.5, 1.5]]
    ref = np.histogram2d(xh, yh, 256, rng)
    x, y = to_kind(xh, dev_kind), to_kind(yh, dev_kind)
    with gs.use_backend("cuda"):
        for k in range(3):
            got = gs.histogram2d(x, y, 256, rng)
            _check2d(got, ref)
            assert tuple(got[0].shape) == (256, 256) and tuple(got[1].shape) == (257,)
            if k:
                assert "the device fast path" in gs.last_plan()["notes"]
                if dev_kind == "cupy":  # one allocation: counts, x edges, y edges
                    assert got[1].data.ptr == got[0].data.ptr + 8 * 256 * 256
                    assert got[2].data.ptr == got[1].data.ptr + 8 * 257
        got[1][:] = -7.0  # the edges' views do not reach the counts or each other
        got[2][0] = -9.0
        np.testing.assert_array_equal(to_host(got[0]), ref[0])
        assert float(to_host(got[2])[1]) == ref[2][1] and float(to_host(got[1])[-1]) == -7.0


@pytest.mark.parametrize("n, slow_cpu, engine", [(100, False, "caller"), (2_000_000, True, "cuda")])
def test_host_histogram2d_engine_is_the_cost_models(monkeypatch, n, slow_cpu, engine):
    """Host coordinates on a machine with a GPU: the cost model picks the CPU
    engine or the GPU (injected constants; the GPU side is simulated by the
    CPU engine here), the plan says which and why; a forced backend wins."""
    import dataclasses

    from gpusync import _backend, _costmodel, _dispatch, _histdd
    real = _histdd._core
    ran = []

    class Core:
        def __getattr__(self, k):
            return getattr(real, k)

        def histogramdd(self, be, *args):
            ran.append(be)
            return real.histogramdd("cpu", *args)

    monkeypatch.setattr(_histdd, "_core", Core())
    monkeypatch.setattr(_backend, "backend", lambda: "cuda")
    monkeypatch.setattr(_dispatch, "_gpu_usable", lambda: True)
    m = _costmodel.Machine(cores=4, host_bw=((1, 10e9), (4, 30e9)), gpu=True, gpu_latency=50e-6, h2d_bw=50e9,
                           handoff=20e-6)
    if slow_cpu:
        m = dataclasses.replace(m, cpu_rate=(("histogram", 1e6),))
    _dispatch.set_machine(m)
    try:
        rng = np.random.default_rng(3)
        x, y = rng.random(n), rng.random(n)
        ref = np.histogram2d(x, y, 16, [[0, 1], [0, 1]])
        got = gs.histogram2d(x, y, 16, [[0, 1], [0, 1]])
        np.testing.assert_array_equal(got[0], ref[0])
        plan = gs.last_plan()
        assert ran == ["cuda" if engine == "cuda" else "cpu"]
        assert (plan["engine"] == "cuda") == (engine == "cuda")
        assert any(note.startswith(f"the cost model chose {engine}") for note in plan["notes"]), plan["notes"]
        monkeypatch.setattr(_backend, "forced", lambda: "cuda")
        gs.histogram2d(x, y, 16, [[0, 1], [0, 1]])
        assert ran[-1] == "cuda"
    finally:
        _dispatch.set_machine(None)


# ---- the CPU engine's threads, private copies and the host fast path (issue 13)

def _points(n, d, seed):
    """n points of d uniform coordinates in [-0.1, 1.1): some outside [0, 1],
    some NaN, some on edges (0, 0.5, 1: the last edge is closed)."""
    rng = np.random.default_rng(seed)
    s = rng.random((n, d)) * 1.2 - 0.1
    if n:
        s[rng.integers(0, n, max(1, n // 50))] = np.nan
        s[rng.integers(0, n, max(1, n // 50)), -1] = 1.0
        s[rng.integers(0, n, max(1, n // 50)), 0] = 0.5
        s[0, 0] = 0.0
    return s


# (GPUSYNC_NUM_THREADS, the dispatcher's request of threads): the engine's own
# choice, capped; forced pools of more copies than the cores
THREAD_SETTINGS = [(None, 0), ("1", 0), ("2", 0), ("7", 0), (None, 2), (None, 5), ("3", 7)]


@pytest.mark.parametrize("env, request_", THREAD_SETTINGS, ids=lambda v: str(v))
@pytest.mark.parametrize("n", [0, 1, 999, 100_000])
def test_host_counts_equal_numpy_for_any_threads(monkeypatch, env, request_, n):
    """NumPy's counts exactly -- 1, 7 and 256 x 256 bins in 2-D, 3-D bins,
    NaN and points outside, float32 and float64, weights (integer-valued:
    exact sums in any order) -- whatever the threads: the engine's choice
    under GPUSYNC_NUM_THREADS, or the copies a request forces; the plan
    names the threads that counted."""
    from gpusync import _core
    if env is None:
        monkeypatch.delenv("GPUSYNC_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("GPUSYNC_NUM_THREADS", env)
    s = _points(n, 3, n + 7)
    wts = np.random.default_rng(n).integers(-3, 4, n).astype(np.float64)
    rg2, rg3 = [[0, 1], [0, 1]], [(0, 1), (0, 1), (0, 1)]
    with gs.use_backend("cpu"):
        _core.cpu_threads(request_)
        try:
            for dt in (np.float64, np.float32):
                x, y = s[:, 0].astype(dt), s[:, 1].astype(dt)
                for bins in (1, 7, 256):
                    for w in (None, wts):
                        for _ in range(2):  # the general path, then the host fast path
                            got = gs.histogram2d(x, y, bins, rg2, weights=w)
                            ref = np.histogram2d(x, y, bins, rg2, weights=w)
                            for a, b in zip(got, ref):
                                assert a.dtype == b.dtype and a.shape == b.shape
                                np.testing.assert_array_equal(a, b)
                            plan = gs.last_plan()
                            if request_ and n > 1:  # the request, within GPUSYNC_NUM_THREADS and the points
                                want = min(request_, int(env) if env else request_, n)
                                assert plan["threads"] == want, plan
                            assert plan["engine"] == ("cpu" if plan["threads"] > 1 else "caller")
                            if env is not None:
                                assert plan["threads"] <= int(env)
                s3 = s.astype(dt)
                for bins in ([5, 6, 7], 16):
                    for w in (None, wts):
                        got, edges = gs.histogramdd(s3, bins, rg3, weights=w)
                        ref, redges = np.histogramdd(s3, bins, rg3, weights=w)
                        assert got.dtype == ref.dtype and got.shape == ref.shape
                        np.testing.assert_array_equal(got, ref)
                        for a, b in zip(edges, redges):
                            np.testing.assert_array_equal(a, b)
                finite = np.nan_to_num(s3[:, :2], nan=0.25)  # ranges from the data
                got, edges = gs.histogramdd(finite, 9)
                ref, redges = np.histogramdd(finite, 9)
                np.testing.assert_array_equal(got, ref)
                for a, b in zip(edges, redges):
                    np.testing.assert_array_equal(a, b)
        finally:
            _core.cpu_threads(0)


@pytest.mark.parametrize("request_", [0, 2, 3])
def test_float_weights_deterministic(request_):
    """Float weight sums: the copies are added in thread order, so a repeated
    call gives the same bits; NumPy's sums to rounding."""
    from gpusync import _core
    rng = np.random.default_rng(4)
    x, y, w = rng.random(200_003), rng.random(200_003), rng.standard_normal(200_003)
    with gs.use_backend("cpu"):
        _core.cpu_threads(request_)
        try:
            first = gs.histogram2d(x, y, 64, [[0, 1], [0, 1]], weights=w)[0]
            for _ in range(3):
                assert gs.histogram2d(x, y, 64, [[0, 1], [0, 1]], weights=w)[0].tobytes() == first.tobytes()
        finally:
            _core.cpu_threads(0)
    np.testing.assert_allclose(first, np.histogram2d(x, y, 64, [[0, 1], [0, 1]], weights=w)[0], rtol=1e-9,
                               atol=1e-9)


def test_small_call_with_many_bins_counts_on_the_caller(monkeypatch):
    """1,000 points into 256 x 256 bins: a thread's private copy of the bins
    would cost more than its share of the points, so the calling thread
    counts straight into the result -- the plan says "caller" on 1 thread,
    through the general path and the host fast path (and under any
    GPUSYNC_NUM_THREADS)."""
    rng = np.random.default_rng(8)
    x, y = rng.random(1000), rng.random(1000)
    ref = np.histogram2d(x, y, 256, [[0, 1], [0, 1]])
    with gs.use_backend("cpu"):
        for env in (None, "16"):
            if env:
                monkeypatch.setenv("GPUSYNC_NUM_THREADS", env)
            for _ in range(3):
                got = gs.histogram2d(x, y, 256, [[0, 1], [0, 1]])
                for a, b in zip(got, ref):
                    np.testing.assert_array_equal(a, b)
                plan = gs.last_plan()
                assert plan["op"] == "histogramdd" and plan["n"] == 1000 and plan["dtype"] == "float64"
                assert plan["engine"] == "caller" and plan["threads"] in (0, 1), plan
            h, _ = gs.histogramdd(np.stack([x, y, x], 1), 40, [(0, 1)] * 3)  # 64,000 bins
            np.testing.assert_array_equal(h, np.histogramdd(np.stack([x, y, x], 1), 40, [(0, 1)] * 3)[0])
            assert gs.last_plan()["engine"] == "caller"


def test_plan_threads_are_the_counts(monkeypatch):
    """Many points into one bin on a pool: the plan's threads are the ones
    that counted (a one-bin merge runs on the calling thread; it used to
    report the merge's single thread as the engine)."""
    from gpusync import _core
    if _core.cpu_threads_for(1, 1.0)[2] < 2 and "GPUSYNC_NUM_THREADS" not in __import__("os").environ:
        pass  # one CPU: GPUSYNC_NUM_THREADS=2 below still gives the pool two threads
    monkeypatch.setenv("GPUSYNC_NUM_THREADS", "2")
    x = np.random.default_rng(9).random(4_000_000)
    with gs.use_backend("cpu"):
        h, _, _ = gs.histogram2d(x, x, 1, [[0, 1], [0, 1]])
    assert h[0, 0] == 4_000_000
    plan = gs.last_plan()
    assert plan["engine"] == "cpu" and plan["threads"] == 2, plan


def test_host_plan_has_the_models_predictions(monkeypatch):
    """Host coordinates on a machine with a GPU (simulated as in
    test_host_histogram2d_engine_is_the_cost_models): the plan of a call
    whose engine the cost model chose carries the model's predicted times --
    general path, host fast path and histogramdd alike; none when a forced
    backend chose."""
    from gpusync import _backend, _dispatch, _histdd
    from gpusync._costmodel import Machine
    real = _histdd._core

    class Core:
        def __getattr__(self, k):
            return getattr(real, k)

        def histogramdd(self, be, *args):
            return real.histogramdd("cpu", *args)

    monkeypatch.setattr(_histdd, "_core", Core())
    monkeypatch.setattr(_backend, "backend", lambda: "cuda")
    monkeypatch.setattr(_dispatch, "_gpu_usable", lambda: True)
    _dispatch.set_machine(Machine(cores=4, host_bw=((1, 10e9), (4, 30e9)), gpu=True, gpu_latency=50e-6,
                                  h2d_bw=50e9, handoff=20e-6))
    try:
        rng = np.random.default_rng(12)
        x, y = rng.random(1000), rng.random(1000)
        for _ in range(3):  # the general path, then the host fast path
            got = gs.histogram2d(x, y, 256, [[0, 1], [0, 1]])
            np.testing.assert_array_equal(got[0], np.histogram2d(x, y, 256, [[0, 1], [0, 1]])[0])
            plan = gs.last_plan()
            assert set(plan["predicted_ms"]) == {"caller", "cpu", "cuda"}, plan
            assert all(v > 0 for v in plan["predicted_ms"].values())
            assert min(plan["predicted_ms"], key=plan["predicted_ms"].get) == "caller"
            assert plan["engine"] == "caller" and any(t.startswith("the cost model chose caller")
                                                      for t in plan["notes"])
        gs.histogramdd(np.stack([x, y, x], 1), 8, weights=y)
        assert set(gs.last_plan()["predicted_ms"]) == {"caller", "cpu", "cuda"}
        monkeypatch.setattr(_backend, "forced", lambda: "cpu")  # the CPU engine forced: it sizes its threads
        gs.histogram2d(x, y, 256, [[0, 1], [0, 1]])
        assert gs.last_plan()["predicted_ms"] == {} and gs.last_plan()["engine"] == "caller"
    finally:
        _dispatch.set_machine(None)


def test_model_charges_the_cpu_engines_private_copies():
    """The cost model's CPU time of a histogramdd includes the private copy
    of the bins that each pool thread beyond the first zeroes and merges
    (32-bit counts; float64 weight sums): many bins and few points stay on
    the calling thread, many points into few bins take the pool."""
    from gpusync import _costmodel, _histdd
    m = _costmodel.Machine(cores=16, host_bw=((1, 10e9), (16, 100e9)))
    many = _histdd._model_shape(8, 2, 1000, 65536, False)
    assert _costmodel.choose(m, many, ("caller", "cpu")).engine == "caller"
    assert _costmodel.choose(m, _histdd._model_shape(8, 2, 10_000_000, 16, False), ("caller", "cpu")).engine == "cpu"
    few = _histdd._model_shape(8, 2, 1000, 16, False)
    for t in (2, 8, 16):
        extra = _costmodel._cpu_time(m, many, many.n, t) - _costmodel._cpu_time(m, few, few.n, t)
        assert extra == pytest.approx((65536 - 16) * 4 * (t - 1) / m.merge_bw, rel=1e-9)
    w = _histdd._model_shape(8, 2, 1000, 65536, True)
    extra = _costmodel._cpu_time(m, w, w.n, 4) - _costmodel._cpu_time(m, many, many.n, 4)
    assert extra >= 65536 * 4 * 3 / m.merge_bw * (1 - 1e-9)  # 8-byte sums: twice the copy


def test_host_fast_path_gives_the_general_paths_answers(backend):
    """Repeated host histogram2d calls (the host fast path from the second
    on) of every input kind the general path takes -- strided views,
    byte-swapped, float16, int8, bool, read-only -- NumPy's counts, edges
    and dtypes each time, and fresh edge arrays."""
    rng = np.random.default_rng(13)
    x, y = rng.random(1001) * 1.2 - 0.1, rng.random(1001)
    ro = x.copy()
    ro.flags.writeable = False
    cases = [(x[::2], y[::2]), (x.astype(">f8"), y.astype(">f8")), (x.astype(np.float16), y.astype(np.float16)),
             ((x * 10).astype(np.int8), (y * 10).astype(np.int8)), (x > 0.5, y > 0.5), (ro, y),
             (x.astype(np.float32), y)]
    for xs, ys in cases:
        for bins, rg in ((7, [[0, 1], [0, 1]]), ([3, 300], ((0, 1), (-1, 2)))):
            ref = np.histogram2d(xs, ys, bins, rg)
            seen = []
            for _ in range(3):
                got = gs.histogram2d(xs, ys, bins, rg)
                for a, b in zip(got, ref):
                    assert a.dtype == b.dtype and a.shape == b.shape
                    np.testing.assert_array_equal(a, b)
                seen.append(got[1])
            seen[0][0] = 12345  # one call's edges are its own
            assert gs.histogram2d(xs, ys, bins, rg)[1][0] == ref[1][0]


@pytest.mark.gpu
def test_edges_kept_on_the_device_many_sets_and_after_empty_cache():
    """Edge tables are kept on the device for calls that repeat them
    (gs_cuda_constants): the same edges again, 70 distinct sets (more than
    the 64 kept: the rest upload per call) and calls after gs.empty_cache()
    (which the tables outlive) -- NumPy's and SciPy's answers every time, for histogram2d,
    histogramdd, histogram with an edge array and binned_statistic."""
    cp = pytest.importorskip("cupy")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(70)
    x, y = rng.random(50_001), rng.random(50_001)
    dx, dy = cp.asarray(x), cp.asarray(y)
    for rnd in range(3):
        for k in range(70):
            e = np.sort(np.concatenate([[0.0, 1.0], rng.random(3 + k % 7)])) if k % 2 else np.linspace(0, 1, 4 + k)
            ref = np.histogram2d(x, y, [e, 9])[0]
            np.testing.assert_array_equal(cp.asnumpy(gs.histogram2d(dx, dy, [e, 9])[0]), ref)
            np.testing.assert_array_equal(cp.asnumpy(gs.histogramdd(cp.stack([dx, dy], 1), [e, 9])[0]), ref)
            np.testing.assert_array_equal(cp.asnumpy(gs.histogram(dx, e)[0]), np.histogram(x, e)[0])
            if k % 10 == 0:
                got = cp.asnumpy(gs.binned_statistic(dx, dy, "mean", e).statistic)
                np.testing.assert_allclose(got, stats.binned_statistic(x, y, "mean", e).statistic, rtol=1e-12)
        if rnd == 1:
            gs.empty_cache()


@pytest.mark.parametrize("shape", [(5, 0), (0, 0)])
def test_a_sample_of_no_dimension_raises_like_numpy(shape, kind):
    """An (N, 0) sample: NumPy's ValueError, and SciPy's type (gpusync indexed a first column it did not
    have; SciPy's message for (0, 0) is its min's of an empty array)."""
    s = to_kind(np.zeros(shape), kind)
    for kw in ({"bins": 3}, {"bins": [3]}, {"bins": "auto"}, {"bins": 3, "range": [(0, 1)]}, {"bins": [], "range": []},
               {"bins": 3, "density": True}):
        assert_raises_like_numpy(lambda: np.histogramdd(np.zeros(shape), **kw), lambda: gs.histogramdd(s, **kw))
    with pytest.raises(ValueError):
        gs.binned_statistic_dd(s, to_kind(np.ones(shape[0]), kind), "sum", 3)


@pytest.mark.parametrize("n", [3, 1000, 100_000])
def test_skewed_and_repeated_edges_match_numpy(n):
    """histogramdd bins each dimension through the CPU engine's edge index
    (csrc/cpu/edge_index.h, histogram's mechanism): cubic, log-spaced and
    repeated edges, values exactly on edges, on the last one, NaN."""
    rng = np.random.default_rng(50 + n)
    cub, lg, rep = np.linspace(-3, 3, 51) ** 3 / 9, np.logspace(-3, 1, 41), np.array([-2., -1, -1, 0, 0, 0, 1, 2, 2])
    pts = rng.standard_normal((n, 3))
    pts[:, 1] = np.exp(pts[:, 1] * 2)
    pts[rng.random(n) < 0.1, 0] = rng.choice(cub)
    pts[rng.random(n) < 0.1, 2] = rng.choice(rep)
    pts[rng.random(n) < 0.02, 1] = np.nan
    for bins in ([cub, lg, rep], [rep, cub, lg]):
        for a in (pts, pts.astype(np.float32)):
            h, e = gs.histogramdd(a, bins=bins)
            rh, re_ = np.histogramdd(a, bins=bins)
            np.testing.assert_array_equal(h, rh)
            for g, r in zip(e, re_):
                np.testing.assert_array_equal(g, r)
