"""sum / count_nonzero / cumsum / packbits along axes against NumPy: dtypes x
shapes x axes x strides x sizes, keepdims, dtype, out, initial, where, bad
input with NumPy's exceptions and messages; host and device (CuPy, PyTorch)
inputs in the same tests."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusync as gs
from conftest import assert_raises_like_numpy, random_array, to_host, to_kind

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64]
SHAPES = [(0,), (1,), (31,), (33,), (100_000,), (0, 3), (3, 0), (1, 33), (31, 33), (33, 31), (7, 1, 5),
          (4, 5, 6), (2, 3, 4, 5), (250, 400)]




def _axes(ndim):
    out = [None] + list(range(ndim)) + [-1]
    if ndim >= 2:
        out += [(0, 1), (-1, 0)]
    if ndim >= 3:
        out += [(0, 2), (1, 2), tuple(range(ndim))]
    return out


def _close(got, ref, dtype):
    got = np.asarray(got)
    assert got.shape == np.shape(ref)
    assert got.dtype == np.asarray(ref).dtype, (got.dtype, np.asarray(ref).dtype)
    if np.dtype(dtype).kind == "f" or np.asarray(ref).dtype.kind == "f":
        tol = {2: 3e-3, 4: 2e-5, 8: 1e-10}[np.asarray(ref).dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref, np.float64), rtol=tol,
                                   atol=tol * 10 * np.sqrt(max(got.size and 1, 1)) * 100)
    else:
        np.testing.assert_array_equal(got, ref)


def _small_values(rng, dtype, shape):
    a = random_array(rng, dtype, int(np.prod(shape)))
    if np.dtype(dtype).kind == "f":
        a = (a / 16).astype(dtype)  # keep float16 sums finite
    return a.reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_count_axes(backend, kind, dtype, shape):
    a = _small_values(np.random.default_rng(len(shape) * 100 + sum(shape)), dtype, shape)
    x = to_kind(a, kind)
    for axis in _axes(len(shape)):
        for keepdims in (False, True):
            with np.errstate(over="ignore"):
                ref = np.sum(a, axis=axis, keepdims=keepdims)
            _close(to_host(gs.sum(x, axis=axis, keepdims=keepdims)), ref, dtype)
            got = to_host(gs.count_nonzero(x, axis=axis, keepdims=keepdims))
            np.testing.assert_array_equal(got, np.count_nonzero(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
                                   np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (31, 33), (33, 31), (4, 5, 6), (3, 100_000 // 3)], ids=str)
def test_cumsum_axes(backend, kind, dtype, shape):
    a = _small_values(np.random.default_rng(7), dtype, shape)
    x = to_kind(a, kind)
    for axis in [None] + list(range(len(shape))) + [-1]:
        ref = np.cumsum(a.astype(np.float64) if np.dtype(dtype).kind == "f" else a, axis=axis)
        ref = ref.astype(np.cumsum(a[:0]).dtype)
        _close(to_host(gs.cumsum(x, axis=axis)), ref, dtype)


@pytest.mark.sanitizer
@pytest.mark.parametrize("view", ["T", "step", "neg", "slice", "transpose3"])
def test_strided_views(backend, view):
    base = np.random.default_rng(3).standard_normal((40, 60, 8)).astype(np.float32)
    a = {"T": base[:, :, 0].T, "step": base[::3, 1::2, ::2], "neg": base[::-1, :, ::-2],
         "slice": base[5:30, 7:50, 3], "transpose3": base.transpose(2, 0, 1)}[view]
    for axis in _axes(a.ndim):
        _close(gs.sum(a, axis=axis), np.sum(a, axis=axis, dtype=np.float64).astype(np.float32), np.float32)
        np.testing.assert_array_equal(gs.count_nonzero(a > 0, axis=axis), np.count_nonzero(a > 0, axis=axis))
    for axis in range(a.ndim):
        _close(gs.cumsum(a, axis=axis), np.cumsum(a, axis=axis, dtype=np.float64).astype(np.float32), np.float32)


def test_sum_dtype_out_initial_where(backend, kind):
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, (31, 33)).astype(np.int32)
    x = to_kind(a, kind)
    for dtype in (None, np.int8, np.uint16, np.int64, np.float32, np.float64, bool):
        for axis in (None, 0, 1, (0, 1)):
            with np.errstate(over="ignore"):
                ref = np.sum(a, axis=axis, dtype=dtype, initial=3)
            _close(to_host(gs.sum(x, axis=axis, dtype=dtype, initial=3)), ref, ref.dtype)
    f = rng.standard_normal((31, 33))
    f[3, 4] = np.nan
    mask = np.isfinite(f) & (rng.random((31, 33)) > 0.3)
    xf = to_kind(f, kind)
    for axis in (None, 0, 1):
        _close(to_host(gs.sum(xf, axis=axis, where=mask)), np.sum(f, axis=axis, where=mask), np.float64)
        _close(to_host(gs.sum(xf, axis=axis, where=mask[0])), np.sum(f, axis=axis, where=mask[0]), np.float64)
    # float input, integer dtype: every element cast first, as NumPy does
    g = np.array([[1.5, 1.5], [2.7, -2.7]])
    np.testing.assert_array_equal(gs.sum(g, axis=1, dtype=np.int64), np.sum(g, axis=1, dtype=np.int64))
    # out written in place, the out's dtype is the loop dtype when dtype is None
    for out in (np.zeros(33, np.float64), np.zeros(33, np.int64), np.zeros((1, 33), np.float32)):
        keep = out.ndim == 2
        ref = np.sum(a, axis=0, out=np.zeros_like(out), keepdims=keep)
        if kind == "numpy":
            assert gs.sum(a, axis=0, out=out, keepdims=keep) is out
            _close(out, ref, out.dtype)
        else:
            o = to_kind(out, kind)
            assert gs.sum(x, axis=0, out=o, keepdims=keep) is o
            _close(to_host(o), ref, out.dtype)
    assert gs.sum(np.array([-0.0])) == 0 and np.signbit(gs.sum(np.array([-0.0]), axis=0))


def test_cumsum_dtype_out(backend, kind):
    a = np.arange(60, dtype=np.int16).reshape(3, 4, 5) - 30
    x = to_kind(a, kind)
    for dtype in (np.int8, np.int32, np.float32, np.float64):
        for axis in (None, 0, 1, 2):
            with np.errstate(over="ignore"):
                ref = np.cumsum(a, axis=axis, dtype=dtype)
            _close(to_host(gs.cumsum(x, axis=axis, dtype=dtype)), ref, dtype)
    out = np.zeros((3, 4, 5), np.float64)
    if kind == "numpy":
        assert gs.cumsum(a, 1, None, out) is out
        np.testing.assert_array_equal(out, np.cumsum(a, 1))
    f = np.array([[1.5, 2.5], [-0.5, 7.25]])
    np.testing.assert_array_equal(gs.cumsum(f, axis=0, dtype=np.int64), np.cumsum(f, axis=0, dtype=np.int64))


@pytest.mark.parametrize("shape,axis", [((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), 2), ((3, 4, 5), -1),
                                        ((31, 33), 0), ((31, 33), 1), ((1, 0), 1), ((8, 16), 1),
                                        ((3, 4, 16), -1), ((3, 4, 16), 2), ((5, 0), -1), ((0, 8), 1)])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_axis(backend, kind, shape, axis, bitorder):
    a = np.random.default_rng(1).integers(0, 3, shape).astype(np.uint8)
    got = to_host(gs.packbits(to_kind(a, kind), axis, bitorder))
    np.testing.assert_array_equal(got, np.packbits(a, axis, bitorder))
    assert got.shape == np.packbits(a, axis, bitorder).shape
    f = np.random.default_rng(2).standard_normal(shape)
    np.testing.assert_array_equal(to_host(gs.packbits(to_kind(f, kind), axis, bitorder, threshold=0.5)),
                                  np.packbits(f > 0.5, axis, bitorder))


def test_bad_axes_out_like_numpy(backend):
    a = np.ones((3, 4))
    for axis in (2, -3, (0, 2), (0, 0), (1, -1)):
        assert_raises_like_numpy(lambda: np.sum(a, axis=axis), lambda: gs.sum(a, axis=axis))
        assert_raises_like_numpy(lambda: np.count_nonzero(a, axis=axis), lambda: gs.count_nonzero(a, axis=axis))
    for axis in (2, -3):
        assert_raises_like_numpy(lambda: np.cumsum(a, axis=axis), lambda: gs.cumsum(a, axis=axis))
        u = a.astype(np.uint8)  # (NumPy packs integers and bool only; gpusync also floats, as a != 0)
        assert_raises_like_numpy(lambda: np.packbits(u, axis=axis), lambda: gs.packbits(u, axis=axis))
    assert_raises_like_numpy(lambda: np.sum(a, axis=0.5), lambda: gs.sum(a, axis=0.5))
    for out in (np.zeros(3), np.zeros((4, 1)), np.zeros((2, 4))):
        assert_raises_like_numpy(lambda: np.sum(a, axis=0, out=out), lambda: gs.sum(a, axis=0, out=out))
    o, r = np.zeros(4, np.int64), np.zeros(4, np.int64)  # NumPy casts a float64 sum into an int64 out
    np.testing.assert_array_equal(gs.sum(a + .5, axis=0, out=o, dtype=np.float64),
                                  np.sum(a + .5, axis=0, out=r, dtype=np.float64))
    np.testing.assert_array_equal(gs.sum(a + .7, axis=0, out=np.zeros(4, np.int64)),
                                  np.sum(a + .7, axis=0, out=np.zeros(4, np.int64)))
    assert_raises_like_numpy(lambda: np.sum(a, axis=0, out=np.zeros((1, 4)), keepdims=False),
                             lambda: gs.sum(a, axis=0, out=np.zeros((1, 4)), keepdims=False))
    assert_raises_like_numpy(lambda: np.sum(a, where=np.ones(3, bool)), lambda: gs.sum(a, where=np.ones(3, bool)))
    assert_raises_like_numpy(lambda: np.cumsum(a, axis=1, out=np.zeros((4, 3))),
                             lambda: gs.cumsum(a, axis=1, out=np.zeros((4, 3))))
    with pytest.raises(TypeError):
        gs.sum(a, axis=0, out=[0, 0, 0, 0])
    with pytest.raises(TypeError):
        np.sum(a, axis=0, out=[0, 0, 0, 0])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(st.sampled_from([np.int16, np.int64, np.float64, np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6),
                  elements={"allow_nan": False, "allow_infinity": False, "min_value": -1000, "max_value": 1000}),
       st.data())
def test_property_sum_matches_numpy(a, data):
    axes = data.draw(st.sets(st.integers(0, a.ndim - 1)).map(tuple) | st.none())
    keep = data.draw(st.booleans())
    flip = data.draw(st.booleans())
    if flip:
        a = a[..., ::-1]
    with np.errstate(over="ignore"):
        ref = np.sum(a, axis=axes, keepdims=keep)
    _close(gs.sum(a, axis=axes, keepdims=keep), ref, a.dtype)
    np.testing.assert_array_equal(gs.count_nonzero(a, axis=axes, keepdims=keep),
                                  np.count_nonzero(a, axis=axes, keepdims=keep))
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ref = np.cumsum(a, axis=ax)
    _close(gs.cumsum(a, axis=ax), ref, a.dtype)


# ---- the axis kernels' paths (issue 15): rows / columns, warp / block groups, 16-byte vectors, parts ----------

KERNEL_DTYPES = [np.int8, np.int32, np.float32, np.float64, np.bool_]


def _cumsum_ref(a, axis):
    ref = np.cumsum(a.astype(np.float64) if a.dtype.kind == "f" else a, axis=axis)
    return ref.astype(np.cumsum(a[:0]).dtype)


def _check_all_axes(a, x, axes):
    for axis in axes:
        with np.errstate(over="ignore"):
            ref = np.sum(a, axis=axis)
        _close(to_host(gs.sum(x, axis=axis)), ref, a.dtype)
        np.testing.assert_array_equal(to_host(gs.count_nonzero(x, axis=axis)), np.count_nonzero(a, axis=axis))
    for axis in [None] + list(range(a.ndim)) + [-1]:
        _close(to_host(gs.cumsum(x, axis=axis)), _cumsum_ref(a, axis), a.dtype)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (31, 33), (33, 31), (4097, 3), (3, 4097)], ids=str)
def test_axis_kernels_shapes(backend, kind, dtype, shape):
    a = _small_values(np.random.default_rng(sum(shape) + 11), dtype, shape)
    _check_all_axes(a, to_kind(a, kind), [None, 0, 1, -1, (0, 1), (-1, 0)])


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(300, 4100), (257, 1030), (2, 70000), (40000, 2), (5000, 512), (6, 700, 12),
                                   (20001, 64), (2001, 130)], ids=str)
def test_axis_kernels_long(backend, kind, dtype, shape):
    """Long rows (a block per row, 16-byte loads, a partial last tile), wide
    aligned columns (vector columns), few long rows or columns (the axis split
    into parts: sums, and scans whose parts start from the totals of the parts
    before them), a middle axis; many narrow rows (8 threads a row up to 1 KiB
    of row, a warp past it)."""
    a = _small_values(np.random.default_rng(len(shape) + shape[0]), dtype, shape)
    axes = [None] + list(range(len(shape))) + [-1] + ([(0, 1), (1, 2)] if len(shape) == 3 else [(0, 1)])
    _check_all_axes(a, to_kind(a, kind), axes)


def _view(obj, kind, view):
    """A strided view of a (40, 60, 8) array; None where the library has none."""
    if view == "neg" and kind == "torch":
        return None  # PyTorch has no negative strides
    if view == "T":
        return obj[:, :, 0].T
    if view == "step":
        return obj[::3, 1::2, ::2]
    if view == "neg":
        return obj[::-1, :, ::-2]
    if view == "slice":
        return obj[5:30, 7:50, 3]
    if view == "transpose3":
        return obj.permute(2, 0, 1) if kind == "torch" else obj.transpose(2, 0, 1)
    if view == "offset":  # contiguous, one element past an aligned start: rows off the 16-byte grid
        return obj.reshape(-1)[1:1 + 59 * 8 * 5].reshape(59 * 5, 8)
    raise AssertionError(view)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("view", ["T", "step", "neg", "slice", "transpose3", "offset"])
def test_axis_kernels_views(backend, kind, view, dtype):
    base = _small_values(np.random.default_rng(3), dtype, (40, 60, 8))
    a = _view(base, "numpy", view)
    x = _view(to_kind(base, kind), kind, view)
    if x is None:
        pytest.skip(f"{kind} has no {view} view")
    _check_all_axes(a, x, _axes(a.ndim))


def test_axis_kernels_long_offset_rows(backend, kind):
    """Long contiguous rows whose starts are not 16-byte aligned: the scalar
    head before the vector loads, and the scans' scalar path."""
    flat = np.random.default_rng(9).standard_normal(7 * 5000 + 3).astype(np.float32)
    x = to_kind(flat, kind)
    for off in (1, 2, 3):
        a = flat[off:off + 7 * 5000].reshape(7, 5000)
        v = x[off:off + 7 * 5000].reshape(7, 5000)
        _check_all_axes(a, v, [None, 0, 1])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32", "float64", "bool"])
@pytest.mark.parametrize("shape", [(5,), (300, 7), (7, 300), (3, 4, 1000), (40_000, 3)])
def test_host_axis_through_the_dispatcher(dtype, shape):
    """sum / count_nonzero of a C-contiguous NumPy array along one int axis go
    straight to the dispatcher (the engine by the cost model, a plan
    recorded): NumPy's values, dtype, shape and scalar type for 1-D; short
    rows cost no more than their elements (the CPU engine zeroes only the
    accumulators a row uses)."""
    rng = np.random.default_rng(len(shape))
    a = (rng.random(shape) * 3).astype(dtype)
    for axis in range(-len(shape), len(shape)):
        for fn, ref in ((lambda x: gs.sum(x, axis=axis), np.sum(a, axis=axis)),
                        (lambda x: gs.count_nonzero(x, axis=axis), np.count_nonzero(a, axis=axis))):
            gs.cumsum(np.ones(1681))  # another op's record first: the call must leave its own
            got = fn(a)
            assert type(got) is type(ref) and np.shape(got) == np.shape(ref)
            assert np.asarray(got).dtype == np.asarray(ref).dtype
            if dtype == "float16" and np.asarray(ref).dtype == np.float16:
                # NumPy adds float16 in float16 (long sums drift); gpusync in float64, rounded once
                np.testing.assert_allclose(got, np.sum(a.astype(np.float64), axis=axis).astype(np.float16),
                                           rtol=1e-2)
            elif a.dtype.kind == "f":  # float32: NumPy's pairwise float32 sum against gpusync's float64 one
                np.testing.assert_allclose(got, ref, rtol=2e-5 if dtype == "float32" else 1e-12)
            else:
                np.testing.assert_array_equal(got, ref)
            plan = gs.last_plan()
            assert plan["place"] == "host" and plan["engine"] in ("caller", "cpu", "cuda"), plan
            assert plan["op"] in ("sum", "count_nonzero") and plan["n"] == a.size, plan
    for kw in ({"keepdims": True}, {"dtype": np.float64}, {"initial": 2}):  # the general path records its plan too
        for ax in (0, -1):
            gs.cumsum(np.ones(1681))
            gs.sum(a, axis=ax, **kw)
            assert gs.last_plan()["op"] == "sum" and gs.last_plan()["n"] == a.size, (kw, ax)
    # a strided view takes the general path: same values
    v = a[..., ::2] if a.ndim > 1 else a[::2]
    np.testing.assert_allclose(gs.sum(v, axis=0).astype(np.float64),
                               np.sum(v.astype(np.float64), axis=0).astype(np.sum(v, axis=0).dtype).astype(np.float64),
                               rtol={"float16": 1e-2, "float32": 2e-5}.get(dtype, 1e-12))
