"""Issue 14's fast paths (csrc/cuda/hist_small.cu, bits.cu): 8-bit histograms
on every byte distribution, small-range 16/32-bit bincounts and integer
histograms, float32/float64 on equal-width bins, packbits of bytes -- against NumPy, for sizes that are not
multiples of 16, misaligned starts, and device inputs of CuPy and PyTorch."""
import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.gpu

DISTS = ["uniform", "text", "same", "zipf", "runs", "alternating"]
SIZES = [1, 15, 17, 4099, 1_000_003]
OFFSETS = [0, 1, 7, 15]
LIBS = ["cupy", "torch", "numpy"]


def make_dist(name, n, rng):
    if name == "uniform":
        return rng.integers(0, 256, n, dtype=np.uint8)
    if name == "text":
        return rng.choice(np.frombuffer(b"  etaoinshrdlucmfwypvbgkqjxz ETAOIN.,", np.uint8), n)
    if name == "same":
        return np.full(n, ord("e"), np.uint8)
    if name == "zipf":
        return np.minimum(rng.zipf(1.3, n) - 1, 255).astype(np.uint8)
    if name == "runs":
        return np.repeat(rng.integers(0, 256, n // 64 + 1, dtype=np.uint8), 64)[:n]
    if name == "alternating":
        return ((np.arange(n) & 1) * 255).astype(np.uint8)
    raise ValueError(name)


def to_lib(lib, a):
    """`a` (host) on the device as an array of `lib` ('numpy': stays on the host)."""
    if lib == "numpy":
        return a
    if lib == "cupy":
        cp = pytest.importorskip("cupy")
        return cp.asarray(a)
    torch = pytest.importorskip("torch")
    tdt = {np.uint8: torch.uint8, np.int8: torch.int8, np.int16: torch.int16, np.int32: torch.int32,
           np.int64: torch.int64, np.bool_: torch.bool, np.float32: torch.float32,
           np.float64: torch.float64}.get(a.dtype.type)
    if tdt is None:
        pytest.skip(f"torch has no usable {a.dtype}")
    return torch.as_tensor(np.ascontiguousarray(a)).to("cuda")


def to_np(r):
    if isinstance(r, np.ndarray):
        return r
    if hasattr(r, "get"):
        return r.get()
    return r.cpu().numpy()


def sliced(lib, a, off):
    """A view of `a` (on lib's device) that starts `off` elements in: misaligned for 16-byte loads."""
    d = to_lib(lib, a)
    return d[off:]


@pytest.fixture(autouse=True)
def _cuda():
    with gs.use_backend("cuda"):
        yield


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("off", OFFSETS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dist", DISTS)
def test_u8_256_every_distribution(dist, n, off, lib):
    rng = np.random.default_rng(n + off)
    a = make_dist(dist, n + off, rng)
    x = sliced(lib, a, off)
    ref = np.bincount(a[off:], minlength=256)
    h, _ = gs.histogram(x, bins=256, range=(0, 256))
    assert np.array_equal(to_np(h), ref)
    assert np.array_equal(to_np(gs.bincount(x, minlength=256)), np.bincount(a[off:], minlength=256))


# hist_smem.cu's byte kernel (contiguous 8-bit data on the identity bins past GS_HIST_U8_SMALL_MAX_BYTES; at
# every size with GPUSYNC_HIST_SMALL=0): one block, blocks whose share ends inside a vector, sizes past 3 MiB
BYTE_SIZES = [1, 17, 4099, 1_000_003, 3_145_745, 5_000_011]


@pytest.mark.parametrize("grid", [None, "1", "7"])
@pytest.mark.parametrize("lib", ["cupy", "torch", "numpy"])
@pytest.mark.parametrize("off", [0, 1, 15])
@pytest.mark.parametrize("n", BYTE_SIZES)
@pytest.mark.parametrize("dist", ["uniform", "same", "zipf", "alternating"])
def test_u8_byte_kernel(dist, n, off, lib, grid, monkeypatch, capfd):
    """The byte kernel's counts (64 replicas a bin, one PRMT a byte) equal NumPy's: histogram over (0, 256),
    bincount; one block storing, a few adding, the default grid (GPUSYNC_HIST_GRID); GPUSYNC_DEBUG names the kernel.
    NumPy input (staged to the GPU) at the sizes past 3 MiB."""
    if grid is not None and n < 1_000_000:
        pytest.skip("the forced grids on the larger sizes")
    if lib == "numpy" and (n < 3_000_000 or grid is not None):
        pytest.skip("host input at the sizes past 3 MiB, default grid")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", "0")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    if grid is not None:
        monkeypatch.setenv("GPUSYNC_HIST_GRID", grid)
    rng = np.random.default_rng(n + off)
    a = make_dist(dist, n + off, rng)
    x = sliced(lib, a, off)
    gs.histogram(x, bins=256, range=(0, 256))  # (a first call may calibrate the engine choice, counting bytes too)
    capfd.readouterr()
    h, _ = gs.histogram(x, bins=256, range=(0, 256))
    assert np.array_equal(to_np(h), np.bincount(a[off:], minlength=256))
    assert np.array_equal(to_np(gs.bincount(x, minlength=300)), np.bincount(a[off:], minlength=300))
    err = capfd.readouterr().err
    if lib == "numpy":  # (the host bincount's own route to the counts: at least the histogram's line)
        assert "histogram kernel: bytes" in err, err
    else:
        assert err.count("histogram kernel: bytes") == 2, err


@pytest.mark.parametrize("grid", [None, "1", "5"])
@pytest.mark.parametrize("n", [4099, 3_145_745])
@pytest.mark.parametrize("dist", ["uniform", "text", "same"])
@pytest.mark.parametrize("bins,rng_", [(100, (0, 100)), (7, (3, 250)), (256, (-0.5, 255.5)), (300, (0, 300)),
                                       (64, (0, 256)), (128, (0, 128)), (1, (101, 102)), (2, (254, 256)),
                                       (400, (10, 410))])
def test_u8_byte_kernel_bins_from_a_table(bins, rng_, dist, n, grid, monkeypatch, capfd):
    """Bins other than the 256 bytes (fewer, an offset, a lookup table, the closed top edge, more bins than bytes
    past an offset): the byte kernel counts the raw bytes and adds each byte's count to its bin at the end -- one
    block zeroing and adding to the results, a few blocks adding into the accumulators, the default grid; the results
    equal NumPy's, and GPUSYNC_DEBUG names the variant (the identity bins: unit bins from 0, at least 256 of them)."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", "0")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    if grid is not None:
        monkeypatch.setenv("GPUSYNC_HIST_GRID", grid)
    a = make_dist(dist, n + 3, np.random.default_rng(n))
    d = cp.asarray(a)[3:]
    gs.histogram(d, bins=bins, range=rng_)  # (a first call may calibrate the engine choice)
    capfd.readouterr()
    h, e = gs.histogram(d, bins=bins, range=rng_)
    want_h, want_e = np.histogram(a[3:], bins=bins, range=rng_)
    np.testing.assert_array_equal(h.get(), want_h)
    np.testing.assert_array_equal(e.get(), want_e)
    err = capfd.readouterr().err
    ident = bins >= 256 and rng_ == (0, bins)
    assert err.count("histogram kernel: bytes (" if ident else "histogram kernel: bytes, bins from a table") == 1, err


@pytest.mark.parametrize("grid", [None, "1", "3"])
@pytest.mark.parametrize("dist", ["uniform", "text", "same"])
@pytest.mark.parametrize("bins,rng_", [(85, (0, 255)), (13, (0, 256)), (33, (-7.5, 300.0)), (5, (200, 256)),
                                       ([0, 1, 5, 100, 101, 200, 256], None), ([3, 40, 41, 42, 250], None),
                                       (np.arange(0, 257, 2).tolist(), None)])
def test_u8_byte_kernel_folds_the_runs_of_a_bin(bins, rng_, dist, grid, monkeypatch, capfd):
    """The byte kernel's end on bins that several bytes share: the rows of a warp that give one bin are summed over
    the warp before the adds (gs_hist_merge_each) -- runs of 3 bytes that straddle warps, runs longer than a warp's
    8 rows, a float range, edges of uneven widths with bytes before, between and past them, on uint8 and int8 data;
    one block storing, a few blocks and the default grid adding.  Counts equal NumPy's."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", "0")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    if grid is not None:
        monkeypatch.setenv("GPUSYNC_HIST_GRID", grid)
    n = 1_000_003
    a = make_dist(dist, n + 1, np.random.default_rng(len(np.atleast_1d(bins))))
    gs.histogram(cp.asarray(a), bins=bins, range=rng_)  # (a first call may calibrate the engine choice)
    capfd.readouterr()
    for x in (a, a.view(np.int8)):  # int8: the raw bytes 128 .. 255 bin before 0 .. 127 (two runs of the map)
        h, e = gs.histogram(cp.asarray(x)[1:], bins=bins, range=rng_)
        want_h, want_e = np.histogram(x[1:], bins=bins, range=rng_)
        np.testing.assert_array_equal(h.get(), want_h)
        np.testing.assert_array_equal(e.get(), want_e)
    err = capfd.readouterr().err
    assert err.count("histogram kernel: bytes, bins from a table") == 2, err


@pytest.mark.parametrize("bins,rng_", [(256, (0, 256)), (100, (0, 100)), (64, (0, 256)), (7, (3, 250))])
def test_u8_generic_kernel_past_the_byte_kernel(bins, rng_, monkeypatch, capfd):
    """GPUSYNC_HIST_BYTES=0: contiguous 8-bit data past 3 MiB on the generic shared kernel (its byte paths: the
    identity bins, an offset, a lookup table, which sm_75 still takes), equal to NumPy's; no byte kernel ran."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_BYTES", "0")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    a = make_dist("uniform", 5_000_011, np.random.default_rng(bins))
    d = cp.asarray(a)[1:]
    h, _ = gs.histogram(d, bins=bins, range=rng_)
    np.testing.assert_array_equal(h.get(), np.histogram(a[1:], bins=bins, range=rng_)[0])
    assert "histogram kernel: bytes" not in capfd.readouterr().err


@pytest.mark.parametrize("n", [4099, 3_145_745])
def test_u8_byte_kernel_int8_bool_and_strided(n, monkeypatch):
    """int8 (its negative values outside (0, 256), bytes 0x80..0xff) and bool on the byte kernel; a strided view on the
    generic kernel; the results equal NumPy's."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", "0")
    rng = np.random.default_rng(n)
    a = rng.integers(-128, 128, n, dtype=np.int8)
    d = cp.asarray(a)
    assert np.array_equal(gs.histogram(d, 256, (0, 256))[0].get(), np.histogram(a, 256, (0, 256))[0])
    assert np.array_equal(gs.histogram(d, 256, (-128, 128))[0].get(), np.histogram(a, 256, (-128, 128))[0])
    b = a > 0
    assert np.array_equal(gs.bincount(cp.asarray(b)).get(), np.bincount(b))
    u = rng.integers(0, 256, 2 * n, dtype=np.uint8)
    assert np.array_equal(gs.histogram(cp.asarray(u)[::2], 256, (0, 256))[0].get(),
                          np.bincount(u[::2], minlength=256))


@pytest.mark.parametrize("n", [5_000_011])
def test_u8_byte_kernel_in_a_graph_capture(n, monkeypatch, capfd):
    """Under capture the byte kernel runs as the zeroing kernel's programmatic dependent and adds into the zeroed
    counts, on the identity bins and on bins from a table (4 bytes a bin); replays on new data stay right."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    x = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        gs.histogram(x, 256, (0, 256))
        gs.histogram(x, 64, (0, 256))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    capfd.readouterr()
    with torch.cuda.graph(g):
        h, _ = gs.histogram(x, 256, (0, 256))
        h64, _ = gs.histogram(x, 64, (0, 256))
    err = capfd.readouterr().err
    assert err.count("histogram kernel: bytes (") == 1 and "zeroing kernel" in err, err
    assert err.count("histogram kernel: bytes, bins from a table") == 1, err
    for hi in (256, 3):
        x.random_(0, hi)
        g.replay()
        torch.cuda.synchronize()
        xs = x.cpu().numpy()
        assert np.array_equal(h.cpu().numpy(), np.bincount(xs, minlength=256))
        assert np.array_equal(h64.cpu().numpy(), np.histogram(xs, 64, (0, 256))[0])


@pytest.mark.sanitizer
def test_u8_byte_kernel_sanitized(monkeypatch):
    """The byte kernel at a few sizes (one block stores; blocks add), on the identity bins and on bins from a table,
    for compute-sanitizer."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", "0")
    rng = np.random.default_rng(5)
    for n, grid in ((100, None), (40_003, "1"), (300_017, None)):
        if grid:
            monkeypatch.setenv("GPUSYNC_HIST_GRID", grid)
        a = rng.integers(0, 256, n + 1, dtype=np.uint8)
        for bins, rng_ in ((256, (0, 256)), (64, (0, 256)), (7, (3, 250))):
            got = gs.histogram(cp.asarray(a)[1:], bins, rng_)[0].get()
            assert np.array_equal(got, np.histogram(a[1:], bins, rng_)[0])
        monkeypatch.delenv("GPUSYNC_HIST_GRID", raising=False)


@pytest.mark.parametrize("lib", ["cupy", "numpy"])
@pytest.mark.parametrize("n", [17, 1_000_003])
@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("bins,rng_", [(100, (0, 100)), (7, (3, 250)), (256, (-0.5, 255.5)), (300, (0, 300)),
                                       (64, (10, 74))])
def test_u8_fewer_bins_offsets_and_tables(dist, n, bins, rng_, lib):
    rng = np.random.default_rng(7)
    a = make_dist(dist, n + 3, rng)
    ref = np.histogram(a[3:], bins=bins, range=rng_)[0]
    h, _ = gs.histogram(sliced(lib, a, 3), bins=bins, range=rng_)
    assert np.array_equal(to_np(h), ref)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", [15, 4099, 1_000_003])
def test_int8_and_bool(n, lib):
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, n + 5, dtype=np.int8)
    ref = np.histogram(a[5:], bins=20, range=(-100, 100))[0]
    assert np.array_equal(to_np(gs.histogram(sliced(lib, a, 5), bins=20, range=(-100, 100))[0]), ref)
    ref = np.histogram(a[5:], bins=256, range=(-128, 128))[0]
    assert np.array_equal(to_np(gs.histogram(sliced(lib, a, 5), bins=256, range=(-128, 128))[0]), ref)
    b = np.abs(a.astype(np.int16)).astype(np.int8)  # 0..127 and -128
    b[b < 0] = 0
    assert np.array_equal(to_np(gs.bincount(sliced(lib, b, 5))), np.bincount(b[5:]))


SMALL_INT = [np.int8, np.uint16, np.int16, np.int32, np.uint32, np.int64]  # (int64: bincount's first count)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("off", [0, 1, 3])
@pytest.mark.parametrize("n", [1, 15, 17, 4099, 1_000_003])
@pytest.mark.parametrize("top", [1, 100, 4096, 30000])
@pytest.mark.parametrize("dtype", SMALL_INT, ids=lambda d: np.dtype(d).name)
def test_small_range_bincount(dtype, top, n, off, lib):
    info = np.iinfo(dtype)
    top = min(top, int(info.max) + 1)
    rng = np.random.default_rng(top + n)
    a = rng.integers(0, top, n + off).astype(dtype)
    x = sliced(lib, a, off)
    assert np.array_equal(to_np(gs.bincount(x)), np.bincount(a[off:]))
    assert np.array_equal(to_np(gs.bincount(x, minlength=top + 5)), np.bincount(a[off:], minlength=top + 5))


@pytest.mark.parametrize("lib", ["cupy", "numpy"])
@pytest.mark.parametrize("dist", ["uniform", "same", "alternating", "runs"])
@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.int32, np.uint32, np.int64], ids=lambda d: np.dtype(d).name)
def test_small_range_distributions(dtype, dist, lib):
    n = 300_001
    rng = np.random.default_rng(11)
    v = make_dist(dist, n + 1, rng).astype(np.int64) * 16  # 0..4080
    a = v.astype(dtype)
    x = sliced(lib, a, 1)
    assert np.array_equal(to_np(gs.bincount(x)), np.bincount(a[1:]))
    for s in ("auto", "shared"):
        h, _ = gs.histogram(x, bins=4096, range=(0, 4096), strategy=s)
        assert np.array_equal(to_np(h), np.histogram(a[1:], bins=4096, range=(0, 4096))[0])


@pytest.mark.parametrize("lib", ["cupy", "numpy"])
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_small_range_signed_offsets_and_outliers(dtype, lib):
    rng = np.random.default_rng(5)
    a = rng.integers(-3000, 3000, 1_000_003).astype(dtype)
    x = sliced(lib, a, 1)
    for bins, r in ((100, (-50, 50)), (1000, (-1000, 0)), (4000, (-2000, 2000))):
        h, _ = gs.histogram(x, bins=bins, range=r)
        assert np.array_equal(to_np(h), np.histogram(a[1:], bins=bins, range=r)[0]), (bins, r)
    if dtype == np.int64:  # the ends of int64 against offset bins (differences modulo 2^64)
        e = np.array([-2**63, 2**63 - 1, -2**63 + 49, 2**63 - 51, -50, 49, 50, -51, 0] * 1001, np.int64)
        for bins, r in ((100, (-50, 50)), (3, (-2, 1))):
            h, _ = gs.histogram(sliced(lib, e, 1), bins=bins, range=r)
            assert np.array_equal(to_np(h), np.histogram(e[1:], bins=bins, range=r)[0]), (bins, r)
    with pytest.raises(ValueError):
        gs.bincount(x)


def test_uint32_large_values_do_not_wrap():
    cp = pytest.importorskip("cupy")
    a = np.array([0, 1, 2, 2**32 - 1, 2**32 - 2, 5, 3] * 1001, np.uint32)
    h, _ = gs.histogram(cp.asarray(a), bins=10, range=(0, 10))
    assert np.array_equal(to_np(h), np.histogram(a, bins=10, range=(0, 10))[0])


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("off", [0, 1, 5, 15])
@pytest.mark.parametrize("n", [1, 15, 17, 4099, 1_000_003])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_packbits_bytes(dtype, n, off, lib):
    rng = np.random.default_rng(n + off)
    if dtype == np.bool_:
        a = rng.random(n + off) < 0.3
    else:
        a = rng.integers(0, 256, n + off, dtype=np.uint8).view(dtype)
        a[rng.random(n + off) < 0.4] = 0
    x = sliced(lib, a, off)
    for order in ("big", "little"):
        assert np.array_equal(to_np(gs.packbits(x, bitorder=order)), np.packbits(a[off:], bitorder=order))
    if dtype != np.bool_:
        for t in (0.5, -3.0, 100.0, -100.5, 254.5, 300.0, -300.0, 0.0):
            got = to_np(gs.packbits(x, threshold=t))
            assert np.array_equal(got, np.packbits(a[off:] > t)), t
    assert int(gs.count_nonzero(x)) == int(np.count_nonzero(a[off:]))



@pytest.mark.parametrize("loads", ["2", "4"])
@pytest.mark.parametrize("n", [17, 4095, 4097, 1_000_003, 3_000_017])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_packbits_and_count_loads_in_flight(dtype, n, loads, monkeypatch):
    """The vector loop with 2 or 4 chunks in flight per trip (GPUSYNC_BITS_LOADS; 2 by default): whole
    trips, a last trip with fewer chunks, and the scalar tail."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_BITS_LOADS", loads)
    rng = np.random.default_rng(n)
    a = (rng.integers(0, 3, n) * rng.integers(0, 2, n)).astype(dtype)
    x = cp.asarray(a)
    for order in ("big", "little"):
        assert np.array_equal(to_np(gs.packbits(x, bitorder=order)), np.packbits(a != 0, bitorder=order))
    assert np.array_equal(to_np(gs.packbits(x, threshold=1)), np.packbits(a > 1))
    assert int(gs.count_nonzero(x)) == int(np.count_nonzero(a))
    assert int(gs.count_nonzero(x, threshold=1)) == int(np.count_nonzero(a > 1))

def float_data(dtype, n, lo, hi, nbins, rng):
    """Uniform values over a range a little wider than [lo, hi], with exact edges, the top edge, NaN and
    infinities mixed in."""
    w = hi - lo
    a = rng.uniform(lo - 0.1 * w, hi + 0.1 * w, n).astype(dtype)
    k = rng.integers(0, nbins + 1, n)
    edges = np.linspace(lo, hi, nbins + 1).astype(dtype)  # values on (or next to) the edges
    pick = rng.random(n)
    a = np.where(pick < 0.2, edges[k], a)
    a = np.where((pick >= 0.2) & (pick < 0.25), np.nextafter(edges[k], dtype(np.inf)), a)
    a = np.where((pick >= 0.25) & (pick < 0.3), np.nextafter(edges[k], dtype(-np.inf)), a)
    if n > 8:
        a[:4] = [np.nan, np.inf, -np.inf, hi]
    return a.astype(dtype)


@pytest.mark.parametrize("cfg", ["0", "1", "2"])
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("off", [0, 1, 3])
@pytest.mark.parametrize("n", [1, 3, 5, 4099, 1_000_003])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_float_equal_width_bins(dtype, n, off, lib, cfg, monkeypatch):
    """hist_real_kernel (every launch shape, GPUSYNC_HIST_REAL_CFG) on edges, next to edges, the closed top
    edge, NaN, infinities and out-of-range values, misaligned starts."""
    monkeypatch.setenv("GPUSYNC_HIST_REAL_CFG", cfg)
    rng = np.random.default_rng(n * 7 + off)
    # the fused multiply-add estimate (|lo| * bins / width small) and the subtraction (range far from 0)
    for bins, (lo, hi) in ((100, (0.0, 1.0)), (7, (-3.3, 2.7)), (512, (-1.0, 1.0)), (100, (1000.0, 1001.0))):
        a = float_data(dtype, n + off, lo, hi, bins, rng)
        ref, ref_e = np.histogram(a[off:], bins=bins, range=(lo, hi))
        h, e = gs.histogram(sliced(lib, a, off), bins=bins, range=(lo, hi))
        assert np.array_equal(to_np(h), ref), (bins, lo, hi)
        assert np.array_equal(to_np(e), ref_e)


@pytest.mark.parametrize("replicas", ["1", "4", "16"])
def test_float_equal_width_fewer_replicas(replicas, monkeypatch):
    """Fewer than 32 replicas (GPUSYNC_HIST_REPLICAS: the run-time replica shift of hist_real_kernel)."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("GPUSYNC_HIST_REPLICAS", replicas)
    rng = np.random.default_rng(int(replicas))
    for dtype in (np.float32, np.float64):
        for n, off in ((4099, 1), (1_000_003, 0)):
            a = float_data(dtype, n + off, -1.0, 1.0, 100, rng)
            h, _ = gs.histogram(cp.asarray(a)[off:], bins=100, range=(-1, 1))
            assert np.array_equal(h.get(), np.histogram(a[off:], bins=100, range=(-1, 1))[0]), (dtype, n)


@pytest.mark.parametrize("dist", ["normal", "same", "sorted"])
def test_float_equal_width_distributions(dist):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(3)
    n = 3_000_001
    a = {"normal": lambda: rng.standard_normal(n).astype(np.float32),
         "same": lambda: np.full(n, 0.25, np.float32),
         "sorted": lambda: np.sort(rng.uniform(-1, 1, n)).astype(np.float32)}[dist]()
    for bins in (1, 10, 100, 500):
        h, _ = gs.histogram(cp.asarray(a), bins=bins, range=(-1, 1))
        assert np.array_equal(h.get(), np.histogram(a, bins=bins, range=(-1, 1))[0]), bins


@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bins, lo, hi", [(513, 0.0, 1.0), (1000, -4.0, 4.0), (2047, -3.3, 2.7), (4096, 0.0, 4096.0),
                                          (3000, 1000.0, 1001.0), (20000, -1.0, 1.0)])
def test_float_equal_width_bins_past_the_shared_edge_table(lib, dtype, bins, lo, hi):
    """More bins than the shared edge table holds (GS_HIST_SMEM_EDGES - 1): the estimate, and near an edge the
    edges' formula (gs_correct_formula) instead of the table -- on edges, next to them, the closed top edge,
    NaN, infinities and out-of-range values; the dedicated kernel (contiguous), the generic one (a strided
    view, weights) and what auto picks past the replicas (20,000 bins): NumPy's counts."""
    rng = np.random.default_rng(bins)
    n = 2_000_003
    a = float_data(dtype, n, lo, hi, bins, rng)
    ref = np.histogram(a, bins=bins, range=(lo, hi))[0]
    x = to_lib(lib, a)
    assert np.array_equal(to_np(gs.histogram(x, bins=bins, range=(lo, hi))[0]), ref)
    assert np.array_equal(to_np(gs.histogram(x[::2], bins=bins, range=(lo, hi))[0]),
                          np.histogram(a[::2], bins=bins, range=(lo, hi))[0])
    w = rng.random(n)
    got = to_np(gs.histogram(x, bins=bins, range=(lo, hi), weights=to_lib(lib, w))[0])
    np.testing.assert_allclose(got, np.histogram(a, bins=bins, range=(lo, hi), weights=w)[0], rtol=1e-12, atol=1e-9)
    for s in ("shared", "warp"):
        assert np.array_equal(to_np(gs.histogram(x, bins=bins, range=(lo, hi), strategy=s)[0]), ref), s
