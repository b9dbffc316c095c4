"""Device histograms in one launch (issue 13; csrc/cuda/hist.cu, gs_hist_fin
in hist_launch.cuh): the counting kernel writes every count and the edges
itself -- one block storing its counts, or every block adding into the
calling thread's scratch buffer's accumulators, which the block that draws
the last ticket stores and zeroes again -- with no zeroing kernel ahead of it
(GPUSYNC_HIST_ONE_LAUNCH=0: the zeroing kernel again).  Results equal NumPy's at the
grid sizes around each switch, for each kernel that fuses (8-bit, 16/32-bit
integers on unit bins, float32/float64 on equal-width bins, and the generic
shared kernel: wide integers, float16, explicit edges, strided data; and its
byte kernel: 8-bit data past the 8-bit kernel's size), with the scratch buffer shared with the
sums' kept workspace, across streams and threads, and inside a CUDA graph
capture (where many blocks take the zeroing kernel again)."""
import zlib

import numpy as np
import pytest

import gpusync as gs
from conftest import captured, in_threads
from gpusync import _core

pytestmark = pytest.mark.gpu


# (dtype, bins, range): the 8-bit kernel (<= 256 bins, and 300 counts: the ones past its 256 bins are zero),
# integers on unit-width bins, floats on equal-width bins (a bin count past the shared edge table too)
CASES = [
    ("uint8", 256, (0, 256)),
    ("uint8", 300, (0, 300)),
    ("uint8", 17, (3, 20)),
    ("int16", 300, (-100, 200)),
    ("int32", 64, (0, 64)),
    ("uint16", 1000, (0, 1000)),
    ("float32", 100, (0.0, 1.0)),
    ("float64", 100, (0.0, 1.0)),
    ("float64", 7, (0.25, 0.5)),
    ("float32", 1000, (-0.1, 1.1)),
]
# one block, the first sizes past one block, many blocks
SIZES = [1, 3, 100, 4_096, 4_097, 16_385, 70_001, 300_007, 2_000_003]


def _data(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(n).astype(dt) * 1.2 - 0.1  # some past the range on both sides
    lo, hi = (0, 256) if dt.itemsize == 1 else (-120, 1100) if dt.kind == "i" else (0, 1100)
    return rng.integers(lo, hi, n).astype(dt)


def _check(got, x, bins, rng_):
    want_h, want_e = np.histogram(x, bins, rng_)
    h, e = got
    np.testing.assert_array_equal(h.get(), want_h)
    assert h.dtype == want_h.dtype
    np.testing.assert_array_equal(e.get(), want_e)
    assert e.dtype == want_e.dtype


@pytest.mark.parametrize("one_launch", [None, "0"])
@pytest.mark.parametrize("dtype,bins,rng_", CASES)
def test_one_launch_histogram_equals_numpy(cp, monkeypatch, one_launch, dtype, bins, rng_):
    if one_launch is not None:
        monkeypatch.setenv("GPUSYNC_HIST_ONE_LAUNCH", one_launch)
    rng = np.random.default_rng(zlib.crc32(f"{dtype} {bins}".encode()))
    for n in SIZES:
        x = _data(dtype, n, rng)
        d = cp.asarray(x)
        for _ in range(2):  # the general path's call (plans), then the device fast path's
            _check(gs.histogram(d, bins, rng_), x, bins, rng_)
        # the same call again and again: every use leaves the scratch buffer's ticket zero
        outs = [gs.histogram(d, bins, rng_) for _ in range(3)]
        for o in outs:
            _check(o, x, bins, rng_)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint16", "int32"])
def test_one_launch_bincount_equals_numpy(cp, dtype):
    """bincount's counts past the data's own bins (minlength) are zero too; values past the
    first count's 4,096 bins take a second count (of 0 .. max, or of min .. max far from 0)."""
    rng = np.random.default_rng(9)
    for n in (1, 50, 5_000, 100_003):
        for lo, hi in ((0, 200), (0, 5_000), (9_000, 9_100), (20_000, 30_000)):
            if np.dtype(dtype).itemsize == 1 and hi > 256:
                continue
            x = rng.integers(lo, hi, n).astype(dtype)
            d = cp.asarray(x)
            for m in (0, 1, 300, 5000):
                for _ in range(2):
                    got = gs.bincount(d, minlength=m)
                    np.testing.assert_array_equal(got.get(), np.bincount(x, minlength=m))


def test_one_launch_is_what_runs(cp, monkeypatch, capfd):
    """Which end runs (GPUSYNC_DEBUG's line): one block storing its counts, the accumulators on
    more blocks, and the zeroing kernel where the bins outnumber the accumulators (8,192) or
    where one launch is turned off."""
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    rng = np.random.default_rng(2)
    for n, bins, fuse, want in (
        (100, 100, None, "one block"),
        (50_000, 100, None, "accumulators"),
        (50_000, 7, None, "accumulators"),
        (2_000_003, 100, None, "accumulators"),
        (100, 8_192, None, "one block"),
        (2_000_003, 8_192, None, "accumulators"),
        (100, 8_193, None, "zeroing"),
        (2_000_003, 20_000, None, "zeroing"),
        (2_000_003, 100, "0", "zeroing"),
    ):
        if fuse is None:
            monkeypatch.delenv("GPUSYNC_HIST_ONE_LAUNCH", raising=False)
        else:
            monkeypatch.setenv("GPUSYNC_HIST_ONE_LAUNCH", fuse)
        x = rng.random(n)
        d = cp.asarray(x)
        gs.histogram(d, bins, (0.0, 1.0), strategy="shared")
        capfd.readouterr()
        _check(gs.histogram(d, bins, (0.0, 1.0), strategy="shared"), x, bins, (0.0, 1.0))
        err = capfd.readouterr().err
        if want == "zeroing" and fuse == "0":  # (never asked: no line about the ends)
            assert "one launch" not in err and "[gpusync] histogram n=" in err, (n, bins, fuse, err)
        elif want == "zeroing":
            assert "[gpusync] histogram: the zeroing kernel, then the count" in err, (n, bins, fuse, err)
            assert "one launch" not in err
        else:
            assert "[gpusync] histogram: one launch" in err and want in err, (n, bins, fuse, err)


def _generic_cases(rng):
    """Inputs that the generic shared kernel counts (no fast path): int64, float16, explicit (uneven) edges,
    strided data; and 8-bit data past the 8-bit kernel's size (hist_smem.cu's byte kernel)."""
    big = rng.integers(0, 256, 4 * 2**20 + 3).astype(np.uint8)
    yield "uint8 4 MiB, 256 bins", big, 256, (0, 256), None
    yield "uint8 4 MiB, 17 bins of (3, 20)", big, 17, (3, 20), None
    yield "int64, 100 bins", rng.integers(-50, 1050, 300_007), 100, (0, 1000), None
    yield "float16, 50 bins", (rng.random(70_001) * 1.2 - 0.1).astype(np.float16), 50, (0.0, 1.0), None
    edges = np.sort(rng.random(41))
    yield "float64, 40 uneven edges", rng.random(500_009), edges, None, None
    yield "float32 strided, 64 bins", (rng.random(600_010).astype(np.float32)), 64, (0.0, 1.0), 2


@pytest.mark.parametrize("one_launch", [None, "0"])
def test_one_launch_generic_kernel_equals_numpy(cp, monkeypatch, capfd, one_launch):
    """The generic shared kernel (every input no fast path takes) in one launch too, each end."""
    if one_launch is not None:
        monkeypatch.setenv("GPUSYNC_HIST_ONE_LAUNCH", one_launch)
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    rng = np.random.default_rng(zlib.crc32(b"generic"))
    for name, x, bins, rng_, step in _generic_cases(rng):
        d = cp.asarray(x)
        if step:
            x, d = x[::step], d[::step]
        capfd.readouterr()
        for _ in range(3):  # (GPUSYNC_DEBUG: the general path each time) the accumulators stay zero
            got = gs.histogram(d, bins, rng_)
            want_h, want_e = np.histogram(x, bins, rng_)
            np.testing.assert_array_equal(got[0].get(), want_h, err_msg=name)
            np.testing.assert_array_equal(got[1].get(), want_e, err_msg=name)
        err = capfd.readouterr().err
        if one_launch == "0":  # (never asked: no line about the ends)
            assert "one launch" not in err and "zeroing kernel" not in err, (name, err)
        else:
            assert "one launch" in err and "zeroing kernel" not in err, (name, err)
    # weighted calls keep the zeroing kernel (hist.cu does not ask them for one launch), and stay right
    x = rng.random(100_003)
    w = rng.random(100_003)
    capfd.readouterr()
    got = gs.histogram(cp.asarray(x), 30, (0.0, 1.0), weights=cp.asarray(w))[0].get()
    np.testing.assert_allclose(got, np.histogram(x, 30, (0.0, 1.0), weights=w)[0], rtol=1e-12)
    err = capfd.readouterr().err
    assert "weighted=1" in err and "one launch" not in err, err


def test_fast_path_kernels_fit_the_static_shared_memory_budget(cuda):
    """The replicas' budget leaves GS_HIST_STATIC_SMEM bytes a block for the kernels' own static
    shared memory: the fast-path kernels (and their one-launch end) stay within it."""
    names = [k for k in gs.kernels() if k.startswith("histogram:shared")]
    assert len(names) >= 5, names
    budgeted = 0
    for k in names:
        o = gs.occupancy(k)
        if o["dynamic_smem"] > 0:  # replicas in dynamic shared memory (the 8-bit kernel's are static, its own)
            budgeted += 1
            assert o["static_smem"] <= _core.HIST_STATIC_SMEM, (k, o)
    assert budgeted >= 3, names


def test_one_launch_histogram_shares_the_scratch_buffer_with_sums(cp):
    """Sums (whose kept workspace is the same scratch buffer) and fused histograms alternate on
    one stream; every histogram's counts start from zero (no stale accumulators)."""
    rng = np.random.default_rng(3)
    xs = [rng.random(n) for n in (10_007, 70_001, 200_003)]
    ints = rng.integers(-1000, 1000, 3_000_017)
    ds, di = [cp.asarray(x) for x in xs], cp.asarray(ints)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for rep in range(3):
            for x, d in zip(xs, ds):
                h, e = gs.histogram(d, 50, (0.0, 1.0))
                t = gs.sum(di)  # the kept workspace: threadfence, its ticket at the same word
                assert gs.last_plan()["strategy_used"] == "threadfence"
                h2, _ = gs.histogram(d, 50, (0.0, 1.0))
                s.synchronize()
                want = np.histogram(x, 50, (0.0, 1.0))[0]
                np.testing.assert_array_equal(h.get(), want)
                np.testing.assert_array_equal(h2.get(), want)
                assert int(t) == int(ints.sum())


def test_one_launch_histogram_across_streams_and_threads(cp):
    rng = np.random.default_rng(5)
    xs = [rng.random(n).astype(np.float32) for n in (999, 20_011, 120_001)]
    ds = [cp.asarray(x) for x in xs]
    wants = [np.histogram(x, 64, (0.0, 1.0))[0] for x in xs]
    cp.cuda.Device().synchronize()

    def work(seed):
        streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
        outs = []
        for i in range(40):
            k = (seed + i) % len(ds)
            with streams[i % 2]:
                outs.append((k, gs.histogram(ds[k], 64, (0.0, 1.0))[0]))
        for st in streams:
            st.synchronize()
        for k, h in outs:
            np.testing.assert_array_equal(h.get(), wants[k])
    in_threads(work)


def test_one_launch_histogram_in_a_graph_capture(monkeypatch, capfd):
    """Under capture a one-block grid still fuses (no scratch buffer); a larger grid takes the
    zeroing kernel and atomics (a graph must not keep a thread's buffer: GPUSYNC_DEBUG's lines
    say which).  Replays stay right."""
    torch = pytest.importorskip("torch")
    if not gs.cuda_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    small = torch.rand(1_000, device="cuda", dtype=torch.float64)
    mid = torch.rand(50_000, device="cuda", dtype=torch.float64)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # plans, outside the capture
        gs.histogram(small, 20, (0.0, 1.0))
        gs.histogram(mid, 20, (0.0, 1.0))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    capfd.readouterr()
    with torch.cuda.graph(g):
        hs, es = gs.histogram(small, 20, (0.0, 1.0))
        hm, em = gs.histogram(mid, 20, (0.0, 1.0))
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("[gpusync] histogram: ")]
    assert len(lines) == 2 and "one block stores" in lines[0] and "zeroing kernel" in lines[1], lines
    for _ in range(2):
        small.uniform_()
        mid.uniform_()
        g.replay()
        torch.cuda.synchronize()
        for h, e, x in ((hs, es, small), (hm, em, mid)):
            want_h, want_e = np.histogram(x.cpu().numpy(), 20, (0.0, 1.0))
            np.testing.assert_array_equal(h.cpu().numpy(), want_h)
            np.testing.assert_array_equal(e.cpu().numpy(), want_e)


@pytest.mark.sanitizer
@pytest.mark.parametrize("dtype,bins,rng_", [CASES[i] for i in (0, 1, 3, 7, 9)])
def test_one_launch_histogram_sanitized(cp, dtype, bins, rng_):
    """A few of the cases above at modest sizes, for compute-sanitizer: one block, a ticket of a
    few blocks, many blocks."""
    rng = np.random.default_rng(1)
    for n in (100, 9_000, 70_001):
        x = _data(dtype, n, rng)
        d = cp.asarray(x)
        for _ in range(2):
            _check(gs.histogram(d, bins, rng_), x, bins, rng_)




@pytest.mark.sanitizer
def test_one_launch_generic_kernel_sanitized(cp, monkeypatch):
    """The generic kernel's one launch (accumulators: 66+ blocks), for compute-sanitizer."""
    rng = np.random.default_rng(4)
    x = rng.integers(-5, 300, 40_003)
    d = cp.asarray(x)
    for _ in range(2):
        got = gs.histogram(d, 64, (0, 256))
        np.testing.assert_array_equal(got[0].get(), np.histogram(x, 64, (0, 256))[0])


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_edges_without_a_formula_in_a_graph_capture(lib):
    """Edges that no formula reproduces (float16 data's float16 edges, explicit uneven edges: two sets of one shape)
    and density's bin widths come from a kept device copy after a first call (_arrays.device_constant): a capture of
    the same calls needs no host copy (CuPy refuses one), every replay on new data equals NumPy's counts and edges --
    after many other edges have been kept too -- and the edges handed out are the caller's own (writing to them
    changes no later result)."""
    mod = pytest.importorskip(lib)
    if not gs.cuda_available():
        pytest.skip("needs a CUDA GPU")
    rng = np.random.default_rng(21)
    h16 = (rng.random(200_003) * 1.2 - 0.1).astype(np.float16)
    h64 = rng.random(200_003) * 1.2 - 0.1
    uneven = [0.0, 0.1, 0.15, 0.5, 0.9, 1.0]
    uneven2 = [0.0, 0.2, 0.25, 0.5, 0.8, 1.0]
    calls = [(0, 50, (0.0, 1.0), False), (1, uneven, None, False), (1, uneven2, None, False),
             (1, 20, (0.0, 1.0), True), (0, 7, (0.25, 0.5), True)]
    if lib == "cupy":
        xs = [mod.asarray(h16), mod.asarray(h64)]
    else:
        xs = [mod.as_tensor(h16, device="cuda"), mod.as_tensor(h64, device="cuda")]

    def run():
        return [gs.histogram(xs[i], bins, rng_, density=dens) for i, bins, rng_, dens in calls]

    def to_np(a):
        return a.get() if lib == "cupy" else a.cpu().numpy()

    first = run()  # outside the capture: the kept copies
    if lib == "cupy":
        first[0][1][...] = -1  # the caller's own edges
    else:
        first[0][1].fill_(-1)
    outs, launch = captured(lib, run)
    for k in range(40):  # other edges kept meanwhile: the captured graph's copies stay where they were
        gs.histogram(xs[1], [0.0, 0.3 + k / 1000, 1.0])
    for seed in (22, 23):
        r = np.random.default_rng(seed)
        new16 = (r.random(h16.size) * 1.2 - 0.1).astype(np.float16)
        new64 = r.random(h64.size) * 1.2 - 0.1
        if lib == "cupy":
            xs[0][...] = mod.asarray(new16)
            xs[1][...] = mod.asarray(new64)
        else:
            xs[0].copy_(mod.as_tensor(new16, device="cuda"))
            xs[1].copy_(mod.as_tensor(new64, device="cuda"))
        launch()
        for (h, e), (i, bins, rng_, dens) in zip(outs, calls):
            want_h, want_e = np.histogram((new16, new64)[i], bins, rng_, density=dens)
            if dens:
                np.testing.assert_allclose(to_np(h), want_h, rtol=1e-12)
            else:
                np.testing.assert_array_equal(to_np(h), want_h)
            np.testing.assert_array_equal(to_np(e), want_e)
            assert to_np(e).dtype == want_e.dtype


def test_edges_without_a_kept_copy_under_capture_say_so(cp):
    """Edges with no formula and no kept device copy yet cannot be captured (a host copy): the error says to make the
    call once before the capture."""
    x = cp.asarray(np.random.default_rng(24).random(10_000).astype(np.float16))  # (float16 edges: no formula)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(RuntimeError, match="once before the CUDA graph capture"):
                gs.histogram(x, 37, (0.0123, 0.987))
        finally:
            stream.end_capture()
