"""The ``stream=`` argument: what it accepts, and that host-array calls give
the same results with it (CPU backend); on the GPU (marked gpu), that the
work is ordered after the producer's stream, CUDA-graph capture with no
hidden sync, and non-default streams."""
import numpy as np
import pytest

import gpusync as gs
from conftest import in_threads
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


# ---------------------------------------------------------------- on the GPU
# Streams on the GPU: ``stream=`` is where the work runs, ordered after the
# producer's stream (the library's current stream, a CAI v3 ``stream``, or
# DLPack's ``stream`` argument), and results are ready once that stream is.
#
# Each test writes the input on a producer stream behind a ~30 ms spin kernel,
# then calls gpusync with stream= another non-blocking stream and reads the
# result after synchronizing only that stream: a call that did not wait for the
# producer would see the zeros the array held before.

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


def _late(cp, values: np.ndarray, stream):
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
        "bincount": (lambda d, **k: gs.bincount(d.astype(np.int32), **k), np.bincount(v.astype(np.int32))),
        "sum": (lambda d, **k: gs.sum(d, **k), np.float32(x.sum())),
        "dot": (lambda d, **k: gs.dot(d, d, **k), np.float32((x * x).sum())),
        "cumsum": (lambda d, **k: gs.cumsum(d, **k), np.cumsum(x).astype(np.float32)),
        "packbits": (lambda d, **k: gs.packbits(d, threshold=50, **k), np.packbits(v > 50)),
        "count_nonzero": (lambda d, **k: gs.count_nonzero(d, threshold=50, **k), np.count_nonzero(v > 50)),
        "binned_statistic": (lambda d, **k: gs.binned_statistic(d, d, "sum", bins=9, **k).statistic,
                             np.histogram(v, bins=9, weights=x)[0]),
    }


def _get(cp, r, stream):
    return r.get(stream=stream) if isinstance(r, cp.ndarray) else np.asarray(r)


@pytest.mark.gpu
def test_non_default_stream(cp):
    a = cp.random.randint(0, 256, 5_000_000, dtype=cp.uint8)
    cp.cuda.Device().synchronize()  # a non-blocking stream is not ordered after the null stream's work
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        h, _ = gs.histogram(a, bins=256, range=(0, 256))
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(h), np.bincount(cp.asnumpy(a), minlength=256))


@pytest.mark.gpu
def test_graph_capture_no_hidden_sync(cuda):
    """With bins and range given, a histogram of a device array is pure
    enqueued work: it can be captured in a CUDA graph and replayed."""
    torch = pytest.importorskip("torch")
    x = torch.randint(0, 256, (4_000_000,), dtype=torch.uint8, device="cuda")
    f = torch.randn(1_000_000, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm up outside the capture
        gs.histogram(x, bins=256, range=(0, 256))
        gs.histogram(f, bins=100, range=(-3, 3))
        gs.histogram(f, bins=10, range=(-0.3, 0.7))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, e = gs.histogram(x, bins=256, range=(0, 256))
        hf, ef = gs.histogram(f, bins=100, range=(-3, 3))
        # float32 edges of bounds that are no float32 values: their formula too, no host copy (r123)
        hd, ed = gs.histogram(f, bins=10, range=(-0.3, 0.7))
    for _ in range(2):
        x.random_(0, 256)
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(h.cpu().numpy(), np.histogram(x.cpu().numpy(), 256, (0, 256))[0])
        np.testing.assert_array_equal(hf.cpu().numpy(), np.histogram(f.cpu().numpy(), 100, (-3, 3))[0])
        np.testing.assert_array_equal(ef.cpu().numpy(), np.histogram(f.cpu().numpy(), 100, (-3, 3))[1])
        np.testing.assert_array_equal(hd.cpu().numpy(), np.histogram(f.cpu().numpy(), 10, (-0.3, 0.7))[0])
        np.testing.assert_array_equal(ed.cpu().numpy(), np.histogram(f.cpu().numpy(), 10, (-0.3, 0.7))[1])


@pytest.mark.gpu
def test_graph_capture_threadfence_no_hidden_sync(cuda):
    torch = pytest.importorskip("torch")
    x = torch.randn(4_000_000, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        gs.dot(x, x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        r = gs.dot(x, x, strategy="threadfence")
        r2 = gs.sum(x, strategy="two-pass", deterministic=True)
    for _ in range(2):
        x.normal_()
        g.replay()
        torch.cuda.synchronize()
        assert float(r) == pytest.approx(float((x.double() ** 2).sum()), rel=1e-6)
        assert float(r2) == pytest.approx(float(x.double().sum()), rel=1e-5, abs=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(_cases(np.zeros(1, np.float32))))
def test_cupy_stream_argument_waits_for_the_producer(cp, name):
    v = _values()
    call, ref = _cases(v)[name]
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(cp, v, producer)
    with producer:  # the producer's current stream: what its CAI names
        # (bincount's astype runs here too, ordered on the producer)
        got = call(d, stream=consumer)
    consumer.synchronize()
    np.testing.assert_allclose(_get(cp, got, consumer), ref, rtol=1e-6)


@pytest.mark.gpu
def test_cai_stream_of_another_stream_is_waited_for(cp):
    """Called outside the producer's context, the CAI v3 stream of an array
    (here a wrapper that names the producer) still orders the call."""
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(cp, v, producer)

    class Named:
        def __init__(self, a, s):
            cai = dict(a.__cuda_array_interface__)
            cai["stream"] = s.ptr
            cai["version"] = 3
            self.__cuda_array_interface__ = cai
            self.keep = a

    got = gs.sum(Named(d, producer), stream=consumer)
    consumer.synchronize()
    assert float(_get(cp, got, consumer)) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


@pytest.mark.gpu
def test_results_are_ordered_on_the_consumer_stream(cp):
    """Without any sync of the producer, a kernel enqueued on the consumer
    after the call sees the finished result."""
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(cp, v, producer)
    with producer:
        c = gs.cumsum(d, stream=consumer)
    with consumer:
        last = c[-1:] * 1  # CuPy work on the consumer stream, after ours
    consumer.synchronize()
    assert float(last.get(stream=consumer)[0]) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


@pytest.mark.gpu
@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_raw_handle_with_cupy_arrays(cp):
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(cp, v, producer)
    with producer:
        got = gs.cumsum(d, stream=consumer.ptr)
    consumer.synchronize()
    np.testing.assert_allclose(got.get(stream=consumer), np.cumsum(v.astype(np.float64)).astype(np.float32),
                               rtol=1e-6)


@pytest.mark.gpu
def test_torch_stream_argument(cuda):
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


@pytest.mark.gpu
def test_dlpack_stream_argument_is_passed(cp):
    v = _values()
    producer = cp.cuda.Stream(non_blocking=True)
    consumer = cp.cuda.Stream(non_blocking=True)
    d = _late(cp, v, producer)
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
    assert float(_get(cp, got, consumer)) == pytest.approx(float(v.astype(np.float64).sum()), rel=1e-6)


@pytest.mark.gpu
def test_numba_array_with_cupy_stream(cp):
    cuda = pytest.importorskip("numba.cuda")
    a = np.random.default_rng(4).integers(0, 1000, 50_000)
    s = cp.cuda.Stream(non_blocking=True)
    h, _ = gs.histogram(cuda.to_device(a), bins=10, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(h.copy_to_host(), np.histogram(a, bins=10)[0])


@pytest.mark.gpu
@pytest.mark.parametrize("nbytes", [1000, 8 << 20])
def test_host_input_on_a_stream(cp, nbytes):
    a = np.random.default_rng(5).integers(0, 256, nbytes, dtype=np.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    np.testing.assert_array_equal(gs.bincount(a, stream=s), np.bincount(a))
    assert gs.sum(a, stream=s) == a.sum(dtype=np.uint64)
    np.testing.assert_array_equal(gs.cumsum(a, stream=s), np.cumsum(a, dtype=np.uint64))


def _torch_sum_to_capture(n):
    """(torch, an int64 arange of n on the GPU, a CUDAGraph): gs.sum warmed up on a side stream."""
    torch = pytest.importorskip("torch")
    x = torch.arange(n, dtype=torch.int64, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm up outside the capture
        gs.sum(x)
    torch.cuda.synchronize()
    return torch, x, torch.cuda.CUDAGraph()


@pytest.mark.gpu
def test_kept_sum_workspace_across_streams_threads_and_capture(cp):
    """Device sums past one block, strategy auto, outside graph capture: one launch into the
    calling thread's kept workspace for the stream (strategy_used 'threadfence'), the same buffer
    again and again; threads keep their own; a capture takes the two-pass path with a workspace of
    its own (replays stay right)."""
    rng = np.random.default_rng(11)
    sizes = [70_001, 1_000_003, 9_999_991, 40_000_000]
    hosts = [rng.integers(-1000, 1000, n).astype(np.int64) for n in sizes]
    devs = [cp.asarray(h) for h in hosts]
    # the copies ran on the null stream, which non-blocking streams do not wait for (a pageable copy
    # returns before its DMA lands: r157 read a 320 MB input still arriving)
    cp.cuda.Device().synchronize()
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(3)]
    outs = []
    for rep in range(4):  # the same buffer, its ticket reset by every call's last block
        for k, d in enumerate(devs):
            with streams[(rep + k) % 3]:
                outs.append((k, gs.sum(d), gs.dot(d, d)))
                assert gs.last_plan()["strategy_used"] == "threadfence", gs.last_plan()
    cp.cuda.Device().synchronize()
    for k, s, p in outs:
        assert int(s) == int(hosts[k].sum()) and int(p) == int(hosts[k] @ hosts[k])
    f = cp.asarray(rng.standard_normal(3_000_017))
    cp.cuda.Device().synchronize()

    def work(seed):
        st = cp.cuda.Stream(non_blocking=True)
        with st:
            for i in range(30):
                d = devs[(seed + i) % len(devs)]
                r, rf = gs.sum(d), gs.sum(f)
                st.synchronize()
                assert int(r) == int(hosts[(seed + i) % len(devs)].sum())
                assert float(rf) == pytest.approx(float(f.get().sum()), rel=1e-9, abs=1e-6)
    in_threads(work)
    torch, x, g = _torch_sum_to_capture(2_000_000)
    with torch.cuda.graph(g):
        r = gs.sum(x)
        assert gs.last_plan()["strategy_used"] == "two-pass"
    for v in (1, 3):
        x.fill_(v)
        g.replay()
        torch.cuda.synchronize()
        assert int(r) == v * 2_000_000
        assert int(gs.sum(x)) == v * 2_000_000  # and the kept workspace between replays


_SPIN_NS = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}"""


@pytest.mark.gpu
def test_kept_workspace_never_ties_two_streams(cp):
    """A kept-workspace sum on stream B does not wait for stream A's work (a kernel spinning
    300 ms, then a sum that used its own kept workspace): B's sum is done while A still spins."""
    import time
    spin = cp.RawKernel(_SPIN_NS, "spin")
    x = cp.arange(3_000_000, dtype=cp.int64)
    a, b = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    for s in (a, b):  # each stream's kept workspace exists before the timed part
        with s:
            gs.sum(x)
    cp.cuda.Device().synchronize()
    with a:
        spin((1,), (1,), (np.uint64(300_000_000),))
        ra = gs.sum(x)
        ea = cp.cuda.Event()
        ea.record()
    t0 = time.perf_counter()
    with b:
        rb = gs.sum(x)
        assert gs.last_plan()["strategy_used"] == "threadfence"
        eb = cp.cuda.Event()
        eb.record()
    eb.synchronize()
    waited = time.perf_counter() - t0
    still_spinning = not ea.done
    ea.synchronize()
    expect = 3_000_000 * 2_999_999 // 2
    assert int(ra) == expect and int(rb) == expect
    assert still_spinning and waited < 0.2, (still_spinning, waited)


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_thread_exit_during_a_capture_leaves_it_intact(cp, lib):
    """A thread that used a kept workspace exits while another thread captures a graph (torch's
    global mode; a CuPy blocking stream): its workspace is freed without a host wait and without
    the legacy stream, so the capture stays valid and its replay is right."""
    import threading
    import time
    x = cp.arange(2_000_000, dtype=cp.int64)
    cp.cuda.Device().synchronize()  # the worker's non-blocking stream does not wait for the null stream
    go, got = threading.Event(), {}

    def worker():
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            got["r"] = gs.sum(x)
        s.synchronize()
        go.wait(10)
    t = threading.Thread(target=worker)
    t.start()
    while "r" not in got:
        time.sleep(0.01)
    if lib == "torch":
        torch, xt, g = _torch_sum_to_capture(2_000_000)
        with torch.cuda.graph(g):
            r = gs.sum(xt)
            go.set()
            t.join()
            time.sleep(0.2)  # (CPython <= 3.12: join returns before the thread's C++ destructors run)
        g.replay()
        torch.cuda.synchronize()
        assert int(r) == 2_000_000 * 1_999_999 // 2
    else:
        s = cp.cuda.Stream(non_blocking=False)
        with s:
            gs.sum(x)
            s.synchronize()
            s.begin_capture()
            r = gs.sum(x)
            go.set()
            t.join()
            time.sleep(0.2)
            g = s.end_capture()
            g.launch()
        s.synchronize()
        assert int(r) == 2_000_000 * 1_999_999 // 2
    assert int(got["r"]) == 2_000_000 * 1_999_999 // 2


@pytest.mark.gpu
def test_kept_workspace_every_grid_dtype_and_layout(cp, monkeypatch):
    """The kept path at every size (one-block path off), forced grids of 1, 2 and 7 blocks (a
    ticket left behind would spoil the next call), every dot dtype whose register bound changed,
    uint32 sums (4 partials in flight in the finishing step), strided and misaligned inputs."""
    rng = np.random.default_rng(17)
    monkeypatch.setenv("GPUSYNC_REDUCE_SMALL_BYTES", "0")
    for grid in ("1", "2", "7", None):
        if grid:
            monkeypatch.setenv("GPUSYNC_REDUCE_GRID", grid)
        else:
            monkeypatch.delenv("GPUSYNC_REDUCE_GRID", raising=False)
        for n in (1, 5, 4097, 1_000_003):
            h = rng.integers(-300, 700, n).astype(np.int64)
            d = cp.asarray(h)
            assert int(gs.sum(d)) == int(h.sum()), (grid, n)
            assert gs.last_plan()["strategy_used"] == "threadfence"
            assert int(gs.dot(d, d)) == int(h @ h), (grid, n)
    monkeypatch.delenv("GPUSYNC_REDUCE_GRID", raising=False)
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32", "float64"):
        h = rng.integers(0, 2 if dt == "float16" else 5, 30_011).astype(dt)
        d = cp.asarray(h)
        for a, b in ((d, d), (d[::3], d[1::3]), (d[1:], d[:-1])):
            ha, hb = cp.asnumpy(a), cp.asnumpy(b)
            got = gs.dot(a, b)
            if h.dtype.kind == "f":
                assert float(got) == pytest.approx(float(np.dot(ha.astype(np.float64), hb)), rel=1e-3), dt
            else:
                assert int(got) == int(np.dot(ha, hb)), dt  # (NumPy's wrap-around in the dtype)
        if dt == "uint32":
            assert int(gs.sum(d)) == int(h.sum()) and int(gs.sum(d[1:])) == int(h[1:].sum())
