"""gs.bincount against np.bincount."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusync as gs
from conftest import assert_raises_like_numpy, captured, strategies_for, to_host, to_kind

INT_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 31, 33, 1000, 10**6])
def test_dtypes_sizes(backend, dtype, n):
    rng = np.random.default_rng(n)
    hi = 1 if dtype == np.bool_ else min(np.iinfo(dtype).max, 5000)
    x = rng.integers(0, hi, n, endpoint=True).astype(dtype)
    for s in strategies_for(backend):
        for minlength in (0, 7, 6000):
            got = gs.bincount(x, minlength=minlength, strategy=s)
            ref = np.bincount(x, minlength=minlength)
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref, err_msg=f"strategy={s}")


def test_weights(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 300, 100_001)
    for w in (rng.random(x.size), rng.random(x.size).astype(np.float32), rng.integers(-5, 5, x.size),
              rng.random(x.size) > 0.3):
        for s in strategies_for(backend):
            got = gs.bincount(x, weights=w, strategy=s)
            ref = np.bincount(x, weights=w)
            assert got.dtype == ref.dtype == np.float64
            np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_skewed_and_single_value(backend):
    x = np.full(200_000, 42, dtype=np.int32)
    x[::1000] = 7
    for s in strategies_for(backend):
        np.testing.assert_array_equal(gs.bincount(x, strategy=s), np.bincount(x))


def test_many_bins(backend):
    """Large max value: many bins (global-memory and cluster paths)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3_000_000, 200_000)
    x[0] = 2_999_999
    for s in ["auto", "global", "warp"] + (["shared"] if backend == "cpu" else []):
        np.testing.assert_array_equal(gs.bincount(x, strategy=s), np.bincount(x))


def test_non_contiguous(backend):
    x = np.arange(10_000, dtype=np.int64) % 97
    np.testing.assert_array_equal(gs.bincount(x[::3]), np.bincount(x[::3]))
    np.testing.assert_array_equal(gs.bincount(x[::-1]), np.bincount(x[::-1]))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.bincount([1, -2]),
        lambda m: m.bincount([1, 2], minlength=-1),
        lambda m: m.bincount([1, 2], minlength=None),
        lambda m: m.bincount([1, 2], weights=[1]),
        lambda m: m.bincount(np.array([[1]])),
        lambda m: m.bincount(np.array(1)),
        lambda m: m.bincount(np.array([1.0])),
        lambda m: m.bincount(np.array([], dtype=float)),
    ],
)
def test_errors_match_numpy(backend, call):
    assert_raises_like_numpy(lambda: call(np), lambda: call(gs))


def test_cluster_on_cpu_runs_as_privatized_bins():
    """Every public strategy runs on every backend: 'cluster' on CPU threads
    runs as per-thread private histograms, and the plan says so."""
    with gs.use_backend("cpu"):
        np.testing.assert_array_equal(gs.bincount([1, 2, 3], strategy="cluster"), np.bincount([1, 2, 3]))
        plan = gs.last_plan()
        assert plan["strategy_used"] == "shared" and any("cluster" in n for n in plan["notes"])
        np.testing.assert_array_equal(gs.histogram(np.arange(10), 3, strategy="cluster")[0], [3, 3, 4])


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.int64, st.integers(0, 500), elements=st.integers(0, 3000)),
       minlength=st.integers(0, 100), strategy=st.sampled_from(["auto", "global", "shared", "warp"]))
def test_property(x, minlength, strategy):
    got = gs.bincount(x, minlength=minlength, strategy=strategy)
    np.testing.assert_array_equal(got, np.bincount(x, minlength=minlength))
    assert got.sum() == x.size


def test_fast_path_zeroes_the_bins_past_the_maximum():
    """The C fast path zeroes only the bins past the maximum (the engine
    writes the others): memory freed by an earlier result with counts in it
    comes back as a later result and must read as NumPy's zeros."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        big = rng.integers(0, 3000, 50_000)
        small = rng.integers(0, 10, int(rng.integers(1, 2_000)))
        for x, m in ((big, 0), (small, 3000), (small, 0), (big, 4000)):
            np.testing.assert_array_equal(gs.bincount(x, minlength=m), np.bincount(x, minlength=m))


@pytest.mark.parametrize("weighted", [False, True])
def test_fast_path_zeroes_below_the_minimum_and_past_the_maximum(weighted):
    """Values far from 0 counted min .. max alone: the C fast path zeroes the
    bins below the minimum and past the maximum itself where they are few
    (a memset of those alone; calloc where they are many), in memory an
    earlier result filled -- NumPy's zeros either way."""
    rng = np.random.default_rng(12)
    for lo, span, minlength in ((5_000, 7, 0), (5_000, 7, 9_000), (12_000, 300, 40_000), (200_000, 50, 0),
                                (200_000, 50, 400_000), (0, 20, 3_000)):
        for _ in range(3):
            dirty = rng.integers(0, lo + span + 2, 80_000)  # a result with counts everywhere, freed
            gs.bincount(dirty, rng.random(dirty.size) if weighted else None)
            x = rng.integers(lo, lo + span, int(rng.integers(1, 500)))
            w = rng.random(x.size) if weighted else None
            np.testing.assert_array_equal(gs.bincount(x, w, minlength=minlength), np.bincount(x, w, minlength=minlength))


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "uint32", "int64"])
@pytest.mark.parametrize("lo,hi", [(0, 1), (0, 4096), (0, 4097), (0, 4095), (5, 300), (-3, 50), (0, 60_000),
                                   (4096, 4097),  # (one value, just past the bins)
                                   (2**31 - 5, 2**31 + 5), (-2**31, -2**31 + 3),  # (uint32 past int32's range, int32's min)
                                   (2**32 - 3, 2**32),  # (uint32's 0xFFFFFFFF: the empty warp's marker)
                                   (2**32 - 3, 2**32 + 3), (2**40, 2**40 + 4096),  # (int64 past 32 bits)
                                   (2**63 - 5, 2**63), (-2**63, -2**63 + 3)])  # (int64's ends)
@pytest.mark.parametrize("small", ["1", "0"])
def test_first_count_finds_the_largest_value(backend, dtype, lo, hi, small, monkeypatch):
    """ops->bincount_first (the device bincount's one-read count): counts of
    0 .. nbins - 1 (no other value counted), the largest and the smallest
    value and whether one is negative -- on both engines, every dtype, at the bins' edge; on
    the GPU also without the kernel that finds the largest value as it
    counts (GPUSYNC_HIST_SMALL=0: a count and a min/max pass)."""
    from gpusync import _arrays, _core

    if small == "0" and backend != "cuda":
        pytest.skip("GPUSYNC_HIST_SMALL picks CUDA kernels")
    monkeypatch.setenv("GPUSYNC_HIST_SMALL", small)

    info = np.iinfo(dtype)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max) + 1)
    if lo >= hi:
        pytest.skip("no such values in this dtype")
    x = np.random.default_rng(abs(hi)).integers(lo, hi, 20_001).astype(dtype)
    x[-1] = hi - 1  # the largest value in the last element (the tail past the 16-byte vectors)
    x[-2] = lo  # and the smallest in the one before
    nb = _core.BINCOUNT_FIRST_BINS
    k = x.astype(np.int64)
    ref = np.bincount(k[(k >= 0) & (k < nb)], minlength=nb)
    if backend == "cuda":
        cp = pytest.importorskip("cupy")
        d, out = cp.asarray(x), cp.full(nb, -7, cp.int64)  # (the call zeroes the counts)
        top, neg, bottom = _core.bincount_first(
            "cuda", (d.data.ptr, d.size, 1, _arrays._DTYPE_CODES[np.dtype(dtype)], 0),
            (out.data.ptr, nb, 1, _arrays._DTYPE_CODES[np.dtype(np.int64)], 0), cp.cuda.get_current_stream().ptr)
        out = out.get()
    else:
        out = np.full(nb, -7, np.int64)
        top, neg, bottom = _core.bincount_first("cpu", x, out, 0)
    assert neg == bool(x.min() < 0)
    assert top == (-1 if neg else int(x.max()))
    if backend == "cuda" and small == "1" and np.dtype(dtype).itemsize == 2 and not neg and x.min() >= nb:
        assert bottom == -1  # (16-bit data all past the bins: the smallest is not known)
    else:
        assert bottom == (-1 if neg else int(x.min()))
    np.testing.assert_array_equal(out, ref)
    if not neg and top < nb:  # what the device bincount returns from these counts
        np.testing.assert_array_equal(out[:top + 1], np.bincount(x))


def test_first_count_refuses_what_it_does_not_take(backend):
    """ops->bincount_first's one check (gs_bincount_first_check) on both engines: the dtypes it takes
    (_core.BINCOUNT_FIRST_DTYPES, the C rule's names), the output's shape; and empty input."""
    from gpusync import _arrays, _core

    assert _core.BINCOUNT_FIRST_DTYPES == {"int16", "uint16", "int32", "uint32", "int64"}
    if backend == "cuda":
        cp = pytest.importorskip("cupy")

        def first(x, out):
            d, o = cp.asarray(x), cp.asarray(out)
            r = _core.bincount_first("cuda", (d.data.ptr, d.size, 1, _arrays._DTYPE_CODES[d.dtype], 0),
                                     (o.data.ptr, o.size, 1, _arrays._DTYPE_CODES[o.dtype], 0),
                                     cp.cuda.get_current_stream().ptr)
            return r, o.get()
    else:
        def first(x, out):
            return _core.bincount_first("cpu", x, out, 0), out

    for dt in (np.uint64, np.uint8, np.float64):
        with pytest.raises(TypeError, match="int16, uint16, int32, uint32 or int64"):
            first(np.zeros(3, dt), np.zeros(5, np.int64))
    for out in (np.zeros(0, np.int64), np.zeros(4097, np.int64), np.zeros(5, np.float64)):
        with pytest.raises(ValueError, match="1 to 4096 contiguous int64"):
            first(np.zeros(3, np.int32), out)
    for dt in ("int16", "int32", "int64"):  # empty input: zeroed counts, nothing known
        (top, neg, bottom), counts = first(np.zeros(0, dt), np.full(7, -7, np.int64))
        assert (top, neg, bottom) == (-1, False, -1)
        np.testing.assert_array_equal(counts, np.zeros(7, np.int64))


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("lo,span", [(40_000, 1), (40_000, 1000), (1_000_000, 4097), (3000, 2001), (9000, 9001),
                                     (5000, 5000), (5000, 5001), (6, 6)])  # (the half boundary; a small range)
@pytest.mark.parametrize("minlength", [0, 2_000_000])
def test_bincount_of_values_far_from_zero(kind, dtype, lo, span, minlength):
    """Values lo .. lo + span - 1 far from 0 (identifiers, one value): the device bincount counts
    that stretch alone when it is at most half of 0 .. max (a histogram of span bins into zeroed
    counts) -- NumPy's result either way, on every dtype and with a minlength past it."""
    info = np.iinfo(dtype)
    if lo + span - 1 > info.max:
        pytest.skip("no such values in this dtype")
    x = np.random.default_rng(lo + span).integers(lo, lo + span, 30_001).astype(dtype)
    x[-1], x[-2] = lo + span - 1, lo  # both ends in the tail
    ref = np.bincount(x, minlength=minlength)
    try:
        xd = to_kind(x, kind)
    except (TypeError, RuntimeError) as e:  # (a torch without this unsigned dtype)
        pytest.skip(str(e))
    got = gs.bincount(xd, minlength=minlength)
    np.testing.assert_array_equal(to_host(got), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_bincount_16_bit_far_from_zero_counts_min_to_max(cp, monkeypatch, dtype):
    """16-bit identifiers far from 0 (every value past the first count's 4,096 bins, so that
    count does not know the smallest): the device fast path reads min and max and counts the
    values' own 1,000 bins, not max + 1 of them (a spy on the count's output length)."""
    from gpusync import _devfast

    x = np.random.default_rng(16).integers(30_000, 31_000, 200_003).astype(dtype)
    d = cp.asarray(x)
    np.testing.assert_array_equal(gs.bincount(d).get(), np.bincount(x))  # (the general path: plans)
    seen = []
    real = _devfast._core.histogram

    def spy(*args):
        seen.append(args[3][1])  # the output's length: the bins counted
        return real(*args)

    monkeypatch.setattr(_devfast._core, "histogram", spy)
    np.testing.assert_array_equal(gs.bincount(d).get(), np.bincount(x))
    assert "the device fast path" in gs.last_plan()["notes"]
    np.testing.assert_array_equal(gs.bincount(d, minlength=40_000).get(), np.bincount(x, minlength=40_000))
    assert "the device fast path" in gs.last_plan()["notes"]
    assert seen == [1000, 1000], seen
    # values 4,096 .. 8,000 (no min/max read: every value is past the first count's bins, so 4,096 .. max
    # already meets the rule): 3,905 bins from 4,096
    y = np.random.default_rng(17).integers(4_096, 8_001, 100_003).astype(dtype)
    seen.clear()
    np.testing.assert_array_equal(gs.bincount(cp.asarray(y)).get(), np.bincount(y))
    assert seen == [int(y.max()) - 4_096 + 1], seen


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32"])
def test_device_bincount_of_small_labels_reads_once(cp, monkeypatch, dtype):
    """int64 labels (NumPy's default integers) below 4,096 on the device: the first count is the
    result -- no min/max read and no second count (spies on both); past 4,096 a count follows and
    the smallest value comes from that first count (no min/max read either); uint64 keeps its
    min/max read (no int64 length for values past 2^63).  NumPy's result every time."""
    from gpusync import _devfast

    rng = np.random.default_rng(64)
    calls = []
    for name in ("histogram", "minmax"):
        real = getattr(_devfast._core, name)
        monkeypatch.setattr(_devfast._core, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    for lo, hi, minlength in ((0, 1000, 0), (0, 4096, 0), (7, 8, 5000), (0, 4097, 0), (10**6, 10**6 + 999, 0),
                              (0, 100_000, 0)):
        x = rng.integers(lo, hi, 300_007).astype(dtype)
        d = cp.asarray(x)
        gs.bincount(d)  # (a first call may take the general path: plans)
        calls.clear()
        np.testing.assert_array_equal(gs.bincount(d, minlength=minlength).get(), np.bincount(x, minlength=minlength))
        assert "the device fast path" in gs.last_plan()["notes"]
        if dtype == "uint64":  # (min .. max alone for the identifiers)
            assert calls == ["minmax", "histogram"], calls
        elif hi <= _devfast._core.BINCOUNT_FIRST_BINS:
            assert calls == [], calls
        else:
            assert calls == ["histogram"], calls


def test_bincount_int64_labels_every_place(kind):
    """int64 labels through gs.bincount on every input place: a result of its own below 1,024 bins, a view
    of the first count's buffer from 1,024 to 4,096 (torch included), minlength past it, a negative value
    (NumPy's ValueError), and uint64 past int64 (NumPy 2 reads it as negative: the same ValueError)."""
    rng = np.random.default_rng(41)
    for hi, minlength in ((10, 0), (2000, 0), (4096, 0), (300, 5000), (5000, 0)):
        x = rng.integers(0, hi, 100_003)
        got = gs.bincount(to_kind(x, kind), minlength=minlength)
        np.testing.assert_array_equal(to_host(got), np.bincount(x, minlength=minlength))
    x[77] = -1
    with pytest.raises(ValueError, match="no negative elements"):
        gs.bincount(to_kind(x, kind))
    u = np.array([1, 2, 2**63, 3], np.uint64)
    if kind == "torch":
        return  # (a torch without uint64 arithmetic)
    with pytest.raises(ValueError, match="no negative elements"):
        np.bincount(u)
    with pytest.raises(ValueError, match="no negative elements"):
        gs.bincount(to_kind(u, kind))


@pytest.mark.gpu
@pytest.mark.parametrize("weighted", [False, True])
def test_bincount_min_to_max_general_path_every_library(cuda, weighted):
    """The general path (a process's first call, GPUSYNC_DEBUG, strided input) counts identifiers
    far from 0 as the fast paths do and places them into NumPy's length of zeros with each
    library's own operations: CuPy, PyTorch and Numba device arrays (Lib.placed)."""
    rng = np.random.default_rng(21)
    x = rng.integers(50_000, 51_000, 40_002).astype(np.int32)
    w = rng.random(x.size) if weighted else None
    for minlength in (0, 60_000):
        want = np.bincount(x[::2], None if w is None else w[::2], minlength=minlength)
        for lib in ("cupy", "torch", "numba"):
            if lib == "numba":
                nc = pytest.importorskip("numba.cuda")
                xd, wd = nc.to_device(x), (None if w is None else nc.to_device(w))
            else:
                xd, wd = to_kind(x, lib), (None if w is None else to_kind(w, lib))
            got = gs.bincount(xd[::2], None if wd is None else wd[::2], minlength=minlength)  # (strided: general)
            got = got.copy_to_host() if lib == "numba" else to_host(got)
            assert got.dtype == want.dtype and got.shape == want.shape, (lib, got.dtype, got.shape)
            np.testing.assert_allclose(got, want, rtol=1e-12) if weighted else np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("wdtype", ["float64", "float32"])
@pytest.mark.parametrize("lo,span", [(40_000, 1000), (1_000_000, 1), (9000, 9001)])
def test_weighted_bincount_of_values_far_from_zero(kind, wdtype, lo, span):
    """Weighted counts of values far from 0 (min .. max alone where the rule says so, into NumPy's
    length of zeros: the host C fast path from calloc, the general path, the device paths): NumPy's
    float64 sums, with and without a minlength past max."""
    rng = np.random.default_rng(lo + span)
    x = rng.integers(lo, lo + span, 20_001).astype(np.int32)
    w = rng.random(x.size).astype(wdtype)
    for minlength in (0, lo + span + 5):
        ref = np.bincount(x, w, minlength=minlength)
        got = to_host(gs.bincount(to_kind(x, kind), to_kind(w, kind), minlength=minlength))
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_many_bins_count_in_l2_sized_passes(cuda, kind, monkeypatch, capfd):
    """Many bins on the device (auto: global atomics).  Where the int64 counts would take more than
    half the L2 and the values are at least as many as the bins, the adds go to 32-bit counters, in
    as many passes over the input as it takes for one pass's counters to fit half the L2, and a last
    pass adds them into the int64 result; weighted sums take passes over ranges of the float64 result
    itself (hist_global.cu); where sampled stretches of the input are local (sorted values) the first
    pass counts every element.  Every plan against np.bincount, with the plan and the sampler's
    verdict read from GPUSYNC_DEBUG's line."""
    share = gs.device_info()["l2_cache_bytes"] // 2
    one, three = share // 6, share // 4 * 5 // 2  # 32-bit counters: 2/3 of the share; 2.5 shares
    rng = np.random.default_rng(29)
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    monkeypatch.setenv("GPUSYNC_HIST_PART", "0")  # (the partition's cases: the test below)
    spread, local = "every pass its range", "the first pass counts every element"
    for nb, n, runs, weighted, want, verdict in (
        (one, one + 1001, False, False, "32-bit counters, 1 pass ", None),
        (three, three + 3, False, False, "32-bit counters, 3 passes", spread),
        (three, three + 3, True, False, "32-bit counters, 3 passes", local),
        (three, three // 7, False, False, "into the int64 counts", None),  # fewer values than bins
        (one, one + 1001, False, np.float64, "into the float64 sums, 2 passes", spread),  # weighted: ranges of
        (one, one + 1001, True, np.float32, "into the float64 sums, 2 passes", local),  # the result, no scratch
        (share // 10, share // 5, False, False, "into the int64 counts", None),  # int64 counters fit the share
    ):
        x = (np.sort(rng.integers(0, nb, n)) if runs else rng.integers(0, nb, n)).astype(np.int32)
        x[n // 2] = nb - 1  # max + 1 = nb bins
        w = rng.random(n).astype(weighted) if weighted else None
        want_counts = np.bincount(x, w)
        capfd.readouterr()
        got = gs.bincount(to_kind(x, kind), None if w is None else to_kind(w, kind))
        got = to_host(got)
        err = capfd.readouterr().err
        assert got.shape == want_counts.shape and got.dtype == want_counts.dtype
        if weighted:
            np.testing.assert_allclose(got, want_counts, rtol=1e-12)
        else:
            np.testing.assert_array_equal(got, want_counts)
        assert f"global atomics {'' if 'into the' in want else 'into '}{want}" in err, (nb, n, err)
        assert f"({nb} bins)" in err, (nb, err)
        if verdict:
            assert verdict in err, (nb, n, err)
        else:
            assert "sampled" not in err, (nb, n, err)
    if kind == "cupy":  # strided device input (the sampler and the passes read with the stride), both ways
        x = rng.integers(0, three, 2 * three + 8).astype(np.int64)
        x[0] = x[-1] = three - 1
        xd = to_kind(x, kind)
        for sl in (slice(None, None, 2), slice(None, None, -2), slice(None, None, -1)):
            capfd.readouterr()
            np.testing.assert_array_equal(to_host(gs.bincount(xd[sl])), np.bincount(x[sl]))
            err = capfd.readouterr().err
            assert "32-bit counters, 3 passes" in err and spread in err, (sl, err)
    monkeypatch.setenv("GPUSYNC_HIST_GLOBAL_L2", "0")  # (measurements: the int64 counts take every add)
    x = rng.integers(0, three, three + 3).astype(np.int32)
    x[0] = three - 1
    capfd.readouterr()
    np.testing.assert_array_equal(to_host(gs.bincount(to_kind(x, kind))), np.bincount(x))
    assert "global atomics into the int64 counts" in capfd.readouterr().err
    monkeypatch.delenv("GPUSYNC_HIST_GLOBAL_L2")
    if kind == "cupy":  # a histogram's float binning in the passes too
        xf = rng.random(three + 5)
        capfd.readouterr()
        got, _ = gs.histogram(to_kind(xf, kind), bins=three, range=(0.0, 1.0))
        np.testing.assert_array_equal(to_host(got), np.histogram(xf, bins=three, range=(0.0, 1.0))[0])
        assert "32-bit counters, 3 passes" in capfd.readouterr().err


PART_MIN_N = 1 << 22  # hist_global.cu's GS_HIST_PART_MIN_N


def unit_histogram(x, nb):
    """np.histogram(x, bins=nb, range=(0, nb))[0] of integers, by np.bincount (NumPy's last bin is closed:
    it holds nb too)."""
    x = x[(x >= 0) & (x <= nb)]
    return np.bincount(np.minimum(x, nb - 1), minlength=nb)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_many_bins_count_by_partition(cuda, kind, monkeypatch, capfd):
    """Unweighted counts on 65,536 to 16M bins of at least GS_HIST_PART_MIN_N values (hist_global.cu's
    partition): each value's bin split into a digit and its low bits, ranked and grouped by digit a
    tile at a time, the low bits counted in shared memory a digit at a time.  Every digit width the
    rule or GPUSYNC_HIST_PART gives, digit counts that are not powers of two, the 1,024-digit limit,
    skewed and warp-sorted digits, values outside the bins, NaN, strided input -- against NumPy, the
    route read from GPUSYNC_DEBUG's line.  A local input (sorted) keeps one pass of global atomics."""
    rng = np.random.default_rng(31)
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    n = PART_MIN_N + 4099  # (a last tile part full)

    def route(call):
        capfd.readouterr()
        got = to_host(call())
        return got, capfd.readouterr().err

    def counts(x, nb, lb=None, verdict="the partition counts"):
        if lb is not None:
            monkeypatch.setenv("GPUSYNC_HIST_PART", str(lb))
        got, err = route(lambda: gs.histogram(to_kind(x, kind), bins=nb, range=(0, nb), strategy="global")[0])
        monkeypatch.delenv("GPUSYNC_HIST_PART", raising=False)
        np.testing.assert_array_equal(got, unit_histogram(x, nb))
        assert f"({nb} bins)" in err and verdict in err, (nb, lb, err)
        return err

    u = rng.random(n)
    # (14-bit digits need 64 KiB of counters and a little more a block: 13 at most where a block has 64 KiB)
    widest = 14 if gs.device_info()["shared_memory_per_block_optin"] >= (4 << 14) + 1024 else 13
    for nb, dtype, want_bits in ((65_536, np.int32, 10), (100_003, np.int64, 11), (1_000_007, np.int64, 14),
                                 (1 << 24, np.int32, 14)):  # (16M bins: as many values, the rule's least)
        if want_bits > widest and nb > 1024 << widest:
            continue
        want_bits = min(want_bits, widest)
        x = ((u if nb < n else rng.random(nb + 5)) * nb).astype(dtype)
        err = counts(x, nb)
        d = -(-nb // (1 << want_bits))
        assert f"a partition into {d} digits of {want_bits} bits" in err, (nb, err)
    x = (u**4 * 1_000_000).astype(np.int64)  # skewed: digit 0 holds about a third of the values
    counts(x, 1_000_000)
    # warps whose 32 values share a digit (the rank's one add a warp), not local to the sampler
    i = np.arange(n)
    x = (((i // 32) % 61) << 14 | rng.integers(0, 1 << 14, n)).astype(np.int64)
    counts(x, 1_000_000)
    # values outside the bins (below, past, negative) in every tile
    x = rng.integers(-50_000, 350_000, n).astype(np.int64)
    counts(x, 300_000)
    for lb in range(10, widest + 1):  # forced digit widths: 293 .. 19 digits
        err = counts(x, 300_000, lb)
        assert f"digits of {lb} bits" in err, (lb, err)
    err = counts(x, 2 * 10**6, 10)  # 1,954 digits of 10 bits: too many; the least width that fits, 11 bits
    assert "a partition into 977 digits of 11 bits" in err, err
    # sorted, runs of ~10 equal values: the sampler's one pass; runs of ~64 and one value: the partition
    # (hist_global.cu's part_one_pass: runs shorter than 32 on average keep the one pass)
    counts(np.sort(x), 300_000, verdict="one pass of global atomics counts every element")
    counts(np.sort(rng.integers(0, 65_536, n)), 1_000_000)
    counts(np.sort(rng.integers(0, 65_536, n)), 65_536)  # (each digit in a few long segments)
    counts(np.full(n, 777_777), 1_000_000)
    # not the partition: past 2^24 bins, fewer values than GS_HIST_PART_MIN_N, GPUSYNC_HIST_PART=0
    for nb, m, env in (((1 << 24) + 1, (1 << 24) + 2, None), (300_000, PART_MIN_N - 1, None), (300_000, n, "0")):
        if env:
            monkeypatch.setenv("GPUSYNC_HIST_PART", env)
        y = rng.integers(0, nb, m).astype(np.int64)
        got, err = route(lambda: gs.histogram(to_kind(y, kind), bins=nb, range=(0, nb), strategy="global")[0])
        monkeypatch.delenv("GPUSYNC_HIST_PART", raising=False)
        np.testing.assert_array_equal(got, unit_histogram(y, nb))
        assert "global atomics" in err and "partition" not in err, (nb, m, err)
    # float binning: auto on 200,000 equal-width bins past the 16-bit halves, NaN and values outside
    xf = rng.normal(0.5, 0.3, n)
    xf[::1001] = np.nan
    for dt in (np.float64, np.float32):
        got, err = route(lambda: gs.histogram(to_kind(xf.astype(dt), kind), bins=200_000, range=(0.1, 0.9))[0])
        np.testing.assert_array_equal(got, np.histogram(xf.astype(dt), bins=200_000, range=(0.1, 0.9))[0])
        assert "a partition into" in err, (dt, err)
    # bincount (its length from the values) takes it too
    x = rng.integers(0, 700_000, n).astype(np.int64)
    got, err = route(lambda: gs.bincount(to_kind(x, kind)))
    np.testing.assert_array_equal(got, np.bincount(x))
    assert "a partition into" in err, err
    # in a CUDA graph: the scratch a graph allocation, replayed on new data (skewed, then uniform)
    xd = to_kind(rng.integers(0, 500_000, n).astype(np.int64), kind)
    gs.histogram(xd, bins=500_000, range=(0, 500_000))
    capfd.readouterr()
    (hg, _), launch = captured(kind, lambda: gs.histogram(xd, bins=500_000, range=(0, 500_000)))
    assert "a partition into" in capfd.readouterr().err
    for new in ((rng.random(n) ** 4 * 500_000).astype(np.int64), rng.integers(0, 500_000, n)):
        if kind == "cupy":
            xd[...] = to_kind(new, kind)
        else:
            xd.copy_(to_kind(new, kind))
        launch()
        np.testing.assert_array_equal(to_host(hg), unit_histogram(new, 500_000))
    if kind == "cupy":  # strided device input, both ways
        xd = to_kind(rng.integers(0, 400_000, 2 * n + 6).astype(np.int64), kind)
        for sl in (slice(None, None, 2), slice(None, None, -1)):
            got, err = route(lambda: gs.histogram(xd[sl], bins=400_000, range=(0, 400_000), strategy="global")[0])
            np.testing.assert_array_equal(got, unit_histogram(to_host(xd[sl]), 400_000))
            assert "the partition counts" in err, (sl, err)


@pytest.mark.gpu
def test_many_bins_partition_sanitized(cuda, monkeypatch):
    """The partition at its smallest input, for compute-sanitizer: 10- and 14-bit digits, the 1,024-digit
    limit, warp-sorted digits, one value, values outside the bins, a local input (its one pass)."""
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(37)
    n = PART_MIN_N + 3
    i = np.arange(n)
    for nb, x in ((65_536, rng.integers(-9, 65_540, n)), (1 << 24, rng.integers(0, 1 << 24, (1 << 24) + 1)),
                  (1_000_003, ((i // 32) % 61) << 14 | rng.integers(0, 1 << 14, n)), (1_000_003, np.full(n, 5)),
                  (300_000, np.sort(rng.integers(0, 300_000, n)))):
        got = gs.histogram(cp.asarray(x), bins=nb, range=(0, nb), strategy="global")[0].get()
        np.testing.assert_array_equal(got, unit_histogram(x, nb))


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("xdt", [np.int16, np.int32, np.int64, np.uint16])
@pytest.mark.parametrize("wdt", [np.float32, np.float64])
def test_weighted_device_fast_path(lib, xdt, wdt):
    """Weighted bincount of device arrays with no engine forced (_devfast.bincount_w_): NumPy's float64 sums
    and length, values from 0 or far from it (lo .. hi counted alone), minlength, negatives refused."""
    rng = np.random.default_rng(7)
    for lo, hi, n in [(0, 100, 1000), (0, 5000, 100_003), (30_000, 31_000, 50_001), (5, 6, 3)]:
        x = rng.integers(lo, hi, n).astype(xdt)
        w = rng.standard_normal(n).astype(wdt)
        for minlength in (0, hi + 10):
            got = gs.bincount(to_kind(x, lib), to_kind(w, lib), minlength=minlength)
            ref = np.bincount(x, w, minlength=minlength)
            assert type(got).__module__.split(".")[0] == lib
            np.testing.assert_allclose(to_host(got), ref, rtol=1e-5 if wdt == np.float32 else 1e-12, atol=1e-4)
            assert to_host(got).dtype == ref.dtype
    if np.dtype(xdt).kind == "i":
        with pytest.raises(ValueError, match="negative"):
            gs.bincount(to_kind(np.array([3, -1, 2], xdt), lib), to_kind(np.ones(3, wdt), lib))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("weighted", [False, True])
def test_few_values_into_many_bins(dtype, weighted):
    """A count of few values into many bins (a large maximum, or minlength):
    the CPU engine counts them in place on one thread, into a result it
    zeroes on the threads that pays for -- in memory an earlier result
    filled, NumPy's zeros and counts (sums) either way, on the C fast path
    and the general one."""
    from gpusync import _dispatch

    rng = np.random.default_rng(30)
    for n, top, minlength in ((1000, 10**6, 0), (1, 3 * 10**6, 0), (37, 10**5, 0), (1000, 1000, 10**6),
                              (5000, 2 * 10**6, 2_500_000), (200, 40_000, 7)):
        dirty = rng.integers(0, top, 200_000)  # results with counts everywhere, freed: reused memory
        for _ in range(2):
            gs.bincount(dirty, rng.random(dirty.size) if weighted else None, minlength=minlength)
        x = rng.integers(0, top, n).astype(dtype)
        x[0] = top - 1
        w = rng.random(n) if weighted else None
        ref = np.bincount(x, w, minlength=minlength)
        for fast in (True, False):
            was = _dispatch._core.fast_thread_off(not fast)
            try:
                got = gs.bincount(x, w, minlength=minlength)
            finally:
                _dispatch._core.fast_thread_off(was)
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_array_equal(got, ref, err_msg=f"n={n} top={top} minlength={minlength} fast={fast}")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_in_place_count_zeroes_on_requested_threads(threads):
    """The engine's in-place count zeroes the result on the threads the
    dispatcher asks for (the model prices the zeroing): every bin of a dirty
    buffer is zero but the counted ones, weighted or not, with a large
    maximum and with bins past the last value."""
    from gpusync import _core, _histogram

    rng = np.random.default_rng(31)
    x = rng.integers(0, 3 * 10**6, 777)
    for w in (None, rng.random(x.size)):
        out = np.full(3 * 10**6 + 5, -7 if w is None else np.nan, np.int64 if w is None else np.float64)
        _core.cpu_threads(threads)
        try:
            _core.histogram("cpu", x, w, out, _histogram._direct_bins(out.size), "auto", 0)
        finally:
            _core.cpu_threads(0)
        np.testing.assert_array_equal(out, np.bincount(x, w, minlength=out.size))


def test_huge_maximum_raises_like_numpy():
    """A maximum whose result cannot be allocated: the fast path steps aside
    and NumPy's own error comes from the general path."""
    x = np.array([0, 2**50], dtype=np.int64)
    assert_raises_like_numpy(lambda: np.bincount(x), lambda: gs.bincount(x))
