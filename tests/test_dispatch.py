"""The dispatcher and its cost model: engine choice with injected machine
constants (the model is a pure function), the plan record, the two-engine
split (the CPU engine standing in for the GPU half), fall-backs, threads,
environment variables and the calibration cache.  Asserts on which engine
ran, never on timings."""
import json
import os
import threading
import warnings

import numpy as np
import pytest

import gpusync as gs
from gpusync import _backend, _calibrate, _core, _costmodel, _dispatch
from gpusync._costmodel import Machine, Shape

# A 16-core host with a slow memory system and a PCIe-fast GPU.
SLOW_HOST_FAST_PCIE = Machine(cores=16, host_bw=((1, 5e9), (16, 20e9)), call_overhead=1e-6, handoff=20e-6,
                              gpu=True, h2d_bw=50e9, d2h_bw=50e9, gpu_latency=30e-6, gpu_bw=3e12)
# A host whose CPU engine is compute-bound on histograms (plenty of memory
# bandwidth) next to a PCIe-bound GPU: the case where both engines at once pay.
COMPUTE_BOUND_HOST_PCIE_GPU = Machine(cores=16, host_bw=((1, 10e9), (16, 150e9)), call_overhead=1e-6,
                                      handoff=20e-6, cpu_rate=(("histogram", 2e8),), gpu=True, h2d_bw=25e9,
                                      d2h_bw=25e9, gpu_latency=50e-6, gpu_bw=3e12)
# The same host without a GPU.
CPU_ONLY = Machine(cores=16, host_bw=((1, 10e9), (16, 100e9)), call_overhead=1e-6, handoff=20e-6)


def shape(op, n, itemsize=8, bins=0, place="host"):
    return Shape(op, n, itemsize, 8 * max(bins, 1), bins, True, place)


def test_small_input_runs_on_the_calling_thread():
    for op in ("sum", "dot", "histogram", "cumsum", "count_nonzero", "packbits", "binned_statistic"):
        for m in (CPU_ONLY, SLOW_HOST_FAST_PCIE):
            assert _costmodel.choose(m, shape(op, 1000, bins=100)).engine == "caller", op


def test_mid_size_uses_the_pool():
    c = _costmodel.choose(CPU_ONLY, shape("sum", 10_000_000))
    assert c.engine == "cpu" and c.threads > 1
    assert c.predicted["cpu"] < c.predicted["caller"]


def test_huge_host_float64_histogram_uses_both_engines_sized_to_finish_together():
    m = COMPUTE_BOUND_HOST_PCIE_GPU
    s = shape("histogram", 300_000_000, bins=100)
    c = _costmodel.choose(m, s)
    assert c.engine == "cpu+cuda"
    assert 0.0 < c.gpu_share < 1.0
    assert c.predicted["cpu+cuda"] < min(c.predicted["cuda"], c.predicted["cpu"])
    # both halves take about the same time (that is how the share was sized)
    ng = int(s.n * c.gpu_share)
    tg = _costmodel._gpu_time(m, s, ng, c.crew)
    tc = _costmodel._cpu_time(m, s, s.n - ng, c.threads)
    assert abs(tg - tc) < 0.01 * max(tg, tc)


def test_split_never_chosen_when_host_memory_already_limits_the_cpu():
    """The GPU part is staged through host memory, so a memory-bound CPU
    pool cannot gain from a split (a float64 sum on a 83 GB/s host)."""
    m = CPU_ONLY.replace(host_bw=((1, 10e9), (16, 83e9)), gpu=True, h2d_bw=50e9, d2h_bw=50e9)
    for n in (10**5, 10**6, 10**7, 10**8, 3 * 10**8):
        assert _costmodel.choose(m, shape("sum", n)).engine != "cpu+cuda", n


def test_split_slowdown_scales_the_split_and_can_rule_it_out():
    """split_slowdown (measured by calibrate) multiplies the split's variable
    time: the fixed costs stay, the share does not move, and a slowdown at
    least the single engines' lead over the split keeps the call on one
    engine."""
    s = shape("histogram", 300_000_000, bins=100)
    m1 = COMPUTE_BOUND_HOST_PCIE_GPU.replace(split_slowdown=1.0)
    c1 = _costmodel.choose(m1, s)
    assert c1.engine == "cpu+cuda"
    fixed = m1.split_overhead + s.out_bytes / m1.merge_bw
    m2 = m1.replace(split_slowdown=1.5)
    c2 = _costmodel.choose(m2, s, ("cpu+cuda",))
    assert c2.gpu_share == pytest.approx(c1.gpu_share, abs=1e-8)  # (a forced split rounds its share to whole elements)
    assert c2.predicted["cpu+cuda"] - fixed == pytest.approx(1.5 * (c1.predicted["cpu+cuda"] - fixed), rel=1e-6)
    lead = min(c1.predicted["cuda"], c1.predicted["cpu"]) / c1.predicted["cpu+cuda"]
    assert _costmodel.choose(m1.replace(split_slowdown=lead * 1.01), s).engine != "cpu+cuda"
    d = _calibrate.to_json(m2)
    assert _calibrate.from_json(json.loads(json.dumps(d))).split_slowdown == 1.5
    for bad in (0.5, float("nan"), 4.5):
        with pytest.raises(ValueError, match="split_slowdown"):
            _calibrate.from_json({**d, "split_slowdown": bad})


def test_split_probe_steers_its_own_thread_alone(monkeypatch):
    """calibrate's split probe runs its forced split with its own constants (split_slowdown 1) on its own
    thread: the split it times is planned with them, and the process's machine stays what it was, for other
    threads too, while the probe runs and after it."""
    import time
    monkeypatch.setattr(_calibrate, "SPLIT_PROBE_ELEMENTS", 1 << 20)
    _dispatch.set_gpu_stand_in("cpu")  # the split's GPU half on the CPU engine
    before = _dispatch.machine()  # (loaded first: a lazy calibration plans with its own defaults)
    probe_thread = threading.get_ident()
    planned = []  # the machines the probe thread's calls planned with
    real_choose = _costmodel.choose

    def spy(m, s, *a, **k):
        if threading.get_ident() == probe_thread:
            planned.append(m)
        return real_choose(m, s, *a, **k)

    monkeypatch.setattr(_costmodel, "choose", spy)
    try:
        seen, stop = [], threading.Event()

        def other():
            while not stop.is_set() and len(seen) < 10_000:
                seen.append(_dispatch.machine())
                time.sleep(0)

        t = threading.Thread(target=other)
        t.start()
        try:
            _calibrate._split_slowdown(COMPUTE_BOUND_HOST_PCIE_GPU)
        finally:
            stop.set()
            t.join()
        assert planned and all(m.split_slowdown == 1.0 and m.cores == COMPUTE_BOUND_HOST_PCIE_GPU.cores
                               for m in planned), planned[:2]
        assert _dispatch.machine() is before and _dispatch._override.machine is None
        assert seen and all(m is before for m in seen)
    finally:
        _dispatch.set_gpu_stand_in(None)


def test_cached_plans_belong_to_their_machine(model):
    """A cached plan is used only under the machine it was made with (a freed machine's id may be reused by
    the next one): a planted entry under the current machine's id but another machine is ignored."""
    x = np.ones(5000)
    gs.sum(x, dtype=np.float64, keepdims=False, where=True, initial=0, out=None)
    m = _dispatch.machine()
    other = m.replace(cores=m.cores)  # equal constants, another object
    key = next(k for k in _dispatch._plans if k[0] == "sum" and k[8] == id(m))
    plan, threads, strat, owner = _dispatch._plans[key]
    assert owner is m
    _dispatch._plans[key] = ({**plan, "notes": ["planted"]}, threads, strat, other)
    gs.sum(x, dtype=np.float64, keepdims=False, where=True, initial=0, out=None)
    assert "planted" not in gs.last_plan()["notes"]


def test_device_fast_path_asks_the_debug_variable_per_call(monkeypatch):
    """GPUSYNC_DEBUG=1 sends device arrays to the general path (which logs the plan) from the next call on,
    and its removal brings the fast path back: the state is read per call, not when the dispatcher synced
    (a stand-in array type with a handler, so that this runs without a GPU)."""
    from gpusync import _devfast

    class Fake:
        pass

    class Handler:
        lib = "fake"

        @staticmethod
        def view(a):
            return (0, 1, np.dtype(np.float64), 0, 0)

    monkeypatch.setitem(_devfast._handlers, Fake, Handler())
    monkeypatch.delenv("GPUSYNC_DEBUG", raising=False)
    monkeypatch.delenv("GPUSYNC_BACKEND", raising=False)  # (a forced cpu backend turns the path off)
    monkeypatch.setattr(_backend, "forced", lambda: None)
    gs.sum(np.ones(3))  # a sync: the path on (no forced cpu backend)
    _dispatch.fast_sync()
    assert _devfast._ready(Fake()) is not None
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    assert _devfast._ready(Fake()) is None
    _dispatch.fast_sync()  # a sync while the variable is set does not outlive it
    monkeypatch.delenv("GPUSYNC_DEBUG")
    assert _devfast._ready(Fake()) is not None
    assert _devfast._ready(np.ones(3)) is None  # (host arrays never)


def test_split_pays_its_fixed_cost():
    m = COMPUTE_BOUND_HOST_PCIE_GPU
    c = _costmodel.choose(m, shape("histogram", 10**5, bins=100))
    assert c.engine != "cpu+cuda"  # 0.5 ms of split overhead against ~0.1 ms of work


def test_fast_host_memory_keeps_large_sums_on_the_cpu():
    m = CPU_ONLY.replace(gpu=True, h2d_bw=20e9)
    c = _costmodel.choose(m, shape("sum", 100_000_000))
    assert c.engine in ("cpu", "cpu+cuda") and c.predicted["cpu"] < c.predicted["cuda"]


def test_device_input_always_cuda():
    for n in (1, 1000, 10**9):
        assert _costmodel.choose(SLOW_HOST_FAST_PCIE, shape("sum", n, place="device")).engine == "cuda"


def test_forced_engines_narrow_the_choice():
    s = shape("histogram", 300_000_000, bins=100)
    assert _costmodel.choose(SLOW_HOST_FAST_PCIE, s, ("cuda",)).engine == "cuda"
    assert _costmodel.choose(SLOW_HOST_FAST_PCIE, s, ("caller", "cpu")).engine == "cpu"
    assert _costmodel.choose(SLOW_HOST_FAST_PCIE, shape("sum", 10), ("cuda",)).engine == "cuda"


def test_model_is_monotone_in_size():
    """More elements never predict less time, for every candidate."""
    for op in ("sum", "histogram", "cumsum"):
        prev = {}
        for n in np.unique(np.logspace(0, 9, 37).astype(np.int64)):
            c = _costmodel.choose(SLOW_HOST_FAST_PCIE, shape(op, int(n), bins=100))
            for k, v in c.predicted.items():
                if k in prev:
                    assert v >= prev[k] * (1 - 1e-9), (op, n, k)
                prev[k] = v


@pytest.fixture
def model():
    """Inject constants; restore the calibrated ones afterwards."""
    yield _dispatch.set_machine
    _dispatch.set_machine(None)
    _dispatch.set_gpu_stand_in(None)


def test_plan_records_the_engine_per_call(model):
    model(CPU_ONLY)
    with gs.use_backend("cpu"):
        gs.sum(np.ones(100))
        p = gs.last_plan()
        assert p["engine"] == "caller" and p["threads"] == 1 and p["op"] == "sum" and p["n"] == 100
        assert set(p["predicted_ms"]) >= {"caller", "cpu"}
        x = np.ones(20_000_000, np.uint8)
        assert gs.count_nonzero(x) == x.size
        p = gs.last_plan()
        assert p["engine"] == "cpu" and p["threads"] > 1 and p["forced"] == "cpu"


def test_split_runs_both_halves_and_merges_exactly(model, monkeypatch):
    """cpu+cuda with the CPU engine standing in for the GPU half: the split,
    the concurrent halves and the merge run on a CPU-only machine."""
    model(SLOW_HOST_FAST_PCIE.replace(cores=4))
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu+cuda")  # the mechanism, whatever the model prefers
    _dispatch.set_gpu_stand_in("cpu")
    rng = np.random.default_rng(1)
    n = 3_000_001
    x = rng.standard_normal(n)
    h, e = gs.histogram(x, 100, range=(-4, 4))
    p = gs.last_plan()
    assert p["engine"] == "cpu+cuda" and p["split"]["cuda"] + p["split"]["cpu"] == n
    assert 0 < p["split"]["cuda"] < n
    ref_h, ref_e = np.histogram(x, 100, range=(-4, 4))
    np.testing.assert_array_equal(h, ref_h)
    np.testing.assert_array_equal(e, ref_e)
    w = rng.integers(0, 5, n).astype(np.float64)
    np.testing.assert_array_equal(gs.histogram(x, 100, range=(-4, 4), weights=w)[0],
                                  np.histogram(x, 100, range=(-4, 4), weights=w)[0])
    xi = rng.integers(0, 1000, n)
    np.testing.assert_array_equal(gs.bincount(xi), np.bincount(xi))
    assert gs.last_plan()["engine"] == "cpu+cuda"
    assert gs.sum(xi) == np.sum(xi) and gs.last_plan()["engine"] == "cpu+cuda"
    assert gs.count_nonzero(x > 0) == np.count_nonzero(x > 0)
    f32 = x.astype(np.float32)
    got = gs.sum(f32)
    assert got.dtype == np.float32 and gs.last_plan()["engine"] == "cpu+cuda"
    # float64 partials, rounded once: within one float32 rounding of the float64 sum
    assert got == pytest.approx(np.sum(f32.astype(np.float64)), rel=2.0**-23)
    assert gs.dot(x, x) == pytest.approx(np.dot(x, x), rel=1e-12)
    # not splittable: cumsum never splits
    np.testing.assert_array_equal(gs.cumsum(xi), np.cumsum(xi))
    assert gs.last_plan()["engine"] != "cpu+cuda"


def test_gpu_failure_on_host_input_falls_back_to_cpu(model):
    """The 'GPU' here is the CUDA engine of a CPU-only build, which fails:
    the call falls back to the CPU engine, with a note, and the right result."""
    if gs.cuda_available():
        pytest.skip("needs a build or machine without CUDA to make the GPU fail")
    model(SLOW_HOST_FAST_PCIE)
    _dispatch.set_gpu_stand_in("cuda")
    x = np.arange(50_000_000, dtype=np.int64) % 7
    assert gs.sum(x) == np.sum(x)
    p = gs.last_plan()
    assert p["engine"] in ("caller", "cpu") and any("fell back" in n for n in p["notes"])


def test_concurrent_threads_keep_their_own_plans(model):
    model(CPU_ONLY)
    big, small = np.ones(20_000_000, np.uint8), np.ones(10, np.uint8)
    seen, errors = {}, []
    barrier = threading.Barrier(2)

    def worker(name, arr):
        try:
            barrier.wait()
            for _ in range(5):
                assert gs.count_nonzero(arr) == arr.size
                seen.setdefault(name, set()).add(gs.last_plan()["engine"])
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    with gs.use_backend("cpu"):
        ts = [threading.Thread(target=worker, args=a) for a in (("big", big), ("small", small))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors
    assert seen == {"big": {"cpu"}, "small": {"caller"}}


def test_invalid_engine_variable_warns_naming_it(monkeypatch):
    monkeypatch.setenv("GPUSYNC_ENGINE", "gpu")  # the C table warns, once per value
    with pytest.warns(RuntimeWarning, match="GPUSYNC_ENGINE"):
        assert gs.sum(np.ones(4)) == 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gs.sum(np.ones(4)) == 4.0  # once, not per call
    monkeypatch.setenv("GPUSYNC_ENGINE", "caller")
    gs.sum(np.ones(10_000_000, np.float32))
    assert gs.last_plan()["engine"] == "caller"


def test_debug_logs_the_plan(monkeypatch, capsys):
    monkeypatch.setenv("GPUSYNC_DEBUG", "1")
    gs.sum(np.ones(5))
    assert "gpusync: sum n=5" in capsys.readouterr().err


def test_every_op_checks_strategy_in_one_place():
    """Strategies of every op are checked in one place."""
    for fn in (lambda: gs.sum(np.ones(2), strategy="x"), lambda: gs.cumsum(np.ones(2), strategy="x"),
               lambda: gs.histogram(np.ones(2), strategy="x"),
               lambda: gs.binned_statistic(np.ones(2), np.ones(2), strategy="x")):
        with pytest.raises(ValueError, match="strategy must be one of"):
            fn()


# ---- the calibration cache

def test_cache_roundtrip_and_corrupt_or_stale_cache_warns_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(_calibrate._warned, "cache", False)
    k = _calibrate.key()
    path = _calibrate.save(CPU_ONLY, k=k)
    assert path.startswith(str(tmp_path)) and _calibrate.load(k=k) == CPU_ONLY
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert _calibrate.load(k=k) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _calibrate.load(k=k) is None  # one warning, not one per call
    monkeypatch.setitem(_calibrate._warned, "cache", False)
    old = dict(k, version="0.0.0")  # written by another version: same file, stale
    assert _calibrate.cache_path(old) == path
    _calibrate.save(CPU_ONLY, k=old)
    with pytest.warns(RuntimeWarning, match="stale"):
        assert _calibrate.load(k=k) is None
    monkeypatch.setitem(_calibrate._warned, "cache", False)
    with open(path, "w") as f:
        json.dump({"key": k, "constants": {"cores": -3}}, f)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert _calibrate.load(k=k) is None


def test_quick_measurement_gives_sane_constants():
    m = _calibrate.measure(quick=True)
    assert m.cores >= 1 and all(b > 0 for _, b in m.host_bw) and m.handoff >= 0
    assert _costmodel.choose(m, shape("sum", 10)).engine == "caller"
    assert all(r > 0 for _, r in m.cpu_rate) and dict(m.cpu_rate).keys() >= {"sum", "dot", "histogram"}


def test_quick_measurement_keeps_a_failing_ops_default(monkeypatch, capsys):
    """The lazy quick calibration times each op's one-thread rate; an op that raises keeps its default rate
    (one warning) and the others keep theirs measured; verbose prints them (one thread only when quick)."""
    real = _calibrate._cases

    def cases(n):
        c = dict(real(n))
        c["histogram"] = (lambda: 1 / 0, c["histogram"][1])
        return c

    monkeypatch.setattr(_calibrate, "_cases", cases)
    monkeypatch.setitem(_calibrate._warned, "cache", False)
    with pytest.warns(RuntimeWarning, match="could not time histogram"):
        m = _calibrate.measure(quick=True, verbose=True)
    rates = dict(m.cpu_rate)
    assert rates["histogram"] == _costmodel._CPU_RATE["histogram"] and rates["sum"] != _costmodel._CPU_RATE["sum"]
    out = capsys.readouterr().out
    assert "sum" in out and "1 thread" in out and "threads:" not in out.split("sum", 1)[1].splitlines()[0]


def test_measuring_lifts_a_forced_backend():
    """The constants are often measured on first need, inside a user's
    ``with gs.use_backend("cpu")``: the measurement's forced engine must not
    be bent by it (a GPU curve measured there ran on the CPU).  The override
    is the measuring thread's alone: another thread keeps its own engine and
    the forced backend, during and after."""
    seen = {}

    def other():
        seen["engine"], seen["forced"] = _dispatch.env_engine(), _dispatch.forced_backend()
        with gs.use_backend("cpu"):  # (use_backend's state is the process's)
            seen["inner"] = _dispatch.forced_backend()

    with gs.use_backend("cpu"):
        with _calibrate._forced("caller"):
            assert _dispatch.forced_backend() is None and _dispatch.env_engine() == "caller"
            x = np.arange(100_000, dtype=np.float64)
            for _ in range(3):  # (a repeated call too: the C fast path steps aside on this thread)
                assert gs.sum(x) == x.sum() and gs.last_plan()["engine"] == "caller"
                assert not any("C fast path" in t for t in gs.last_plan()["notes"])
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert _dispatch.forced_backend() == "cpu" and _backend.backend() == "cpu"
        assert _dispatch.env_engine() != "caller" or os.environ.get("GPUSYNC_ENGINE") == "caller"
    assert seen["forced"] == "cpu" and seen["inner"] == "cpu" and seen["engine"] != "caller"
    assert _backend.forced() == os.environ.get("GPUSYNC_BACKEND") or _backend.forced() is None


# ---- the C fast path

FAST_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
               np.float16, np.float32, np.float64]


def _fast_ran(op):
    p = gs.last_plan()
    return p["op"] == op and any("fast path" in n for n in p["notes"])


@pytest.mark.parametrize("dtype", FAST_DTYPES)
def test_fast_path_matches_numpy_and_is_recorded(dtype):
    rng = np.random.default_rng(5)
    from conftest import random_array

    x = random_array(rng, dtype, 1000)
    y = random_array(rng, dtype, 1000)
    with gs.use_backend("cpu"):
        gs.sum(x)  # the first call configures the fast path's limits
        for _ in range(2):
            s = gs.sum(x)
        assert _fast_ran("sum")
        ref = np.sum(x) if np.dtype(dtype).kind != "f" else np.sum(x.astype(np.float64)).astype(np.dtype(dtype))
        assert s.dtype == np.sum(x).dtype
        if np.dtype(dtype).kind == "f":
            assert s == pytest.approx(ref, rel=1e-3 if dtype == np.float16 else 1e-6)
        else:
            assert s == ref
        assert gs.count_nonzero(x) == np.count_nonzero(x) and _fast_ran("count_nonzero")
        np.testing.assert_array_equal(gs.packbits(x), np.packbits(x != 0))
        assert _fast_ran("packbits")
        c = gs.cumsum(x)
        assert c.dtype == np.cumsum(x).dtype and _fast_ran("cumsum")
        if np.dtype(dtype).kind != "f":
            np.testing.assert_array_equal(c, np.cumsum(x))
        d = gs.dot(x, y)
        assert d.dtype == np.dot(x, y).dtype and _fast_ran("dot")
        if np.dtype(dtype).kind in "biu":
            assert d == np.dot(x, y)
        if dtype != np.bool_:
            h, e = gs.histogram(x, 17, range=(-5, 60))
            h, e = gs.histogram(x, 17, range=(-5, 60))
            rh, re = np.histogram(x, 17, range=(-5, 60))
            np.testing.assert_array_equal(h, rh)
            np.testing.assert_array_equal(e, re)
            assert e.dtype == re.dtype and _fast_ran("histogram")
            e[0] = 7  # the caller's edges are a copy
            np.testing.assert_array_equal(gs.histogram(x, 17, range=(-5, 60))[1], re)
        if dtype in (np.bool_, np.uint8, np.uint16):
            np.testing.assert_array_equal(gs.bincount(x, minlength=3), np.bincount(x, minlength=3))
            assert _fast_ran("bincount")


def test_fast_path_declines_what_it_cannot_take():
    with gs.use_backend("cpu"):
        gs.sum(np.ones(4))
        x = np.arange(20, dtype=np.float64)
        a = x.reshape(4, 5).T  # N-D, not C-contiguous: the general path
        assert gs.sum(a) == np.sum(np.asarray(a))
        assert not _fast_ran("sum")
        for a in (x[::2], x[3::7]):  # one dimension, a positive stride: the fast path's strided loops
            assert gs.sum(a) == np.sum(a) and gs.dot(a, a) == np.dot(a, a)
            assert gs.count_nonzero(a) == np.count_nonzero(a) and _fast_ran("count_nonzero")
        for a in (x[::-1], x[17::-3], np.broadcast_to(x[3], 9)):  # sum and dot: strides of any sign, zero too
            assert gs.sum(a) == np.sum(a) and _fast_ran("sum")
            assert gs.dot(a, a) == np.dot(a, a) and _fast_ran("dot")
        with pytest.raises(ValueError, match="negative"):
            gs.bincount(np.array([-1, 2], np.int64))
        np.testing.assert_array_equal(gs.bincount(np.array([0, 10**6])), np.bincount(np.array([0, 10**6])))
        assert gs.sum(np.ones(4), deterministic=True) == 4.0 and not _fast_ran("sum")


def test_fast_path_hands_non_finite_float_results_to_the_general_path():
    """inf / NaN sums take the general path (which owns NumPy's answer there)."""
    with gs.use_backend("cpu"):
        gs.sum(np.ones(4))
        for x in (np.array([1.0, np.inf]), np.array([np.nan, 1.0], np.float32), np.array([np.inf], np.float16)):
            got = gs.sum(x)
            assert not _fast_ran("sum") and gs.last_plan()["op"] == "sum"
            np.testing.assert_array_equal(got, np.sum(x))
        assert gs.sum(np.ones(4)) == 4.0 and _fast_ran("sum")


def test_fast_path_off_when_engine_forced(monkeypatch):
    with gs.use_backend("cpu"):
        gs.sum(np.ones(4))
        monkeypatch.setenv("GPUSYNC_ENGINE", "cpu")
        gs.sum(np.ones(1000))
        p = gs.last_plan()
        assert p["engine"] == "cpu" and not _fast_ran("sum")


def test_forced_split_gives_both_halves_work(model):
    """GPUSYNC_ENGINE=cpu+cuda (benchmarks) splits even where the model would not."""
    model(CPU_ONLY.replace(gpu=True))
    for n in (2, 3, 1000, 10**6):
        c = _costmodel.choose(CPU_ONLY.replace(gpu=True), shape("sum", n), ("cpu+cuda",))
        ng = int(n * c.gpu_share)
        assert c.engine == "cpu+cuda" and 0 < ng < n, n


# ---- on a GPU

@pytest.mark.gpu
def test_gpu_split_matches_numpy(monkeypatch):
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu+cuda")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(10_000_003)
    h, e = gs.histogram(x, 100, range=(-4, 4))
    p = gs.last_plan()
    assert p["engine"] == "cpu+cuda" and 0 < p["split"]["cuda"] < x.size
    np.testing.assert_array_equal(h, np.histogram(x, 100, range=(-4, 4))[0])
    xi = rng.integers(0, 1000, 10_000_003)
    np.testing.assert_array_equal(gs.bincount(xi), np.bincount(xi))
    assert gs.sum(xi) == np.sum(xi) and gs.last_plan()["engine"] == "cpu+cuda"
    f32 = x.astype(np.float32)
    assert gs.sum(f32) == pytest.approx(np.sum(f32.astype(np.float64)), rel=2.0**-23)
    assert gs.count_nonzero(x > 0) == np.count_nonzero(x > 0)
    assert gs.dot(x, x) == pytest.approx(np.dot(x, x), rel=1e-12)


@pytest.mark.gpu
def test_constants_measured_under_a_forced_cpu_backend_see_the_gpu(model):
    """A quick measurement inside ``use_backend("cpu")`` (the lazy first-need
    one, in a user's block): the GPU's host-input curve is the GPU's (never
    below its launch + sync), and small host calls stay on the CPU after."""
    with gs.use_backend("cpu"):
        m = _calibrate.measure(quick=True)
    assert m.gpu_host and all(t >= m.gpu_latency for _, t in m.gpu_host)
    assert m.gpu_host[0][1] > 5e-6  # a staged copy, a launch and a wait: microseconds, not a CPU sum
    model(m)
    x = np.random.default_rng(3).random(10_000)
    gs.dot(x, x)
    assert gs.last_plan()["engine"] in ("caller", "cpu")


@pytest.mark.gpu
def test_gpu_device_input_stays_on_device_and_host_engines_are_recorded():
    cp = pytest.importorskip("cupy")
    assert int(gs.sum(cp.ones(10_000))) == 10_000 and gs.last_plan()["engine"] == "cuda"
    assert gs.last_plan()["place"] == "device"
    gs.sum(np.ones(10))
    assert gs.last_plan()["engine"] == "caller"
    with gs.use_backend("cuda"):
        assert gs.sum(np.ones(10)) == 10.0 and gs.last_plan()["engine"] == "cuda"
    with gs.use_backend("cpu"):
        assert int(gs.sum(cp.ones(10))) == 10 and gs.last_plan()["engine"] in ("caller", "cpu")


@pytest.mark.parametrize("engine", ["caller", "cpu", "cpu+cuda"])
def test_results_identical_whichever_engine_ran(engine, monkeypatch, model):
    """Integers exact, floats within the documented bound, on every engine
    (cpu+cuda with the CPU engine standing in for the GPU half)."""
    _dispatch.set_gpu_stand_in("cpu")
    monkeypatch.setenv("GPUSYNC_ENGINE", engine)
    rng = np.random.default_rng(11)
    n = 200_003
    x = rng.standard_normal(n)
    xi = rng.integers(-1000, 1000, n).astype(np.int32)
    u = rng.integers(0, 300, n)
    w = rng.random(n)
    np.testing.assert_array_equal(gs.histogram(x, 64, range=(-3, 3))[0], np.histogram(x, 64, range=(-3, 3))[0])
    assert gs.last_plan()["engine"] == engine
    np.testing.assert_allclose(gs.histogram(x, 64, range=(-3, 3), weights=w)[0],
                               np.histogram(x, 64, range=(-3, 3), weights=w)[0], rtol=1e-12)
    np.testing.assert_array_equal(gs.bincount(u), np.bincount(u))
    assert gs.sum(xi) == np.sum(xi) and gs.sum(xi).dtype == np.sum(xi).dtype
    assert gs.sum(x) == pytest.approx(np.sum(x), rel=1e-12, abs=1e-9)
    assert gs.dot(xi, xi) == np.dot(xi, xi)
    assert gs.count_nonzero(xi) == np.count_nonzero(xi)
    np.testing.assert_array_equal(gs.cumsum(xi), np.cumsum(xi))
    np.testing.assert_array_equal(gs.packbits(xi), np.packbits(xi != 0))


def test_public_strategies_are_names_the_core_knows():
    for op, names in _dispatch.STRATEGIES.items():
        assert set(names) <= set(gs._core.STRATEGIES), op


# ---- the model's measured tiers: cache, warm pool, the GPU's host-input curve, all-cores rates

H200_LIKE = Machine(cores=16, host_bw=((1, 9e9), (4, 80e9), (16, 180e9)), call_overhead=8e-6, handoff=100e-6,
                    handoff_per_thread=1e-6, handoff_warm=4e-6, cache_bytes=32 << 20,
                    cache_bw=((1, 40e9), (4, 150e9), (16, 500e9)), gpu=True, h2d_bw=45e9, d2h_bw=45e9,
                    gpu_latency=23e-6, gpu_bw=3.6e12,
                    gpu_host=((1 << 10, 46e-6), (100 << 10, 63e-6), (800 << 10, 146e-6), (8 << 20, 390e-6),
                              (80 << 20, 2.19e-3), (256 << 20, 6.0e-3)))


def test_gpu_host_curve_is_piecewise_linear_and_extrapolates():
    m = H200_LIKE
    assert m.gpu_host_time(10) == 46e-6
    assert m.gpu_host_time(800 << 10) == pytest.approx(146e-6)
    mid = m.gpu_host_time((800 << 10) + ((8 << 20) - (800 << 10)) / 2)
    assert mid == pytest.approx((146e-6 + 390e-6) / 2)
    assert m.gpu_host_time(512 << 20) > m.gpu_host_time(256 << 20) > m.gpu_host_time(80 << 20)


def test_measured_gpu_curve_keeps_mid_sizes_on_the_cpu():
    """An affine PCIe model calls a 100k-element float64 sum a GPU job; the
    measured end-to-end curve (staging ramps up slowly) does not."""
    s = shape("sum", 100_000)
    affine = H200_LIKE.replace(gpu_host=())
    assert _costmodel.choose(H200_LIKE, s).engine in ("caller", "cpu")
    assert _costmodel._gpu_time(H200_LIKE, s, s.n) > _costmodel._gpu_time(affine, s, s.n)


def test_cache_resident_input_reads_at_cache_bandwidth():
    m = H200_LIKE
    small, large = shape("sum", 1_000_000), shape("sum", 100_000_000)  # 8 MB fits half of 32 MiB; 800 MB does not
    assert m.bandwidth(16, small.n * 8) == 500e9 and m.bandwidth(16, large.n * 8) == 180e9
    t_small = _costmodel._cpu_time(m, small, small.n, 16)
    no_cache = _costmodel._cpu_time(m.replace(cache_bw=()), small, small.n, 16)
    assert t_small < no_cache


def test_warm_pool_hands_off_cheaper_and_takes_smaller_inputs():
    cold = Shape("sum", 100_000, 8, 8, 0, True, "host", False)
    warm = Shape("sum", 100_000, 8, 8, 0, True, "host", True)
    assert _costmodel._cpu_time(H200_LIKE, warm, warm.n, 16) < _costmodel._cpu_time(H200_LIKE, cold, cold.n, 16)
    assert _costmodel.choose(H200_LIKE, cold, ("caller", "cpu")).engine == "caller"
    assert _costmodel.choose(H200_LIKE, warm, ("caller", "cpu")).engine == "cpu"


def test_a_pool_hand_off_is_never_priced_free():
    """A calibration whose warm hand-off came out 0 (noise: the quick calibration subtracts two medians)
    does not make the pool free: a 100-element sum stays on the calling thread, warm pool or not."""
    m = H200_LIKE.replace(handoff_warm=0.0, handoff=0.0, handoff_per_thread=0.0)
    for warm in (False, True):
        s = Shape("sum", 100, 8, 8, 0, True, "host", warm)
        assert _costmodel._cpu_time(m, s, s.n, 2) - m.call_overhead >= _costmodel.HANDOFF_MIN
        assert _costmodel.choose(m, s, ("caller", "cpu")).engine == "caller"


def test_fast_path_comes_back_when_the_engine_variable_goes(model, monkeypatch):
    """A general call made while GPUSYNC_ENGINE steers the engine must not leave the C fast path off after
    the variable is removed (its limits were once computed for the steered state: every later small call
    took the general path, and a noisy calibration's free warm pool then sent them to the pool)."""
    model(_calibrate.defaults().replace(handoff_warm=0.0))
    x = np.ones(100)
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu")
    gs.sum(x)
    assert gs.last_plan()["engine"] == "cpu" and not _fast_ran("sum")
    monkeypatch.delenv("GPUSYNC_ENGINE")
    for _ in range(3):
        assert gs.sum(x) == 100.0
        assert _fast_ran("sum") and gs.last_plan()["engine"] == "caller", gs.last_plan()


def test_all_cores_rate_caps_a_compute_bound_pool():
    """A histogram whose pool scales 7x on 16 cores (measured) is predicted
    slower than linear scaling says."""
    m = H200_LIKE.replace(cpu_rate=(("histogram", 4e8),), cpu_rate_all=(("histogram", 2.8e9),))
    s = shape("histogram", 10_000_000, bins=100)
    assert m.cpu_total_rate("histogram", 1) == 4e8 and m.cpu_total_rate("histogram", 16) == 2.8e9
    assert 4e8 < m.cpu_total_rate("histogram", 8) < 2.8e9
    lin = m.replace(cpu_rate_all=())
    assert _costmodel._cpu_time(m, s, s.n, 16) > _costmodel._cpu_time(lin, s, s.n, 16)


def test_past_cache_rate_prices_inputs_the_cache_cannot_hold():
    """A compute-bound op measured slower on an input past the last-level
    cache (the H200 host's histogram: 7.0 G elements/s in cache, 5.7 G past
    it) is priced at that rate there, both ends of the thread scaling scaled
    alike; inputs the cache holds keep the in-cache rates."""
    m = H200_LIKE.replace(cache_bytes=300 << 20, cache_bw=((1, 25e9), (16, 500e9)),
                          cpu_rate=(("histogram", 7.5e8),), cpu_rate_all=(("histogram", 7.0e9),),
                          cpu_rate_all_mem=(("histogram", 5.6e9),))
    small, big = 8 * 10**6, 8 * 3 * 10**8
    assert m.cpu_total_rate("histogram", 16, small) == 7.0e9
    assert m.cpu_total_rate("histogram", 16, big) == 5.6e9
    assert m.cpu_total_rate("histogram", 1, big) == pytest.approx(7.5e8 * 0.8)
    assert m.cpu_total_rate("sum", 16, big) == m.cpu_total_rate("sum", 16, small)  # not measured: in-cache rate
    s = shape("histogram", 3 * 10**8, bins=100)
    assert _costmodel._cpu_time(m, s, s.n, 16) > _costmodel._cpu_time(m.replace(cpu_rate_all_mem=()), s, s.n, 16)
    assert _calibrate.from_json(json.loads(json.dumps(_calibrate.to_json(m)))) == m


def test_unmeasured_pool_scaling_is_a_share_per_thread_for_compute_bound_ops():
    """The quick calibration times one thread alone: a compute-bound op's
    further threads add _CPU_SCALING's share each (both GPU hosts measured
    7.6-9.3x on 16 threads for histograms), a streaming op's scale linearly
    (the memory term prices those)."""
    m = H200_LIKE.replace(cpu_rate=(("histogram", 4e8), ("sum", 2e9)), cpu_rate_all=())
    share = _costmodel._CPU_SCALING["histogram"]
    assert m.cpu_total_rate("histogram", 16) == pytest.approx(4e8 * (1 + 15 * share))
    assert m.cpu_total_rate("histogram", 1) == 4e8
    assert m.cpu_total_rate("sum", 16) == pytest.approx(2e9 * 16)
    assert 0 < share < 1


def test_calibration_json_round_trip_with_tiers_and_bad_curves():
    m = H200_LIKE.replace(cpu_rate_all=(("sum", 3e10),))
    assert _calibrate.from_json(json.loads(json.dumps(_calibrate.to_json(m)))) == m
    bad = _calibrate.to_json(m)
    bad["gpu_host"] = [[1024, 5e-5], [512, 6e-5]]  # bytes not increasing
    with pytest.raises(ValueError):
        _calibrate.from_json(bad)
    bad["gpu_host"] = [[1024, 5e-5], [2048, 4e-5]]  # time falling
    with pytest.raises(ValueError):
        _calibrate.from_json(bad)


def test_pool_warmth_is_reported():
    x = np.ones(4_000_000)
    assert isinstance(_dispatch._core.cpu_pool_warm(), bool)
    with gs.use_backend("cpu"):
        _dispatch._core.cpu_threads(2)
        try:
            _dispatch._core.reduce("cpu", x, None, np.empty(1), "two-pass", False, 0)
        finally:
            _dispatch._core.cpu_threads(0)
    import time
    time.sleep(0.05)  # far past the workers' spin: parked
    assert _dispatch._core.cpu_pool_warm() is False


def test_split_shares_the_cores_between_the_pool_and_the_staging_crew():
    """The GPU's part is staged by `crew` host threads; the CPU's part gets
    the other cores (one left for the thread driving the GPU), and a crew
    too small to keep PCIe busy slows the GPU's part."""
    m = H200_LIKE.replace(cpu_rate=(("histogram", 4.7e8),), cpu_rate_all=(("histogram", 2.65e9),))
    s = shape("histogram", 300_000_000, bins=100)
    t, crew, f, secs = _costmodel.best_split(m, s)
    assert t + crew == m.cores - 1 and crew >= 1 and 0 < f < 1
    assert _costmodel._gpu_time(m, s, s.n, 1) > _costmodel._gpu_time(m, s, s.n, 8) >= _costmodel._gpu_time(m, s, s.n)
    c = _costmodel.choose(m, s)
    if c.engine == "cpu+cuda":
        assert c.threads + c.crew == m.cores - 1
        assert c.predicted["cpu+cuda"] < min(c.predicted["cuda"], c.predicted["cpu"])
    # a host whose threads copy at 2.5 GB/s cannot feed 45 GB/s of PCIe and
    # keep cores for the CPU's part: the whole job stays on the GPU
    slow = m.replace(host_bw=((1, 5e9), (4, 60e9), (16, 180e9)))
    assert _costmodel.choose(slow, s).engine == "cuda"


def test_split_runs_with_the_crew_request(model):
    """The stand-in GPU half asks for the model's crew; the split still adds up."""
    model(COMPUTE_BOUND_HOST_PCIE_GPU.replace(cores=8))
    _dispatch.set_gpu_stand_in("cpu")
    x = np.random.default_rng(3).random(2_000_000)
    with gs.use_backend("cpu"):
        pass
    _dispatch._override.engine = "cpu+cuda"
    _dispatch.fast_invalidate()
    try:
        h, _ = gs.histogram(x, 100, (0, 1))
    finally:
        _dispatch._override.engine = None
        _dispatch.fast_invalidate()
    p = gs.last_plan()
    assert p["engine"] == "cpu+cuda" and p["split"]["cuda"] + p["split"]["cpu"] == x.size and "crew" in p["split"]
    np.testing.assert_array_equal(h, np.histogram(x, 100, (0, 1))[0])


def test_measured_per_op_gpu_extra_keeps_small_bincounts_off_the_gpu():
    """bincount's host-input GPU call has fixed costs a sum has not (its
    min/max pass and wait): measured per op, they move its crossover."""
    m = H200_LIKE.replace(cpu_rate=(("bincount", 8e8),), cpu_rate_all=(("bincount", 1.8e9),))
    s = shape("bincount", 100_000, bins=1000)
    slow = m.replace(gpu_extra=(("bincount", 700e-6),))
    assert _costmodel._gpu_time(slow, s, s.n) == pytest.approx(_costmodel._gpu_time(m, s, s.n) + 700e-6)
    assert _costmodel._gpu_time(slow, shape("sum", 100_000), 100_000) == _costmodel._gpu_time(m, shape("sum", 100_000),
                                                                                            100_000)
    assert _costmodel.choose(slow, s).engine != "cuda"
    doc = json.loads(json.dumps(_calibrate.to_json(slow)))
    assert _calibrate.from_json(doc) == slow
    doc["gpu_extra"] = {"bincount": -1.0}
    with pytest.raises(ValueError):
        _calibrate.from_json(doc)


def test_8bit_histograms_have_their_own_rate():
    """An unweighted 8-bit histogram / bincount is one table increment per byte: the model prices it with the
    "histogram8" rate (calibrated on its own), not the general histogram's bin arithmetic."""
    from gpusync import _costmodel as cm

    m = cm.Machine(cores=16, cpu_rate=(("histogram", 1e8), ("histogram8", 2e9)))
    u8 = cm.Shape("histogram", 10**6, 1, 256 * 8, 256)
    f8 = cm.Shape("histogram", 10**6, 8, 100 * 8, 100)
    assert cm.rate_key(u8) == "histogram8" and cm.rate_key(f8) == "histogram"
    assert cm.rate_key(cm.Shape("bincount", 10**6, 1, 8, 256)) == "histogram8"
    assert cm.rate_key(cm.Shape("sum", 10**6, 1)) == "sum"
    assert cm._cpu_time(m, u8, u8.n, 1) < cm._cpu_time(m, f8, f8.n, 1) / 10


def test_auxiliary_host_passes_follow_a_forced_engine(monkeypatch):
    """A bincount's min/max pass runs outside the engine choice: a forced caller engine (GPUSYNC_ENGINE) or a
    forced pool size holds for it too."""
    monkeypatch.delenv("GPUSYNC_ENGINE", raising=False)
    assert _dispatch.aux_threads() == 0
    monkeypatch.setenv("GPUSYNC_ENGINE", "caller")
    assert _dispatch.aux_threads() == 1
    a = np.random.default_rng(3).integers(0, 5000, 300_000)
    np.testing.assert_array_equal(gs.bincount(a), np.bincount(a))
    monkeypatch.delenv("GPUSYNC_ENGINE")
    with _calibrate._forced("cpu", 2):
        assert _dispatch.aux_threads() == 2
        np.testing.assert_array_equal(gs.bincount(a), np.bincount(a))
    assert _dispatch.aux_threads() == 0


def test_fast_path_on_the_pool_matches_numpy(model):
    """Above the calling-thread limit the C fast path runs on the CPU engine's pool (up to where the model
    leaves the host engines): NumPy's results, and a plan that names the threads it ran on."""
    model(Machine(cores=2, gpu=False, handoff=2e-6, handoff_per_thread=1e-7, handoff_warm=1e-6,
                   cpu_rate=tuple((op, 1e8) for op in ("sum", "dot", "count_nonzero", "packbits", "cumsum",
                                                       "histogram", "histogram8", "bincount"))))
    rng = np.random.default_rng(11)
    x = rng.standard_normal(300_001)
    i = rng.integers(0, 3000, 300_001)
    b = rng.integers(0, 256, 300_001).astype(np.uint8)
    gs.sum(x[:3])  # the first call configures the limits
    names = _core.fast_config(None)
    assert all(0 < c < 300_001 for c in (dict(zip(names, _limits()))[op][0] for op in ("sum", "bincount")))
    cases = [("sum", lambda: gs.sum(x), np.sum(x)), ("dot", lambda: gs.dot(x, x), np.dot(x, x)),
             ("count_nonzero", lambda: gs.count_nonzero(i), np.count_nonzero(i)),
             ("bincount", lambda: gs.bincount(i), np.bincount(i)),
             ("histogram", lambda: gs.histogram(b, 256, range=(0, 256))[0], np.histogram(b, 256, (0, 256))[0])]
    for op, fn, ref in cases:
        fn()
        got = fn()
        assert _fast_ran(op), gs.last_plan()
        p = gs.last_plan()
        assert p["engine"] == ("cpu" if p["threads"] > 1 else "caller")
        if op in ("sum", "dot"):
            assert got == pytest.approx(ref, rel=1e-9)
        else:
            np.testing.assert_array_equal(got, ref)


def _limits():
    m = _dispatch.machine()
    allowed = _dispatch._allowed(None)[0]
    return [_dispatch._fast_limits(m, op, allowed) for op in _core.fast_config(None)]


@pytest.mark.parametrize("n", [1, 7, 1000, 100_003])
def test_fast_paths_of_common_options(n):
    """The C fast path also takes bincount with float weights, sum(dtype=float64) of a float array,
    packbits(bitorder='little') and unpackbits: NumPy's results, recorded as fast calls."""
    rng = np.random.default_rng(n)
    gs.sum(np.ones(3))  # a general call configures the fast paths' limits
    for dt in (np.int64, np.int32, np.uint16):
        x = rng.integers(0, 50, n).astype(dt)
        for wdt in (np.float64, np.float32):
            w = rng.standard_normal(n).astype(wdt)
            for minlength in (0, 80):
                got, ref = gs.bincount(x, weights=w, minlength=minlength), np.bincount(x, w, minlength)
                assert got.dtype == ref.dtype == np.float64 and got.shape == ref.shape
                np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
                assert _fast_ran("bincount")
    got = gs.bincount(x, weights=np.arange(n))  # integer weights: the general path, NumPy's float64 sums
    np.testing.assert_array_equal(got, np.bincount(x, np.arange(n)))
    for dt in (np.float32, np.float64, np.float16):
        a = rng.standard_normal(n).astype(dt)
        for spelled in (np.float64, "float64", float, "f8"):
            got, ref = gs.sum(a, dtype=spelled), np.sum(a, dtype=spelled)
            assert type(got) is type(ref) is np.float64
            assert got == pytest.approx(ref, rel=1e-12, abs=1e-12)
        assert _fast_ran("sum")
    i = rng.integers(-5, 5, n).astype(np.int32)
    assert gs.sum(i, dtype=np.float64) == np.sum(i, dtype=np.float64)  # an integer array: the general path
    with pytest.raises(TypeError):  # an array is no dtype (it would compare element by element)
        gs.sum(a.astype(np.float32), dtype=np.array([np.float64]))
    u8 = (rng.integers(0, 3, n) * rng.integers(0, 2, n)).astype(np.uint8)
    np.testing.assert_array_equal(gs.packbits(u8, bitorder="little"), np.packbits(u8, bitorder="little"))
    assert _fast_ran("packbits")
    for order in ("big", "little"):
        np.testing.assert_array_equal(gs.unpackbits(u8, bitorder=order), np.unpackbits(u8, bitorder=order))
        assert _fast_ran("unpackbits")
    two = u8[: n - n % 2].reshape(2, -1) if n > 1 else u8.reshape(1, 1)
    np.testing.assert_array_equal(gs.unpackbits(two), np.unpackbits(two))  # any shape, flattened


@pytest.mark.parametrize("shape", [(100, 10), (10, 100), (3, 4, 5), (1, 7), (7, 1), (300, 1001)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.int64, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_axis_fast_path(shape, dtype):
    """sum / count_nonzero along one int axis (negative included) of a C-contiguous NumPy array take the C
    fast path: NumPy's shapes and dtypes, sums accumulated in float64 / 64-bit integers (float32 and float16
    rounded once: closer to the exact sum than NumPy's, which accumulates in the input's precision along
    a strided axis), counts exact.  The CPU engine forced: on a GPU machine the cost model may send the
    (300, 1001) sums to the GPU, by its calibrated constants (r130, H200, with -n 8)."""
    rng = np.random.default_rng(len(shape))
    x = (rng.random(shape) * 10).astype(dtype)
    x.flat[::7] = 0
    with gs.use_backend("cpu"):
        _axis_fast_path_checks(x, shape, dtype)


def _axis_fast_path_checks(x, shape, dtype):
    gs.sum(np.ones(3))
    for ax in range(-len(shape), len(shape)):
        got, ref = gs.sum(x, axis=ax), np.sum(x, axis=ax)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        assert _fast_ran("sum")
        exact = np.sum(x.astype(np.float64), axis=ax)
        tol = {np.float16: 1e-3, np.float32: 1e-7, np.float64: 1e-13}.get(dtype, 0)
        np.testing.assert_allclose(got.astype(np.float64), exact.astype(ref.dtype).astype(np.float64), rtol=tol)
        got, ref = gs.count_nonzero(x, axis=ax), np.count_nonzero(x, axis=ax)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)
        assert _fast_ran("count_nonzero")
    with pytest.raises(np.exceptions.AxisError):
        gs.sum(x, axis=len(shape))
    np.testing.assert_array_equal(gs.sum(x.astype(bool), axis=0), np.sum(x.astype(bool), axis=0))  # general path


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("rng_", [(0, 256), (0.0, 1.0), (np.float32(0), np.float32(2)), (np.float64(-1), 3)])
def test_planned_histogram_in_c_gives_numpys_counts_and_fresh_edges(dtype, rng_):
    """A repeated gs.histogram(a, bins, range) of a NumPy array is answered in
    C from the plan of the first call (module.c fast_histogram_of): the same
    counts and edges as NumPy, edges of NumPy's dtype for those bound types,
    a new writeable edges array each call; other inputs fall through."""
    rng = np.random.default_rng(5)
    a = (rng.random(5000) * 300 - 20).astype(dtype)
    want_h, want_e = np.histogram(a, 37, rng_)
    for _ in range(3):  # the first call plans, the later ones take the C path
        h, e = gs.histogram(a, 37, rng_)
        np.testing.assert_array_equal(h, want_h)
        np.testing.assert_array_equal(e, want_e)
        assert h.dtype == want_h.dtype and e.dtype == want_e.dtype
        assert e.flags.writeable and e.flags.owndata
        e[:] = -7  # the next call's edges are not this array
    assert gs.last_plan()["engine"] == "caller"
    try:  # unhashable bounds: the general path, NumPy's error
        np.histogram(a, 37, ([0], 1))
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            gs.histogram(a, 37, ([0], 1))
    lst = a[:100].tolist()  # not an ndarray: the general path
    np.testing.assert_array_equal(gs.histogram(lst, 37, rng_)[0], np.histogram(lst, 37, rng_)[0])


@pytest.mark.parametrize("step", [2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8])
def test_strided_views_take_the_fast_path_and_match_numpy(dtype, step):
    """a[::k] of one dimension: sum, dot, count_nonzero, bincount (and its
    weights) and a planned histogram take the C fast path into the CPU
    engine's strided loops, with NumPy's answers; a negative step does not."""
    rng = np.random.default_rng(step)
    base = (rng.random(30_011) * 200).astype(dtype)
    for start in (0, 1):
        a = base[start::step]
        b = base[start + 1::step][:len(a)]
        a = a[:len(b)]
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(gs.sum(a), np.sum(a), rtol=1e-5)
            np.testing.assert_allclose(gs.dot(a, b), np.dot(a, b), rtol=1e-5)
        else:
            assert gs.sum(a) == np.sum(a) and gs.dot(a, b) == np.dot(a, b)
        assert _fast_ran("dot")
        assert gs.count_nonzero(a) == np.count_nonzero(a) and _fast_ran("count_nonzero")
        if np.dtype(dtype).kind in "iu":
            np.testing.assert_array_equal(gs.bincount(a), np.bincount(a))
            assert _fast_ran("bincount")
            w = rng.random(len(base))[::step][:len(a)]
            np.testing.assert_allclose(gs.bincount(a, w), np.bincount(a, w), rtol=1e-12)
        for _ in range(2):  # the first call plans, the second takes the C path
            h, e = gs.histogram(a, 40, (0, 200))
        want = np.histogram(a, 40, (0, 200))
        np.testing.assert_array_equal(h, want[0])
        np.testing.assert_array_equal(e, want[1])
        assert _fast_ran("histogram")
    r = base[::-step]
    assert gs.count_nonzero(r) == np.count_nonzero(r) and not _fast_ran("count_nonzero")


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 7), (4, 16), (1, 0)])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float32])
def test_nd_packbits_and_keepdims_sum_on_the_fast_path(shape, dtype):
    """packbits with axis=None flattens any C-contiguous shape as NumPy does,
    and sum(keepdims=True) of the whole array returns NumPy's (1,) * ndim
    array of its dtype -- both from the C fast path."""
    gs.sum(np.ones(3, np.float32), dtype=np.float16)  # a general call: the fast paths' limits are set
    a = (np.random.default_rng(len(shape)).random(shape) * 3).astype(dtype)
    if dtype != np.float32:  # NumPy packs integers and bools only
        for order in ("big", "little"):
            np.testing.assert_array_equal(gs.packbits(a, bitorder=order), np.packbits(a, bitorder=order))
            assert a.size == 0 or _fast_ran("packbits")
    g, want = gs.sum(a, keepdims=True), np.sum(a, keepdims=True)
    assert type(g) is type(want) and g.dtype == want.dtype and g.shape == want.shape
    np.testing.assert_allclose(g, want, rtol=1e-6)


def test_common_spellings_take_the_fast_paths_with_numpys_answers():
    """sum of a list / tuple (NumPy converts first), sum over a tuple naming
    every axis (the whole sum), cumsum of a strided view (its contiguous
    copy): NumPy's values and types; invalid axes keep NumPy's errors."""
    rng = np.random.default_rng(9)
    for seq in ([1, 2, 3], (1.5, 2.5), [[1, 2], [3, 4]], [True, False, True], [], [1, 2**62]):
        got, want = gs.sum(seq), np.sum(seq)
        assert type(got) is type(want) and got == want
    m = rng.random((3, 4, 5))
    for ax in ((0, 1, 2), (2, 0, 1), (-1, 0, 1)):
        np.testing.assert_allclose(gs.sum(m, axis=ax), np.sum(m, axis=ax))
    for ax in ((0, 0, 1), (0, 1, 5)):
        with pytest.raises((ValueError, np.exceptions.AxisError)):
            gs.sum(m, axis=ax)
    x = rng.random(1001)
    for v in (x[::2], x[1::3]):
        got, want = gs.cumsum(v), np.cumsum(v)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("shape", [(5, 2), (7, 3, 4), (1, 9), (40, 100)])
def test_cumsum_along_one_axis_on_the_fast_path(shape, dtype):
    """cumsum(a, axis=k) of a C-contiguous N-d array: the C fast path with
    NumPy's shape and dtype; float64 and integers equal NumPy's exactly (each
    column adds in NumPy's order)."""
    gs.sum(np.ones(3, np.float32), dtype=np.float16)  # a general call: the fast paths' limits are set
    a = (np.random.default_rng(len(shape)).random(shape) * 10).astype(dtype)
    for ax in [*range(a.ndim), -1]:
        got, want = gs.cumsum(a, axis=ax), np.cumsum(a, axis=ax)
        assert got.dtype == want.dtype and got.shape == want.shape
        if dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=2e-5)
        else:
            np.testing.assert_array_equal(got, want)
        assert _fast_ran("cumsum")
