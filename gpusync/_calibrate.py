"""Machine constants for the cost model: measured, cached, or safe defaults.

``python -m gpusync calibrate`` measures them in a few seconds and writes
them to ``$XDG_CACHE_HOME/gpusync/`` (default ``~/.cache/gpusync/``), one
JSON file per machine and GPU: the key is the CPU model, the core count, the
GPU name and the gpusync version.  On first need, without a cache, a quick
measurement runs (0.2-0.8 s: the host's bandwidths, the pool's hand-offs, each
op's one-thread rate, and the GPU's host-input curve where there is one;
GPUSYNC_CALIBRATE=off skips it).  A corrupt or stale cache
is ignored with one warning, never an error.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import warnings

import numpy as np

from . import _backend, _core, _costmodel
from ._costmodel import Machine

FORMAT = 4  # 2: cache tier, all-cores rates, the GPU's host-input curve; 3: per-op GPU extra; 4: histogram8
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
    d["cpu_rate_all"] = dict(m.cpu_rate_all)
    d["cpu_rate_all_mem"] = dict(m.cpu_rate_all_mem)
    d["gpu_extra"] = dict(m.gpu_extra)
    d["cache_bw"] = [list(p) for p in m.cache_bw]
    d["gpu_host"] = [list(p) for p in m.gpu_host]
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
        elif f == "cache_bw":
            v = tuple((int(t), float(b)) for t, b in v)
            if any(t < 1 or not b > 0 for t, b in v):
                raise ValueError("cache_bw must hold positive (threads, bytes/s) pairs")
        elif f == "gpu_host":
            v = tuple((float(b), float(t)) for b, t in v)
            if v and (len(v) < 2 or any(not (b > 0 and t > 0) for b, t in v)
                      or any(b1 <= b0 or t1 < t0 for (b0, t0), (b1, t1) in zip(v, v[1:]))):
                raise ValueError("gpu_host must hold >= 2 (bytes, seconds) points, increasing")
        elif f == "cache_bytes":
            v = int(v)
            if v < 0:
                raise ValueError("cache_bytes must be >= 0")
        elif f == "gpu_extra":
            v = tuple(sorted((str(k), float(r)) for k, r in dict(v).items()))
            if any(not (r >= 0 and np.isfinite(r)) for _, r in v):
                raise ValueError("gpu_extra must be finite and >= 0")
        elif f in ("cpu_rate", "gpu_rate", "cpu_rate_all", "cpu_rate_all_mem"):
            v = tuple(sorted((str(k), float(r)) for k, r in dict(v).items()))
            if any(not r > 0 for _, r in v):
                raise ValueError(f"{f} must be positive")
        elif f == "gpu":
            v = bool(v)
        elif f == "cores":
            v = int(v)
            if v < 1:
                raise ValueError("cores must be >= 1")
        elif f == "split_slowdown":
            v = float(v)
            if not (1.0 <= v <= 4.0):
                raise ValueError("split_slowdown must be in [1, 4]")
        elif f == "handoff_warm":
            v = float(v)
            if not np.isfinite(v):
                raise ValueError("handoff_warm must be finite")
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

def _times(fn, reps, budget):
    """Times of `fn` over up to `reps` runs within `budget` seconds, after one
    run that warms it."""
    fn()
    ts, t_end = [], time.perf_counter() + budget
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return ts


def _best(fn, reps, budget):
    """Best time of `fn` over up to `reps` runs within `budget` seconds."""
    return min(_times(fn, reps, budget))


def _with_threads(t, fn):
    def run():
        _core.cpu_threads(t)
        try:
            fn()
        finally:
            _core.cpu_threads(0)

    return run


def _cache_bytes() -> int:
    """The last-level cache's size from sysfs (0 when unknown)."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in os.listdir(base):
            try:
                with open(os.path.join(base, idx, "size")) as f:
                    txt = f.read().strip()
                with open(os.path.join(base, idx, "type")) as f:
                    if f.read().strip() == "Instruction":
                        continue
            except OSError:
                continue
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(txt[-1:].upper(), 1)
            digits = txt[:-1] if mult > 1 else txt
            if digits.isdigit():
                best = max(best, int(digits) * mult)
    except OSError:
        return 0
    return best


@contextlib.contextmanager
def _forced(engine, threads=None):
    """Calls through the public path with the engine (and pool size) forced,
    on the calling thread alone (the dispatcher's thread-local override; the
    C fast path steps aside on this thread).  A backend the user forced
    (``use_backend``, ``GPUSYNC_BACKEND``) does not bend it: the constants are
    often measured lazily inside a ``with gs.use_backend("cpu")`` block, and
    a GPU curve measured there once ran on the CPU (a host-input GPU call of
    ~1 us: every later auto call went to the GPU).  Other threads' calls and
    their forced backends are untouched."""
    from . import _dispatch

    saved = (_dispatch._override.engine, _dispatch._override.threads)
    _dispatch._override.engine, _dispatch._override.threads = engine, threads
    was_off = _core.fast_thread_off(True)
    try:
        yield
    finally:
        _dispatch._override.engine, _dispatch._override.threads = saved
        _core.fast_thread_off(was_off)


def measure(quick: bool = False, verbose: bool = False) -> Machine:
    """Measure the constants (quick: 0.2-0.8 s; full: a few seconds)."""
    import gpusync as gs

    m = defaults()
    cores = m.cores
    cache = _cache_bytes()
    # float64 elements past the caches: 64 MB / 128 MB, at least 4x the last-level cache
    n = max((1 << 23) if quick else (1 << 24), cache // 2)
    budget = 0.03 if quick else 0.3
    big = np.ones(n, np.float64)
    out = np.empty(1, np.float64)

    def rsum(a):
        return lambda: _core.reduce("cpu", a, None, out, "two-pass", False, 0)

    counts = sorted({1, 2, cores} if quick else {1, 2, 4, 8, 16, 32, 64, cores} & set(range(1, cores + 1)) | {cores})
    host_bw, cache_bw = [], []
    hot = np.ones(max(1 << 15, min(cache // 4, 8 << 20) // 8), np.float64) if cache else None
    for t in counts:
        s = _best(_with_threads(t, rsum(big)), 10, budget)
        host_bw.append((t, big.nbytes / s))
        if hot is not None:
            c = _best(_with_threads(t, rsum(hot)), 50, budget / 2)
            cache_bw.append((t, max(hot.nbytes / c, big.nbytes / s)))
        if verbose:
            print(f"  host read, {t:3d} threads: {big.nbytes / s / 1e9:7.1f} GB/s"
                  + (f"; from the {cache >> 20} MiB cache: {cache_bw[-1][1] / 1e9:7.1f} GB/s" if hot is not None
                     else ""))
    small = np.ones(256, np.float64)
    alone = _times(_with_threads(1, rsum(small)), 200, budget)
    one = min(alone)
    # the warm hand-off: medians (a loop of calls meets the typical round trip and wait, not the luckiest)
    warm = float(np.median(_times(_with_threads(max(2, cores), rsum(small)), 200, budget))) if cores > 1 else one
    warm = max(0.0, warm - float(np.median(alone)))
    # a call after any pause wakes parked workers, which the pool measured
    # itself when it started (the cold hand-off); back-to-back calls find
    # them spinning (the warm one, just above): the dispatcher asks the pool
    # which of the two the call meets
    cold = max(warm, _core.cpu_threads_for(1 << 40, 1.0)[1] * 1e-9)
    # the whole public path of a small call on the calling thread: what every
    # candidate pays before its engine starts
    with _forced("caller"):
        wrapper = _best(lambda: gs.sum(small), 200, budget)
    m = m.replace(host_bw=tuple(host_bw), handoff=cold, handoff_per_thread=cold / (4 * max(2, cores)),
                  handoff_warm=warm, cache_bytes=cache, cache_bw=tuple(cache_bw),
                  call_overhead=max(0.2e-6, one, wrapper))
    if verbose:
        print(f"  one call on the caller: {one * 1e6:.2f} us (through gs.sum: {wrapper * 1e6:.2f} us); "
              f"pool hand-off: {cold * 1e6:.2f} us parked, {warm * 1e6:.2f} us spinning")
    # each op's element rate: quick, the calling thread alone on an input the
    # caches hold (its compute rate; the pool's scaling from _CPU_SCALING); full,
    # also all the cores on one past them
    one_rates, all_rates = _op_rates(verbose, cores, quick, m.call_overhead)
    m = m.replace(cpu_rate=tuple(sorted({**dict(m.cpu_rate), **one_rates}.items())),  # (an op not timed: its default)
                  cpu_rate_all=tuple(sorted(all_rates.items())))
    if not quick and cores > 1:
        del big  # (the memory back before the next large inputs)
        m = m.replace(cpu_rate_all_mem=tuple(sorted(_past_cache_rates(n, cores, all_rates, verbose).items())))
    if _backend.cuda_available():
        try:
            m = _gpu(m, quick, verbose)
        except Exception as exc:  # noqa: BLE001 - the CPU constants stand; the GPU keeps its defaults
            _warn_once(f"gpusync: GPU calibration failed ({exc}); default GPU constants")
    return m


def _cases(n):
    """op -> (call, bytes read) on n elements: what the op rates are measured on."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    xi = rng.integers(0, 1000, n)
    b = rng.integers(0, 2, n).astype(np.uint8)
    b8 = rng.integers(0, 256, n).astype(np.uint8)
    import gpusync as gs

    return {
        "sum": (lambda: gs.sum(x), x.nbytes), "dot": (lambda: gs.dot(x, x), 2 * x.nbytes),
        "count_nonzero": (lambda: gs.count_nonzero(x), x.nbytes), "packbits": (lambda: gs.packbits(b), b.nbytes),
        "cumsum": (lambda: gs.cumsum(x), x.nbytes),
        "histogram": (lambda: gs.histogram(x, 100, range=(-4, 4)), x.nbytes),
        "histogram8": (lambda: gs.histogram(b8, 256, range=(0, 256)), b8.nbytes),
        "bincount": (lambda: gs.bincount(xi), xi.nbytes),
        "binned_statistic": (lambda: gs.binned_statistic(x, x, "mean", bins=100, range=(-4, 4)), 2 * x.nbytes),
    }


def _op_rates(verbose, cores, quick=False, overhead=0.0):
    """Element rate of each op on the C engine: the calling thread alone and
    (not quick) all `cores` threads of the pool.  A call's fixed cost
    (`overhead`: the public path of a small call) is not the op's; an op
    whose call takes less than four of those is timed again on four times
    the elements (its rate would be mostly the overhead's noise).  An op
    that cannot run here keeps its default rate."""
    one, full = {}, {}
    n = 1 << 18 if quick else 1 << 20
    big = None
    for op, (fn, _) in _cases(n).items():
        try:
            with _forced("caller"):
                t = _best(fn, 5, 0.03 if quick else 0.3)
            m_ = n
            if t < 4 * overhead:
                big = big or _cases(4 * n)
                with _forced("caller"):
                    t = _best(big[op][0], 5, 0.03 if quick else 0.3)
                m_ = 4 * n
            one[op] = m_ / max(t - overhead, t / 2)
            if cores > 1 and not quick:
                with _forced("cpu", cores):
                    full[op] = n / _best(fn, 10, 0.3)
        except Exception as exc:  # noqa: BLE001 - this op keeps its default; the others stand
            _warn_once(f"gpusync: could not time {op} on the CPU engine ({exc}); its default rate stays")
            continue
        if verbose:
            print(f"  {op:17s} 1 thread: {one[op] / 1e6:9.1f} M elements/s"
                  + (f"; {cores} threads: {full[op] / 1e6:9.1f} M elements/s" if op in full else ""))
    return one, full


# the compute-bound ops whose all-cores rate is measured past the cache too (the memory-bound ones take the
# host's read bandwidth there; cumsum and binned_statistic would need outputs of the input's size)
PAST_CACHE_OPS = ("histogram", "bincount")


def _past_cache_rates(n, cores, in_cache, verbose):
    """All-cores element rates of PAST_CACHE_OPS on `n` elements (the host
    read's input size, 4x the last-level cache): a tile of 1M random values
    repeated (streamed from memory like random data, made at copy speed).
    An op that fails, or whose in-cache rate is unknown, is left out."""
    import gpusync as gs

    rng = np.random.default_rng(1)
    inputs = {"histogram": (lambda x: gs.histogram(x, 100, range=(-4, 4)), lambda: rng.standard_normal(1 << 20)),
              "bincount": (gs.bincount, lambda: rng.integers(0, 1000, 1 << 20))}
    rates = {}
    for op in PAST_CACHE_OPS:
        if op not in in_cache:
            continue
        fn, tile = inputs[op]
        try:
            x = np.resize(tile(), n)
            with _forced("cpu", cores):
                rates[op] = n / _best(lambda: fn(x), 3, 0.3)
        except Exception as exc:  # noqa: BLE001 - this op keeps its in-cache rate
            _warn_once(f"gpusync: could not time {op} past the cache ({exc}); its in-cache rate stays")
            continue
        finally:
            x = None
        if verbose:
            print(f"  {op:17s} {cores} threads on {n * 8 >> 20} MiB (past the cache): "
                  f"{rates[op] / 1e6:9.1f} M elements/s")
    return rates


def _gpu(m: Machine, quick: bool, verbose) -> Machine:
    """The GPU's host-input curve: a float64 sum through the public path at
    sizes from 1 KiB up (staging, copies, launch, sync and the wrapper
    together), made monotone; the slope of its last two points is the
    copy's bandwidth.  Launch + sync of a device call from a bare core call."""
    import gpusync as gs

    out = np.empty(1, np.float64)
    tiny = np.ones(128, np.float64)
    latency = _best(lambda: _core.reduce("cuda", tiny, None, out, "auto", False, 0), 20, 0.2)
    # (a host-input call through the public path includes the bare launch + sync: never below it)
    curve, prev = [], max(1e-6, latency)
    for lg in range(10, (27 if quick else 29), 2):
        a = np.ones((1 << lg) // 8, np.float64)
        with _forced("cuda"):
            t = max(prev, _best(lambda a=a: gs.sum(a), 10 if lg < 24 else 4, 0.05 if quick else 0.3))
        curve.append((a.nbytes, t))
        prev = t
    (b0, t0), (b1, t1) = curve[-2], curve[-1]
    h2d = (b1 - b0) / (t1 - t0) if t1 > t0 else m.h2d_bw
    m = m.replace(gpu=True, h2d_bw=h2d, d2h_bw=h2d, gpu_latency=max(1e-6, latency), gpu_host=tuple(curve))
    # each op's host-input call beyond a sum of the same bytes (min/max passes,
    # host-side bin plans, results back, extra waits): a fixed cost per call
    extra = {}
    for op, (fn, nbytes) in _cases(1 << 16).items():
        try:
            with _forced("cuda"):
                t = _best(fn, 8, 0.05 if quick else 0.2)
        except Exception:  # noqa: BLE001 - an op the GPU cannot run here keeps no extra
            continue
        extra[op] = max(0.0, t - m.gpu_host_time(nbytes))
    m = m.replace(gpu_extra=tuple(sorted(extra.items())))
    slow = None if quick else _split_slowdown(m)
    if slow is not None:
        m = m.replace(split_slowdown=slow)
    if verbose:
        pts = ", ".join(f"{b >> 10} KiB {t * 1e6:.0f} us" for b, t in curve)
        print(f"  GPU: host-input sum: {pts}; copy slope {h2d / 1e9:.1f} GB/s; launch + sync {latency * 1e6:.1f} us; "
              f"device bandwidth {m.gpu_bw / 1e9:.0f} GB/s (from its properties)")
        print("  GPU: each op's host-input call beyond a sum of its bytes: "
              + ", ".join(f"{op} {t * 1e6:.0f} us" for op, t in sorted(extra.items())))
        print(f"  both engines at once: the measured split over the model's, {m.split_slowdown:.2f}"
              + (" (measured)" if slow is not None else " (default: not measured)"))
    return m


SPLIT_PROBE_ELEMENTS = 1 << 25  # float64: 256 MB, past a split's fixed cost and the caches of most hosts


def _split_slowdown(m: Machine):
    """A split's measured time over the model's: a forced both-engines
    float64 100-bin histogram of 256 MB (the dispatcher's machine set to `m`
    for the call, so that it splits as the model says), against the model's
    prediction of that split, each less the fixed costs; in [1, 4].  None
    where the host cannot hold the input or the call fails."""
    from . import _dispatch
    import gpusync as gs

    n = SPLIT_PROBE_ELEMENTS
    try:
        a = np.random.default_rng(0).random(n)
    except MemoryError:
        return None
    m1 = m.replace(split_slowdown=1.0)
    shape = _costmodel.Shape("histogram", n, 8, 100 * 8, 100, True, "host")
    choice = _costmodel.choose(m1, shape, ("cpu+cuda",))
    fixed = m1.split_overhead + shape.out_bytes / m1.merge_bw
    # m1 for this thread's calls alone: other threads keep the constants in use (the probe once swapped the
    # process's machine, and their plans cached meanwhile under m1's id outlived it)
    saved = _dispatch._override.machine
    _dispatch._override.machine = m1
    try:
        with _forced("cpu+cuda"):
            t = _best(lambda: gs.histogram(a, 100, (0.0, 1.0)), 3, 0.3)
            plan = gs.last_plan()
    except Exception:  # noqa: BLE001 - the default stands
        return None
    finally:
        _dispatch._override.machine = saved
    if plan is None or plan.get("engine") != "cpu+cuda":  # (fell back to one engine: no split was timed)
        return None
    pred = choice.predicted.get("cpu+cuda")
    if not pred or pred <= fixed:
        return None
    return float(min(4.0, max(1.0, (t - fixed) / (pred - fixed))))


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
    _dispatch.set_machine(m)  # (under its lock; the cached plans and the fast path's limits invalidated)
    return to_json(m)
