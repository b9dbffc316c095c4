"""Several Python threads calling gpusync at once (the GIL is released
during GPU and CPU work): every result is checked."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gpusync as gs


def _work(seed, iters):
    rng = np.random.default_rng(seed)
    for i in range(iters):
        n = int(rng.integers(1, 300_000))
        a = rng.integers(0, 256, n, dtype=np.uint8)
        f = rng.standard_normal(n)
        assert np.array_equal(gs.bincount(a, minlength=256), np.bincount(a, minlength=256))
        assert np.array_equal(gs.histogram(a, bins=16, range=(0, 256))[0], np.histogram(a, 16, (0, 256))[0])
        assert gs.sum(a) == a.sum()
        assert gs.dot(f, f) == pytest.approx(np.dot(f, f), rel=1e-12)
        assert np.array_equal(gs.cumsum(a), np.cumsum(a))
        assert gs.count_nonzero(a) == np.count_nonzero(a)
    return iters


def test_eight_threads_many_calls(backend):
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda s: _work(s, 12), range(8)))
    assert done == [12] * 8


@pytest.mark.gpu
def test_eight_threads_cupy_streams():
    cp = pytest.importorskip("cupy")

    def work(seed):
        rng = np.random.default_rng(seed)
        with cp.cuda.Stream(non_blocking=True) as s:  # each thread its own stream
            for _ in range(25):
                h = rng.integers(0, 1000, int(rng.integers(1, 2_000_000)), dtype=np.int32)
                d = cp.asarray(h)
                c = gs.cumsum(d)
                t = gs.sum(d)
                b = gs.bincount(d, minlength=1000)
                s.synchronize()
                assert np.array_equal(c.get(), np.cumsum(h))
                assert int(t) == int(h.sum())
                assert np.array_equal(b.get(), np.bincount(h, minlength=1000))
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8)))
