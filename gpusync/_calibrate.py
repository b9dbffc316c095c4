"""Machine constants for the cost model: measured, cached, or safe defaults.

``python -m gpusync calibrate`` measures them in a few seconds and writes
them to ``$XDG_CACHE_HOME/gpusync/`` (default ``~/.cache/gpusync/``), one
JSON file per machine and GPU: the key is the CPU model, the core count, the
GPU name and the gpusync version.  On first need, without a cache, a quick
CPU-only measurement runs (~0.1 s; GPUSYNC_CALIBRATE=off skips it) and the
GPU constants come from the device's properties.  A corrupt or stale cache
is ignored with one warning, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import warnings

import numpy as np

from . import _backend, _core
from ._costmodel import Machine

FORMAT = 1
_warned = {"cache": False}


def _version():
    from . import __version__

    return __version__


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def key() -> dict:
    gpu = ""
    if _backend.cuda_available():
        try:
            gpu = _core.device_info(0)["name"]
        except Exception:  # noqa: BLE001 - a key without the GPU name is still a key
            gpu = "?"
    return {"cpu": _backend._cpu_name(), "cores": _cores(), "gpu": gpu, "version": _version(), "format": FORMAT}


def cache_path(k: dict | None = None) -> str:
    k = key() if k is None else k
    # XDG_CACHE_HOME is the platform's variable (not a GPUSYNC_ one: not in the C table)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    # one file per machine and GPU; the version and format are checked inside
    # (a file from another gpusync version is stale: one warning, then ignored)
    where = {f: k.get(f) for f in ("cpu", "cores", "gpu")}
    digest = hashlib.sha1(json.dumps(where, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(base, "gpusync", f"calibration-{digest}.json")


def _warn_once(msg):
    if not _warned["cache"]:
        _warned["cache"] = True
        warnings.warn(msg, RuntimeWarning, stacklevel=4)


def to_json(m: Machine) -> dict:
    d = {f: getattr(m, f) for f in m.__dataclass_fields__}
    d["host_bw"] = [list(p) for p in m.host_bw]
    d["cpu_rate"] = dict(m.cpu_rate)
    d["gpu_rate"] = dict(m.gpu_rate)
    return d


def from_json(d: dict) -> Machine:
    fields = Machine.__dataclass_fields__
    kw = {}
    for f, v in d.items():
        if f not in fields:
            raise ValueError(f"unknown constant {f!r}")
        if f == "host_bw":
            v = tuple((int(t), float(b)) for t, b in v)
            if not v or any(t < 1 or not b > 0 for t, b in v):
                raise ValueError("host_bw must hold positive (threads, bytes/s) pairs")
        elif f in ("cpu_rate", "gpu_rate"):
            v = tuple(sorted((str(k), float(r)) for k, r in dict(v).items()))
            if any(not r > 0 for _, r in v):
                raise ValueError(f"{f} must be positive")
        elif f == "gpu":
            v = bool(v)
        elif f == "cores":
            v = int(v)
            if v < 1:
                raise ValueError("cores must be >= 1")
        else:
            v = float(v)
            if not (v >= 0 and np.isfinite(v)):
                raise ValueError(f"{f} must be a finite non-negative number")
        kw[f] = v
    return Machine(**kw)


def load(path: str | None = None, k: dict | None = None):
    """The cached constants, or None (absent; corrupt or stale: one warning)."""
    k = key() if k is None else k
    path = cache_path(k) if path is None else path
    try:
        with open(path) as f:
            raw = f.read()
    except OSError:
        return None
    try:
        doc = json.loads(raw)
        if doc.get("key") != k:
            _warn_once(f"gpusync: ignoring the stale calibration cache {path} (made for {doc.get('key')}); "
                       "run `python -m gpusync calibrate`")
            return None
        return from_json(doc["constants"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        _warn_once(f"gpusync: ignoring the corrupt calibration cache {path} ({exc}); "
                   "run `python -m gpusync calibrate`")
        return None


def save(m: Machine, path: str | None = None, k: dict | None = None) -> str:
    k = key() if k is None else k
    path = cache_path(k) if path is None else path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"key": k, "constants": to_json(m), "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                time.gmtime())}, f, indent=1)
    os.replace(tmp, path)
    return path


def defaults() -> Machine:
    """Safe constants without measuring: the core count, and the GPU's
    bandwidth from its memory clock and bus width when one is present."""
    m = Machine(cores=_cores(), host_bw=((1, 8e9), (_cores(), 8e9 * min(_cores(), 6))))
    if _backend.cuda_available():
        try:
            info = _core.device_info(0)
            peak = info["memory_clock_khz"] * 1e3 * 2 * info["memory_bus_width_bits"] / 8
            m = m.replace(gpu=True, gpu_bw=0.75 * peak if peak > 0 else m.gpu_bw)
        except Exception:  # noqa: BLE001 - keep the CPU-side defaults
            m = m.replace(gpu=True)
    return m


def constants() -> Machine:
    """The constants the dispatcher uses: the cache, else a quick measurement
    (unless GPUSYNC_CALIBRATE=off), else defaults."""
    from ._dispatch import env_calibrate

    mode = env_calibrate()
    m = load()
    if m is not None:
        return m
    if mode == "off":
        return defaults()
    try:
        return measure(quick=True)
    except Exception as exc:  # noqa: BLE001 - a failed measurement must not fail the user's call
        _warn_once(f"gpusync: quick calibration failed ({exc}); using default machine constants")
        return defaults()


# ---- measuring

def _best(fn, reps, budget):
    """Best time of `fn` over up to `reps` runs within `budget` seconds."""
    fn()
    best, t_end = float("inf"), time.perf_counter() + budget
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return best


def _with_threads(t, fn):
    def run():
        _core.cpu_threads(t)
        try:
            fn()
        finally:
            _core.cpu_threads(0)

    return run


def measure(quick: bool = False, verbose: bool = False) -> Machine:
    """Measure the constants (quick: CPU only, ~0.1 s; full: a few seconds)."""
    m = defaults()
    cores = m.cores
    n = (1 << 23) if quick else (1 << 24)  # float64 elements: 64 MB / 128 MB (past the caches)
    budget = 0.03 if quick else 0.3
    big = np.ones(n, np.float64)
    out = np.empty(1, np.float64)

    def rsum(a):
        return lambda: _core.reduce("cpu", a, None, out, "two-pass", False, 0)

    counts = sorted({1, 2, cores} if quick else {1, 2, 4, 8, 16, 32, 64, cores} & set(range(1, cores + 1)) | {cores})
    host_bw = []
    for t in counts:
        s = _best(_with_threads(t, rsum(big)), 10, budget)
        host_bw.append((t, big.nbytes / s))
        if verbose:
            print(f"  host read, {t:3d} threads: {big.nbytes / s / 1e9:7.1f} GB/s")
    small = np.ones(256, np.float64)
    one = _best(_with_threads(1, rsum(small)), 200, budget)
    pool = _best(_with_threads(max(2, cores), rsum(small)), 200, budget) if cores > 1 else one
    handoff = max(0.0, pool - one)
    # back-to-back calls find the pool's workers still spinning (best case,
    # measured just above); a call after any pause wakes parked workers,
    # which the pool measured itself when it started: take the larger, so
    # the model never hands a small call to the pool on the best case alone
    handoff = max(handoff, _core.cpu_threads_for(1 << 40, 1.0)[1] * 1e-9)
    m = m.replace(host_bw=tuple(host_bw), handoff=handoff, handoff_per_thread=handoff / (4 * max(2, cores)),
                  call_overhead=max(0.2e-6, one))
    if verbose:
        print(f"  one call on the caller: {one * 1e6:.2f} us; pool hand-off: {handoff * 1e6:.2f} us")
    if not quick:
        m = m.replace(cpu_rate=tuple(sorted(_op_rates(verbose).items())))
        if _backend.cuda_available():
            m = _gpu(m, verbose)
    return m


def _op_rates(verbose):
    """Per-thread element rate of each op on the C engine (calling thread)."""
    rng = np.random.default_rng(0)
    rates = {}
    n = 1 << 20
    x = rng.standard_normal(n)
    xi = rng.integers(0, 1000, n)
    b = rng.integers(0, 2, n).astype(np.uint8)
    import gpusync as gs

    cases = {
        "sum": lambda: gs.sum(x), "dot": lambda: gs.dot(x, x), "count_nonzero": lambda: gs.count_nonzero(x),
        "packbits": lambda: gs.packbits(b), "cumsum": lambda: gs.cumsum(x),
        "histogram": lambda: gs.histogram(x, 100, range=(-4, 4)), "bincount": lambda: gs.bincount(xi),
        "binned_statistic": lambda: gs.binned_statistic(x, x, "mean", bins=100, range=(-4, 4)),
    }
    from . import _dispatch

    _dispatch._override["engine"] = "caller"  # each op on the calling thread, whatever the environment
    try:
        for op, fn in cases.items():
            s = _best(fn, 5, 0.3)
            rates[op] = n / s
            if verbose:
                print(f"  {op:17s} 1 thread: {n / s / 1e6:9.1f} M elements/s")
    finally:
        _dispatch._override["engine"] = None
    return rates


def _gpu(m: Machine, verbose) -> Machine:
    """PCIe and latency from host-input sums on the GPU at two sizes: the
    slope is the copy's bandwidth, the intercept launch + sync."""
    out = np.empty(1, np.float64)
    sizes = (1 << 10, 1 << 25)
    times = []
    for n in sizes:
        a = np.ones(n, np.float64)
        times.append(_best(lambda a=a: _core.reduce("cuda", a, None, out, "auto", False, 0), 10, 0.5))
    slope = (times[1] - times[0]) / ((sizes[1] - sizes[0]) * 8)
    h2d = 1.0 / slope if slope > 0 else m.h2d_bw
    latency = max(1e-6, times[0] - sizes[0] * 8 * slope)
    m = m.replace(gpu=True, h2d_bw=h2d, d2h_bw=h2d, gpu_latency=latency)
    if verbose:
        print(f"  GPU: host->device {h2d / 1e9:.1f} GB/s (through the staging pipeline), "
              f"launch + sync {latency * 1e6:.1f} us, device bandwidth {m.gpu_bw / 1e9:.0f} GB/s (from its properties)")
    return m


def calibrate(save_cache: bool = True, verbose: bool = True) -> dict:
    """Measure this machine's constants, cache them, and use them from now on.

    Returns the constants as a dict (bandwidths in bytes/s, times in s)."""
    from . import _dispatch

    if verbose:
        print("gpusync calibrate:", json.dumps(key()))
    m = measure(quick=False, verbose=verbose)
    if save_cache:
        path = save(m)
        if verbose:
            print("  written to", path)
    _dispatch.set_machine(None)
    _dispatch._machine["m"] = m
    return to_json(m)
