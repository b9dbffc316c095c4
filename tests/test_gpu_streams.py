"""Streams on the GPU: ``stream=`` is where the work runs, ordered after the
producer's stream (the library's current stream, a CAI v3 ``stream``, or
DLPack's ``stream`` argument), and results are ready once that stream is.

Each test writes the input on a producer stream behind a ~30 ms spin kernel,
then calls gpusync with stream= another non-blocking stream and reads the
result after synchronizing only that stream: a call that did not wait for the
producer would see the zeros the array held before."""
import numpy as np
import pytest

import gpusync as gs

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy") if gs.cuda_available() else None

_SPIN = r"""
extern "C" __global__ void spin_then_copy(const float *src, float *dst, long long n, long long ns)
{
    if (threadIdx.x == 0) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < (unsigned long long)ns);
    }
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
"""

N = 1_000_003


@pytest.fixture(autouse=True)
def _cuda():
    with gs.use_backend("cuda"):
        yield


def _late(values: np.ndarray, stream):
    """A CuPy float32 array that holds zeros now and `values` once `stream`
    has run a ~30 ms spin kernel."""
    kern = cp.RawKernel(_SPIN, "spin_then_copy")
    src = cp.asarray(values, dtype=cp.float32)
    dst = cp.zeros(values.size, cp.float32)
    cp.cuda.Device().synchronize()
    with stream:
        kern((264,), (256,), (src, dst, np.int64(values.size), np.int64(30_000_000)))
    return dst


def _values():
    return np.random.default_rng(3).integers(1, 100, N).astype(np.float32)


def _cases(v):
    x = v.astype(np.float64)
    return {
        "histogram": (lambda d, **k: gs.histogram(d, bins=99, range=(1, 100), **k)[0],
                      np.histogram(v, bins=99, range=(1, 100))[0]),
        "histogram-auto-range": (lambda d, **k: gs.histogram(d, bins=30, **k)[0], np.histogram(v, bins=30)[0]),
        "bincount": (lambda d, **k: gs.bincount(d.astype(cp.int32), **k), np.bincount(v.astype(np.int32))),
        "sum": (lambda d, **k: gs.sum(d, **k), np.float32(x.sum())),
        "dot": (lambda d, **k: gs.dot(d, d, **k), np.float32((x * x).sum())),
        "cumsum": (lambda d, **k: gs.cumsum(d, **k), np.cumsum(x).astype(np.float32)),
        "packbits": (lambda d, **k: gs.packbits(d, threshold=50, **k), np.packbits(v > 50)),
        "count_nonzero": (lambda d, **k: gs.count_nonzero(d, threshold=50, **k), np.count_nonzero(v > 50)),
        "binned_statistic": (lambda d, **k: gs.binned_statistic(d, d, "sum", bins=9, **k).statistic,
                             np.histogram(v, bins=9, weights=x)[0]),
    }


def _get(r, stream):
    return r.get(stream=stream) if isinstance(r, cp.ndarray) else np.asarray(r)


@pytest.mark.parametrize("name", list(_cases(np.zeros(1, np.float32))))
def test_cupy_stream_argument_waits_for_the_producer(name):
    v = _values()
    call, ref = _cases(v)[name]
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(v, producer)
    with producer:  # the producer's current stream: what its CAI names
        # (bincount's astype runs here too, ordered on the producer)
        got = call(d, stream=consumer)
    consumer.synchronize()
    np.testing.assert_allclose(_get(got, consumer), ref, rtol=1e-6)


def test_cai_stream_of_another_stream_is_waited_for():
    """Called outside the producer's context, the CAI v3 stream of an array
    (here a wrapper that names the producer) still orders the call."""
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(v, producer)

    class Named:
        def __init__(self, a, s):
            cai = dict(a.__cuda_array_interface__)
            cai["stream"] = s.ptr
            cai["version"] = 3
            self.__cuda_array_interface__ = cai
            self.keep = a

    got = gs.sum(Named(d, producer), stream=consumer)
    consumer.synchronize()
    assert float(_get(got, consumer)) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


def test_results_are_ordered_on_the_consumer_stream():
    """Without any sync of the producer, a kernel enqueued on the consumer
    after the call sees the finished result."""
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(v, producer)
    with producer:
        c = gs.cumsum(d, stream=consumer)
    with consumer:
        last = c[-1:] * 1  # CuPy work on the consumer stream, after ours
    consumer.synchronize()
    assert float(last.get(stream=consumer)[0]) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_raw_handle_with_cupy_arrays():
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(v, producer)
    with producer:
        got = gs.cumsum(d, stream=consumer.ptr)
    consumer.synchronize()
    np.testing.assert_allclose(got.get(stream=consumer), np.cumsum(v.astype(np.float64)).astype(np.float32),
                               rtol=1e-6)


def test_torch_stream_argument():
    torch = pytest.importorskip("torch")
    v = _values()
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(producer):
        t = torch.zeros(N, device="cuda")
        torch.cuda._sleep(50_000_000)  # ~25 ms of spinning on the producer
        t.copy_(torch.from_numpy(v).to("cuda", non_blocking=True))
        h, _ = gs.histogram(t, bins=99, range=(1, 100), stream=consumer)
        s = gs.sum(t, stream=consumer)
    assert isinstance(h, torch.Tensor)
    consumer.synchronize()
    np.testing.assert_array_equal(h.cpu().numpy(), np.histogram(v, bins=99, range=(1, 100))[0])
    assert float(s.cpu()) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)
    # the raw handle works the same
    with torch.cuda.stream(producer):
        s2 = gs.sum(t, stream=consumer.cuda_stream)
    consumer.synchronize()
    assert float(s2.cpu()) == float(s.cpu())


def test_dlpack_stream_argument_is_passed():
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(v, producer)
    seen = []

    class OnlyDLPack:
        def __dlpack__(self, stream=None, **kw):
            seen.append(stream)
            # the producer's side of the protocol: order its work before `stream`
            ev = producer.record()
            cp.cuda.runtime.streamWaitEvent(stream, ev.ptr)
            return d.__dlpack__(stream=stream, **kw)

        def __dlpack_device__(self):
            return d.__dlpack_device__()

    got = gs.sum(OnlyDLPack(), stream=consumer)
    assert seen and seen[-1] == consumer.ptr
    consumer.synchronize()
    assert float(_get(got, consumer)) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


def test_numba_array_with_cupy_stream():
    cuda = pytest.importorskip("numba.cuda")
    a = np.random.default_rng(4).integers(0, 1000, 50_000)
    s = cp.cuda.Stream(non_blocking=True)
    h, _ = gs.histogram(cuda.to_device(a), bins=10, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(h.copy_to_host(), np.histogram(a, bins=10)[0])


@pytest.mark.parametrize("nbytes", [1000, 8 << 20])
def test_host_input_on_a_stream(nbytes):
    a = np.random.default_rng(5).integers(0, 256, nbytes, dtype=np.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    np.testing.assert_array_equal(gs.bincount(a, stream=s), np.bincount(a))
    assert gs.sum(a, stream=s) == a.sum(dtype=np.uint64)
    np.testing.assert_array_equal(gs.cumsum(a, stream=s), np.cumsum(a, dtype=np.uint64))
