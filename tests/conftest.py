import threading

import numpy as np
import pytest

import gpusync as gs

HAS_CUDA = gs.cuda_available()

BACKENDS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.gpu),
]

# The input's library: device arrays are a parameter of the same tests as NumPy's (the `kind` fixture).
KINDS = [pytest.param("numpy", id="numpy"), pytest.param("cupy", id="cupy", marks=pytest.mark.gpu),
         pytest.param("torch", id="torch", marks=pytest.mark.gpu)]


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the differential fuzz suite (tests/test_fuzz.py) with thousands of cases")


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Run the test body on each backend (the CUDA one only with a GPU)."""
    with gs.use_backend(request.param):
        yield request.param


@pytest.fixture(params=KINDS)
def kind(request, backend):
    """The input's library: NumPy on both engines, CuPy / PyTorch on the cuda one."""
    if request.param != "numpy" and backend != "cuda":
        pytest.skip("device arrays run on the cuda backend")
    return request.param


@pytest.fixture
def cuda():
    """The cuda backend for one test (device-array tests, marked gpu)."""
    with gs.use_backend("cuda"):
        yield "cuda"


@pytest.fixture
def cp(cuda):
    """CuPy, with the cuda backend for the test (device-array tests, marked gpu)."""
    return pytest.importorskip("cupy")


def to_kind(a, kind):
    """`a` (host) as an array of the input library `kind` ('numpy': itself)."""
    if kind == "cupy":
        cp = pytest.importorskip("cupy")
        return cp.asarray(a)
    if kind == "torch":
        torch = pytest.importorskip("torch")
        return torch.as_tensor(np.asarray(a).copy(), device="cuda")  # (a C-order copy: no negative strides)
    return a


def to_host(r):
    """A result of any input library as a NumPy array (or scalar)."""
    if hasattr(r, "get"):
        return r.get()
    if type(r).__module__.startswith("torch"):
        return r.cpu().numpy()
    return r


def captured(lib, run):
    """`run()` captured in a CUDA graph of `lib` ('cupy' or 'torch'): (its outputs, launch), where launch()
    replays the graph and waits for it.  CuPy captures on a non-blocking stream, which does not wait for CuPy's
    default stream: launch() synchronizes the device first, so data written there meanwhile are read."""
    mod = pytest.importorskip(lib)
    if lib == "cupy":
        stream = mod.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            outs = run()
            g = stream.end_capture()
        return outs, lambda: (mod.cuda.Device().synchronize(), g.launch(stream), stream.synchronize())
    graph = mod.cuda.CUDAGraph()
    mod.cuda.synchronize()
    with mod.cuda.graph(graph):
        outs = run()
    return outs, lambda: (graph.replay(), mod.cuda.synchronize())


def strategies_for(backend):
    """Every histogram strategy that can run on this backend."""
    s = ["auto", "global", "shared", "warp"]
    if backend == "cuda" and gs.device_info()["compute_capability"][0] >= 9:
        s.append("cluster")
    return s


def assert_raises_like_numpy(np_call, gs_call):
    """gpusync raises the same exception type with the same message as NumPy."""
    with pytest.raises(Exception) as np_exc:
        np_call()
    with pytest.raises(type(np_exc.value)) as gs_exc:
        gs_call()
    assert str(gs_exc.value) == str(np_exc.value)


def random_array(rng, dtype, n, low=None, high=None):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
    return (rng.standard_normal(n) * 10).astype(dtype)


def scipy_binned_statistic(x, values, statistic="mean", bins=10, range=None, **kw):
    """scipy.stats.binned_statistic as the reference, the same on every SciPy.

    SciPy releases disagree on NaN x with explicit edges: some raise "The
    sample ... contains at least one NaN", 1.17 treats NaN as an outlier
    (bin number nbins + 1), and gpusync follows 1.17.  Where the installed
    SciPy raises, the reference is SciPy on x with NaN replaced by +inf, which
    every release treats as that same outlier.
    """
    import scipy.stats

    try:
        return scipy.stats.binned_statistic(x, values, statistic, bins, range, **kw)
    except ValueError as e:
        xa = np.asarray(x)
        if "NaN" not in str(e) or np.ndim(bins) != 1 or xa.dtype.kind != "f":
            raise
        return scipy.stats.binned_statistic(np.where(np.isnan(xa), np.inf, xa), values, statistic, bins, range,
                                            **kw)


def in_threads(work, n=4):
    """work(k) for k in range(n), each on a thread of its own, all at once; the first exception
    any of them raised is raised here."""
    errors = []

    def run(k):
        try:
            work(k)
        except BaseException as e:  # noqa: BLE001 (raised below)
            errors.append(e)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
