"""Every public function takes NumPy's / SciPy's parameters in their order
(gpusync's own options keyword-only after them), accepts array-likes, and
positional calls mean what they mean in NumPy / SciPy."""
import inspect

import numpy as np
import pytest
import scipy.stats

import gpusync as gs

OWN = {"strategy", "deterministic", "threshold", "stream"}

PAIRS = [
    ("histogram", np.histogram),
    ("bincount", np.bincount),
    ("sum", np.sum),
    ("dot", np.dot),
    ("cumsum", np.cumsum),
    ("count_nonzero", np.count_nonzero),
    ("packbits", np.packbits),
    ("binned_statistic", scipy.stats.binned_statistic),
]
for _name, _ref in [("histogram2d", np.histogram2d), ("histogramdd", np.histogramdd),
                    ("unpackbits", np.unpackbits),
                    ("binned_statistic_2d", scipy.stats.binned_statistic_2d),
                    ("binned_statistic_dd", scipy.stats.binned_statistic_dd)]:
    if hasattr(gs, _name):
        PAIRS.append((_name, _ref))


@pytest.mark.parametrize("name,ref", PAIRS, ids=[p[0] for p in PAIRS])
def test_signature_matches(name, ref):
    ours = inspect.signature(getattr(gs, name)).parameters
    theirs = inspect.signature(ref).parameters
    head = [p for p in ours.values() if p.name not in OWN]
    assert [p.name for p in head] == list(theirs), name
    for p in head:
        t = theirs[p.name]
        assert p.kind == t.kind, (name, p.name, p.kind, t.kind)
        if t.default is not inspect.Parameter.empty and repr(t.default) != "<no value>":
            assert p.default == t.default or (p.default is None and t.default is None), (name, p.name)
    for p in ours.values():
        if p.name in OWN:
            assert p.kind == inspect.Parameter.KEYWORD_ONLY, (name, p.name)


def test_positional_calls_mean_numpys():
    rng = np.random.default_rng(0)
    a = rng.random(1000)
    w = rng.random(1000)
    for args in [(a, 10, (0, 1), True), (a, 10, (0, 1), None, w), (a, 7, None, True, w), (a, [0, .5, 1])]:
        got, ge = gs.histogram(*args)
        ref, re = np.histogram(*args)
        np.testing.assert_allclose(got, ref, rtol=1e-12)
        np.testing.assert_array_equal(ge, re)
        assert got.dtype == ref.dtype
    x = rng.integers(0, 20, 500)
    np.testing.assert_array_equal(gs.bincount(x, None, 30), np.bincount(x, None, 30))
    np.testing.assert_allclose(gs.bincount(x, w[:500]), np.bincount(x, w[:500]))
    m = rng.random((30, 40)).astype(np.float32)
    o = np.empty(40, np.float64)
    assert gs.sum(m, 0, np.float64, o, False) is o
    np.testing.assert_allclose(o, np.sum(m, 0, np.float64), rtol=1e-6)
    np.testing.assert_allclose(gs.sum(m, 1, None, None, True, 5.0), np.sum(m, 1, None, None, True, 5.0), rtol=1e-5)
    np.testing.assert_allclose(gs.cumsum(m, 1, np.float64), np.cumsum(m, 1, np.float64), rtol=1e-6)
    np.testing.assert_array_equal(gs.count_nonzero(m > .5, 0), np.count_nonzero(m > .5, 0))
    b = m > .5
    np.testing.assert_array_equal(gs.packbits(b, 1, "little"), np.packbits(b, 1, "little"))
    assert gs.dot(a, w) == pytest.approx(np.dot(a, w), rel=1e-12)
    s, e, n = gs.binned_statistic(a, w, "sum", 5, (0, 1))
    rs, re_, rn = scipy.stats.binned_statistic(a, w, "sum", 5, (0, 1))
    np.testing.assert_allclose(s, rs, rtol=1e-12)
    np.testing.assert_array_equal(n, rn)


@pytest.mark.parametrize("value", [[1, 2, 3], (1.5, 2.5), 7, np.float32(2.5), np.array(3), [[1, 2], [3, 4]], [True, False]])
def test_array_likes(value):
    for name in ("sum", "cumsum", "count_nonzero"):
        got, ref = getattr(gs, name)(value), getattr(np, name)(value)
        np.testing.assert_array_equal(got, ref, err_msg=name)
        assert np.asarray(got).dtype == np.asarray(ref).dtype, name
        assert type(got) is type(ref), (name, type(got), type(ref))
    got, ref = gs.sum(value, keepdims=True), np.sum(value, keepdims=True)
    np.testing.assert_array_equal(got, ref)
    assert got.shape == ref.shape


def test_result_types():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    assert type(gs.sum(a)) is type(np.sum(a))
    assert type(gs.sum(a, axis=(0, 1))) is type(np.sum(a, axis=(0, 1)))
    assert gs.sum(a, axis=0).dtype == np.sum(a, axis=0).dtype
    assert type(gs.count_nonzero(a)) is type(np.count_nonzero(a))
    assert gs.count_nonzero(a, axis=1).dtype == np.count_nonzero(a, axis=1).dtype
    assert gs.cumsum(a, axis=0).dtype == np.cumsum(a, axis=0).dtype
    assert type(gs.dot(3, 4)) is type(np.dot(3, 4))
    for x, y in ((2, 3), (2.5, 3), (True, False), (True, 2), (2**40, 2**20), (-1, 2.0), (3, True)):
        got, want = gs.dot(x, y), np.dot(x, y)  # two Python scalars: their product, NumPy's type
        assert type(got) is type(want) and got == want, (x, y, got, want)
    np.testing.assert_array_equal(gs.dot(2.0, [1, 2]), np.dot(2.0, [1, 2]))


def test_dot_out_and_nd():
    a, b = np.arange(5.0), np.arange(5.0) + 1
    o = np.zeros(())
    r = gs.dot(a, b, o)  # written into o; NumPy returns the value (a float64 scalar), not o
    assert o == np.dot(a, b) and r == o and type(r) is type(np.dot(a, b, np.zeros(())))
    with pytest.raises(ValueError, match="output array is not acceptable"):
        gs.dot(a, b, np.zeros((), np.float32))
    with pytest.raises(ValueError, match="output array is not acceptable"):
        np.dot(a, b, np.zeros((), np.float32))
    with pytest.raises(ValueError, match="matrix product"):
        gs.dot(np.ones((2, 2)), np.ones((2, 2)))


def test_stubs_match_runtime_signatures():
    import ast
    import os

    path = os.path.join(os.path.dirname(gs.__file__), "__init__.pyi")
    assert os.path.exists(os.path.join(os.path.dirname(gs.__file__), "py.typed"))
    tree = ast.parse(open(path).read())
    stubs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for name in gs.__all__:
        obj = getattr(gs, name)
        if not callable(obj) or isinstance(obj, type):
            continue
        assert name in stubs, name
        a = stubs[name].args
        names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
        assert names == list(inspect.signature(obj).parameters), name
