"""The public functions' C front (gpusync._core.front): the common calls run
the C fast path with no Python frame, every other call runs the Python
function, and the object passes as that function."""
import copy
import inspect
import pickle
import pydoc
import weakref

import numpy as np
import pytest

import gpusync as gs
from conftest import in_threads
from gpusync import _core

FRONTED = ["sum", "dot", "count_nonzero", "cumsum", "packbits", "unpackbits", "bincount", "histogram"]


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want), (type(got), type(want))
    np.testing.assert_array_equal(got, want)
    if hasattr(want, "dtype"):
        assert got.dtype == want.dtype


def _calls(rng):
    """(name, args, kwargs) in every form the front takes or passes on."""
    f32 = rng.standard_normal(1001).astype(np.float32)
    f64 = rng.standard_normal(999)
    i64 = rng.integers(0, 50, 777)
    u8 = rng.integers(0, 256, 300, dtype=np.uint8)
    w = rng.random(777)
    return [
        ("sum", (f32,), {}), ("sum", (f64,), {}), ("sum", (i64,), {}), ("sum", (i64[::3],), {}),
        ("sum", ([1, 2, 3],), {}), ("sum", (f64,), {"axis": None}), ("sum", (f64,), {"dtype": np.float32}),
        ("sum", (f64.reshape(27, 37),), {}), ("sum", (np.float64(2.5),), {}),
        ("dot", (f64, f64), {}), ("dot", (f32, f32), {}), ("dot", (i64, i64), {}), ("dot", (2.0, 3),  {}),
        ("dot", (f64, f64), {"out": np.zeros(())}),
        ("count_nonzero", (u8,), {}), ("count_nonzero", (u8.reshape(20, 15),), {"axis": 1}),
        ("cumsum", (i64,), {}), ("cumsum", (f32[::2],), {}), ("cumsum", (u8.reshape(20, 15),), {"axis": 0}),
        ("packbits", (u8,), {}), ("packbits", (u8,), {"bitorder": "little"}),
        ("unpackbits", (u8,), {}), ("unpackbits", (u8,), {"count": 5}),
        ("bincount", (i64,), {}), ("bincount", (i64,), {"minlength": 100}), ("bincount", (i64, None, 60), {}),
        ("bincount", (i64,), {"weights": w}), ("bincount", (i64, w), {"minlength": 3}),
        ("bincount", (i64,), {"minlength": np.int64(70)}), ("bincount", (i64.astype(np.int32),), {}),
        ("histogram", (f64,), {}), ("histogram", (f64, 17), {}), ("histogram", (f64,), {"bins": 9, "range": (-2, 2)}),
        ("histogram", (f64, 9, (-2, 2)), {}), ("histogram", (u8,), {"bins": 256, "range": (0, 256)}),
        ("histogram", (f64,), {"range": (-1, 1)}), ("histogram", (f64, 5), {"density": True}),
        ("histogram", (f64, [-1, 0, 0.5, 2]), {}), ("histogram", (f32,), {"bins": 10, "range": (0, 1), "weights": f32}),
    ]


@pytest.mark.parametrize("rep", range(2))  # the second pass finds planned histograms and a configured fast path
def test_front_equals_the_python_function(rep):
    for name, args, kw in _calls(np.random.default_rng(rep)):
        f = getattr(gs, name)
        _same(f(*args, **kw), f.__wrapped__(*args, **kw))


def test_front_runs_the_fast_path():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, 1000)
    with gs.use_backend("cpu"):
        gs.sum(np.ones(3, np.float32), dtype=np.float16)  # a general call: the fast paths' limits are set
        for op, call in (("sum", lambda: gs.sum(x)), ("bincount", lambda: gs.bincount(x, minlength=5)),
                         ("dot", lambda: gs.dot(x, x)), ("histogram", lambda: gs.histogram(x, bins=4, range=(0, 100)))):
            call()
            call()
            plan = gs.last_plan()
            assert plan["op"] == op and any("fast path" in n for n in plan["notes"]), plan
            assert plan["engine"] in ("caller", "cpu"), plan


def test_front_errors_are_the_python_functions():
    """Every error is the Python function's: the same type and message."""
    x = np.arange(5)
    cases = [("sum", (), {}), ("dot", (x,), {}), ("bincount", (), {"x": x}),
             ("bincount", (x,), {"minlength": 1, "minlenght": 2}), ("histogram", (x, 3), {"bins": 4}),
             ("sum", (x, 0, None, None, False, 0, True, "auto"), {}), ("bincount", (np.array([-1, 2]),), {}),
             ("bincount", (x,), {"minlength": -1}), ("bincount", (x.astype(float),), {}),
             ("histogram", (x,), {"range": (3, 1)}), ("packbits", (x,), {"bitorder": "middle"}),
             ("cumsum", (x,), {"axis": 2}), ("dot", (np.ones(3), np.ones(4)), {}),
             ("count_nonzero", (np.array(["a"], dtype=object),), {"axis": 0})]
    for name, args, kw in cases:
        f = getattr(gs, name)
        with pytest.raises(Exception) as got:
            f(*args, **kw)
        with pytest.raises(Exception) as want:
            f.__wrapped__(*args, **kw)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value), (name, got, want)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        gs.sum()


@pytest.mark.parametrize("name", FRONTED)
def test_front_passes_as_the_function(name):
    f = getattr(gs, name)
    assert type(f) is _core.front
    py = f.__wrapped__
    assert inspect.isfunction(py) and py.__name__ == name
    assert f.__name__ == name and f.__qualname__ == name and f.__module__ == py.__module__
    assert f.__doc__ == py.__doc__ and "``stream``" in f.__doc__
    assert inspect.signature(f) == inspect.signature(py)
    assert inspect.isroutine(f) and callable(f)
    assert repr(f) == repr(py)
    assert pickle.loads(pickle.dumps(f)) is f and copy.deepcopy(f) is f
    assert getattr(__import__(py.__module__, fromlist=["_"]), name) is f  # pickled by reference

    assert pydoc.getdoc(f) == inspect.getdoc(py) and "``stream``" in pydoc.render_doc(f)
    assert weakref.ref(f)() is f
    assert set(dir(f)) == set(dir(py))

    class Holder:
        g = f
    assert Holder.g is f
    bound = Holder().g  # an instance's method, as of the Python function
    assert bound.__self__.__class__ is Holder and bound.__func__ is f


def test_front_construction_checks():
    def sum(a, axis=None):  # noqa: A001
        return "python"

    front = _core.front("sum", sum)
    with gs.use_backend("cpu"):
        gs.sum(np.ones(3, np.float32), dtype=np.float16)  # a general call: the fast paths' limits are set
        assert front(np.arange(3)) == 3 and front([1, 2]) == "python" and front(np.arange(3), axis=0) == "python"
    with pytest.raises(ValueError, match="unknown op 'mean'"):
        _core.front("mean", sum)
    with pytest.raises(ValueError, match="unknown op 'mean'"):
        _core.front(op="mean", fallback=sum)
    with pytest.raises(TypeError, match="Python function"):
        _core.front("sum", len)

    def dot(a, c):
        return None
    with pytest.raises(TypeError, match="parameter 1 must be b"):
        _core.front("dot", dot)

    def bincount(x, weights, minlength=0):
        return None
    with pytest.raises(TypeError, match="needs a default"):
        _core.front("bincount", bincount)
    with pytest.raises(TypeError, match="plans dict"):
        _core.front("histogram", gs.histogram.__wrapped__)


def test_front_from_threads():
    rng = np.random.default_rng(5)
    xs = [rng.integers(0, 1000, n) for n in (10, 1000, 100_000)]
    want = [(int(x.sum()), np.bincount(x)) for x in xs]

    def work(k):
        for i in range(200):
            j = (k + i) % len(xs)
            assert gs.sum(xs[j]) == want[j][0]
            np.testing.assert_array_equal(gs.bincount(xs[j]), want[j][1])
    in_threads(work)


def test_front_device_hook_gets_the_parameters():
    """The device fast path sees (a), (a, b), bincount's (x, minlength) or histogram's (a, bins, range) -- never a NumPy array,
    never bincount with weights or a negative minlength -- and its NotImplemented runs the function."""
    seen = []

    def hook(*args):
        seen.append(args)
        return "device" if args[0] == "dev" else NotImplemented

    def bincount(x, /, weights=None, minlength=0, *, strategy="auto"):
        return "python"

    def dot(a, b, out=None):
        return "python"

    fb, fd = _core.front("bincount", bincount, None, hook), _core.front("dot", dot, None, hook)
    assert fb("dev") == "device" and seen[-1] == ("dev", 0)
    assert fb("dev", minlength=7) == "device" and seen[-1] == ("dev", 7)
    n = len(seen)
    assert fb("dev", np.ones(2)) == "python" and fb("dev", minlength=-1) == "python"
    assert fb("dev", strategy="auto") == "python"
    assert fb(np.arange(3, dtype=np.float64)) == "python"  # (float x: the C fast path declines; no hook for NumPy)
    assert len(seen) == n
    assert fd("dev", "other") == "device" and seen[-1] == ("dev", "other")
    assert fd("host", "x") == "python" and seen[-1] == ("host", "x")
    n = len(seen)  # NumPy's and Python's own values never reach the device hook
    for a in ([1, 2], (1,), 3, 2.5, 1j, None, np.float32(2), np.ones(2).view(np.matrix)):
        assert fd(a, "dev") == "python" and fd("dev", a) == "python" and fb(a) == "python"
    assert len(seen) == n
    def histogram(a, bins=10, range=None, density=None, weights=None, *, strategy="auto", stream=None):
        return "python"

    fh = _core.front("histogram", histogram, {}, hook)
    assert fh("dev") == "device" and seen[-1] == ("dev", 10, None)
    assert fh("dev", 5, range=(0, 1)) == "device" and seen[-1] == ("dev", 5, (0, 1))
    n = len(seen)
    assert fh("dev", 5, weights=np.ones(2)) == "python" and fh("dev", density=True) == "python"
    assert fh(np.ones(3), 4) == "python" and fh([1.0], 4) == "python"
    assert len(seen) == n
    def sum_(a, axis=None, dtype=None, *, strategy="auto"):
        return "python"

    fs = _core.front("sum", sum_, None, hook)  # (count_nonzero and cumsum alike: device(a) or device(a, axis))
    assert fs("dev") == "device" and seen[-1] == ("dev",)
    assert fs("dev", 1) == "device" and seen[-1] == ("dev", 1)
    assert fs("dev", axis=-1) == "device" and seen[-1] == ("dev", -1)
    n = len(seen)
    assert fs("dev", (0, 1)) == "python" and fs("dev", np.int64(1)) == "python"
    assert fs("dev", 1, np.float64) == "python" and fs("dev", 1, strategy="auto") == "python"
    assert len(seen) == n
    fu = _core.front("unpackbits", gs.unpackbits.__wrapped__, None, hook)  # (bitorder "big" and no count only)
    assert fu("dev") == "device" and seen[-1] == ("dev",)
    with pytest.raises(TypeError, match="no device fast path"):
        _core.front("dot", dot, None, 3)


@pytest.mark.gpu
def test_front_device_arrays_take_the_device_fast_path():
    cp = pytest.importorskip("cupy")
    if not gs.cuda_available():
        pytest.skip("needs a CUDA GPU")
    rng = np.random.default_rng(8)
    h = rng.integers(0, 300, 100_003).astype(np.int32)
    d = cp.asarray(h)
    for name, args, want in [("sum", (d,), h.sum()), ("dot", (d, d), np.dot(h, h)),
                             ("count_nonzero", (d,), np.count_nonzero(h)), ("cumsum", (d,), np.cumsum(h)),
                             ("packbits", (d,), np.packbits(h != 0)), ("bincount", (d,), np.bincount(h)),
                             ("bincount", (d, None, 400), np.bincount(h, minlength=400)),
                             ("histogram", (d, 37, (0, 300)), np.histogram(h, 37, (0, 300))),
                             ("histogram", (d.astype(cp.float64), 37, (0.0, 300.0)),
                              np.histogram(h.astype(np.float64), 37, (0.0, 300.0)))]:
        got = getattr(gs, name)(*args)
        if name == "histogram":  # (the first call plans; the second takes the device fast path)
            got = gs.histogram(*args)
            for g, w in zip(got, want):
                assert isinstance(g, cp.ndarray) and g.dtype == w.dtype, name
                np.testing.assert_array_equal(g.get(), w)
        else:
            assert isinstance(got, cp.ndarray), name
            np.testing.assert_array_equal(got.get(), want)
        assert gs.last_plan()["notes"] == ["the device fast path"], (name, gs.last_plan())
