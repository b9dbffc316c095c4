"""The kernels' size-dependent paths against NumPy (on CPU threads here; on
the GPU with the cuda backend): axis split into parts (few long rows or few
columns), multi-tile row scans, histograms whose bins fit a block, a
thread-block cluster (256 x 256 bins) or only global memory (1000 x 1000)."""
import numpy as np
import pytest

import gpusync as gs


@pytest.mark.parametrize("shape,axis", [((4096, 300), 0), ((3, 200_001), 1), ((1, 1 << 20), 1), ((5000, 7), 0),
                                        ((2, 4096, 33), 1)])
def test_split_axis_paths(backend, shape, axis):
    a = np.random.default_rng(1).random(shape, dtype=np.float32)
    ref = np.sum(a.astype(np.float64), axis=axis).astype(np.float32)
    np.testing.assert_allclose(gs.sum(a, axis=axis), ref, rtol=1e-6)
    i = (a * 100).astype(np.int32)
    np.testing.assert_array_equal(gs.sum(i, axis=axis), np.sum(i, axis=axis))
    np.testing.assert_array_equal(gs.count_nonzero(i, axis=axis), np.count_nonzero(i, axis=axis))
    ref = np.cumsum(a.astype(np.float64), axis=axis).astype(np.float32)
    np.testing.assert_allclose(gs.cumsum(a, axis=axis), ref, rtol=1e-6)
    np.testing.assert_array_equal(gs.cumsum(i, axis=axis), np.cumsum(i, axis=axis))


@pytest.mark.parametrize("bins", [64, 256, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram2d_bin_count_paths(backend, bins, weighted):
    rng = np.random.default_rng(bins)
    n = 1_000_000
    x = rng.random(n, dtype=np.float32)
    y = (rng.standard_normal(n) * 0.3 + 0.5).astype(np.float32)
    w = rng.random(n) if weighted else None
    got = gs.histogram2d(x, y, bins, [[0, 1], [0, 1]], weights=w)
    ref = np.histogram2d(x, y, bins, [[0, 1], [0, 1]], weights=w)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-9)
    assert got[0].sum() == pytest.approx(ref[0].sum(), rel=1e-12)
