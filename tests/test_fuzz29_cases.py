"""The defects a seeded differential fuzz against NumPy / SciPy found (session 29, each
minimized to one call), kept as regression tests on both engines; device arrays in the last one."""
import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.usefixtures("backend")  # every case on both engines (the CUDA one with a GPU)


def _raises_like(np_call, gs_call):
    try:
        np_call()
    except Exception as e:  # noqa: BLE001 - the type is the contract
        with pytest.raises(type(e)):
            gs_call()
    else:
        raise AssertionError("NumPy did not raise")


@pytest.mark.parametrize("a,dtype", [(np.full(3, 30000, np.float16), np.float32),
                                     (np.array([2048, 1, 1], np.float16), np.float32),
                                     (np.full(2, 3e38, np.float32), np.float64),
                                     (np.full((2, 3), 3e38, np.float32), np.float64)])
def test_cumsum_into_a_wider_float_keeps_every_prefix_wide(a, dtype):
    """dtype= is the accumulator: each prefix in the wider float, not rounded to the input's."""
    want = np.cumsum(a, dtype=dtype)
    got = gs.cumsum(a, dtype=dtype)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    if a.ndim == 1:
        np.testing.assert_allclose(gs.cumsum(a, axis=0, dtype=dtype), np.cumsum(a, axis=0, dtype=dtype), rtol=1e-6)


@pytest.mark.parametrize("case", ["int_into_float", "f16_into_f64", "f16_into_f32", "u64_axis_into_float",
                                  "cumsum_int_into_float", "cumsum_axis_int_into_float", "float_into_int",
                                  "int8_into_int8", "int8_into_int16", "float_into_int_past_a_buffer",
                                  "float_axis_into_int_past_a_buffer", "f32_into_int32_past_a_buffer"])
def test_out_of_another_dtype_sets_the_accumulator(case):
    """NumPy's rule: without dtype=, the loop is the one it resolves for `out` (an int64 sum
    into a float64 out adds floats; a float16 sum into float32 adds float32)."""
    big = np.full(3, 2**62)
    f16 = np.full(3, 30000, np.float16)
    i8 = np.array([100, 100, 100], np.int8)
    cases = {
        "int_into_float": (np.sum, big, {}, np.zeros(())),
        "f16_into_f64": (np.sum, f16, {}, np.zeros(())),
        "f16_into_f32": (np.sum, f16, {}, np.zeros((), np.float32)),
        "u64_axis_into_float": (np.sum, np.array([[2**63], [2**63]], np.uint64), {"axis": 0}, np.zeros(1)),
        "cumsum_int_into_float": (np.cumsum, big, {}, np.zeros(3)),
        "cumsum_axis_int_into_float": (np.cumsum, np.full((3, 2), 2**62), {"axis": 0}, np.zeros((3, 2))),
        "float_into_int": (np.sum, np.ones((3, 4)) + .7, {"axis": 0}, np.zeros(4, np.int64)),
        "int8_into_int8": (np.sum, i8, {}, np.zeros((), np.int8)),
        "int8_into_int16": (np.sum, i8, {}, np.zeros((), np.int16)),
        # NumPy truncates its float partial sums into an int out after each buffer (8192 elements): 5734, not 5735
        "float_into_int_past_a_buffer": (np.sum, np.full(8193, .7), {}, np.zeros((), np.int64)),
        "float_axis_into_int_past_a_buffer": (np.sum, np.full((5, 8193), .7), {"axis": 0}, np.zeros(8193, np.int64)),
        "f32_into_int32_past_a_buffer": (np.sum, np.full(20000, .7, np.float32), {}, np.zeros((), np.int32)),
    }
    fn, a, kw, out = cases[case]
    want = fn(a, out=out.copy(), **kw)
    gfn = gs.sum if fn is np.sum else gs.cumsum
    o = out.copy()
    got = gfn(a, out=o, **kw)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-12)
    np.testing.assert_allclose(o.astype(np.float64), np.asarray(want, np.float64), rtol=1e-12)


def test_float_sum_into_an_int_subclass_or_memmap_out(tmp_path):
    """The per-buffer truncation of NumPy's float sum into an int `out` holds for an out of any ndarray class."""
    class Sub(np.ndarray):
        pass

    a = np.full((2, 8193), .7)
    mm = np.memmap(tmp_path / "o.bin", np.int64, "w+", shape=(2,))
    for out, kw in ((np.zeros((), np.int64).view(Sub), {}), (mm, {"axis": 1})):
        want = np.sum(a, out=np.zeros(out.shape, out.dtype), **kw)
        got = gs.sum(a, out=out, **kw)
        np.testing.assert_array_equal(np.asarray(out), want)
        assert got is out


def test_where_broadcasts_to_a_not_a_to_where():
    a = np.ones(3)
    for kw in ({}, {"axis": 0}):
        _raises_like(lambda: np.sum(a, where=np.ones((2, 3), bool), **kw),
                     lambda: gs.sum(a, where=np.ones((2, 3), bool), **kw))
    np.testing.assert_array_equal(gs.sum(np.ones((2, 3)), where=np.array([True, False, True])),
                                  np.sum(np.ones((2, 3)), where=np.array([True, False, True])))


@pytest.mark.parametrize("axis", [0, -1, 1, (0,), ()])
def test_reductions_of_0d_take_axis_0_like_numpy(axis):
    for gfn, nfn in ((gs.sum, np.sum), (gs.count_nonzero, np.count_nonzero)):
        try:
            want = nfn(np.array(5), axis=axis)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                gfn(np.array(5), axis=axis)
            continue
        got = gfn(np.array(5), axis=axis)
        assert got == want and np.asarray(got).dtype == np.asarray(want).dtype


def test_bincount_of_an_empty_sequence():
    for args, kw in ((([],), {}), (((),), {}), (([],), {"minlength": 3}), (([], []), {"minlength": 2})):
        got, want = gs.bincount(*args, **kw), np.bincount(*args, **kw)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_dot_of_a_scalar_into_out_follows_numpys_casting_and_returns():
    b = np.arange(3, dtype=np.int8)
    for out in (np.zeros(3, np.uint8), np.zeros(4, np.int8)):
        _raises_like(lambda: np.dot(np.int8(3), b, out=out), lambda: gs.dot(np.int8(3), b, out=out))
    o = np.zeros(3, np.int8)
    assert gs.dot(np.int8(3), b, out=o) is o and np.array_equal(o, [0, 3, 6])
    o = np.zeros(())
    got = gs.dot(np.ones(3), np.ones(3), out=o)
    assert type(got) is type(np.dot(np.ones(3), np.ones(3), out=np.zeros(()))) and got == 3 and o == 3


def test_dot_of_scalars_and_outs_follows_numpy():
    b = np.arange(3.0)
    calls = [lambda m: m.dot(2.0, b, out=np.zeros(3, np.float32)), lambda m: m.dot(2.0, b, out=np.zeros(3)),
             lambda m: m.dot(2.0, b, out=np.zeros(3, np.int64)), lambda m: m.dot(2, np.arange(3), out=np.zeros(3)),
             lambda m: m.dot(2, np.arange(3), out=np.zeros(3, np.int32)), lambda m: m.dot(2.0, 3.0, out=np.zeros(())),
             lambda m: m.dot(2.0, b, out=np.zeros(3)[::-1]), lambda m: m.dot(2.0, b, out=np.zeros(4)),
             lambda m: m.dot(1, 2**63), lambda m: m.dot(True, 2**63), lambda m: m.dot(2**63, 2**63),
             lambda m: m.dot(2**64, 2), lambda m: m.dot(2.5, 2), lambda m: m.dot(True, False)]
    for call in calls:
        try:
            want = call(np)
        except Exception as e:  # noqa: BLE001 - the type is the contract
            with pytest.raises(type(e)):
                call(gs)
            continue
        got = call(gs)
        assert type(got) is type(want) and np.array_equal(got, want), (got, want)


def test_histogramdd_stacks_mixed_dtypes_as_numpy():
    x = np.arange(256, dtype=np.uint8)
    s = [x, np.zeros(256, np.int8), np.zeros(256, np.float16)]
    np.testing.assert_array_equal(gs.histogramdd(s, bins=(16, 1, 1))[0], np.histogramdd(s, bins=(16, 1, 1))[0])
    s = [np.array([1], np.int8), np.array([3], np.uint16), np.array([.5], np.float32)]
    assert gs.histogramdd(s, bins=1)[1][0].dtype == np.histogramdd(s, bins=1)[1][0].dtype


def test_binned_statistic_of_several_value_arrays():
    ss = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x, v = rng.random(1000), rng.random((3, 1000))
    for stat in ("sum", "mean", "std", "count", "min", "max", "median"):
        for bins, rg in ((7, None), (7, (0.1, 0.9)), (np.linspace(0, 1, 9), None)):
            a, b = gs.binned_statistic(x, v, stat, bins=bins, range=rg), ss.binned_statistic(x, v, stat, bins=bins,
                                                                                            range=rg)
            assert a.statistic.shape == b.statistic.shape
            np.testing.assert_allclose(a.statistic, b.statistic, rtol=1e-12, equal_nan=True)
            np.testing.assert_array_equal(a.bin_edges, b.bin_edges)
            np.testing.assert_array_equal(a.binnumber, b.binnumber)
    a = gs.binned_statistic([0., 1, 2], [[1., 2, 3], [4., 5, 6]], "sum", bins=2)
    np.testing.assert_array_equal(a.statistic, [[1, 5], [4, 11]])


def test_histogramdd_of_one_edge_is_empty_like_numpy():
    for sample, bins in ((np.array([[1., 2.]]), [np.array([1.0]), 2]),
                         (np.array([[1., 2.], [3, 4]]), [np.array([1.0]), np.array([0., 5])])):
        got, want = gs.histogramdd(sample, bins=bins), np.histogramdd(sample, bins=bins)
        assert got[0].shape == want[0].shape and got[0].dtype == want[0].dtype
        for g, w in zip(got[1], want[1]):
            np.testing.assert_array_equal(g, w)


def test_histogramdd_int64_against_integer_edges_beyond_2_53_is_exact():
    np.testing.assert_array_equal(gs.histogramdd([np.array([2**53 + 1])], bins=[np.array([2**53 - 2, 2**53])])[0],
                                  [0.])
    rng = np.random.default_rng(0)
    x, y, w = rng.integers(-2**62, 2**62, 1000), rng.integers(-2**62, 2**62, 1000), rng.random(1000)
    ex, ey = np.sort(rng.integers(-2**62, 2**62, 6)), np.sort(rng.integers(-2**62, 2**62, 4))
    ex[-1] = x.max()  # the closed last edge
    for kw in ({}, {"weights": w}, {"density": True}):
        got, want = gs.histogramdd([x, y], bins=[ex, ey], **kw), np.histogramdd([x, y], bins=[ex, ey], **kw)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert gs.last_plan()["strategy_used"] == "exact"
    np.testing.assert_array_equal(gs.histogram2d(x, y, bins=[ex, 3])[0], np.histogram2d(x, y, bins=[ex, 3])[0])


@pytest.mark.gpu
def test_device_arrays_take_the_same_accumulators():
    cp = pytest.importorskip("cupy")
    a16 = np.full(3, 30000, np.float16)
    np.testing.assert_allclose(cp.asnumpy(gs.cumsum(cp.asarray(a16), dtype=np.float32)),
                               np.cumsum(a16, dtype=np.float32))
    big = np.full(3, 2**62)
    out = cp.zeros(())
    gs.sum(cp.asarray(big), out=out)
    np.testing.assert_allclose(float(out), np.sum(big, out=np.zeros(())), rtol=1e-12)
    out = cp.zeros(3)
    gs.cumsum(cp.asarray(big), out=out)
    np.testing.assert_allclose(cp.asnumpy(out), np.cumsum(big, out=np.zeros(3)), rtol=1e-12)
    with pytest.raises(ValueError):
        gs.sum(cp.ones(3), where=cp.ones((2, 3), bool))
    assert int(gs.sum(cp.asarray(np.array(5)), axis=0)) == 5


@pytest.mark.parametrize("shape, axis", [((0,), None), ((3,), None), ((0, 3), 0), ((0, 3), 1), ((2, 3), 0),
                                         ((2, 0), 1)])
@pytest.mark.parametrize("initial", [None, -0.0, 5])
def test_initial_none_and_an_empty_reductions_initial(backend, shape, axis, initial):
    """review30: initial=None is NumPy's "no initial value" (an error only for an empty reduction), and an
    empty reduction is its initial itself (-0.0 keeps its sign)."""
    a = np.zeros(shape)
    try:
        ref = np.sum(a, axis=axis, initial=initial)
    except ValueError:
        with pytest.raises(ValueError):
            gs.sum(a, axis=axis, initial=initial)
        return
    got = gs.sum(a, axis=axis, initial=initial)
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))
