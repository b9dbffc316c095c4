"""Every op at every size: is gpusync ahead of what the user already has?

    python benchmarks/sizes.py [--out benchmarks/results] [--max-n 1e9] [--quick] [--ops a,b]

Sizes from 10^0 to --max-n in half-decades (1, 3, 10, 32, 100, 316, ...: most
not powers of two).  Two input places:

  host    NumPy arrays, end to end (wall time per call, NumPy result);
  device  CuPy arrays (wall time per call, synchronized: what a notebook feels).
Short cells (host below 10^4 elements, device below 10^6) time every
implementation in 5 interleaved rounds and keep the median of the rounds'
medians: a transient that slows one stretch of calls moves one round.  Host
cells of 10^7 elements and up take 3 interleaved rounds (each implementation
after 0.3 s idle): the host's memory moves from round to round more than the
implementations differ there (r266, H200 host: one 3.16e8 float64 dot took
33-47 ms from round to round, gpusync, NumPy and torch alike).

Implementations, each where installed: gpusync:auto (the default engine
choice), gpusync:cpu and gpusync:cuda (forced with gs.use_backend), numpy,
fast-histogram, boost-histogram (threads = all cores), scipy, torch:<fn> (CPU
tensors sharing the NumPy memory on host, CUDA tensors on device), cupy:<fn>
(asarray + op + get on host, the op alone on device), cub:<fn> (CUB / cuBLAS
device time from benchmarks/cub_helper.cu, when nvcc can build it).  A peer
that is missing is skipped; so is an impl whose time at the previous size
predicts more than --cap-ms per call at this size (it is not the best peer).

A plain parallel host read (NumPy reductions of slices on all cores, GIL
released: the fastest of a sum, a max and a bitwise or) is measured in the
same run: the ceiling for sum / dot / count_nonzero / packbits on the host.

Writes rows {op: "sweep", case: "sweep-<op>-<host|device>-<n>", impl, ms, n,
place} into <out>/latest.json (earlier sweep rows replaced, other rows kept;
ceilings host_read_gbps), <out>/sizes.md (the summary: cells where
gpusync:auto is behind the best peer), <out>/sizes-<op>.png (log-log time vs
size, one line per impl, a panel per place) and <out>/sizes-heatmap.png (best
peer time / gpusync:auto time, op x size, a panel per place).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import merge_results, median  # noqa: E402

OPS = ("histogram-f64-100", "histogram-u8-256", "bincount-i64-1000", "sum-f32", "sum-f64", "sum-i64",
       "dot-f32", "dot-f64", "cumsum-i32", "cumsum-f64", "count_nonzero-u8", "packbits-u8",
       "binned_statistic-mean-100")
CORES = os.cpu_count() or 1


def optional(name):
    try:
        return __import__(name)
    except Exception:
        return None


def half_decades(max_n):
    out, k = [], 0
    while True:
        n = int(round(10 ** (k / 2)))
        if n > max_n:
            return out
        out.append(n)
        k += 1


# Host timings from this size on start after QUIET_S of idle time: thread pools
# spin after a job (OpenBLAS ~0.1 s, Intel OpenMP's KMP_BLOCKTIME 0.2 s, GNU
# OpenMP and gpusync's pool far less), and one implementation's spinning
# threads slowed the next one's by up to 100x in the 2026-11-23 H200 sweep
# (numpy.dot of 10^5 float64: 8 ms right after torch.dot, 0.007 ms alone).
QUIET_FROM = 10_000
ROUNDS = 5  # interleaved rounds of a cell: host below QUIET_FROM, device below 10^6
BIG_HOST_FROM, BIG_HOST_ROUNDS = 10**7, 3  # and host cells this large (the host memory's round-to-round spread)
QUIET_S = 0.3  # above Intel OpenMP's 0.2 s block time (0.1 s left OpenBLAS / OpenMP threads spinning into the next row)


def timed(fn, budget_s, sync=None, max_reps=200):
    """Median wall ms per call: two warm-up calls, then as many calls as fit
    the budget by the second (at least 1, at most max_reps).  The first call
    of a run pays one-time costs (CUDA's start, a calibration): sized by it,
    the sweep's first cell got one timed call, itself still cold (count_nonzero
    of 1 byte: 6.7 us against 0.4 us warm, H200 host r56 and r61)."""
    def once():
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        return (time.perf_counter() - t) * 1e3
    once()
    second = once()
    reps = int(min(max_reps, max(1, budget_s * 1e3 / max(second, 1e-3))))
    return median([once() for _ in range(reps)])


def host_read_gbps(nbytes=1 << 30):
    """A plain parallel read: NumPy reductions of CORES slices at once, the
    fastest of three loops (a float64 sum is pairwise and was the slowest on
    the H200 host: its 65-87 GB/s sat below the CPU engine's own sums' 88-113
    GB/s, results/sizes_host_big_H200_r245.md; a max and a bitwise or of the
    same bytes read with less arithmetic a byte)."""
    a = np.ones(nbytes // 8)
    best = 0.0
    for fn in (np.sum, np.max, lambda p: np.bitwise_or.reduce(p.view(np.uint64))):
        parts = np.array_split(a, CORES)
        with ThreadPoolExecutor(CORES) as ex:
            def run():
                list(ex.map(fn, parts))
            ms = min(timed(run, 0.05, max_reps=3) for _ in range(5))
        best = max(best, nbytes / ms / 1e6)
    return best


class Inputs:
    """One base array per op at the largest size (cheap to make: a random
    block tiled), sliced for smaller sizes; device copies made per size."""

    def __init__(self, max_n, seed=0):
        self.max_n = max_n
        self.rng = np.random.default_rng(seed)
        self.base = {}

    def _tile(self, block, n):
        return np.resize(block, n) if n > block.size else block[:n].copy()

    def get(self, key, n):
        if key not in self.base:
            r = self.rng
            blk = 1 << 20
            make = {
                "f64": lambda: r.random(blk),
                "f64b": lambda: r.random(blk),
                "f32": lambda: r.random(blk, dtype=np.float32),
                "f32b": lambda: r.random(blk, dtype=np.float32),
                "i64": lambda: r.integers(-1000, 1000, blk, dtype=np.int64),
                "i32": lambda: r.integers(-1000, 1000, blk, dtype=np.int32),
                "u8": lambda: r.integers(0, 256, blk, dtype=np.uint8),
                "idx": lambda: r.integers(0, 1000, blk, dtype=np.int64),
                "sparse": lambda: (r.random(blk) < 0.5).astype(np.uint8) * r.integers(1, 256, blk, dtype=np.uint8),
            }[key]
            self.base[key] = self._tile(make(), self.max_n)
        return self.base[key][:n]

    def drop(self, keys):
        for k in keys:
            self.base.pop(k, None)


# op -> (input keys, numpy fn, gpusync fn); every fn takes the arrays.
def _np_binstat(ss):
    return lambda x, v: ss.binned_statistic(x, v, "mean", bins=100, range=(0, 1))[0]


SPEC = {
    "histogram-f64-100": (("f64",), lambda x: np.histogram(x, 100, (0, 1))[0],
                          lambda x: gs.histogram(x, 100, range=(0, 1))[0]),
    "histogram-u8-256": (("u8",), lambda x: np.bincount(x, minlength=256),  # np.histogram is 10x slower here
                         lambda x: gs.histogram(x, 256, range=(0, 256))[0]),
    "bincount-i64-1000": (("idx",), lambda x: np.bincount(x, minlength=1000),
                          lambda x: gs.bincount(x, minlength=1000)),
    "sum-f32": (("f32",), np.sum, gs.sum),
    "sum-f64": (("f64",), np.sum, gs.sum),
    "sum-i64": (("i64",), np.sum, gs.sum),
    "dot-f32": (("f32", "f32b"), np.dot, gs.dot),
    "dot-f64": (("f64", "f64b"), np.dot, gs.dot),
    "cumsum-i32": (("i32",), np.cumsum, gs.cumsum),
    "cumsum-f64": (("f64",), np.cumsum, gs.cumsum),
    "count_nonzero-u8": (("sparse",), np.count_nonzero, gs.count_nonzero),
    "packbits-u8": (("sparse",), np.packbits, gs.packbits),
    "binned_statistic-mean-100": (("f64", "f64b"), None,
                                  lambda x, v: gs.binned_statistic(x, v, "mean", bins=100, range=(0, 1))[0]),
}


def host_peers(op, fh, bh, ss, torch, cp):
    """(impl, fn(arrays)) of the peers a NumPy user has for `op` on the host."""
    out = []
    kind = op.split("-")[0]
    if fh is not None:
        if op == "histogram-f64-100":
            out.append(("fast-histogram", lambda x: fh.histogram1d(x, 100, (0, 1))))
        elif op == "histogram-u8-256":
            out.append(("fast-histogram", lambda x: fh.histogram1d(x, 256, (0, 256))))
        elif op == "bincount-i64-1000":
            out.append(("fast-histogram", lambda x: fh.histogram1d(x, 1000, (0, 1000))))
    if bh is not None:
        axes = {"histogram-f64-100": lambda: bh.axis.Regular(100, 0, 1),
                "histogram-u8-256": lambda: bh.axis.Integer(0, 256, underflow=False, overflow=False),
                "bincount-i64-1000": lambda: bh.axis.Integer(0, 1000, underflow=False, overflow=False)}
        if op in axes:
            h = bh.Histogram(axes[op]())
            out.append(("boost-histogram", lambda x, h=h: h.reset().fill(x, threads=CORES)))
    if ss is not None and op == "binned_statistic-mean-100":
        out.append(("scipy", _np_binstat(ss)))
    if torch is not None:
        t = torch.from_numpy
        fns = {"histogram-f64-100": ("histc", lambda x: torch.histc(t(x), 100, 0, 1)),
               "bincount-i64-1000": ("bincount", lambda x: torch.bincount(t(x), minlength=1000)),
               "sum": ("sum", lambda x: torch.sum(t(x))),
               "dot": ("dot", lambda x, y: torch.dot(t(x), t(y))),
               "cumsum": ("cumsum", lambda x: torch.cumsum(t(x), 0)),
               "count_nonzero": ("count_nonzero", lambda x: torch.count_nonzero(t(x)))}
        f = fns.get(op, fns.get(kind))
        if f:
            out.append((f"torch:{f[0]}", f[1]))
    if cp is not None:  # a CuPy user's road from NumPy: asarray + op + get
        a = cp.asarray
        fns = {"histogram-f64-100": ("histogram", lambda x: cp.histogram(a(x), 100, (0, 1))[0].get()),
               "histogram-u8-256": ("bincount", lambda x: cp.bincount(a(x), minlength=256).get()),
               "bincount-i64-1000": ("bincount", lambda x: cp.bincount(a(x), minlength=1000).get()),
               "sum": ("sum", lambda x: cp.sum(a(x)).get()),
               "dot": ("dot", lambda x, y: cp.dot(a(x), a(y)).get()),
               "cumsum": ("cumsum", lambda x: cp.cumsum(a(x)).get()),
               "count_nonzero": ("count_nonzero", lambda x: cp.count_nonzero(a(x)).get()),
               "packbits": ("packbits", lambda x: cp.packbits(a(x)).get())}
        f = fns.get(op, fns.get(kind))
        if f:
            out.append((f"cupy:{f[0]}", f[1]))
    return out


def device_peers(op, cp, torch, cub):
    """(impl, fn(device arrays), is_device_time) of the peers on CuPy arrays."""
    out = []
    kind = op.split("-")[0]
    fns = {"histogram-f64-100": ("histogram", lambda x: cp.histogram(x, 100, (0, 1))[0]),
           "histogram-u8-256": ("bincount", lambda x: cp.bincount(x, minlength=256)),
           "bincount-i64-1000": ("bincount", lambda x: cp.bincount(x, minlength=1000)),
           "sum": ("sum", cp.sum), "dot": ("dot", cp.dot), "cumsum": ("cumsum", cp.cumsum),
           "count_nonzero": ("count_nonzero", cp.count_nonzero), "packbits": ("packbits", cp.packbits)}
    f = fns.get(op, fns.get(kind))
    if f:
        out.append((f"cupy:{f[0]}", f[1], False))
    if torch is not None:
        t = torch.as_tensor
        fns = {"histogram-f64-100": ("histc", lambda x: torch.histc(t(x, device="cuda"), 100, 0, 1)),
               "bincount-i64-1000": ("bincount", lambda x: torch.bincount(t(x, device="cuda"), minlength=1000)),
               "sum": ("sum", lambda x: torch.sum(t(x, device="cuda"))),
               "dot": ("dot", lambda x, y: torch.dot(t(x, device="cuda"), t(y, device="cuda"))),
               "cumsum": ("cumsum", lambda x: torch.cumsum(t(x, device="cuda"), 0)),
               "count_nonzero": ("count_nonzero", lambda x: torch.count_nonzero(t(x, device="cuda")))}
        f = fns.get(op, fns.get(kind))
        if f:
            out.append((f"torch:{f[0]}", f[1], False))
    if cub is not None:
        import ctypes

        def host_scalar(ct):
            return ctypes.byref(ct())
        names = {"histogram-u8-256": "cub_hist_u8", "sum-f32": "cub_sum_f32", "sum-f64": "cub_sum_f64",
                 "sum-i64": "cub_sum_i64", "dot-f32": "cublas_sdot", "dot-f64": "cublas_ddot",
                 "cumsum-i32": "cub_scan_i32_i64"}
        name = names.get(op)
        fn = getattr(cub, name, None) if name else None
        if fn is not None and op == "histogram-u8-256":
            hist = (ctypes.c_longlong * 256)()
            out.append((f"cub:{name}", lambda x: fn(x.data.ptr, x.size, 256, 0, 256, hist, 5), True))
        elif fn is not None and fn.argtypes:
            res = np.zeros(1, np.float64)
            if op.startswith("cumsum"):
                def scan(x, fn=fn):
                    buf = np.empty(x.size, np.int64)
                    return fn(x.data.ptr, None, x.size, buf.ctypes.data, 5)
                out.append((f"cub:{name}", scan, True))
            else:
                out.append((f"cub:{name}", lambda x, y=None, fn=fn: fn(x.data.ptr, y.data.ptr if y is not None
                                                                       else None, x.size, res.ctypes.data, 5), True))
    return out


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, atol=1e-6, equal_nan=True)
    return np.array_equal(a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--max-n", type=float, default=1e9, help="largest size (default 1e9)")
    ap.add_argument("--min-n", type=float, default=1, help="smallest size (default 1): a run of the large sizes alone")
    ap.add_argument("--quick", action="store_true", help="sizes up to 1e6, short budgets (a smoke test)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of " + ", ".join(OPS))
    ap.add_argument("--cap-ms", type=float, default=1200.0,
                    help="skip an impl whose predicted time per call at a size exceeds this")
    ap.add_argument("--places", default="host,device")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    bad = [o for o in ops if o not in OPS]
    if bad:
        ap.error(f"unknown op(s): {', '.join(bad)}")
    max_n = int(min(args.max_n, 1e6) if args.quick else args.max_n)
    sizes = [n for n in half_decades(max_n) if n >= args.min_n]
    if not sizes:
        ap.error(f"no half-decade size in [{args.min_n:g}, {max_n:g}]")
    budget = (lambda n: 0.01 if n < 1e6 else 0.05) if args.quick else (lambda n: 0.03 if n < 1e6 else 0.15)
    os.makedirs(args.out, exist_ok=True)

    fh, bh, ss = optional("fast_histogram"), optional("boost_histogram"), optional("scipy.stats")
    if ss is not None:
        import scipy.stats as ss
    torch = optional("torch")
    cp = optional("cupy")
    has_cuda = gs.cuda_available() if hasattr(gs, "cuda_available") else False
    try:
        has_cuda = has_cuda or (cp is not None and cp.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        has_cuda = False
    if not has_cuda:
        cp = None
    if torch is not None and not torch.cuda.is_available():
        torch_dev = None
    else:
        torch_dev = torch
    cub = None
    if cp is not None:
        try:
            from benchmarks.common import build_peers
            cub = build_peers()
        except Exception as e:  # no nvcc, or it failed: CUB peers skipped
            print(f"  (CUB/cuBLAS peers skipped: {e})", flush=True)
    places = [p for p in args.places.split(",") if p == "host" or (p == "device" and cp is not None)]
    try:
        info = gs.device_info() if has_cuda else None
    except Exception:
        info = None
    if info is None:
        model = "cpu"
        try:
            with open("/proc/cpuinfo") as f:
                model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
        except Exception:
            pass
        info = {"name": f"{model} ({CORES} cores, no GPU)"}
    engines = ["cpu"] + (["cuda"] if has_cuda else [])
    ceiling = host_read_gbps()
    print(f"device {info['name']}; host read ceiling {ceiling:.1f} GB/s ({CORES} threads); "
          f"sizes {sizes[0]}..{sizes[-1]}; places {places}", flush=True)
    print("peers: " + ", ".join(f"{k}={'yes' if v is not None else 'no'}" for k, v in
                              [("fast-histogram", fh), ("boost-histogram", bh), ("scipy", ss), ("torch", torch),
                               ("cupy", cp), ("cub", cub)]), flush=True)

    rows, t_start = [], time.time()
    inputs = Inputs(sizes[-1])
    for op in ops:
        keys, np_fn, gs_fn = SPEC[op]
        if op == "binned_statistic-mean-100":
            np_fn = _np_binstat(ss) if ss is not None else None
        last = {}  # (place, impl) -> (n, ms): predicts the next size
        for n in sizes:
            host = [inputs.get(k, n) for k in keys]
            for place in places:
                sync = None
                if place == "device":
                    # the host rows just before (thread pools of PyTorch, OpenBLAS, gpusync) spin a while
                    # after their last job and take the cores the device calls' Python runs on: let them park
                    time.sleep(QUIET_S)
                    arrs = [cp.asarray(a) for a in host]
                    sync = cp.cuda.Device().synchronize
                    cands = [("gpusync:auto", None, gs_fn, False)]
                    cands += [(i, None, f, dev) for i, f, dev in device_peers(op, cp, torch_dev, cub)]
                else:
                    arrs = host
                    cands = [("gpusync:auto", None, gs_fn, False)]
                    cands += [(f"gpusync:{e}", e, gs_fn, False) for e in engines]
                    if np_fn is not None:
                        cands.append(("numpy", None, np_fn, False))
                    cands += [(i, None, f, False) for i, f in host_peers(op, fh, bh, ss, torch, cp)]
                ref = None
                if n <= 10**6 and np_fn is not None:
                    ref = np_fn(*host)
                case = f"sweep-{op}-{place}-{n}"
                # rounds: every implementation timed once a round, in turn, and its cell the median of its
                # round medians -- a transient (a timer tick, another tenant's burst) that slows one
                # implementation's stretch of calls moves one of its rounds, not the cell.  Only where no
                # idle gap is needed between implementations (host below QUIET_FROM, device), and where calls
                # are short enough for one to matter (a device call of 10^6 elements and up is its kernel's);
                # and host cells from BIG_HOST_FROM, where the host memory's spread between rounds (each
                # implementation after QUIET_S idle) exceeds the implementations' differences
                rounds = (ROUNDS if n < QUIET_FROM or (place == "device" and n < 10**6) else
                          BIG_HOST_ROUNDS if place == "host" and n >= BIG_HOST_FROM else 1)
                live = []
                for cand in cands:
                    prev = last.get((place, cand[0]))
                    if not (prev and prev[1] * n / prev[0] > args.cap_ms):  # else predicted too slow: not the best
                        live.append(cand)
                times, plans = {c[0]: [] for c in live}, {}
                for r in range(rounds):
                    for impl, engine, fn, device_time in live:
                        if impl not in times:
                            continue  # it could not run this case
                        if place == "host" and n >= QUIET_FROM:
                            # the previous implementation's threads (OpenBLAS, PyTorch's OpenMP, boost-histogram,
                            # gpusync's pool and staging crew) spin a while after their last job: let them park,
                            # so that each implementation is timed on an idle machine, as a user calls it
                            time.sleep(QUIET_S)
                        call = (lambda fn=fn: fn(*arrs))
                        try:
                            if engine:
                                with gs.use_backend(engine):
                                    times[impl].append(timed(call, budget(n) / rounds, sync))
                            elif device_time:
                                ms = float(call())
                                if ms < 0:
                                    raise RuntimeError("CUB call failed")
                                times[impl].append(ms)
                            else:
                                times[impl].append(timed(call, budget(n) / rounds, sync))
                        except Exception as e:  # a peer that cannot run this case
                            print(f"  {case:40s} {impl:22s} skipped: {type(e).__name__}: {str(e)[:80]}", flush=True)
                            del times[impl]
                            continue
                        if impl.startswith("gpusync"):
                            plans[impl] = gs.last_plan()
                for impl, engine, fn, device_time in live:
                    if impl not in times:
                        continue
                    ms = median(times[impl])
                    call = (lambda fn=fn: fn(*arrs))
                    got = None
                    if ref is not None and impl.startswith("gpusync") and not device_time:
                        if engine:
                            with gs.use_backend(engine):
                                got = call()
                        else:
                            got = call()
                    plan = plans.get(impl)
                    ok = True
                    if got is not None:
                        got = got.get() if hasattr(got, "get") else got
                        ok = bool(same(got, ref))
                    last[(place, impl)] = (n, ms)
                    row = {"op": "sweep", "case": case, "impl": impl, "ms": round(ms, 5), "n": n, "place": place,
                           "device": info["name"]}
                    if not ok:
                        row["correct"] = False
                    if plan:  # what ran: the engine, and whether a fast path took the call
                        row["engine"] = plan["engine"]
                        fast = [t for t in plan.get("notes", ()) if "fast path" in t]
                        if fast:
                            row["path"] = "fast"
                    rows.append(row)
                if place == "device":
                    del arrs
            if n >= 10**7:
                print(f"  {op} n={n}: {time.time() - t_start:.0f} s", flush=True)
        inputs.drop(keys)
        if cp is not None:
            cp.get_default_memory_pool().free_all_blocks()
        print(f"{op}: done at {time.time() - t_start:.0f} s", flush=True)

    # partial: a run of some places, ops or sizes replaces only the cases it measured (reduce.py --sweep writes
    # sweep-<op>-device-<n> rows of its own; a --places device run had dropped every host row of its GPU)
    data = merge_results(args.out, info, rows, ceilings={"host_read_gbps": round(ceiling, 2)}, partial=True)
    report(args.out, rows, data, ceiling, ops, places, sizes)


def best_peer(rows, case, device_time=False):
    """The fastest peer of a case: by wall time (what a user calls), or among
    the device-time rows (CUB / cuBLAS from benchmarks/cub_helper.cu: kernel
    time alone, no Python, no launch or sync of a call) with device_time."""
    peers = [r for r in rows if r["case"] == case and not r["impl"].startswith("gpusync")
             and r["impl"].startswith("cub:") == device_time]
    return min(peers, key=lambda r: r["ms"]) if peers else None


def report(out, rows, data, ceiling, ops, places, sizes):
    by = {(r["case"], r["impl"]): r["ms"] for r in rows}
    ran = {r["case"]: r.get("engine", "") + (" (fast path)" if r.get("path") == "fast" else "")
           for r in rows if r["impl"] == "gpusync:auto"}
    lines = [f"# Size sweep: {data['device']}, {data['date']}", "",
             "Host read ceiling (parallel NumPy reductions of 1 GiB, all cores: the fastest of a sum, a max and a "
             f"bitwise or): **{ceiling:.1f} GB/s**. "
             f"Wall ms per call (median; below {QUIET_FROM:,} elements on the host and 10^6 on the device, the median of {ROUNDS} interleaved rounds' medians; from {BIG_HOST_FROM:,} on the host, of {BIG_HOST_ROUNDS}). ratio = best peer time / gpusync:auto time (>= 1: gpusync ahead).", ""]
    behind = []
    for place in places:
        for op in ops:
            for n in sizes:
                case = f"sweep-{op}-{place}-{n}"
                auto, peer = by.get((case, "gpusync:auto")), best_peer(rows, case)
                if auto and peer and peer["ms"] / auto < 1.0:
                    behind.append((case, peer["impl"], peer["ms"], auto))
    cub = [(c, p["impl"], p["ms"], by[(c, "gpusync:auto")]) for place in places for op in ops for n in sizes
           for c in [f"sweep-{op}-{place}-{n}"] for p in [best_peer(rows, c, device_time=True)]
           if p and (c, "gpusync:auto") in by]
    lines += [f"Cells where gpusync:auto is behind the best peer: **{len(behind)}** (wall time against wall time; "
              f"CUB / cuBLAS report kernel time alone: gpusync:auto's wall time is within 1.25x of it in "
              f"{sum(1 for _, _, p, a in cub if a <= 1.25 * p)} of {len(cub)} cells, and the kernels' own device "
              "times against CUB are in benchmarks/reduce.py --sweep)", "",
              "| case | best peer | peer ms | gpusync:auto ms | ratio | auto ran |", "|---|---|---:|---:|---:|---|"]
    lines += [f"| {c} | {i} | {p:.4f} | {a:.4f} | {p / a:.2f} | {ran.get(c, '')} |" for c, i, p, a in behind]
    # bandwidth of the CPU engine on the memory-bound ops, largest size
    lines += ["", "## CPU engine vs the host read ceiling (largest size run)", "",
              "| op | n | gpusync:cpu ms | GB/s | % of ceiling |", "|---|---:|---:|---:|---:|"]
    nbytes = {"sum-f32": 4, "sum-f64": 8, "sum-i64": 8, "dot-f32": 8, "dot-f64": 16, "count_nonzero-u8": 1,
              "packbits-u8": 1}
    for op in ops:
        if op not in nbytes:
            continue
        cpu = [r for r in rows if r["impl"] == "gpusync:cpu" and r["case"].startswith(f"sweep-{op}-host-")]
        if cpu:
            r = max(cpu, key=lambda r: r["n"])
            gbps = r["n"] * nbytes[op] / r["ms"] / 1e6
            lines.append(f"| {op} | {r['n']} | {r['ms']:.3f} | {gbps:.1f} | {100 * gbps / ceiling:.0f}% |")
    wrong = [r for r in rows if r.get("correct") is False]
    if wrong:
        lines += ["", "**WRONG results:** " + ", ".join(f"{r['case']} {r['impl']}" for r in wrong)]
    with open(os.path.join(out, "sizes.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    try:
        plots(out, rows, ops, places, sizes)
    except ImportError:
        print("(matplotlib missing: no plots)")


def plots(out, rows, ops, places, sizes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for op in ops:
        fig, axes = plt.subplots(1, len(places), figsize=(7 * len(places), 5), squeeze=False)
        for ax, place in zip(axes[0], places):
            sel = [r for r in rows if r["case"].startswith(f"sweep-{op}-{place}-")]
            for impl in dict.fromkeys(r["impl"] for r in sel):
                pts = sorted((r["n"], r["ms"]) for r in sel if r["impl"] == impl)
                style = "-" if impl.startswith("gpusync") else "--"
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, marker=".", label=impl,
                          lw=2.5 if impl == "gpusync:auto" else 1.2)
            ax.set_title(f"{op}, {place} input")
            ax.set_xlabel("elements")
            ax.set_ylabel("ms per call (wall)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"sizes-{op}.png"), dpi=100)
        plt.close(fig)
    by = {(r["case"], r["impl"]): r["ms"] for r in rows}
    fig, axes = plt.subplots(1, len(places), figsize=(11 * len(places), 6), squeeze=False)
    for ax, place in zip(axes[0], places):
        m = np.full((len(ops), len(sizes)), np.nan)
        for i, op in enumerate(ops):
            for j, n in enumerate(sizes):
                case = f"sweep-{op}-{place}-{n}"
                auto, peer = by.get((case, "gpusync:auto")), best_peer(rows, case)
                if auto and peer:
                    m[i, j] = peer["ms"] / auto
        im = ax.imshow(np.log2(m), cmap="RdYlGn", vmin=-3, vmax=3, aspect="auto")
        for i in range(len(ops)):
            for j in range(len(sizes)):
                if np.isfinite(m[i, j]):
                    ax.text(j, i, f"{m[i, j]:.1f}", ha="center", va="center", fontsize=6)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{n:.0e}" if n >= 1000 else str(n) for n in sizes], rotation=60, fontsize=7)
        ax.set_yticks(range(len(ops)))
        ax.set_yticklabels(ops, fontsize=8)
        ax.set_title(f"best peer / gpusync:auto ({place} input; >1: gpusync ahead)")
        fig.colorbar(im, ax=ax, label="log2 ratio")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sizes-heatmap.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
