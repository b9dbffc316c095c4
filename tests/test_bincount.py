"""gs.bincount against np.bincount."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusync as gs
from conftest import assert_raises_like_numpy, strategies_for

INT_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 31, 33, 1000, 10**6])
def test_dtypes_sizes(backend, dtype, n):
    rng = np.random.default_rng(n)
    hi = 1 if dtype == np.bool_ else min(np.iinfo(dtype).max, 5000)
    x = rng.integers(0, hi, n, endpoint=True).astype(dtype)
    for s in strategies_for(backend):
        for minlength in (0, 7, 6000):
            got = gs.bincount(x, minlength=minlength, strategy=s)
            ref = np.bincount(x, minlength=minlength)
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref, err_msg=f"strategy={s}")


def test_weights(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 300, 100_001)
    for w in (rng.random(x.size), rng.random(x.size).astype(np.float32), rng.integers(-5, 5, x.size),
              rng.random(x.size) > 0.3):
        for s in strategies_for(backend):
            got = gs.bincount(x, weights=w, strategy=s)
            ref = np.bincount(x, weights=w)
            assert got.dtype == ref.dtype == np.float64
            np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_skewed_and_single_value(backend):
    x = np.full(200_000, 42, dtype=np.int32)
    x[::1000] = 7
    for s in strategies_for(backend):
        np.testing.assert_array_equal(gs.bincount(x, strategy=s), np.bincount(x))


def test_many_bins(backend):
    """Large max value: many bins (global-memory and cluster paths)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3_000_000, 200_000)
    x[0] = 2_999_999
    for s in ["auto", "global", "warp"] + (["shared"] if backend == "cpu" else []):
        np.testing.assert_array_equal(gs.bincount(x, strategy=s), np.bincount(x))


def test_non_contiguous(backend):
    x = np.arange(10_000, dtype=np.int64) % 97
    np.testing.assert_array_equal(gs.bincount(x[::3]), np.bincount(x[::3]))
    np.testing.assert_array_equal(gs.bincount(x[::-1]), np.bincount(x[::-1]))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.bincount([1, -2]),
        lambda m: m.bincount([1, 2], minlength=-1),
        lambda m: m.bincount([1, 2], minlength=None),
        lambda m: m.bincount([1, 2], weights=[1]),
        lambda m: m.bincount(np.array([[1]])),
        lambda m: m.bincount(np.array(1)),
        lambda m: m.bincount(np.array([1.0])),
        lambda m: m.bincount(np.array([], dtype=float)),
    ],
)
def test_errors_match_numpy(backend, call):
    assert_raises_like_numpy(lambda: call(np), lambda: call(gs))


def test_cluster_on_cpu_runs_as_privatized_bins():
    """Every public strategy runs on every backend: 'cluster' on CPU threads
    runs as per-thread private histograms, and the plan says so."""
    with gs.use_backend("cpu"):
        np.testing.assert_array_equal(gs.bincount([1, 2, 3], strategy="cluster"), np.bincount([1, 2, 3]))
        plan = gs.last_plan()
        assert plan["strategy_used"] == "shared" and any("cluster" in n for n in plan["notes"])
        np.testing.assert_array_equal(gs.histogram(np.arange(10), 3, strategy="cluster")[0], [3, 3, 4])


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.int64, st.integers(0, 500), elements=st.integers(0, 3000)),
       minlength=st.integers(0, 100), strategy=st.sampled_from(["auto", "global", "shared", "warp"]))
def test_property(x, minlength, strategy):
    got = gs.bincount(x, minlength=minlength, strategy=strategy)
    np.testing.assert_array_equal(got, np.bincount(x, minlength=minlength))
    assert got.sum() == x.size


def test_fast_path_zeroes_the_bins_past_the_maximum():
    """The C fast path zeroes only the bins past the maximum (the engine
    writes the others): memory freed by an earlier result with counts in it
    comes back as a later result and must read as NumPy's zeros."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        big = rng.integers(0, 3000, 50_000)
        small = rng.integers(0, 10, int(rng.integers(1, 2_000)))
        for x, m in ((big, 0), (small, 3000), (small, 0), (big, 4000)):
            np.testing.assert_array_equal(gs.bincount(x, minlength=m), np.bincount(x, minlength=m))
