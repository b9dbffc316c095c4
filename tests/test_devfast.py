"""The device arrays' fast path (gpusync/_devfast.py): the same results,
dtypes, library types and plan as the general path, and the general path
for everything it does not take (strided, foreign device, forced cpu)."""
import numpy as np
import pytest

import gpusync as gs
from gpusync import _devfast, _dispatch, _histogram

pytestmark = pytest.mark.gpu

LIBS = ["cupy", "torch"]


def _lib(name):
    return pytest.importorskip(name)


def _to_dev(lib, a):
    if lib == "cupy":
        return _lib("cupy").asarray(a)
    torch = _lib("torch")
    return torch.as_tensor(a, device="cuda")


def _host(r):
    return r.get() if hasattr(r, "get") else r.cpu().numpy()


def _warm():
    gs.sum(np.ones(3))  # a general-path call configures the fast paths


DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 31, 1000, 100_003])
def test_fast_path_equals_numpy_and_general_path(lib, dtype, n):
    _warm()
    rng = np.random.default_rng(n)
    h = (rng.random(n) * 4).astype(dtype)
    d = _to_dev(lib, h)
    cases = [("sum", lambda x: gs.sum(x), np.sum(h)), ("count_nonzero", lambda x: gs.count_nonzero(x),
                                                       np.count_nonzero(h)),
             ("dot", lambda x: gs.dot(x, x), np.dot(h, h))]
    if h.dtype.kind in "biu":
        cases.append(("packbits", lambda x: gs.packbits(x), np.packbits(h)))
        cases.append(("cumsum", lambda x: gs.cumsum(x), np.cumsum(h)))  # integers: exact
    for op, fn, ref in cases:
        r = fn(d)
        plan = gs.last_plan()
        assert plan["engine"] == "cuda" and plan["op"] == op and plan["place"] == "device", (op, plan)
        assert "the device fast path" in plan["notes"], (op, plan)
        assert type(r) is type(d), op
        got = _host(r)
        if op not in ("packbits", "cumsum"):
            assert got.shape == () and got.dtype == np.asarray(ref).dtype, (op, got.dtype, np.asarray(ref).dtype)
        if op == "cumsum":
            assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
        _devfast.enable(False)  # the general path gives the same bits
        try:
            g = fn(d)
            assert "the device fast path" not in gs.last_plan()["notes"]
        finally:
            _devfast.enable(True)
        assert type(g) is type(r)
        np.testing.assert_array_equal(_host(g), got)
        if h.dtype.kind == "f" and op in ("sum", "dot"):
            np.testing.assert_allclose(got.astype(np.float64), np.float64(ref), rtol=2e-3 if dtype == "float16" else 1e-6)
        else:
            np.testing.assert_array_equal(got, ref)
        assert predicted_ms_ok(gs.last_plan())


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("strategy", ["lookback", "barrier", "relaunch"])
def test_cumsum_strategies_take_the_fast_path(lib, strategy):
    """A named cumsum strategy on a device array runs through the device fast path (no general-path
    Python), as that strategy, with NumPy's result; a bad name still raises NumPy-style."""
    _warm()
    h = np.arange(1, 100_001, dtype=np.int32) % 7
    d = _to_dev(lib, h)
    r = gs.cumsum(d, strategy=strategy)
    plan = gs.last_plan()
    assert "the device fast path" in plan["notes"] and plan["strategy"] == strategy, plan
    assert plan["strategy_used"] == strategy, plan
    np.testing.assert_array_equal(_host(r), np.cumsum(h))
    with pytest.raises(ValueError, match="strategy must be one of"):
        gs.cumsum(d, strategy="bogus")


def predicted_ms_ok(plan):
    return set(plan["predicted_ms"]) == {"cuda"}


@pytest.mark.parametrize("lib", LIBS)
def test_general_path_for_what_the_fast_path_leaves(lib):
    _warm()
    h = np.arange(1000, dtype=np.float32)
    d = _to_dev(lib, h)
    strided = d[::2]
    assert gs.sum(strided) == np.sum(h[::2])
    assert "the device fast path" not in gs.last_plan()["notes"]
    two_d = _to_dev(lib, h.reshape(10, 100))
    np.testing.assert_array_equal(_host(gs.packbits(_to_dev(lib, (h.reshape(10, 100) > 5))))[:2],
                                  np.packbits(h.reshape(10, 100) > 5)[:2])
    assert float(_host(gs.sum(two_d))) == np.sum(h)
    with gs.use_backend("cpu"):  # device input goes to the host engine: not the fast path
        r = gs.sum(d)
        assert gs.last_plan()["engine"] in ("caller", "cpu")
    assert float(_host(r)) == np.sum(h)
    gs.sum(d)  # the first call after a backend change is a general one (it configures the fast paths again)
    r = gs.sum(d)
    assert "the device fast path" in gs.last_plan()["notes"]
    assert float(_host(r)) == np.sum(h)


def test_fast_path_off_while_plans_are_logged_or_engine_forced(monkeypatch):
    _warm()
    assert _devfast._state["on"]
    _dispatch.fast_invalidate()
    assert not _devfast._state["on"]
    _warm()
    assert _devfast._state["on"]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("bins,rng_", [(10, (0, 1)), (100, (-2.5, 7)), (256, (0, 256)), (7, (np.float32(0.1), 3))])
def test_histogram_fast_path_after_a_general_call(lib, dtype, bins, rng_):
    _warm()
    rng = np.random.default_rng(bins)
    h = (rng.random(50_001) * 9 - 2).astype(dtype)
    d = _to_dev(lib, h)
    ref_c, ref_e = np.histogram(h, bins, rng_)
    for i in range(3):  # the first call makes the plan; the next ones take the fast path
        c, e = gs.histogram(d, bins, rng_)
        assert type(c) is type(d) and type(e) is type(d)
        np.testing.assert_array_equal(_host(c), ref_c)
        he = _host(e)
        assert he.dtype == ref_e.dtype
        np.testing.assert_array_equal(he, ref_e)
        fast = gs.last_plan()["notes"].count("the device fast path")
        if i:  # the fast path once a plan with the edges' formula exists (edges no formula reproduces: general)
            hit = _histogram._fast_plans.get((np.dtype(dtype), bins, type(rng_[0]), rng_[0], type(rng_[1]), rng_[1]))
            assert fast == (1 if hit is not None and hit[2] is not None else 0)
            if np.dtype(dtype) in (np.uint8, np.float32) and type(rng_[0]) is int:
                assert fast == 1  # the common case does take it
    strided = d[::2]  # not contiguous: the general path
    np.testing.assert_array_equal(_host(gs.histogram(strided, bins, rng_)[0]), np.histogram(h[::2], bins, rng_)[0])
    assert "the device fast path" not in gs.last_plan()["notes"]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("strategy", ["global", "shared", "warp", "cluster"])
@pytest.mark.parametrize("dtype,bins,rng_", [("float32", 100, (-2.5, 7)), ("uint8", 256, (0, 256)),
                                            ("int64", 70_000, (0, 70_000))])
def test_histogram_fast_path_takes_an_explicit_strategy(lib, strategy, dtype, bins, rng_):
    """A device histogram with a strategy named takes the device fast path once a call made its plan (any
    strategy's call makes it; the general path's host work grows with the bins): the general path's counts
    and NumPy's edges -- or the general path's error where that strategy cannot count these bins here --, the
    plan names the strategy asked and the one that ran; a name that is no strategy still raises."""
    _warm()
    rng = np.random.default_rng(bins)
    h = (rng.random(30_001) * (rng_[1] - rng_[0] + 4) + rng_[0] - 2).astype(dtype)
    d = _to_dev(lib, h)
    ref_c, ref_e = np.histogram(h, bins, rng_)
    gs.histogram(d, bins, rng_)  # an auto call makes the plan
    try:
        general = _histogram._histogram_impl(d, bins, rng_, strategy=strategy)
    except Exception as exc:  # noqa: BLE001 - the fast path must raise the same
        with pytest.raises(type(exc)):
            gs.histogram(d, bins, rng_, strategy=strategy)
        return
    np.testing.assert_array_equal(_host(general[0]), ref_c)
    used = gs.last_plan()["strategy_used"]
    for _ in range(2):
        c, e = gs.histogram(d, bins, rng_, strategy=strategy)
        np.testing.assert_array_equal(_host(c), ref_c)
        np.testing.assert_array_equal(_host(e), ref_e)
        p = gs.last_plan()
        assert "the device fast path" in p["notes"] and p["strategy"] == strategy, p
        assert p["strategy_used"] == used, (p, used)
    with pytest.raises(ValueError, match="strategy must be one of"):
        gs.histogram(d, bins, rng_, strategy="atomic!")


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64"])
@pytest.mark.parametrize("n,top,minlength", [(1, 1, 0), (1000, 7, 0), (1000, 7, 50), (100_003, 5000, 3),
                                             (5000, 256, 0), (5000, 128, 300), (3000, 100, 200),
                                             (20_000, 4096, 0), (20_000, 4097, 0), (20_000, 4096, 5000),
                                             (20_000, 1025, 0)])  # (the first count's edge: largest 4095, 4096;
                                             # a view of the counts from 1,024 bins on, a copy below)
def test_bincount_fast_path(lib, dtype, n, top, minlength):
    _warm()
    top = min(top, np.iinfo(dtype).max + 1)  # 8-bit: up to the dtype's largest value (its result is a view of
    h = np.random.default_rng(n + top).integers(0, top, n).astype(dtype)  # the 256 counts, or a longer copy)
    d = _to_dev(lib, h)
    r = gs.bincount(d, minlength=minlength)
    plan = gs.last_plan()
    assert plan["op"] == "bincount" and "the device fast path" in plan["notes"], plan
    assert type(r) is type(d)
    got = _host(r)
    ref = np.bincount(h, minlength=minlength)
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)
    if dtype.startswith("int"):
        bad = h.copy()
        bad[n // 2] = -1
        with pytest.raises(ValueError, match="negative"):
            gs.bincount(_to_dev(lib, bad))
    w = gs.bincount(d, weights=d)  # weights: the general path
    assert "the device fast path" not in gs.last_plan()["notes"]
    np.testing.assert_allclose(_host(w), np.bincount(h, weights=h))


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(7,), (33, 5), (4, 1, 9), (3, 65, 2, 3)])
def test_axis_fast_path_equals_numpy(lib, dtype, shape):
    """gs.sum / gs.count_nonzero / gs.cumsum of a C-contiguous device array
    along one int axis (negative too): NumPy's values, shape and dtype, the input's library,
    and the fast path's plan from the second call on (an axis call alone
    turns the fast paths on); bool sums take the general path (NumPy casts
    them to its integer loop) with the same result."""
    rng = np.random.default_rng(len(shape))
    h = (rng.random(shape) * 3).astype(dtype)
    d = _to_dev(lib, h)
    for axis in range(-len(shape), len(shape)):
        cs = np.cumsum(h, axis=axis)  # NumPy's dtype; gpusync's float values: float64 sums rounded once
        cs_ref = np.cumsum(h.astype(np.float64), axis=axis).astype(cs.dtype) if h.dtype.kind == "f" else cs
        for name, fn, ref in (("sum", lambda x: gs.sum(x, axis=axis), np.sum(h, axis=axis)),
                              ("count_nonzero", lambda x: gs.count_nonzero(x, axis=axis),
                               np.count_nonzero(h, axis=axis)),
                              ("cumsum", lambda x: gs.cumsum(x, axis=axis), cs_ref)):
            _dispatch.fast_invalidate()  # each op's first call alone turns the fast paths on (cumsum's did not)
            fn(d)
            assert _devfast._state["on"], ("an axis call alone turns the fast paths on", name)
            gs.sum(np.ones(3))  # a host plan in between: the last plan below is this call's own
            r = fn(d)
            assert type(r) is type(d), name
            got = _host(r)
            assert got.shape == np.shape(ref) and got.dtype == np.asarray(ref).dtype, (name, axis, got.dtype)
            if h.dtype.kind == "f":
                np.testing.assert_allclose(got, ref, rtol=1e-2 if dtype == "float16" else 1e-6)
            else:
                np.testing.assert_array_equal(got, ref)
            fast = "the device fast path" in gs.last_plan()["notes"]
            # (a 1-D cumsum along its axis is the flattened scan: the general path)
            assert fast == (dtype != "bool" and (name != "cumsum" or len(shape) > 1)), (name, axis, gs.last_plan())


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_axis_out_fast_path_writes_in_place(lib, dtype):
    """sum / cumsum along one axis with `out=` a device array of the result's
    shape and NumPy's dtype: the kernel writes `out` itself (the fast path,
    `out` returned); the input itself as a cumsum's `out` (in place); an `out`
    of another dtype, or one overlapping the input, takes the general path
    with NumPy's values."""
    _warm()
    rng = np.random.default_rng(7)
    h = (rng.random((300, 260)) * 9).astype(dtype)
    cs_dt = np.cumsum(h[:1, :1]).dtype
    s_dt = np.sum(h[:1, :1]).dtype
    for axis in (0, 1, -1):
        d = _to_dev(lib, h)
        cs_ref = np.cumsum(h.astype(np.float64) if h.dtype.kind == "f" else h, axis=axis).astype(cs_dt)
        o = _to_dev(lib, np.zeros(h.shape, cs_dt))
        r = gs.cumsum(d, axis=axis, out=o)
        assert r is o and "the device fast path" in gs.last_plan()["notes"]
        np.testing.assert_allclose(_host(o), cs_ref, rtol=1e-6)
        so = _to_dev(lib, np.zeros(np.sum(h, axis=axis).shape, s_dt))
        r = gs.sum(d, axis=axis, out=so)
        assert r is so and "the device fast path" in gs.last_plan()["notes"]
        np.testing.assert_allclose(_host(so), np.sum(h.astype(np.float64), axis=axis).astype(s_dt), rtol=1e-6)
        if cs_dt == h.dtype:  # in place: out is the input
            r = gs.cumsum(d, axis=axis, out=d)
            assert r is d and "the device fast path" in gs.last_plan()["notes"]
            np.testing.assert_allclose(_host(d), cs_ref, rtol=1e-6)
    # another dtype: NumPy's casting into out, the general path (its own plan record)
    d = _to_dev(lib, h)
    other = np.float32 if cs_dt == np.float64 else np.float64
    oo = _to_dev(lib, np.zeros(h.shape, other))
    r = gs.cumsum(d, axis=0, out=oo)
    plan = gs.last_plan()
    assert r is oo and plan["op"] == "cumsum" and "the device fast path" not in plan["notes"], plan
    np.testing.assert_allclose(_host(oo), np.cumsum(h, axis=0, out=np.zeros(h.shape, other)), rtol=1e-6)
    if cs_dt == h.dtype:  # an out overlapping the input (a shifted view of the same memory): the general path
        big = _to_dev(lib, np.concatenate([h.reshape(-1), np.zeros(260, h.dtype)]))
        src, dst = big[:300 * 260].reshape(300, 260), big[260:].reshape(300, 260)
        ref = np.cumsum(h.astype(np.float64) if h.dtype.kind == "f" else h, axis=0).astype(cs_dt)
        r = gs.cumsum(src, axis=0, out=dst)
        assert "the device fast path" not in gs.last_plan()["notes"]
        np.testing.assert_allclose(_host(dst), ref, rtol=1e-6)


def test_axis_out_wider_at_the_inputs_address_is_not_in_place():
    """An int64 `out` that starts at an int32 input's address covers twice its
    bytes: writing it in place would overwrite inputs not yet read (review32).
    It takes the general path and gives NumPy's values."""
    cp = _lib("cupy")
    _warm()
    h = (np.arange(2 * 78000) % 7).astype(np.int32)
    buf = cp.asarray(h)
    a = buf[:78000].reshape(300, 260)
    o = buf.view(cp.int64).reshape(300, 260)
    for axis in (0, 1):
        buf[...] = cp.asarray(h)
        ref = np.cumsum(h[:78000].reshape(300, 260), axis=axis)
        r = gs.cumsum(a, axis=axis, out=o)
        assert r is o and "the device fast path" not in gs.last_plan()["notes"]
        np.testing.assert_array_equal(_host(o), ref)


def test_axis_out_torch_autograd_sees_the_write():
    """A torch `out` written by the fast path bumps its version counter, as
    out.copy_() does: a tensor saved for backward and then overwritten makes
    backward raise instead of computing wrong gradients."""
    torch = _lib("torch")
    _warm()
    x = torch.rand(64, 32, device="cuda", requires_grad=True)
    w = torch.rand(64, 32, device="cuda")
    y = (x * w).sum()  # w is saved for backward
    before = w._version
    gs.cumsum(torch.rand(64, 32, device="cuda"), axis=0, out=w)
    assert w._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
