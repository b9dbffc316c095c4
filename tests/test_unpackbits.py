"""unpackbits against NumPy: shapes x axes x count x bitorder, bad input;
host and device inputs."""
import numpy as np
import pytest

import gpusync as gs
from conftest import assert_raises_like_numpy
from test_axis import to_host, to_kind  # noqa: F401



@pytest.mark.parametrize("shape", [(0,), (1,), (31,), (33,), pytest.param((100_000,), marks=pytest.mark.sanitizer),
                                   (3, 4, 5), (2, 0), (7, 9)], ids=str)
def test_unpackbits_matches_numpy(backend, kind, shape):
    a = np.random.default_rng(len(shape)).integers(0, 256, shape).astype(np.uint8)
    x = to_kind(a, kind)
    for axis in [None] + list(range(len(shape))) + [-1]:
        n = 8 * (a.size if axis is None else shape[axis])
        for count in (None, 0, 3, -2, 9, n + 3):
            if count is not None and count < 0 and -count > n:
                continue
            for bitorder in ("big", "little"):
                ref = np.unpackbits(a, axis, count, bitorder)
                got = to_host(gs.unpackbits(x, axis, count, bitorder))
                assert got.shape == ref.shape and got.dtype == ref.dtype
                if count is not None and count > n:  # NumPy leaves the padding of an empty line uninitialized
                    pad = (slice(None),) * (0 if axis is None else axis % ref.ndim) + (slice(n, None),)
                    assert not got[pad].any()
                    keep = (slice(None),) * (0 if axis is None else axis % ref.ndim) + (slice(0, n),)
                    np.testing.assert_array_equal(got[keep], ref[keep])
                else:
                    np.testing.assert_array_equal(got, ref)
    # round trip with packbits
    np.testing.assert_array_equal(to_host(gs.packbits(gs.unpackbits(x, -1), -1)), a)


def test_unpackbits_bad_input(backend):
    u = np.ones((2, 2), np.uint8)
    for call in (lambda m: m.unpackbits(np.ones(3)), lambda m: m.unpackbits(np.array([True])),
                 lambda m: m.unpackbits(u, axis=2), lambda m: m.unpackbits(u, count=1.5),
                 lambda m: m.unpackbits(np.array([255], np.uint8), count=-9),
                 lambda m: m.unpackbits(u, bitorder="middle")):
        assert_raises_like_numpy(lambda: call(np), lambda: call(gs))
