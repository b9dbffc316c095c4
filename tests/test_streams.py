"""The ``stream=`` argument: what it accepts, and that host-array calls give
the same results with it (CPU backend here; the GPU ordering tests are in
test_gpu_streams.py)."""
import numpy as np
import pytest

import gpusync as gs
from gpusync import _arrays


class _Proto:  # cuda.core / CuPy 13+: the CUDA stream protocol
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


class _CuPyLike:
    def __init__(self, h):
        self.ptr = h


class _TorchLike:
    def __init__(self, h):
        self.cuda_stream = h


class _NumbaLike:
    def __init__(self, h):
        self.h = h

    def __int__(self):
        return self.h


@pytest.mark.parametrize("stream, handle", [
    (0, 0), (1, 1), (2, 2), (0x7F00DEAD0000, 0x7F00DEAD0000),
    (_Proto(123), 123), (_CuPyLike(456), 456), (_TorchLike(789), 789), (_NumbaLike(42), 42),
    (np.uint64(77), 77),
], ids=["legacy0", "legacy", "per-thread", "pointer", "protocol", "cupy", "torch", "numba", "numpy-int"])
def test_stream_handle_accepts(stream, handle):
    assert _arrays.stream_handle(stream) == handle


@pytest.mark.parametrize("bad, exc", [
    (True, TypeError), (1.5, TypeError), ("s", TypeError), (object(), TypeError), ([1], TypeError),
    (-1, ValueError), (1 << 64, ValueError),
])
def test_stream_handle_rejects(bad, exc):
    with pytest.raises(exc):
        _arrays.stream_handle(bad)


def _calls(rng):
    x = rng.integers(0, 50, 10_001).astype(np.int32)
    f = rng.standard_normal(10_001)
    return {
        "histogram": (lambda **k: gs.histogram(f, bins=20, **k)[0]),
        "bincount": (lambda **k: gs.bincount(x, **k)),
        "sum": (lambda **k: gs.sum(x, **k)),
        "dot": (lambda **k: gs.dot(f, f, **k)),
        "cumsum": (lambda **k: gs.cumsum(x, **k)),
        "packbits": (lambda **k: gs.packbits(x, **k)),
        "count_nonzero": (lambda **k: gs.count_nonzero(x, **k)),
        "binned_statistic": (lambda **k: gs.binned_statistic(f, f, "mean", bins=7, **k).statistic),
    }


@pytest.mark.parametrize("name", list(_calls(np.random.default_rng(0))))
def test_every_function_takes_stream(backend, name):
    call = _calls(np.random.default_rng(1))[name]
    ref = call()
    for stream in (0, _CuPyLike(0), _Proto(0)):  # the legacy default stream is valid on any device
        # (binned_statistic's float sums are merged by atomics: equal to rounding)
        np.testing.assert_allclose(call(stream=stream), ref, rtol=1e-12)
    assert _arrays._CALL_STREAM.get() is None  # reset after the call


def test_bad_stream_is_an_error_and_resets(backend):
    with pytest.raises(TypeError):
        gs.sum(np.ones(10), stream="default")
    assert _arrays._CALL_STREAM.get() is None
    assert gs.sum(np.ones(10)) == 10


def test_empty_cache(backend):
    """Trimming the scratch pool between calls changes nothing but memory."""
    a = np.random.default_rng(2).integers(0, 256, 3 << 20, dtype=np.uint8)
    ref = np.bincount(a, minlength=256)
    np.testing.assert_array_equal(gs.bincount(a, minlength=256), ref)
    gs.empty_cache()
    np.testing.assert_array_equal(gs.bincount(a, minlength=256), ref)
    gs.empty_cache()


def test_every_function_documents_stream():
    import inspect

    for f in (gs.histogram, gs.bincount, gs.sum, gs.dot, gs.binned_statistic, gs.packbits, gs.count_nonzero,
              gs.cumsum):
        assert inspect.signature(f).parameters["stream"].default is None, f.__name__
        assert "``stream``" in f.__doc__, f.__name__
