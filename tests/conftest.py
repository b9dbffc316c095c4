import os
import threading

import numpy as np
import pytest

import gpusync as gs
from gpusync import _binstat

HAS_CUDA = gs.cuda_available()

# SciPy's rules for non-finite x in binned statistics (gpusync._binstat.nan_only): the installed SciPy's,
# or 1.17's / 1.18's for the whole run with GPUSYNC_TEST_SCIPY_RULES=1.17 / 1.18 (both rule sets run on any
# SciPy: scipy_binned_statistic below is the reference under either)
if os.environ.get("GPUSYNC_TEST_SCIPY_RULES") in ("1.17", "1.18"):
    _binstat._RULES[:] = [os.environ["GPUSYNC_TEST_SCIPY_RULES"] == "1.18"]


def _installed_scipy_nan_only():
    import scipy

    major, minor = (int(p) for p in scipy.__version__.split(".")[:2])
    return (major, minor) >= (1, 18)


@pytest.fixture(params=["1.17", "1.18"])
def scipy_rules(request):
    """A test under each rule set gpusync follows for non-finite x (the installed SciPy's in every other
    test); yields whether it is 1.18's (NaN raises whatever the bins, inf is an outlier)."""
    saved = list(_binstat._RULES)
    _binstat._RULES[:] = [request.param == "1.18"]
    try:
        yield _binstat._RULES[0]
    finally:
        _binstat._RULES[:] = saved

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
    """scipy.stats.binned_statistic as the reference, under the rules for
    non-finite x that gpusync follows now (_binstat.nan_only: the installed
    SciPy's, or those a test set), on any SciPy.

    SciPy 1.18 (gh-23751) raises for a NaN in x whatever `bins` is and bins
    +-inf as outliers, the range of ``range=None`` that of the finite values;
    1.17 raises for NaN / inf where `bins` is a number and bins NaN with
    explicit edges as an outlier.  The other release's rules are built from
    the installed SciPy: 1.18's as SciPy on its own equal-width edges (given
    as edges, which bin inf as outliers), 1.17's NaN outlier as SciPy on x
    with NaN replaced by +inf (the same outlier bin).
    """
    import scipy.stats

    xa = np.asarray(x)
    flt = xa.dtype.kind == "f"
    if _binstat.nan_only() == _installed_scipy_nan_only() or not flt:
        return scipy.stats.binned_statistic(x, values, statistic, bins, range, **kw)
    if _binstat.nan_only():  # 1.18's rules on SciPy 1.17
        if np.isnan(xa).any():
            raise ValueError(_binstat.NAN_SAMPLE)
        if np.ndim(bins) == 0 and xa.size and not np.isfinite(xa).all():
            if range is None:
                f = xa[np.isfinite(xa)].astype(float)
                if f.size == 0:
                    raise ValueError("cannot convert float NaN to integer")  # (SciPy 1.18: NaN edges)
                lo, hi = f.min(), f.max()
            else:
                if len(range) != 2:
                    raise ValueError(f"range given for {len(range)} dimensions; 1 required")
                if range[1] < range[0]:
                    raise ValueError("In range, start must be <= stop")
                lo, hi = float(range[0]), float(range[1])
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = np.linspace(lo, hi, int(bins) + 1, dtype=xa.dtype)
            return scipy.stats.binned_statistic(x, values, statistic, edges, **kw)
        return scipy.stats.binned_statistic(x, values, statistic, bins, range, **kw)
    # 1.17's rules on SciPy 1.18 (its check only where operator.index takes bins)
    if np.ndim(bins) == 0 and _binstat.index_bins(bins) and xa.size and not np.isfinite(xa).all():
        raise ValueError(f"{xa!r} contains non-finite values.")
    if np.isnan(xa).any():
        xa = np.where(np.isnan(xa), np.inf, xa)
    return scipy.stats.binned_statistic(xa, values, statistic, bins, range, **kw)


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
