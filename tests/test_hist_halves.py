"""Strategy `shared` with 16-bit halves (csrc/cuda/hist_halves.cu): histograms
whose bins fit one block's shared memory only as 16-bit counters (65,536 and
100,000 bins) and 16-bit bincounts over the dtype's whole range -- against
NumPy, with the overflow recount forced (GPUSYNC_HISTDD_COUNTER=1) and with
many 0x8000 moves (millions of one value)."""
import numpy as np
import pytest

import gpusync as gs

from test_hist_small import to_lib, to_np


def _halves_fit(bins):
    """Whether this GPU holds `bins` as 16-bit halves in one block (gs_hist_halves_max: the
    opt-in shared memory less the kernel's 6,176 static bytes, in 16-byte units of 8 bins)."""
    optin = gs.device_info()["shared_memory_per_block_optin"]
    return bins <= (optin - 6176) // 16 * 8


def _need_halves(bins):
    if not _halves_fit(bins):
        pytest.skip(f"{bins} bins do not fit this GPU's shared memory as 16-bit halves")


def _data(dtype, bins, lo, n, rng):
    """Values over [lo, lo + bins) and beyond it, a crowd of one value, and
    (floats) NaN and +-inf."""
    span = rng.integers(lo - 50, lo + bins + 50, n)
    crowd = np.full(12_000_000, lo + bins // 3)  # ~90k a block over 132 blocks: many 0x7fff -> 0x8000 moves
    a = np.concatenate([span, crowd, [lo, lo + bins - 1, lo + bins]])
    if np.dtype(dtype).kind == "f":
        a = a.astype(dtype) + np.asarray(0.25, dtype)
        a[:3] = [np.nan, np.inf, -np.inf]
        return a
    info = np.iinfo(dtype)
    return np.clip(a, info.min, info.max).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("counter", ["0", "1"])
@pytest.mark.parametrize("bins", [65_536, 100_000])
@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.int32, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_many_bins_in_16bit_halves(dtype, bins, counter, monkeypatch):
    cp = pytest.importorskip("cupy")
    _need_halves(bins)
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    lo = -1000 if np.dtype(dtype).kind in "if" else 0
    a = _data(dtype, bins, lo, 1_000_003, np.random.default_rng(bins))
    x = cp.asarray(a)
    for rng_ in ((lo, lo + bins), (lo + 0.5, lo + bins * 0.75)):  # unit-width (integers: direct) and uneven bins
        ref = np.histogram(a, bins=bins, range=rng_)[0]
        for strategy in ("auto", "shared"):
            h, e = gs.histogram(x, bins=bins, range=rng_, strategy=strategy)
            np.testing.assert_array_equal(to_np(h), ref, err_msg=f"{strategy} {rng_}")
            assert gs.last_plan()["strategy_used"] == "shared"
    h, _ = gs.histogram(x[1::3], bins=bins, range=(lo, lo + bins), strategy="shared")  # strided: scalar loads
    np.testing.assert_array_equal(to_np(h), np.histogram(a[1::3], bins=bins, range=(lo, lo + bins))[0])


@pytest.mark.gpu
@pytest.mark.sanitizer
@pytest.mark.parametrize("counter", ["0", "1"])
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("n", [1, 17, 4099, 200_003])
def test_16bit_halves_small_inputs_and_torch(n, lib, counter, monkeypatch):
    _need_halves(65_536)
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    rng = np.random.default_rng(n)
    a = rng.integers(-40_000, 40_000, n).astype(np.int32)
    x = to_lib(lib, a)
    h, _ = gs.histogram(x, bins=65_536, range=(-32_768, 32_768))
    np.testing.assert_array_equal(to_np(h), np.histogram(a, bins=65_536, range=(-32_768, 32_768))[0])


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", [np.uint16, np.int16], ids=lambda d: np.dtype(d).name)
def test_16bit_bincount_whole_range(dtype, lib):
    """Every value of the dtype's range (65,536 bins: the halves), a few
    values, all zeros, minlength inside and past the range, negatives:
    NumPy's bincount."""
    if lib == "torch" and dtype == np.uint16:
        pytest.skip("torch has no usable uint16")
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    cases = [rng.integers(0, int(info.max) + 1, 2_000_003), np.array([0]), np.zeros(1000),
             np.array([int(info.max)] * 5 + [7]), rng.integers(0, 4096, 300_001)]
    for v in cases:
        a = v.astype(dtype)
        x = to_lib(lib, a)
        for minlength in (0, 10, 5000, int(info.max) + 1, int(info.max) + 100):
            got = gs.bincount(x, minlength=minlength)
            np.testing.assert_array_equal(to_np(got), np.bincount(a, minlength=minlength))
            assert to_np(got).dtype == np.int64
        assert gs.last_plan()["op"] == "bincount"
    if info.min < 0:
        with pytest.raises(ValueError, match="negative"):
            gs.bincount(to_lib(lib, np.array([3, -1, 5], dtype)))
        with pytest.raises(ValueError, match="negative"):
            gs.bincount(to_lib(lib, np.array([int(info.min)] + [1] * 100, dtype)), minlength=40_000)



@pytest.mark.gpu
@pytest.mark.parametrize("rng_", [(0.0, 1.0), (-3.0, 5.0), (1000.0, 1001.0), (0.1, 0.9)])
@pytest.mark.parametrize("bins", [65_536, 99_999])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_float_bins_on_and_near_edges(dtype, bins, rng_):
    """Equal-width float bins too many for shared-memory edges (the binning
    rule computes them from their formula) -- values on every edge, one ulp
    either side, the range's ends, NaN and +-inf: NumPy's counts, or NumPy's
    error where float32 cannot hold that many finite-sized bins."""
    cp = pytest.importorskip("cupy")
    _need_halves(bins)
    lo, hi = rng_
    try:
        edges = np.histogram_bin_edges(np.zeros(1, dtype), bins, rng_)
    except ValueError:  # NumPy: "Too many bins for data range" (float32 edges of 1000..1001): the same error
        with pytest.raises(ValueError, match="Too many bins"):
            gs.histogram(cp.zeros(3, dtype), bins=bins, range=rng_)
        return
    e = edges.astype(dtype)
    near = np.concatenate([e, np.nextafter(e, np.inf, dtype=dtype), np.nextafter(e, -np.inf, dtype=dtype)])
    rand = np.random.default_rng(bins).uniform(lo - 0.1, hi + 0.1, 1_000_003).astype(dtype)
    a = np.concatenate([near, rand, np.array([np.nan, np.inf, -np.inf, lo, hi], dtype)])
    h, _ = gs.histogram(cp.asarray(a), bins=bins, range=rng_)
    np.testing.assert_array_equal(to_np(h), np.histogram(a, bins=bins, range=rng_)[0])
    assert gs.last_plan()["strategy_used"] == "shared"


@pytest.mark.gpu
@pytest.mark.parametrize("counter", ["0", "1"])
def test_staged_host_input_over_several_chunks(counter, monkeypatch):
    """A NumPy input staged to the GPU in 256 MiB chunks, each added into one
    result: the forced recount (counter 1) restores what earlier chunks
    counted before it counts its own chunk again."""
    _need_halves(65_536)
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    a = np.random.default_rng(1).integers(0, 65_536, 80_000_003).astype(np.int32)  # 320 MB: two chunks
    with gs.use_backend("cuda"):
        h, _ = gs.histogram(a, bins=65_536, range=(0, 65_536))
        assert gs.last_plan()["strategy_used"] == "shared"
    np.testing.assert_array_equal(h, np.bincount(a, minlength=65_536))


@pytest.mark.gpu
@pytest.mark.parametrize("counter", ["0", "1"])
@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.int32, np.float64], ids=lambda d: np.dtype(d).name)
def test_one_bin_warps_runs_and_crowds_that_defeat_them(dtype, counter, monkeypatch):
    """The halves' one-bin warp adds and runs (hist_halves.cu): one value
    (runs to the global result), short runs of one bin per warp vector
    (shared adds of up to 512), runs cut at every vector, and two values
    alternating element by element -- no warp is of one bin, so 6M adds
    each go through the single adds' 0x7fff -> 0x8000 moves."""
    cp = pytest.importorskip("cupy")
    _need_halves(65_536)
    monkeypatch.setenv("GPUSYNC_HISTDD_COUNTER", counter)
    v = np.dtype(dtype)
    per_vec = 16 // v.itemsize
    lo = 0 if v.kind == "u" else -100
    bins = 65_536
    rng = np.random.default_rng(11)
    cases = {
        "one value": np.full(9_000_001, lo + 7),
        "runs": np.repeat(lo + rng.integers(0, 250, 40_000), per_vec * 32 * rng.integers(1, 9, 40_000)),
        "cut runs": np.repeat(lo + rng.integers(0, 250, 200_000), per_vec * 32 - 1),
        "alternating": np.tile([lo + 3, lo + 5], 6_000_000),
    }
    for name, a in cases.items():
        a = a.astype(dtype)
        x = cp.asarray(a)
        for start in (0, 1):  # vector-aligned, and not
            h, _ = gs.histogram(x[start:], bins=bins, range=(lo, lo + bins))
            ref = np.histogram(a[start:], bins=bins, range=(lo, lo + bins))[0]
            np.testing.assert_array_equal(to_np(h), ref, err_msg=f"{name} start {start}")
