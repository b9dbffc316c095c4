"""Complex numbers in sum, cumsum, count_nonzero and dot against NumPy: complex64 /
complex128 inputs, real inputs with a complex dtype= / out=, shapes x axes x strides,
keepdims, initial (complex too), where, out; NumPy's errors and ComplexWarnings.  Every
case on both engines (the CUDA one with a GPU) and with CuPy / PyTorch device arrays in
the same tests (marked gpu: skipped without one)."""
import warnings

import numpy as np
import pytest

import gpusync as gs
from test_axis import to_host, to_kind  # noqa: F401 - the device-array parameter

CDTYPES = [np.complex64, np.complex128]
SHAPES = [(0,), (1,), (31,), (33,), (1000,), (4, 5), (3, 4, 5)]
REAL_DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]



def _lib_of(r, kind):
    if kind == "numpy":
        assert type(r) is np.ndarray or isinstance(r, np.generic), type(r)
    else:
        assert type(r).__module__.split(".")[0] == kind, type(r)


def _rtol(dt):
    return 1e-5 if np.dtype(dt) in (np.dtype(np.complex64), np.dtype(np.float32), np.dtype(np.float16)) else 1e-12


def close(got, ref, a, kind="numpy", rtol=None):
    """got == ref within float rounding, same dtype and shape (and the input's library)."""
    _lib_of(got, kind)
    got = to_host(got)
    ref_dt = np.asarray(ref).dtype
    assert np.asarray(got).dtype == ref_dt, (np.asarray(got).dtype, ref_dt)
    assert np.shape(got) == np.shape(ref), (np.shape(got), np.shape(ref))
    rtol = _rtol(ref_dt) if rtol is None else rtol
    scale = float(np.abs(np.asarray(a, np.complex128)).sum()) + 1.0  # the sum's error bound: rtol * sum |a|
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=rtol, atol=rtol * scale)


def crandom(rng, dtype, shape, zeros=False):
    re = rng.standard_normal(shape)
    im = rng.standard_normal(shape)
    if zeros:  # exact zeros in either part (count_nonzero: an element counts when one part is non-zero)
        re[rng.random(shape) < 0.4] = 0
        im[rng.random(shape) < 0.4] = 0
    return (re + 1j * im).astype(dtype)


def rrandom(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _axes(ndim):
    out = [None] + list(range(ndim)) + [-1]
    if ndim >= 2:
        out += [(0, 1), (-1, 0), ()]
    if ndim >= 3:
        out += [(0, 2), (1, 2), (0, 1, 2)]
    return out


def _views(a):
    """The array, a[::2] and (2-D and up) its transpose: contiguous and strided inputs."""
    out = [("contig", a), ("step", a[::2])]
    if a.ndim >= 2:
        out.append(("T", a.T))
    return out


def _device_view(x, name, kind):
    if name == "step":
        return x[::2]
    if name == "T":
        return x.permute(*reversed(range(x.ndim))) if kind == "torch" else x.T
    return x


# ---- sum ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_complex_input(kind, dtype, shape):
    a = crandom(np.random.default_rng(sum(shape) + len(shape)), dtype, shape)
    for name, v in _views(a):
        x = _device_view(to_kind(a, kind), name, kind)
        for axis in _axes(a.ndim):
            for keepdims in (False, True):
                close(gs.sum(x, axis=axis, keepdims=keepdims), np.sum(v, axis=axis, keepdims=keepdims), v, kind)


@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0,), (33,), (4, 5), (3, 4, 5)], ids=str)
def test_sum_complex_initial_where_dtype(kind, dtype, shape):
    rng = np.random.default_rng(7 + sum(shape))
    a = crandom(rng, dtype, shape)
    x = to_kind(a, kind)
    where = rng.random(shape) < 0.6
    where_last = rng.random(shape[-1:]) < 0.5  # broadcast along the leading axes
    for axis in _axes(a.ndim):
        for kw in ({"initial": 1.5 - 2j}, {"initial": 3}, {"where": where}, {"where": where_last},
                   {"where": where, "initial": -1j, "keepdims": True}, {"dtype": np.complex128},
                   {"dtype": np.complex64}, {"where": False}):
            close(gs.sum(x, axis=axis, **kw), np.sum(a, axis=axis, **kw), a, kind)


@pytest.mark.parametrize("rdtype", REAL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cdtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0,), (1,), (33,), (1000,), (4, 5), (3, 4, 5)], ids=str)
def test_sum_real_input_complex_dtype(kind, rdtype, cdtype, shape):
    a = rrandom(np.random.default_rng(len(shape) + sum(shape)), rdtype, shape)
    x = to_kind(a, kind)
    for axis in _axes(a.ndim):
        for kw in ({}, {"keepdims": True}, {"initial": 2 + 1j}, {"where": np.ones(shape, bool)}):
            ref = np.sum(a, axis=axis, dtype=cdtype, **kw)
            close(gs.sum(x, axis=axis, dtype=cdtype, **kw), ref, a, kind, rtol=_rtol(cdtype))


@pytest.mark.parametrize("dtype", CDTYPES + [np.float32, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("odtype", CDTYPES, ids=lambda d: np.dtype(d).name)
def test_sum_into_a_complex_out(kind, dtype, odtype):
    rng = np.random.default_rng(3)
    a = (crandom(rng, dtype, (6, 7)) if np.dtype(dtype).kind == "c" else rrandom(rng, dtype, (6, 7)))
    x = to_kind(a, kind)
    for axis, keepdims in [(None, False), (0, False), (-1, True), ((0, 1), True)]:
        ref_out = np.zeros(np.sum(a, axis=axis, keepdims=keepdims).shape, odtype)
        ref = np.sum(a, axis=axis, keepdims=keepdims, out=ref_out)
        out = to_kind(np.zeros(ref_out.shape, odtype), kind)
        got = gs.sum(x, axis=axis, keepdims=keepdims, out=out)
        assert got is out
        close(out, ref, a, kind, rtol=max(_rtol(odtype), _rtol(np.result_type(dtype, np.float32))))


def test_sum_complex_into_a_real_out_or_dtype_casts_like_numpy(backend):
    """NumPy casts complex to a real out / dtype unsafely (the real part) with a ComplexWarning."""
    a = crandom(np.random.default_rng(0), np.complex64, (5, 6))
    for kw in ({"dtype": np.float64}, {"dtype": np.int64, "axis": 1}, {"axis": 0, "out": np.zeros(6)},
               {"out": np.zeros((), np.int64)}):
        ref_kw = {k: (np.zeros_like(v) if k == "out" else v) for k, v in kw.items()}
        with pytest.warns(np.exceptions.ComplexWarning):
            ref = np.sum(a, **ref_kw)
        with pytest.warns(np.exceptions.ComplexWarning):
            got = gs.sum(a, **kw)
        close(got, ref, a.real)
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # as an error: raised like NumPy's
        with pytest.raises(np.exceptions.ComplexWarning):
            gs.sum(a, dtype=np.float32)


def test_sum_complex_strategies(backend):
    a = crandom(np.random.default_rng(1), np.complex128, 100_001)
    for strategy in gs.REDUCE_STRATEGIES:
        close(gs.sum(a, strategy=strategy), np.sum(a), a)
    close(gs.sum(a, deterministic=True), np.sum(a), a)
    with pytest.raises(ValueError, match="cannot be deterministic"):
        gs.sum(a, strategy="atomic", deterministic=True)
    with pytest.raises(ValueError, match="strategy"):
        gs.sum(a, strategy="nope")


def test_sum_of_negative_zeros_is_positive_zero_like_numpy(kind):
    """NumPy's complex sums start from +0 (its real float sums keep -0.0)."""
    z = np.full((3, 4), complex(-0.0, -0.0), np.complex64)
    for axis in (None, 0, 1):
        for a in (z, z.real):
            kw = {} if a is z else {"dtype": np.complex64}
            got = np.asarray(to_host(gs.sum(to_kind(a, kind), axis=axis, **kw)))
            want = np.sum(a, axis=axis, **kw)
            np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
            np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


# ---- cumsum -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cumsum_complex_input(kind, dtype, shape):
    a = crandom(np.random.default_rng(11 + sum(shape)), dtype, shape)
    for name, v in _views(a):
        x = _device_view(to_kind(a, kind), name, kind)
        for axis in [None] + list(range(a.ndim)) + [-1]:
            close(gs.cumsum(x, axis=axis), np.cumsum(v, axis=axis), v, kind)
        close(gs.cumsum(x, dtype=np.complex128), np.cumsum(v, dtype=np.complex128), v, kind)


@pytest.mark.parametrize("rdtype", REAL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cdtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0,), (1,), (33,), (1000,), (4, 5), (3, 4, 5)], ids=str)
def test_cumsum_real_input_complex_dtype(kind, rdtype, cdtype, shape):
    a = rrandom(np.random.default_rng(5 + sum(shape)), rdtype, shape)
    x = to_kind(a, kind)
    for axis in [None] + list(range(a.ndim)) + [-1]:
        close(gs.cumsum(x, axis=axis, dtype=cdtype), np.cumsum(a, axis=axis, dtype=cdtype), a, kind,
              rtol=_rtol(cdtype))


@pytest.mark.parametrize("dtype", CDTYPES + [np.float32, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("odtype", CDTYPES, ids=lambda d: np.dtype(d).name)
def test_cumsum_into_a_complex_out(kind, dtype, odtype):
    rng = np.random.default_rng(4)
    a = (crandom(rng, dtype, (5, 8)) if np.dtype(dtype).kind == "c" else rrandom(rng, dtype, (5, 8)))
    x = to_kind(a, kind)
    for axis in (None, 0, -1):
        ref = np.cumsum(a, axis=axis, out=np.zeros(np.cumsum(a, axis=axis).shape, odtype))
        out = to_kind(np.zeros(ref.shape, odtype), kind)
        assert gs.cumsum(x, axis=axis, out=out) is out
        close(out, ref, a, kind, rtol=max(_rtol(odtype), _rtol(np.result_type(dtype, np.float32))))


def test_cumsum_complex_casts_and_errors_like_numpy(backend):
    a = crandom(np.random.default_rng(2), np.complex128, (4, 6))
    with pytest.warns(np.exceptions.ComplexWarning):
        ref = np.cumsum(a, axis=1, dtype=np.float64)
    with pytest.warns(np.exceptions.ComplexWarning):
        close(gs.cumsum(a, axis=1, dtype=np.float64), ref, a.real)
    with pytest.warns(np.exceptions.ComplexWarning):
        ref = np.cumsum(a, out=np.zeros(24))
    with pytest.warns(np.exceptions.ComplexWarning):
        close(gs.cumsum(a, out=np.zeros(24)), ref, a.real)
    for call in (lambda m: m.cumsum(a, axis=2), lambda m: m.cumsum(a, axis=0.5),
                 lambda m: m.cumsum(a, out=np.zeros(23, np.complex128)), lambda m: m.cumsum(a, dtype="nope")):
        with pytest.raises(Exception) as e:
            call(np)
        with pytest.raises(type(e.value)):
            call(gs)
    np.testing.assert_array_equal(gs.cumsum(np.complex64(1 + 2j)), np.cumsum(np.complex64(1 + 2j)))
    assert gs.cumsum(np.complex64(1 + 2j), axis=0).shape == (1,)


# ---- count_nonzero ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_count_nonzero_complex(kind, dtype, shape):
    a = crandom(np.random.default_rng(21 + sum(shape)), dtype, shape, zeros=True)
    if a.size:
        a.reshape(-1)[0] = complex(np.nan, 0)  # NaN is non-zero
    for name, v in _views(a):
        x = _device_view(to_kind(a, kind), name, kind)
        got = gs.count_nonzero(x)
        want = np.count_nonzero(v)
        _lib_of(got, kind)
        assert int(to_host(got)) == want
        for axis in _axes(a.ndim)[1:]:
            for keepdims in (False, True):
                got = gs.count_nonzero(x, axis=axis, keepdims=keepdims)
                want = np.count_nonzero(v, axis=axis, keepdims=keepdims)
                got = np.asarray(to_host(got))
                assert got.shape == np.shape(want)
                np.testing.assert_array_equal(got, want)


def test_count_nonzero_complex_threshold_is_refused(backend):
    with pytest.raises(TypeError, match="complex"):
        gs.count_nonzero(np.ones(3, np.complex64), threshold=0.5)


# ---- dot ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("da,db", [(np.complex64, np.complex64), (np.complex128, np.complex128),
                                   (np.complex64, np.complex128), (np.complex64, np.float32),
                                   (np.float64, np.complex64), (np.int64, np.complex64), (np.complex128, np.int8),
                                   (np.bool_, np.complex64)], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 31, 33, 1000])
def test_dot_complex(kind, da, db, n):
    rng = np.random.default_rng(n)
    a = crandom(rng, da, 2 * n) if np.dtype(da).kind == "c" else rrandom(rng, da, 2 * n)
    b = crandom(rng, db, 2 * n) if np.dtype(db).kind == "c" else rrandom(rng, db, 2 * n)
    scale = np.abs(a.astype(np.complex128)) @ np.abs(b.astype(np.complex128))
    for va, vb, name in [(a[:n], b[:n], "contig"), (a[::2], b[1::2], "step")]:
        x, y = to_kind(a, kind), to_kind(b, kind)
        x, y = (x[:n], y[:n]) if name == "contig" else (x[::2], y[1::2])
        ref = np.dot(va, vb)
        close(gs.dot(x, y), ref, [scale], kind)


@pytest.mark.parametrize("strategy", ["auto", "atomic", "mutex", "two-pass", "threadfence", "warp"])
def test_dot_complex_strategies(backend, strategy):
    rng = np.random.default_rng(5)
    a, b = crandom(rng, np.complex64, 100_003), crandom(rng, np.complex64, 100_003)
    scale = np.abs(a) @ np.abs(b)
    close(gs.dot(a, b, strategy=strategy), np.dot(a, b), [scale])
    if strategy in ("auto", "two-pass", "threadfence"):
        r1 = gs.dot(a, b, strategy=strategy, deterministic=True)
        assert r1 == gs.dot(a, b, strategy=strategy, deterministic=True)


def test_dot_complex_scalars_out_and_errors(kind):
    rng = np.random.default_rng(8)
    a = crandom(rng, np.complex64, 7)
    x = to_kind(a, kind)
    for s in (2j, np.complex128(1 - 1j), np.float32(3), 2.5):
        close(gs.dot(x, s), np.dot(a, s), a, kind)
        close(gs.dot(s, x), np.dot(s, a), a, kind)
    assert gs.dot(1 + 2j, 3.0) == np.dot(1 + 2j, 3.0)
    assert gs.dot(np.complex64(1 + 2j), np.complex64(2)).dtype == np.dot(np.complex64(1 + 2j), np.complex64(2)).dtype
    out = to_kind(np.zeros((), np.complex64), kind)
    r = gs.dot(x, x, out=out)
    close(to_host(out), np.dot(a, a), [np.abs(a) @ np.abs(a)], rtol=1e-5)
    if kind == "numpy":
        assert r == np.dot(a, a, out=np.zeros((), np.complex64)) or abs(r - np.dot(a, a)) < 1e-4
    for bad in (lambda m, v: m.dot(v, v, out=np.zeros((), np.complex128)),  # not exactly the result dtype
                lambda m, v: m.dot(v, v[:3])):
        with pytest.raises(ValueError) as e:
            bad(np, a)
        with pytest.raises(ValueError, match=str(e.value).replace("(", r"\(").replace(")", r"\)")):
            bad(gs, x)
    with pytest.raises(ValueError, match="1-D"):  # N-D np.dot is GEMM: not gpusync's (as for real input)
        gs.dot(x.reshape(1, 7), x.reshape(7, 1))


# ---- what stays unsupported ---------------------------------------------------------------------------------

def test_clongdouble_is_refused(backend):
    a = np.ones(3, np.clongdouble)
    if a.dtype == np.complex128:  # (platforms whose long double is double)
        pytest.skip("clongdouble is complex128 here")
    for f in (gs.sum, gs.cumsum, gs.count_nonzero):
        with pytest.raises(TypeError, match="complex64/128"):
            f(a)
    with pytest.raises(TypeError, match="complex64/128"):
        gs.dot(a, a)
    with pytest.raises(TypeError, match="complex64/128"):
        gs.sum(np.ones(3), dtype=np.clongdouble)


def test_fast_paths_leave_complex_to_the_general_path():
    """The C fast paths take complex sums of C-contiguous arrays and 1-D dots
    (test_complex_fast_routes_match_numpy); the rest is the general path's."""
    from gpusync import _core

    for dt in CDTYPES:
        a = np.arange(12).astype(dt)
        assert _core.fast_sum(a[::2]) is NotImplemented
        assert _core.fast_sum(a, True) is NotImplemented  # (the float64 accumulation of a float array)
        assert _core.fast_cumsum(a) is NotImplemented
        assert _core.fast_count_nonzero(a) is NotImplemented
        assert _core.fast_dot(a.reshape(3, 4), a.reshape(4, 3)) is NotImplemented
        assert _core.fast_reduce_axis(a.reshape(3, 4), 1, False) is NotImplemented
        assert _core.fast_reduce_axis(a.reshape(3, 4), 1, True) is NotImplemented
        assert _core.fast_reduce_axis(a.reshape(3, 4), 1, 2) is NotImplemented


def test_lists_and_python_scalars(backend):
    close(gs.sum([1 + 2j, 3, 4j]), np.sum([1 + 2j, 3, 4j]), [8])
    close(gs.cumsum([1 + 2j, 3, 4j]), np.cumsum([1 + 2j, 3, 4j]), [8])
    assert gs.count_nonzero([1j, 0, 2]) == np.count_nonzero([1j, 0, 2])
    close(gs.dot([1 + 2j, 3], [1j, 2]), np.dot([1 + 2j, 3], [1j, 2]), [10])
    close(gs.sum(1 + 2j), np.sum(1 + 2j), [3])


# ---- review30: casts to bool, complex initial, long double outs -------------------------------------------------

def test_complex_to_bool_counts_either_part(backend, kind):
    """NumPy casts complex to bool as z != 0 (either part), not the real part."""
    a = np.array([1j, 2j, 0, 3 + 0j, 0, 0])
    x = to_kind(a, kind)
    np.testing.assert_array_equal(to_host(gs.sum(to_kind(a.reshape(2, 3), kind), axis=0, dtype=bool)),
                                  np.sum(a.reshape(2, 3), axis=0, dtype=bool))
    np.testing.assert_array_equal(to_host(gs.cumsum(x, dtype=bool)), np.cumsum(a, dtype=bool))
    if kind == "numpy":
        o, ref = np.zeros((), bool), np.zeros((), bool)
        gs.sum(a[:2], out=o)
        np.sum(a[:2], out=ref)
        assert o == ref
        o, ref = np.zeros(6, bool), np.zeros(6, bool)
        gs.cumsum(a, out=o)
        np.cumsum(a, out=ref)
        np.testing.assert_array_equal(o, ref)


@pytest.mark.parametrize("xdt", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("odt", [np.complex64, np.complex128])
def test_real_input_complex_out_complex_initial(backend, xdt, odt):
    r = np.arange(12, dtype=xdt).reshape(3, 4)
    got, ref = np.zeros(3, odt), np.zeros(3, odt)
    gs.sum(r, axis=1, initial=2 + 1j, out=got)
    np.sum(r, axis=1, initial=2 + 1j, out=ref)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize("xdt", [np.float64, np.int64, np.complex128])
@pytest.mark.parametrize("odt", [np.longdouble, np.clongdouble])
def test_long_double_outs(backend, xdt, odt):
    """A long double out takes the float64 / complex128 sum, cast at the end (no kernel adds wider)."""
    if np.dtype(xdt).kind == "c" and np.dtype(odt).kind != "c":
        ctx = pytest.warns(np.exceptions.ComplexWarning)
    else:
        ctx = warnings.catch_warnings()
    a = (np.arange(12) + (1j if np.dtype(xdt).kind == "c" else 0)).astype(xdt).reshape(3, 4)
    with ctx:
        for fn, kw, shape in ((gs.sum, {"axis": 0}, (4,)), (gs.cumsum, {"axis": 1}, (3, 4)),
                              (gs.cumsum, {}, (12,))):
            got = np.zeros(shape, odt)
            ref = np.zeros(shape, odt)
            fn(a, out=got, **kw)
            getattr(np, fn.__name__)(a, out=ref, **kw)
            np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_dot_of_2d_complex_is_refused_on_every_engine(backend):
    a = np.ones((2, 2), complex)
    with pytest.raises(ValueError):
        gs.dot(a, a)


# ---- the fast routes with no engine forced (the `kind` fixture forces one: these run as a user calls) ----------

@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 2, 31, 1000, 100_003])
def test_complex_fast_routes_match_numpy(dtype, n):
    """gs.sum of a C-contiguous complex array: the float sums of its (n, 2)
    real view in one read (module.c fast_complex_sum); gs.dot of two complex
    vectors: NumPy's own np.dot (BLAS), so its bits exactly; each call's plan
    names what ran."""
    rng = np.random.default_rng(n)
    a, b = crandom(rng, dtype, n), crandom(rng, dtype, n)
    for _ in range(2):  # (the first call may take the Python route that configures the fast paths)
        got = gs.sum(a)
        close(got, np.sum(a), a)
        assert type(got) is np.dtype(dtype).type
        plan = gs.last_plan()
        assert plan["op"] == "sum" and plan["dtype"] == np.dtype(dtype).name and plan["n"] == n
        assert plan["engine"] in ("caller", "cpu")
        close(gs.sum(a.reshape(1, -1) if n % 2 else a.reshape(2, -1)), np.sum(a), a)
        for other in (b, b.real, b.real.astype(np.int32), b.astype(np.complex64)):
            assert gs.dot(a, other) == np.dot(a, other)
            assert gs.dot(other, a) == np.dot(other, a)
            assert type(gs.dot(a, other)) is type(np.dot(a, other))
        plan = gs.last_plan()
        assert plan["op"] == "dot" and plan["strategy_used"] == "numpy" and plan["n"] == n


def test_complex_fast_sum_special_values():
    """+0 for parts that are all -0.0 (NumPy's complex sums start from +0);
    inf / NaN parts: NumPy's own result (the general path)."""
    for dt in CDTYPES:
        z = np.full(5, complex(-0.0, -0.0), dt)
        for _ in range(2):
            got = gs.sum(z)
            assert not np.signbit(got.real) and not np.signbit(got.imag)
        with np.errstate(invalid="ignore"):
            for vals in ([complex(np.inf, 1), complex(-np.inf, 2)], [complex(np.nan, 0), 1], [complex(1, np.inf), 2]):
                a = np.array(vals, dt)
                np.testing.assert_array_equal(gs.sum(a), np.sum(a))
    big = np.full(4, complex(1e38, -1e38), np.complex64)  # float64 accumulation, rounded once: inf as NumPy's
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(gs.sum(big), np.sum(big))


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", CDTYPES, ids=lambda d: np.dtype(d).name)
def test_complex_device_routes_are_the_librarys_own(lib, dtype):
    """Complex device sums and dots with no engine forced: the library's own
    (CUB / cuBLAS), on the array's device, in its library and dtype."""
    rng = np.random.default_rng(3)
    a, b = crandom(rng, dtype, 100_003), crandom(rng, dtype, 100_003)
    x, y = to_kind(a, lib), to_kind(b, lib)
    got = gs.sum(x)
    close(got, np.sum(a), a, lib)
    assert gs.last_plan()["strategy_used"] == f"{lib}.sum"
    got = gs.dot(x, y)
    close(got, np.dot(a, b), [np.abs(a) @ np.abs(b)], lib)
    assert gs.last_plan()["strategy_used"] == f"{lib}.dot"
