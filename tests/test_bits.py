"""gs.packbits and gs.count_nonzero against NumPy; occupancy and the
divergence demo (GPU)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusync as gs
from conftest import random_array

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]


def _data(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    a = random_array(rng, dtype, n)
    if np.dtype(dtype).kind != "b":
        a[rng.random(n) < 0.4] = 0  # plenty of zeros
    if np.dtype(dtype).kind == "f" and n > 3:
        a[1], a[2], a[3] = np.nan, -0.0, np.inf
    return a


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_packbits_all_lengths(backend, dtype):
    for n in list(range(0, 258)) + [1000, 4096 + 3, 100_003]:
        a = _data(dtype, n, n)
        for order in ("big", "little"):
            got = gs.packbits(a, bitorder=order)
            np.testing.assert_array_equal(got, np.packbits(a != 0, bitorder=order), err_msg=f"n={n} {order}")
            assert got.dtype == np.uint8
        assert gs.count_nonzero(a) == np.count_nonzero(a)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_count_nonzero_of_bytes_across_vector_rounds(backend, dtype):
    """Byte counters of the vector loops (csrc/cpu/bits.c: 128 bytes a round,
    at most 255 rounds between horizontal sums): lengths around both, at
    offsets that misalign the start, all zero / all nonzero / mixed."""
    rng = np.random.default_rng(7)
    for n in (127, 128, 129, 255 * 128 - 1, 255 * 128, 255 * 128 + 1, 2 * 255 * 128 + 130, 100_003):
        for frac in (0.0, 0.5, 1.0):
            a = (rng.random(n + 9) < frac).astype(dtype)
            if np.dtype(dtype).kind != "b":
                a[a != 0] = rng.integers(1, 128, int(np.count_nonzero(a)))
            for off in (0, 1, 9):
                v = a[off:]
                assert gs.count_nonzero(v) == np.count_nonzero(v), (n, frac, off)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_threshold(backend, dtype):
    a = _data(dtype, 70_001, 3)
    for t in (0, 1, -3.5, 0.1, 1e30, float("nan"), float("-inf")):
        with np.errstate(invalid="ignore", over="ignore"):
            ref = a > t
        np.testing.assert_array_equal(gs.packbits(a, threshold=t), np.packbits(ref), err_msg=str(t))
        assert gs.count_nonzero(a, threshold=t) == np.count_nonzero(ref)


def test_strided_and_offset(backend):
    a = _data(np.float32, 300_001, 5)
    for v in (a[::3], a[1:], a[7:-5], a[::-1]):
        np.testing.assert_array_equal(gs.packbits(v), np.packbits(v != 0))
        assert gs.count_nonzero(v) == np.count_nonzero(v)
    m = a[:300_000].reshape(600, 500)
    assert gs.count_nonzero(m) == np.count_nonzero(m)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=300), st.sampled_from(["big", "little"]))
def test_packbits_property(values, order):
    a = np.array(values, dtype=np.int16)
    np.testing.assert_array_equal(gs.packbits(a, bitorder=order), np.packbits(a != 0, bitorder=order))
    # unpacking gives back the predicate, zero-padded
    bits = np.unpackbits(gs.packbits(a, bitorder=order), bitorder=order)[: len(a)]
    np.testing.assert_array_equal(bits.astype(bool), a != 0)


def test_bad_input(backend):
    with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
        gs.packbits(np.ones(3), bitorder="middle")
    np.testing.assert_array_equal(gs.packbits(np.ones((2, 2), np.uint8)), np.packbits(np.ones((2, 2), np.uint8)))
    with pytest.raises(TypeError):
        gs.packbits(np.ones(3, np.complex64))
    with pytest.raises(TypeError):
        gs.count_nonzero(np.ones(3), threshold=1j)
    assert gs.packbits(np.array([], np.uint8)).shape == (0,)
    assert gs.count_nonzero(np.array([], np.float32)) == 0


def test_occupancy_needs_cuda_on_cpu():
    with gs.use_backend("cpu"):
        with pytest.raises(gs.NoCudaError):
            gs.occupancy("sum")


@pytest.mark.gpu
def test_occupancy_reports_every_kernel():
    with gs.use_backend("cuda"):
        names = gs.kernels()
        assert "histogram:shared" in names and "sum:mutex" in names and "packbits" in names
        for name in names:
            o = gs.occupancy(name)
            assert 0 < o["occupancy"] <= 1
            assert o["active_blocks_per_sm"] == min(o["blocks_allowed_by"].values())
            assert o["limiter"] in o["blocks_allowed_by"]
            assert o["registers"] > 0 and o["suggested_block_size"] % 32 == 0
        assert gs.occupancy("histogram")["kernel"] == "histogram:shared"
        assert gs.occupancy("sum", strategy="mutex")["block_size"] == 1024
        assert gs.occupancy("sum:atomic", block_size=128)["block_size"] == 128
        with pytest.raises(ValueError, match="valid:"):
            gs.occupancy("nope")
        with pytest.raises(ValueError, match="multiple of 32"):
            gs.occupancy("sum", block_size=100)


@pytest.mark.gpu
def test_divergence_demo():
    from gpusync import demo

    # the loop branch split inside every warp runs both paths: clearly slower.  The best of up to five runs
    # of each kernel: a GPU shared with other test processes (pytest -n) only adds time, and shared runs
    # measured 1.26x (gpu-check r190) and 1.14x (r241) on kernels of ~15 us (1M threads, loops of 128):
    # 4M threads and loops of 256 (~16x the work) put the branch's cost above a shared GPU's noise
    split, uniform = "loop branch on tid % 2", "loop branch on (tid / 32) % 2"
    best = {}
    with gs.use_backend("cuda"):
        for _ in range(5):
            r = demo.divergence(n=1 << 22, iters=256, verbose=False)
            assert len(r) == 4 and all(ms > 0 for ms in r.values())
            best = {k: min(v, best.get(k, v)) for k, v in r.items()}
            if best[split] > 1.3 * best[uniform]:
                break
    assert best[split] > 1.3 * best[uniform], best


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_device_arrays_in_place():
    cp = pytest.importorskip("cupy")
    with gs.use_backend("cuda"):
        for dt in (np.uint8, np.float32, np.float64, np.int16):
            a = _data(dt, 1_000_003, 9)
            d = cp.asarray(a)
            got = gs.packbits(d, bitorder="little", threshold=0.5)
            assert isinstance(got, cp.ndarray)
            np.testing.assert_array_equal(got.get(), np.packbits(a > 0.5, bitorder="little"))
            c = gs.count_nonzero(d)
            assert isinstance(c, cp.ndarray) and int(c) == np.count_nonzero(a)
            np.testing.assert_array_equal(gs.packbits(d[1::2]).get(), np.packbits(a[1::2] != 0))


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_warp_reductions_under_independent_thread_scheduling():
    """reduce.cuh's shuffle and shared-memory butterflies, reached by lanes at
    different times (lane-dependent loops first): every warp's sum is right.
    gpu-check also runs this under compute-sanitizer racecheck and synccheck."""
    assert gs._core._self_test("cuda", 0) == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.uint16, np.int8, np.uint8,
                                   np.bool_, np.int64], ids=lambda d: np.dtype(d).name)
def test_packbits_threshold_fast_path_is_numpys_comparison(dtype):
    """packbits(a, threshold=t) of a NumPy array (the C fast path, 64-bit
    integers the general path) packs exactly np.packbits(a > t): Python and
    NumPy float thresholds rounded as NumPy compares them, integer ones,
    out-of-range ones and NaN."""
    rng = np.random.default_rng(12)
    for n in (0, 9, 65, 1000):
        a = (rng.random(n) * 300 - 100).astype(dtype) if dtype != np.bool_ else rng.random(n) < 0.5
        for t in (0.1, 0, 1, -1, 50, 1e30, np.float32(0.1), np.float64(0.1), 255, 2**40, float("nan")):
            for order in ("big", "little"):
                with np.errstate(all="ignore"):
                    want = np.packbits(a > t, bitorder=order)
                np.testing.assert_array_equal(gs.packbits(a, bitorder=order, threshold=t), want,
                                              err_msg=f"n={n} t={t!r} {order}")
