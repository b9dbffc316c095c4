"""Argument spellings and rare options against NumPy / SciPy: the cases a differential fuzz of the
public signatures found (session 48), each the way a NumPy user writes it."""
import contextlib

import numpy as np
import numpy.ma as ma
import pytest

import gpusync as gs
from conftest import to_host, to_kind

ss = pytest.importorskip("scipy.stats")


def _same_exception_type(np_call, gs_call):
    with pytest.raises(Exception) as want:
        np_call()
    with pytest.raises(type(want.value)):
        gs_call()


@pytest.mark.parametrize("case", ["axis0", "axis1", "all", "keepdims", "initial", "where"])
def test_sum_into_an_out_that_overlaps_the_input(case):
    """NumPy reads the input before it writes an overlapping `out`; gpusync's argument check once wrote
    zeros into `out` first."""
    def run(lib, x):
        if case == "axis0":
            return lib.sum(x, axis=0, out=x[0])
        if case == "axis1":
            return lib.sum(x, axis=1, out=x[:, 0])
        if case == "all":
            return lib.sum(x, out=x[1:2, 1].reshape(()))
        if case == "keepdims":
            return lib.sum(x, axis=0, keepdims=True, out=x[1:2])
        if case == "initial":
            return lib.sum(x, axis=0, initial=5, out=x[2])
        return lib.sum(x, axis=0, where=np.array([True, False, True, True]), out=x[0])

    want, got = np.arange(12.).reshape(3, 4), np.arange(12.).reshape(3, 4)
    r_np, r_gs = run(np, want), run(gs, got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(r_gs, r_np)


def test_a_read_only_out_is_still_refused():
    out = np.zeros(4)
    out.flags.writeable = False
    _same_exception_type(lambda: np.sum(np.ones((3, 4)), axis=0, out=out),
                         lambda: gs.sum(np.ones((3, 4)), axis=0, out=out))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix)
def test_masked_arrays_sum_and_cumsum_leave_out_their_masked_elements():
    m = ma.array([1., 2., 3., 4.], mask=[0, 1, 0, 0])
    assert gs.sum(m) == np.sum(m) == 8.0
    got, want = gs.cumsum(m), np.cumsum(m)
    assert isinstance(got, ma.MaskedArray)
    np.testing.assert_array_equal(ma.getmaskarray(got), ma.getmaskarray(want))
    np.testing.assert_array_equal(got.compressed(), want.compressed())
    m2 = ma.array(np.arange(6.).reshape(2, 3), mask=[[0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(gs.sum(m2, axis=1), np.sum(m2, axis=1))
    _same_exception_type(lambda: np.sum(m, initial=1), lambda: gs.sum(m, initial=1))  # the method's own rules
    mat = np.matrix([[1, 2], [3, 4]])
    assert gs.sum(mat, axis=1).shape == np.sum(mat, axis=1).shape == (2, 1)


def test_memmaps_keep_gpusyncs_engines(tmp_path):
    mp = np.memmap(tmp_path / "a.bin", dtype=np.float64, mode="w+", shape=(1001,))
    mp[:] = 1.5
    gs.count_nonzero(np.ones(3))  # (another plan first: the sum's must replace it)
    assert gs.sum(mp) == 1501.5
    p = gs.last_plan()
    assert p["op"] == "sum" and p["n"] == 1001 and p["engine"] in ("caller", "cpu", "cuda"), p


class _Tagged(np.ndarray):
    """A user's subclass with an attribute its results inherit (__array_finalize__)."""

    def __array_finalize__(self, obj):
        self.info = getattr(obj, "info", None)


def _subclass_inputs(tmp_path):
    tagged = np.arange(6.).reshape(2, 3).view(_Tagged)
    tagged.info = "tag"
    mp = np.memmap(tmp_path / "s.bin", dtype=np.float64, mode="w+", shape=(2, 3))
    mp[:] = [[0, 1, 2], [3, 0, 5]]
    return {"user": tagged, "matrix": np.matrix([[1, 2], [0, 4]]), "memmap": mp,
            "masked": ma.array([[1, 0, 3], [4, 5, 0]], mask=[[0, 1, 0], [1, 0, 0]])}


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix)
@pytest.mark.parametrize("func", ["sum", "cumsum", "count_nonzero"])
@pytest.mark.parametrize("which", ["user", "matrix", "memmap", "masked"])
def test_subclass_results_are_numpys(tmp_path, func, which):
    """NumPy hands a subclass's result back through its __array_wrap__ (or its
    own method): a user's class and its attributes, a cumsum of an np.matrix
    as a 1 x n matrix, a memmap's as a plain array or scalar, a masked
    array's count along an axis without its masked elements (np.matrix's
    count along an axis: NumPy's TypeError)."""
    x = _subclass_inputs(tmp_path)[which]
    kws = [{}, {"axis": 0}, {"axis": 1}, {"axis": -1}]
    if func != "cumsum":
        kws += [{"keepdims": True}, {"axis": 0, "keepdims": True}]
    for kw in kws:
        try:
            want = getattr(np, func)(x, **kw)
        except TypeError:
            _same_exception_type(lambda: getattr(np, func)(x, **kw), lambda: getattr(gs, func)(x, **kw))
            continue
        got = getattr(gs, func)(x, **kw)
        assert type(got) is type(want), (kw, type(got), type(want))
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, kw
        assert getattr(got, "info", None) == getattr(want, "info", None), kw
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        if isinstance(want, ma.MaskedArray):
            np.testing.assert_array_equal(ma.getmaskarray(got), ma.getmaskarray(want))


def test_subclass_out_is_returned_as_given():
    x = np.arange(6.).reshape(2, 3).view(_Tagged)
    out = np.empty(3)
    assert gs.sum(x, axis=0, out=out) is out and gs.cumsum(x[0], out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(np.arange(3.)))


@pytest.mark.parametrize("odt", ["m8[s]", "U4"])
def test_cumsum_into_an_out_of_a_dtype_numpy_refuses(odt):
    x = np.arange(6.).reshape(2, 3)
    _same_exception_type(lambda: np.cumsum(x, out=np.empty(6, odt)), lambda: gs.cumsum(x, out=np.empty(6, odt)))
    _same_exception_type(lambda: np.cumsum(x, axis=1, out=np.empty((2, 3), odt)),
                         lambda: gs.cumsum(x, axis=1, out=np.empty((2, 3), odt)))


def test_cumsum_with_its_own_dtype_named_takes_the_fast_path():
    x = np.random.default_rng(2).random(1000)
    gs.cumsum(x)  # a call the fast path's limits are set by (a test before may have changed the state they came from)
    got = gs.cumsum(x, dtype=np.float64)
    assert any("fast path" in t for t in gs.last_plan()["notes"]), gs.last_plan()
    np.testing.assert_allclose(got, np.cumsum(x), rtol=1e-12)
    i = np.arange(100, dtype=np.int32)
    np.testing.assert_array_equal(gs.cumsum(i, dtype="int64"), np.cumsum(i, dtype="int64"))


@pytest.mark.parametrize("dtype", ["U4", "S3", "M8[s]", "V8", object, np.longdouble])
def test_cumsum_dtypes_numpy_refuses_or_gpusync_cannot_compute(dtype):
    x = np.array([99999, 1])
    try:
        np.cumsum(x, dtype=dtype)
    except TypeError:
        _same_exception_type(lambda: np.cumsum(x, dtype=dtype), lambda: gs.cumsum(x, dtype=dtype))
    else:  # NumPy computes it (object, longdouble): gpusync says which argument it cannot take
        with pytest.raises(TypeError, match="dtype"):
            gs.cumsum(x, dtype=dtype)


def test_cumsum_of_a_non_native_dtype_gives_numpys_native_result():
    assert gs.cumsum(np.arange(3), dtype=">i8").dtype == np.cumsum(np.arange(3), dtype=">i8").dtype


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.sum(x, dtype=object), lambda lib, x: lib.sum(x, axis=1, dtype="m8"),
    lambda lib, x: lib.sum(x.astype(int), dtype=object),
    lambda lib, x: lib.cumsum(x.astype(np.int8), 0, np.longdouble)])
def test_unsupported_accumulators_raise_a_type_error_naming_the_argument(call):
    x = np.arange(6.).reshape(2, 3)
    call(np, x)  # NumPy computes these
    with pytest.raises(TypeError, match="dtype"):
        call(gs, x)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.cumsum(x, axis=True), lambda lib, x: lib.sum(x, axis=True),
    lambda lib, x: lib.count_nonzero(x, axis=True), lambda lib, x: lib.cumsum(x, axis=np.True_)])
def test_a_bool_axis_is_refused(call):
    x = np.arange(6.).reshape(2, 3)
    _same_exception_type(lambda: call(np, x), lambda: call(gs, x))


@pytest.mark.parametrize("keepdims", [None, "yes", "", np.True_, np.False_, 1.0, 0.0, 0, 1, 2, True, False])
@pytest.mark.parametrize("fn", ["sum", "count_nonzero"])
@pytest.mark.parametrize("axis", [None, 0])
def test_keepdims_spellings_like_numpy_on_every_call(fn, keepdims, axis):
    """The same call gives the same answer on a process's first call and on later ones (the fast paths once
    tested keepdims for truth, NumPy's check ran on the general path only)."""
    x = np.arange(6.).reshape(2, 3)
    for _ in range(3):
        try:
            want = getattr(np, fn)(x, axis=axis, keepdims=keepdims)
        except TypeError:
            with pytest.raises(TypeError):
                getattr(gs, fn)(x, axis=axis, keepdims=keepdims)
        else:
            got = getattr(gs, fn)(x, axis=axis, keepdims=keepdims)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_array_equal(got, want)


def test_looser_arguments_numpy_refuses():
    x = np.arange(6.).reshape(2, 3)
    u = np.array([3, 200], np.uint8)
    cases = [
        (lambda lib: lib.sum(x, where=np.ones((2, 3), np.int8))),
        (lambda lib: lib.sum(x, axis=1, out=(np.zeros(2),))),
        (lambda lib: lib.bincount([0, 1, 1], minlength=True)),
        (lambda lib: lib.bincount(np.array([0, 1, 1]), None, True)),
        (lambda lib: lib.unpackbits(u, count=True)),
        (lambda lib: lib.packbits(u, bitorder=None)),
        (lambda lib: lib.unpackbits(u, bitorder=0)),
    ]
    for call in cases:
        _same_exception_type(lambda: call(np), lambda: call(gs))
    np.testing.assert_array_equal(gs.sum(x, where=[True, False, True]), np.sum(x, where=[True, False, True]))

    class DeviceMask:  # a device array's interface (its dtype read from it, nothing else)
        __cuda_array_interface__ = {"typestr": "|i1", "shape": (2, 3), "data": (0, True), "version": 3}

    with pytest.raises(TypeError, match="where"):
        gs.sum(x, where=DeviceMask())
    np.testing.assert_array_equal(gs.bincount([0, 1, 1], minlength=np.int64(4)), np.bincount([0, 1, 1], minlength=4))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_, np.int64, np.uint64, np.float64])
def test_histogram_with_no_edges(dtype):
    a = np.array([1, 0, 1]).astype(dtype)
    for bins in ([], [0.5], np.array([], np.int64), np.array([], np.uint64)):
        for lib in (np, gs):  # (bool data: NumPy's conversion warning, from both)
            with pytest.warns(RuntimeWarning) if dtype == np.bool_ else contextlib.nullcontext():
                res = lib.histogram(a, bins=bins)
            if lib is np:
                want = res
        for g, w in zip(res, want):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype


@pytest.mark.parametrize("args", [(0.5, 1.0), (np.array(0.5), np.array(1.0)), (0.5, [1.0]), ([0.5], 1.0),
                                  (0.5, [[1.0], [2.0]])])
@pytest.mark.parametrize("statistic", ["sum", "mean", "count", "max", "median"])
def test_binned_statistic_of_one_scalar_sample(args, statistic):
    for rng in ((0, 1), None):
        want = ss.binned_statistic(*args, statistic, bins=2, range=rng)
        got = gs.binned_statistic(*args, statistic, bins=2, range=rng)
        np.testing.assert_array_equal(got.statistic, want.statistic)
        np.testing.assert_array_equal(got.bin_edges, want.bin_edges)
        np.testing.assert_array_equal(got.binnumber, want.binnumber)


@pytest.mark.parametrize("rng", [(1, 0), (0, 1, 2)])
@pytest.mark.parametrize("bins", [[0, 0.5, 1], (0.0, 1.0), [[0, 0.5, 1]]])
def test_binned_statistic_checks_the_range_even_with_explicit_edges(rng, bins):
    x, v = np.array([0.1, 0.6, 0.9]), np.ones(3)
    _same_exception_type(lambda: ss.binned_statistic(x, v, "count", bins=bins, range=rng),
                         lambda: gs.binned_statistic(x, v, "count", bins=bins, range=rng))


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.sum(x, axis=True), lambda lib, x: lib.cumsum(x, axis=True),
    lambda lib, x: lib.count_nonzero(x, axis=True), lambda lib, x: lib.sum(x, keepdims="yes"),
    lambda lib, x: lib.sum(x, axis=0, keepdims=None), lambda lib, x: lib.cumsum(x, dtype="U4"),
    lambda lib, x: lib.sum(x, out=(np.zeros(()),))])
def test_argument_errors_on_every_engine_and_input_library(call, kind):
    """The argument rules hold whichever engine runs and whatever library holds the input."""
    x = np.arange(6.).reshape(2, 3)
    with pytest.raises(TypeError):
        call(gs, to_kind(x, kind))
    if kind == "numpy":
        with pytest.raises(TypeError):
            call(np, x)


@pytest.mark.parametrize("keepdims", [1, 2, True, 0])
@pytest.mark.parametrize("dtype", [None, np.float64])
def test_keepdims_and_own_dtype_on_every_engine_and_input_library(keepdims, dtype, kind):
    x = np.arange(6.).reshape(2, 3)
    for axis in (None, 0):
        want = np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)
        got = to_host(gs.sum(to_kind(x, kind), axis=axis, keepdims=keepdims, dtype=dtype))
        assert np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(to_host(gs.cumsum(to_kind(x, kind), dtype=dtype)), np.cumsum(x), rtol=1e-15)


# ---- subclasses and ufunc overrides (stop 49's differential fuzz, /work/fuzz49: each of these differed) ----

class _NoUfuncs(np.ndarray):
    __array_ufunc__ = None


class _UfuncTaker(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        return ("taken", ufunc.__name__, method)


class _NarrowMethods(np.ndarray):
    """A subclass whose sum / cumsum take no dtype."""

    def sum(self, axis=None, out=None):
        return "own sum"

    def cumsum(self, axis=None, out=None):
        return "own cumsum"


class _OldWrap(np.ndarray):
    def __array_wrap__(self, arr, context=None):  # NumPy 1's signature
        return arr.view(_OldWrap)


@pytest.mark.parametrize("a", [np.arange(3), np.arange(3.), ma.masked_array([1, 2]), np.arange(3).view(np.recarray)],
                         ids=["int", "float", "masked", "recarray"])
def test_cumsum_into_a_0d_out_raises_instead_of_crashing(a):
    """np.cumsum(x, out=<0-d>) crashes NumPy 2.4.6 itself (numpy#32545); a cumsum is never 0-d."""
    with pytest.raises(ValueError):
        gs.cumsum(a, out=np.zeros((), np.result_type(a.dtype, np.int64)))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix)
def test_packbits_and_unpackbits_keep_the_inputs_class():
    a = np.array([1, 0, 1], np.uint8).view(_Tagged)
    for got, want in ((gs.packbits(a), np.packbits(a)), (gs.unpackbits(a), np.unpackbits(a)),
                      (gs.unpackbits(np.matrix([[1, 0, 1]], np.uint8)), np.unpackbits(np.matrix([[1, 0, 1]], np.uint8)))):
        assert type(got) is type(want) and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_bits_axis_true_is_numpys_type_error():
    b = np.ones((2, 8), np.uint8)
    _same_exception_type(lambda: np.packbits(b, axis=True), lambda: gs.packbits(b, axis=True))
    _same_exception_type(lambda: np.unpackbits(b, axis=True), lambda: gs.unpackbits(b, axis=True))


def test_methods_without_dtype_are_called_as_numpy_calls_them():
    x = np.arange(3.).view(_NarrowMethods)
    assert gs.sum(x) == np.sum(x) == "own sum"
    got, want = gs.cumsum(x), np.cumsum(x)  # the method refuses dtype: NumPy's retry with ndarray's, wrapped
    assert type(got) is type(want) is _NarrowMethods
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_classes_that_take_over_ufuncs_get_the_call():
    x = np.arange(4.)
    _same_exception_type(lambda: np.sum(x.view(_NoUfuncs)), lambda: gs.sum(x.view(_NoUfuncs)))
    assert gs.sum(x.view(_UfuncTaker)) == np.sum(x.view(_UfuncTaker)) == ("taken", "add", "reduce")
    assert gs.cumsum(x.view(_UfuncTaker)) == np.cumsum(x.view(_UfuncTaker)) == ("taken", "add", "accumulate")
    w = np.ones(4, bool).view(_UfuncTaker)
    assert gs.sum(x, where=w) == np.sum(x, where=w) == ("taken", "add", "reduce")
    m = np.arange(6.).reshape(2, 3).view(_UfuncTaker)
    assert gs.count_nonzero(m, axis=0) == np.count_nonzero(m, axis=0)


def test_numpy1_array_wrap_works_with_numpys_warning():
    x = np.arange(3.).view(_OldWrap)
    with pytest.warns(DeprecationWarning):
        want = np.sum(x)
    with pytest.warns(DeprecationWarning):
        got = gs.sum(x)
    assert type(got) is type(want) and float(got) == float(want) == 3.0


def test_a_bad_where_leaves_out_untouched():
    o = np.full(3, 7.)
    with pytest.raises(ValueError):
        gs.sum(np.ones((2, 3)), axis=0, where=np.ones((2, 2), bool), out=o)
    np.testing.assert_array_equal(o, 7.)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix)
def test_matrix_cumsum_into_numpys_out_shape():
    mm = np.matrix([[1, 2], [3, 4]])
    for o in (np.zeros((1, 4), int), np.matrix(np.zeros((1, 4), int))):
        assert gs.cumsum(mm, out=o) is o
        np.testing.assert_array_equal(o, np.cumsum(mm, out=np.zeros((1, 4), int)))
    with pytest.raises(ValueError):
        gs.cumsum(mm, out=np.zeros(4, int))  # NumPy: ValueError too


def test_masked_coordinates_are_binned_as_numpy_reads_them():
    """np.histogram2d / histogramdd / scipy.stats.binned_statistic read a masked column with np.asarray:
    its masked values are data (no method of the class runs)."""
    x = ma.masked_array([0., 1., 2., 10.], mask=[0, 0, 0, 1])
    y = np.arange(4.)
    for got, want in zip(gs.histogram2d(x, y, 2), np.histogram2d(x, y, 2)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(gs.histogramdd([x, y], 2)[1], np.histogramdd([x, y], 2)[1]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(gs.binned_statistic(x, y, "count", 2).statistic, [3., 1.])


class _ArrayLike:
    """A host object that NumPy reads through __array__ alone (no dtype attribute)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


def test_complex_data_behind_array_protocols():
    z = np.array([1 + 2j, 3j])
    for o in (_ArrayLike(z), _ArrayLike(z.reshape(1, 2))):
        assert gs.sum(o) == np.sum(o)
        np.testing.assert_array_equal(gs.cumsum(o), np.cumsum(o))
        np.testing.assert_array_equal(gs.count_nonzero(o, axis=0), np.count_nonzero(o, axis=0))
    assert gs.dot(_ArrayLike(z), _ArrayLike(z)) == np.dot(z, z)


def test_dot_with_a_0d_subclass_operand_is_numpys_product():
    s = np.array(2.).view(_Tagged)
    for a, b in ((s, np.arange(3.)), (s, s), (ma.masked_array(np.float32(8), mask=True), ma.masked_array(np.float32(1)))):
        got, want = gs.dot(a, b), np.dot(a, b)
        assert type(got) is type(want), (type(got), type(want))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_where_errors_keep_numpys_order_and_leave_out_untouched():
    a = np.arange(6.).reshape(2, 3)
    _same_exception_type(lambda: np.sum(a, where=np.ones(4)), lambda: gs.sum(a, where=np.ones(4)))
    _same_exception_type(lambda: np.sum(a, dtype="S3", where=np.ones(4, bool)),
                         lambda: gs.sum(a, dtype="S3", where=np.ones(4, bool)))
    o = np.full(3, 99.)
    with pytest.raises(TypeError):
        gs.sum(a, 0, out=o, where=np.ones((2, 3)))  # a float mask: NumPy's TypeError
    np.testing.assert_array_equal(o, 99.)


class _Delegating(np.ndarray):
    """Unwraps and calls NumPy's ufunc, as units libraries do."""

    def __array_ufunc__(self, uf, method, *ins, **kw):
        return getattr(uf, method)(*(i.view(np.ndarray) if isinstance(i, _Delegating) else i for i in ins), **kw)


def test_an_override_gets_numpys_keywords_and_list_inputs_reach_it():
    s = np.array(["ab", "cd"], object).view(_Delegating)
    assert gs.sum(s) == np.sum(s) == "abcd"  # (no initial=0 passed on: NumPy sends none)
    w = np.ones(3, bool).view(_UfuncTaker)
    assert gs.sum([1, 2, 3], where=w) == np.sum([1, 2, 3], where=w) == ("taken", "add", "reduce")


def test_dot_of_a_complex_masked_array_and_a_scalar_keeps_the_mask():
    m = ma.masked_array([1 + 1j, 2, 3], mask=[0, 1, 0])
    got, want = gs.dot(m, 2), np.dot(m, 2)
    assert type(got) is type(want)
    np.testing.assert_array_equal(ma.getmaskarray(got), ma.getmaskarray(want))
