"""Regression tests of issue 12 ("correct on every input NumPy accepts"): one
per row, named after what it guards, on both backends and (marked gpu) on
CuPy / PyTorch inputs."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
import scipy.stats

import gpusync as gs
from gpusync import _core, _histogram

from test_fuzz import host, to_lib


def _libs():
    return [pytest.param("numpy", id="host")] + [pytest.param(n, id=n, marks=pytest.mark.gpu) for n in ("cupy", "torch")]


@pytest.fixture(params=_libs())
def lib(request):
    if request.param != "numpy":
        pytest.importorskip(request.param)
    return request.param


def _returns_within(f, seconds=20.0):
    box = {}

    def run():
        try:
            box["value"] = f()
        except BaseException as e:  # noqa: BLE001 - reported below
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not return within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# row 1 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    (np.zeros(3), dict(bins=2, range=(0, 1e-320))),
    (np.array([0.0, 5e-324]), dict(bins=1)),
    (np.array([0.0, 1e-310, 2e-310, 3e-310]), dict(bins=7)),
    (np.array([0.0, 1e-45, 3e-45], np.float32), dict(bins=1)),
], ids=["range-1e-320", "data-5e-324", "data-subnormal", "float32-subnormal"])
def test_histogram_subnormal_range_returns_promptly(backend, lib, args):
    a, kw = args
    ref = np.histogram(a, **kw)
    got = _returns_within(lambda: gs.histogram(to_lib(a, lib), **kw))
    np.testing.assert_array_equal(host(got[0]), ref[0])
    np.testing.assert_array_equal(host(got[1]), ref[1])


def test_uniform_bin_correction_is_bounded_for_an_infinite_scale(backend):
    """The kernels' estimate-and-correct step must stay bounded (a binary
    search) even when handed a scale that is not finite."""
    if backend != "cpu":
        pytest.skip("host arrays on the cpu engine; the cuda one is covered by the histogram test above")
    n = 1000
    desc = _histogram._bins_tuple(_histogram._UNIFORM, n, start=0.0, step=1e-323, stop=n * 1e-323,
                                  scale=float("inf"), margin=0.5)
    x = np.array([0.0, 1e-323, 5e-322, n * 1e-323, 7e-321])
    out = np.zeros(n, np.int64)
    _returns_within(lambda: _core.histogram("cpu", x, None, out, desc, "global", 0))
    edges = np.arange(n + 1) * 1e-323
    edges[-1] = n * 1e-323
    np.testing.assert_array_equal(out, np.histogram(x, bins=edges)[0])


# rows 2, 14 --------------------------------------------------------------------------------------

def test_bincount_negative_int8_raises(backend, lib):
    with pytest.raises(ValueError, match="negative"):
        np.bincount(np.array([-1, 2], np.int8))
    with pytest.raises(ValueError, match="negative"):
        gs.bincount(to_lib(np.array([-1, 2], np.int8), lib))


def test_bincount_int8_counts_by_value(backend, lib):
    x = np.array([0, 3, 127, 3, 1], np.int8)
    np.testing.assert_array_equal(host(gs.bincount(to_lib(x, lib))), np.bincount(x))


def test_bincount_bool_bytes_other_than_0_and_1(backend, lib):
    """A bool array may hold any nonzero byte as True (a view of raw
    memory): NumPy counts each as 1."""
    raw = np.random.default_rng(3).integers(0, 256, 100_003, dtype=np.uint8)
    raw[::7] = 0
    b = raw.view(np.bool_)
    for minlength in (0, 1, 5):
        ref = np.bincount(b, minlength=minlength)
        np.testing.assert_array_equal(host(gs.bincount(to_lib(b, lib), minlength=minlength)), ref)
    assert host(gs.bincount(to_lib(np.frombuffer(b"\x00\x02\x01", np.bool_), lib))).tolist() == [1, 2]


def test_bincount_empty_weighted_is_int64(backend):
    ref = np.bincount(np.array([], int), weights=np.array([]), minlength=3)
    got = gs.bincount(np.array([], int), weights=np.array([]), minlength=3)
    assert got.dtype == ref.dtype == np.int64
    np.testing.assert_array_equal(got, ref)


# rows 3, 4, 5 ------------------------------------------------------------------------------------

def test_histogram_uint64_with_negative_range_does_not_wrap(backend, lib):
    a = np.array([2**64 - 1, 0, 3], np.uint64)
    ref = np.histogram(a, bins=10, range=(-4, 6))
    got = gs.histogram(to_lib(a, lib) if lib != "torch" else a, bins=10, range=(-4, 6))
    np.testing.assert_array_equal(host(got[0]), ref[0])


def test_histogram_float32_unit_edges_above_2_24_compare_in_float32(backend, lib):
    a = np.arange(2**24, 2**24 + 4)
    bins = (2**24 + np.arange(4)).astype(np.float32)
    ref = np.histogram(a, bins=bins)
    got = gs.histogram(to_lib(a, lib), bins=bins)
    np.testing.assert_array_equal(host(got[0]), ref[0])
    np.testing.assert_array_equal(host(got[0]), [0, 2, 2])


def test_histogram_int64_unit_edges_above_2_53_exact(backend, lib):
    base = 2**60
    a = np.array([base, base + 1, base + 1, base + 2, base + 10, base - 1], np.int64)
    bins = np.array([base, base + 1, base + 2])  # unit width: exact by subtraction
    np.testing.assert_array_equal(host(gs.histogram(to_lib(a, lib), bins=bins)[0]), np.histogram(a, bins=bins)[0])


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_histogram_64bit_integers_on_integer_edges_above_2_53_compare_exactly(backend, lib, dtype):
    base = 2**60 if dtype == np.int64 else 2**63
    a = np.array([base + 10, base + 3, base + 6, base + 5, base - 1, base + 2, 5], dtype)
    for bins in (np.array([base, base + 3, base + 6], dtype), np.array([base, base + 3, base + 3, base + 10], dtype)):
        ref = np.histogram(a, bins=bins)[0]
        np.testing.assert_array_equal(host(gs.histogram(to_lib(a, lib), bins=bins)[0]), ref)
    a = np.array([2**60 + 10])  # the reproducer
    bins = np.array([2**60, 2**60 + 1, 2**60 + 2])
    np.testing.assert_array_equal(host(gs.histogram(to_lib(a, lib), bins=bins)[0]), [0, 0])


# rows 8, 9 ---------------------------------------------------------------------------------------

def _swapped(a):
    return a.astype(a.dtype.newbyteorder("S"))


def _unaligned(a):
    buf = np.zeros(a.nbytes + 1, np.uint8)
    u = buf[1:].view(a.dtype)
    u[...] = a
    return u


@pytest.mark.parametrize("make", [_swapped, _unaligned], ids=["byte-swapped", "unaligned"])
def test_every_function_takes_byte_swapped_and_unaligned_input(backend, make):
    rng = np.random.default_rng(12)
    f = rng.standard_normal(50)
    i = rng.integers(0, 20, 50)
    xf, xi = make(f), make(i)
    assert not (xf.dtype.isnative and xf.flags.aligned)
    np.testing.assert_array_equal(gs.histogram(xf, bins=7)[0], np.histogram(f, bins=7)[0])
    np.testing.assert_allclose(gs.histogram(xi, bins=5, weights=xf)[0], np.histogram(i, bins=5, weights=f)[0])
    np.testing.assert_array_equal(gs.bincount(xi), np.bincount(i))
    assert gs.sum(xi) == np.sum(i)
    assert gs.sum(make(np.arange(3, dtype=np.int32))) == 3
    np.testing.assert_allclose(gs.sum(xf), np.sum(f), rtol=1e-12)
    np.testing.assert_allclose(gs.dot(xf, xf), np.dot(f, f), rtol=1e-12)
    np.testing.assert_array_equal(gs.cumsum(xi), np.cumsum(i))
    np.testing.assert_array_equal(gs.packbits(xf, threshold=0.0), np.packbits(f > 0))
    assert gs.count_nonzero(xi) == np.count_nonzero(i)
    ref = scipy.stats.binned_statistic(f, f, "mean", bins=4)
    got = gs.binned_statistic(xf, xf, "mean", bins=4)
    np.testing.assert_allclose(got.statistic, ref.statistic, rtol=1e-12)
    np.testing.assert_array_equal(got.binnumber, ref.binnumber)
    for _ in range(2):  # histogram2d / histogramdd coordinates (the second call: the cached host plan)
        np.testing.assert_array_equal(gs.histogram2d(xf, xf, bins=3)[0], np.histogram2d(f, f, bins=3)[0])
        np.testing.assert_array_equal(gs.histogram2d(xi, xi, bins=3)[0], np.histogram2d(i, i, bins=3)[0])
        np.testing.assert_array_equal(gs.histogramdd([xf, xf, xf], bins=2)[0], np.histogramdd([f, f, f], bins=2)[0])


def test_byte_swapped_host_input_is_not_refused_with_a_casting_message(backend):
    x = np.arange(5, dtype=">i4")
    np.testing.assert_array_equal(gs.bincount(x), np.bincount(x))


# row 10 ------------------------------------------------------------------------------------------

def test_binned_statistic_float16_x(backend, lib):
    x, v = np.arange(4, dtype=np.float16), np.ones(4)
    ref = scipy.stats.binned_statistic(x, v, bins=2)
    got = gs.binned_statistic(to_lib(x, lib), to_lib(v, lib), bins=2)
    np.testing.assert_array_equal(host(got.statistic), ref.statistic)
    np.testing.assert_array_equal(host(got.bin_edges), ref.bin_edges)
    # SciPy's on-edge test overflows in float16 (np.around -> NaN) and drops x == 3.0; gpusync keeps it
    np.testing.assert_array_equal(host(got.binnumber)[:3], ref.binnumber[:3])


# rows 11, 12 -------------------------------------------------------------------------------------

def test_count_nonzero_threshold_compares_in_numpys_result_type(backend, lib):
    a = np.array([0.1], np.float32)
    for thr in (np.float64(0.1), 0.1, np.float32(0.1), 0):
        want = int(np.count_nonzero(a > thr))
        assert int(host(gs.count_nonzero(to_lib(a, lib), threshold=thr))) == want, thr
        np.testing.assert_array_equal(host(gs.packbits(to_lib(a, lib), threshold=thr)), np.packbits(a > thr))


def test_integer_threshold_out_of_the_dtypes_range(backend, lib):
    a = np.arange(5, dtype=np.uint8)
    for thr in (-3, 300, 2**70, -(2**70)):
        assert int(host(gs.count_nonzero(to_lib(a, lib), threshold=thr))) == int(np.count_nonzero(a > thr))


def test_count_nonzero_int64_threshold_above_2_53_exact(backend, lib):
    assert int(host(gs.count_nonzero(to_lib(np.array([2**53 + 1]), lib), threshold=2**53))) == 1
    a = np.array([2**60 + 9, 2**60 + 10, 2**60 + 11, -(2**60) - 1, 5], np.int64)
    for thr in (2**60 + 10, np.int64(2**60 + 10), -(2**60), 2**53 + 1):
        assert int(host(gs.count_nonzero(to_lib(a, lib), threshold=thr))) == int(np.count_nonzero(a > thr)), thr
        np.testing.assert_array_equal(host(gs.packbits(to_lib(a, lib), threshold=thr)), np.packbits(a > thr))
    if lib != "torch":  # PyTorch compares uint64 tensors only with int64-range scalars
        u = np.array([2**64 - 1, 2**63 + 1, 2**63, 3], np.uint64)
        assert int(host(gs.count_nonzero(to_lib(u, lib), threshold=2**63))) == 2


@pytest.mark.parametrize("thr", ["1", b"1", [1], 1j])
def test_threshold_must_be_a_real_number(backend, thr):
    with pytest.raises(TypeError, match="threshold"):
        gs.packbits(np.arange(3), threshold=thr)
    with pytest.raises(TypeError, match="threshold"):
        gs.count_nonzero(np.arange(3), threshold=thr)


# row 13 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stat", ["std", "var"])
def test_binned_statistic_std_overflow_is_inf(backend, lib, stat):
    x, v = np.array([0.0, 0.1]), np.array([-1.7e308, 1.7e308])
    got = host(gs.binned_statistic(to_lib(x, lib), to_lib(v, lib), stat, bins=1).statistic)
    with np.errstate(over="ignore"):
        ref = scipy.stats.binned_statistic(x, v, "std", bins=1).statistic
    np.testing.assert_array_equal(got, ref if stat == "std" else ref**2)
    # a NaN value still makes the bin NaN
    v2 = np.array([np.nan, 1.7e308])
    assert np.isnan(host(gs.binned_statistic(to_lib(x, lib), to_lib(v2, lib), stat, bins=1).statistic)).all()


# row 17 ------------------------------------------------------------------------------------------

def test_binned_statistic_non_monotonic_bins_message(backend):
    with pytest.raises(ValueError) as ref:
        scipy.stats.binned_statistic(np.arange(3.0), np.ones(3), bins=[3, 1, 2])
    with pytest.raises(ValueError) as got:
        gs.binned_statistic(np.arange(3.0), np.ones(3), bins=[3, 1, 2])
    assert str(got.value) == str(ref.value)


def test_binned_statistic_bool_x_is_a_type_error_naming_x(backend):
    with pytest.raises(TypeError):
        scipy.stats.binned_statistic(np.array([True, False]), np.ones(2), bins=2)
    with pytest.raises(TypeError, match="x has dtype bool"):
        gs.binned_statistic(np.array([True, False]), np.ones(2), bins=2)


@pytest.mark.parametrize("bins", [[], [1.0], np.array([], np.int32)])
def test_histogram_fewer_than_two_edges_is_empty_like_numpy(backend, lib, bins):
    a = np.arange(3.0)
    for kw in ({}, {"weights": np.ones(3, np.float32)}, {"density": True}):
        ref = np.histogram(a, bins=bins, **kw)
        got = gs.histogram(to_lib(a, lib), bins=bins, **{k: (to_lib(v, lib) if k == "weights" else v)
                                                          for k, v in kw.items()})
        h, e = host(got[0]), host(got[1])
        assert h.shape == (0,) and h.dtype == ref[0].dtype
        np.testing.assert_array_equal(e, ref[1])
        assert e.dtype == ref[1].dtype


@pytest.mark.parametrize("kw,exc", [({"blocks": "a"}, TypeError), ({"blocks": 0}, ValueError),
                                    ({"rounds": 1.5}, ValueError), ({"threads": None}, TypeError)])
def test_barrier_benchmark_argument_errors_name_the_argument(backend, kw, exc):
    name = next(iter(kw))
    with pytest.raises(exc, match=name):
        gs.barrier_benchmark("sense", **kw)


# row 18 ------------------------------------------------------------------------------------------

def test_histogram_integer_weights_exact_below_2_53(backend, lib):
    a = np.zeros(4)
    w = np.array([2**52, 1, 1, 3], np.int64)
    for bins in (1, [-1.0, 1.0]):
        got = host(gs.histogram(to_lib(a, lib), bins=bins, weights=to_lib(w, lib))[0])
        ref = np.histogram(a, bins=bins, weights=w)[0]
        assert got.dtype == ref.dtype == np.int64
        np.testing.assert_array_equal(got, ref)
    # at 2^53 NumPy's equal-width path rounds in float64, as gpusync does (documented)
    w = np.array([2**53, 1, 1])
    np.testing.assert_array_equal(host(gs.histogram(to_lib(np.zeros(3), lib), bins=1, weights=to_lib(w, lib))[0]),
                                  np.histogram(np.zeros(3), bins=1, weights=w)[0])


# row 19 ------------------------------------------------------------------------------------------

def test_sum_float64_partial_overflow_has_the_exact_sums_sign(backend):
    a = np.array([-1.287e308, 1e307, -6.7e307, 7e307, 1.8e307, 1.7e308, 1.47e308, 1.5e308, 1.75e308])
    with np.errstate(over="ignore"):
        assert np.sum(a) == np.inf
    for strategy in ("auto", "atomic", "mutex", "two-pass", "threadfence", "grid"):
        assert gs.sum(a, strategy=strategy) == np.inf, strategy
        assert gs.sum(-a, strategy=strategy) == -np.inf, strategy
    # partials overflow but the exact sum is finite: a finite sum within the
    # float bound n * eps * sum|x| of the exact 3.0 (NumPy gives inf here).
    # How much of the 3.0 survives depends on the engine's order of
    # additions (the caller's pairwise loop keeps it; two threads or a GPU
    # block cancel the big terms after the 3.0 was rounded away): all are
    # within the bound, which is ~1e293 here.
    b = np.array([1.7e308, 1.7e308, -1.7e308, -1.7e308, 3.0])
    got = gs.sum(b)
    assert np.isfinite(got)
    assert abs(got - 3.0) / 4 <= len(b) * 2.0**-52 * float(np.sum(np.abs(b) / 4))
    # non-finite input keeps IEEE's answer
    assert np.isnan(gs.sum(np.array([np.inf, -np.inf, 1.0])))
    assert gs.sum(np.array([np.inf, 1e308, 1e308])) == np.inf


def test_warnings_not_raised_by_the_rescaled_sum(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gs.sum(np.array([1.7e308, 1.7e308, -1.7e308]))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_histogram_integer_range_bounds_above_2_53_compare_exactly(backend, lib, dtype):
    """NumPy keeps first <= x <= last comparing integers exactly, then bins in float64."""
    base = 2**62 if dtype == np.int64 else 2**63 + 2**62
    a = np.array([base, base + 1, base + 700, base + 2**40, base - 1, base - 900, base + 2**41, 3], dtype)
    bounds = [(dtype(base), dtype(base + 2**40)), (dtype(base + 1), dtype(base + 2**41)),
              (dtype(base - 2**30), dtype(base))]
    if dtype == np.int64:  # Python ints (NumPy's own subtraction of uint64-sized Python ints overflows)
        bounds += [(base + 1, base + 2**41), (base - 2**30, base)]
    for rng_ in bounds:
        for bins in (1, 3, 7):
            ref = np.histogram(a, bins=bins, range=rng_)
            got = gs.histogram(to_lib(a, lib), bins=bins, range=rng_)
            np.testing.assert_array_equal(host(got[0]), ref[0], err_msg=f"{rng_} {bins}")
            np.testing.assert_array_equal(host(got[1]), ref[1])
