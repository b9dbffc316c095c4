"""Histogram benchmark: gpusync's strategies side by side with NumPy, CuPy,
PyTorch and CUB on one GPU, in one run, against the read ceiling measured in
the same run.

    python benchmarks/histogram.py [--out benchmarks/results] [--quick]

Writes <out>/latest.json (rows merged with other benchmarks' rows),
<out>/histogram.md (table), <out>/histogram_speed.png (bar chart: speed
relative to gpusync:auto, like seed 001's figure) and
<out>/histogram_blocks.png (the seed's block-count sweep).

Timing: CUDA events around each call, median of several runs after a warm-up
(METHOD.md).  Small cases are also timed as CUDA-graph replays, which removes
the host's launch overhead and leaves device time.  NumPy is timed on the host
with perf_counter.  Every gpusync result is checked against NumPy's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import (GIB, Timer, build_peers, cuda_start, fresh_read_ceiling, merge_results,  # noqa: E402
                               read_ceiling, speed_plot, table)


def make_text(cp, n, seed=0):
    """Text-like bytes: mostly lowercase letters and spaces (ASCII < 128)."""
    table = np.empty(1000, np.uint8)
    table[:170] = ord(" ")
    table[170:900] = [ord("a") + i % 26 for i in range(730)]
    table[900:960] = [ord("A") + i % 26 for i in range(60)]
    table[960:] = ord(".")
    rs = cp.random.RandomState(seed)
    return cp.asarray(table)[rs.randint(0, 1000, n, dtype=cp.int32)]


def seed_text_host(n=5_700_000):
    rng = np.random.default_rng(0)
    return rng.choice(np.frombuffer(b"  etaoinshrdlucmfwypvbgkqjxz ETAOIN.,", dtype=np.uint8), size=n).astype(np.uint8)


def make_dist(cp, name, n):
    """8-bit inputs of the distribution sweep."""
    rs = cp.random.RandomState(3)
    if name == "uniform":
        return rs.randint(0, 256, n, dtype=cp.uint8)
    if name == "text":
        return make_text(cp, n)
    if name == "same":
        return cp.full(n, ord("e"), cp.uint8)
    if name == "zipf":  # heavy-tailed: value k with probability ~ 1 / k^1.3
        out = cp.empty(n, cp.uint8)
        for i in range(0, n, 1 << 26):
            m = min(n - i, 1 << 26)
            out[i:i + m] = cp.minimum(rs.zipf(1.3, m) - 1, 255).astype(cp.uint8)
        return out
    if name == "runs":  # sorted runs: 4096 equal bytes at a time
        vals = rs.randint(0, 256, n // 4096 + 1, dtype=cp.uint8)
        return cp.repeat(vals, 4096)[:n]
    if name == "alternating":  # 0, 255, 0, 255, ...
        return ((cp.arange(n, dtype=cp.int64) & 1) * 255).astype(cp.uint8)
    raise ValueError(name)


def _measure_row(cp, timer, rows, lines, ceiling, case, op, impl, fn, nbytes, ref=None, graph=False, reps=9,
                 inner=5, strict=False, check=None):
    """Time fn (graph replay or events), check it against ref (NumPy) or with check() when given, and append a
    latest.json row and a markdown line "| case | impl | us | % of read |"; the ms, or None when it failed.  A
    peer that cannot run the case is reported, not fatal; with `strict`, a gpusync failure other than an
    unsupported device is."""
    try:
        ok = None if check is None else bool(check())
        if ref is not None:
            got = fn()
            got = got[0] if isinstance(got, tuple) else got
            ok = bool(np.array_equal(got.cpu().numpy() if hasattr(got, "cpu") else cp.asnumpy(cp.asarray(got)), ref))
        ms = timer.graph(fn, reps=reps, inner=inner) if graph else timer.gpu(fn, reps=reps, inner=inner)
    except Exception as e:
        if strict and impl.startswith("gpusync") and not isinstance(e, gs.UnsupportedDeviceError):
            raise
        print(f"  {case} {impl}: {type(e).__name__}: {e}", flush=True)
        return None
    row = {"op": op, "case": case, "impl": impl, "ms": round(ms, 5), "gbps": round(nbytes / ms / 1e6, 1)}
    if ok is not None:
        row["correct"] = ok
    rows.append(row)
    lines.append(f"| {case} | {impl}{'' if ok is not False else ' **WRONG**'} | {ms * 1e3:.1f} | "
                 f"{100 * nbytes / ms / 1e6 / ceiling:.1f}% |")
    print(lines[-1], flush=True)
    return ms


def extra_cases(cp, timer, rows, ceiling):
    """The issue's named cases beyond 8-bit data: float64 histogram, small-range
    16-bit and 1M-bin int64 bincounts, binned_statistic with 1,000 bins."""
    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    rs = cp.random.RandomState(5)
    out = []

    def one(case, op, impl, fn, nbytes, ref=None, graph=False):
        _measure_row(cp, timer, rows, out, ceiling, case, op, impl, fn, nbytes, ref, graph)

    x = rs.random_sample(1 << 27)  # float64 in [0, 1)
    ref = np.histogram(cp.asnumpy(x), bins=100, range=(0, 1))[0]
    one("f64-100-range-128M", "histogram", "gpusync:auto", lambda: gs.histogram(x, bins=100, range=(0, 1)), x.nbytes,
        ref)
    one("f64-100-range-128M", "histogram", "cupy:histogram", lambda: cp.histogram(x, bins=100, range=(0, 1)),
        x.nbytes)
    if torch is not None:
        t = torch.as_tensor(x, device="cuda")
        one("f64-100-range-128M", "histogram", "torch:histc", lambda: torch.histc(t, bins=100, min=0, max=1),
            x.nbytes)
        t = None
    x = rs.randint(0, 4096, 1 << 28, dtype=cp.uint16)
    ref = cp.bincount(x, minlength=4096).get()
    one("u16-bincount-4096-256M", "bincount", "gpusync:auto", lambda: gs.bincount(x, minlength=4096), x.nbytes, ref)
    one("u16-bincount-4096-256M", "bincount", "gpusync:auto(bins given: histogram)",
        lambda: gs.histogram(x, bins=4096, range=(0, 4096)), x.nbytes, ref)
    with env(GPUSYNC_HIST_SMALL="0"):
        one("u16-bincount-4096-256M", "bincount", "gpusync:auto(bins given: histogram, before: generic shared kernel)",
            lambda: gs.histogram(x, bins=4096, range=(0, 4096)), x.nbytes, ref)
    one("u16-bincount-4096-256M", "bincount", "gpusync:auto(bins given: histogram, graph)",
        lambda: gs.histogram(x, bins=4096, range=(0, 4096)), x.nbytes, ref, graph=True)
    one("u16-bincount-4096-256M", "bincount", "cupy:bincount", lambda: cp.bincount(x, minlength=4096), x.nbytes)
    if torch is not None:
        t = torch.as_tensor(x.astype(cp.int32), device="cuda")  # torch.bincount takes no uint16: an int32 copy
        one("u16-bincount-4096-256M", "bincount", "torch:bincount(int32 copy)",
            lambda: torch.bincount(t, minlength=4096), x.nbytes)
        t = None
    for dt, name in ((cp.int32, "i32"), (cp.int16, "i16")):
        x = rs.randint(0, 4096, 1 << 27, dtype=dt)
        ref = cp.bincount(x.astype(cp.int64), minlength=4096).get()
        case = f"{name}-bincount-4096-128M"
        one(case, "bincount", "gpusync:auto", lambda: gs.bincount(x, minlength=4096), x.nbytes, ref)
        one(case, "bincount", "gpusync:auto(bins given: histogram, graph)",
            lambda: gs.histogram(x, bins=4096, range=(0, 4096)), x.nbytes, ref, graph=True)
        with env(GPUSYNC_HIST_SMALL="0"):
            one(case, "bincount", "gpusync:auto(bins given: histogram, graph, before)",
                lambda: gs.histogram(x, bins=4096, range=(0, 4096)), x.nbytes, ref, graph=True)
    x = rs.randint(0, 1 << 20, 1 << 26, dtype=cp.int64)
    ref = cp.bincount(x, minlength=1 << 20).get()
    one("i64-bincount-1M-64M", "bincount", "gpusync:auto", lambda: gs.bincount(x, minlength=1 << 20), x.nbytes, ref)
    one("i64-bincount-1M-64M", "bincount", "cupy:bincount", lambda: cp.bincount(x, minlength=1 << 20), x.nbytes)
    if torch is not None:
        t = torch.as_tensor(x, device="cuda")
        one("i64-bincount-1M-64M", "bincount", "torch:bincount", lambda: torch.bincount(t, minlength=1 << 20),
            x.nbytes)
        t = None
    if os.environ.get("GS_BENCH_SKIP_BINSTAT"):
        cp.get_default_memory_pool().free_all_blocks()
        return out
    out += binstat_cases(cp, timer, rows, ceiling, torch)
    cp.get_default_memory_pool().free_all_blocks()
    return out


class env:
    """Set environment variables for a block (the core reads its tuning variables at each launch)."""

    def __init__(self, **kv):
        self.kv, self.old = kv, {}

    def __enter__(self):
        for k, v in self.kv.items():
            self.old[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def issue14_sweeps(cp, timer, rows, ceiling):
    """Issue 14: the 8-bit kernel's shapes (GPUSYNC_HIST_U8_CFG) and grid at three sizes, a size sweep
    (10^4 .. 2*10^9 bytes in half-decades, rows sweep-histogram_u8-device-<n>) before/after, and
    packbits of bytes before/after (GPUSYNC_BITS_SIMD=0)."""
    out = ["", "Kernel shapes (GPUSYNC_HIST_U8_CFG; graph replay, % of read): 0 = 512 threads x 4 blocks/SM, "
           "2 loads in flight (pipelined); 1 = 1024 x 2; 2 = 256 x 6; 3 = 512 x 2, 4 loads", "",
           "| size | dist | cfg 0 | cfg 1 | cfg 2 | cfg 3 |", "|---|---|---:|---:|---:|---:|"]
    for n, label in ((32 << 20, "32MiB"), (256 << 20, "256MiB"), (GIB, "1GiB")):
        for dname in ("uniform", "same"):
            x = make_dist(cp, dname, n)
            cells = []
            for cfg in "0123":
                with env(GPUSYNC_HIST_U8_CFG=cfg, GPUSYNC_HIST_SMALL="2"):
                    ms = timer.graph(lambda: gs.histogram(x, bins=256, range=(0, 256))[0], reps=7, inner=5)
                cells.append(f"{100 * n / ms / 1e6 / ceiling:.1f}%")
                rows.append({"op": "histogram", "case": f"u8-256-{dname}-{label}", "impl": f"gpusync:u8 kernel(cfg {cfg})",
                             "ms": round(ms, 5), "gbps": round(n / ms / 1e6, 1)})
            out.append(f"| {label} | {dname} | " + " | ".join(cells) + " |")
            print(out[-1], flush=True)
            x = None
    x = make_dist(cp, "uniform", 32 << 20)
    cells = []
    for g in (66, 132, 264, 396, 528):
        with env(GPUSYNC_HIST_GRID=str(g), GPUSYNC_HIST_SMALL="2"):
            ms = timer.graph(lambda: gs.histogram(x, bins=256, range=(0, 256))[0], reps=7, inner=5)
        cells.append(f"{g}: {ms * 1e3:.1f} us ({100 * x.size / ms / 1e6 / ceiling:.1f}%)")
    with env(GPUSYNC_HIST_SMALL="2"):
        ms = timer.graph(lambda: gs.histogram(x, bins=256, range=(0, 256))[0], reps=7, inner=5)
    cells.append(f"grid from the work and occupancy: {ms * 1e3:.1f} us")
    out += ["", "Grid at 32 MiB uniform (GPUSYNC_HIST_GRID, cfg 0): " + ", ".join(cells)]
    print(out[-1], flush=True)
    x = None
    cp.get_default_memory_pool().free_all_blocks()

    out += ["", "Size sweep, uint8 256 bins (graph replay; % of the 1 GiB read ceiling): the 8-bit kernel of "
            "hist_small.cu (GPUSYNC_HIST_SMALL=2) / the generic shared kernel (=0); auto takes the first up to "
            "3 MiB, the second above", "",
            "| n | uniform u8 kernel | uniform generic | same u8 kernel | same generic |", "|---:|---:|---:|---:|---:|"]
    sizes = sorted({int(round(10 ** (k / 2))) for k in range(8, 19)} | {2 * 10**9})
    for n in sizes:
        cells = []
        for dname in ("uniform", "same"):
            x = make_dist(cp, dname, n)
            if dname == "same":  # (cp.bincount of one value: n same-address atomics, seconds at 2e9)
                ref = np.zeros(256, np.int64)
                ref[ord("e")] = n
            else:
                ref = cp.bincount(x, minlength=256).get()
            inner = int(max(1, min(50, 2e8 / n)))
            for tag, kv in (("u8 kernel", {"GPUSYNC_HIST_SMALL": "2"}), ("generic shared kernel",
                                                                         {"GPUSYNC_HIST_SMALL": "0"})):
                with env(**kv):
                    fn = lambda: gs.histogram(x, bins=256, range=(0, 256))[0]  # noqa: E731
                    ok = bool(np.array_equal(cp.asnumpy(fn()), ref))
                    ms = timer.graph(fn, reps=7 if n < 10**9 else 5, inner=inner)
                rows.append({"op": "sweep", "case": f"sweep-histogram_u8_{dname}-device-{n}",
                             "impl": f"gpusync:{tag}(graph)", "ms": round(ms, 5), "gbps": round(n / ms / 1e6, 1),
                             "correct": ok, "n": n, "dtype": "u8"})
                cells.append(f"{ms * 1e3:.1f} us {100 * n / ms / 1e6 / ceiling:.1f}%{'' if ok else ' **WRONG**'}")
            x = None
            cp.get_default_memory_pool().free_all_blocks()
        out.append(f"| {n} | " + " | ".join(cells) + " |")
        print(out[-1], flush=True)

    return out + bits_table(cp, timer, rows, ceiling)


def bits_table(cp, timer, rows, ceiling):
    """packbits (issue 14: >= 90% of read) and count_nonzero (~100%) of bytes, and count_nonzero of
    float32: the default against 4 loads in flight (GPUSYNC_BITS_LOADS=4) and, for bytes, the per-element
    predicates (GPUSYNC_BITS_SIMD=0), graph replay, % of read."""
    variants = (("", {}), ("(4 loads)", {"GPUSYNC_BITS_LOADS": "4"}), ("(before: per element)",
                                                                       {"GPUSYNC_BITS_SIMD": "0"}))
    from benchmarks.common import pack_ceiling

    out = ["", "packbits / count_nonzero (graph replay, % of read; '4 loads': GPUSYNC_BITS_LOADS=4, 4 loads in "
           "flight per thread instead of 2; 'per element': GPUSYNC_BITS_SIMD=0).  'pack roof': a kernel with "
           "packbits' traffic and no work (16 bytes read, 2 written a thread, graph replay), % of read; "
           "'of roof': packbits' time against it:", "",
           "| case | " + " | ".join(f"{t or 'auto'} us | %" for t, _ in variants) + " | pack roof % | of roof | check |",
           "|---|" + "---:|---:|" * len(variants) + "---:|---:|---|"]
    rs = cp.random.RandomState(9)
    for n, label in ((32 << 20, "32MiB"), (256 << 20, "256MiB"), (GIB, "1GiB")):
        u8 = rs.randint(0, 4, n, dtype=cp.uint8) * (rs.randint(0, 2, n, dtype=cp.uint8))
        roof = pack_ceiling(cp, timer, u8, graph=True)
        rows.append({"op": "packbits", "case": f"packbits-u8-graph-{label}", "impl": "roof:read16-write2(graph)",
                     "ms": round(u8.nbytes / roof / 1e6, 5), "gbps": round(roof, 1)})
        f32 = None if n > (256 << 20) else (u8[: n // 4].astype(cp.float32) - 1.5)
        cases = [(f"packbits-u8-graph-{label}", "packbits", u8, lambda: gs.packbits(u8), lambda: cp.packbits(u8)),
                 (f"packbits-u8-threshold-graph-{label}", "packbits", u8, lambda: gs.packbits(u8, threshold=1),
                  lambda: cp.packbits(u8 > 1)),
                 (f"count_nonzero-u8-graph-{label}", "count_nonzero", u8, lambda: gs.count_nonzero(u8),
                  lambda: cp.count_nonzero(u8))]
        if f32 is not None:
            cases.append((f"count_nonzero-f32-graph-{label}", "count_nonzero", f32, lambda: gs.count_nonzero(f32),
                          lambda: cp.count_nonzero(f32)))
        for case, op, x, fn, reff in cases:
            ref = cp.asnumpy(reff())
            res = []
            for tag, kv in variants:
                if "SIMD" in str(kv) and x.dtype != cp.uint8:
                    continue
                with env(**kv):
                    ok = bool(np.array_equal(cp.asnumpy(fn()), ref))
                    ms = timer.graph(fn, reps=7, inner=5)
                rows.append({"op": op, "case": case, "impl": f"gpusync{tag}(graph)", "ms": round(ms, 5),
                             "gbps": round(x.nbytes / ms / 1e6, 1), "correct": ok})
                res.append((ms, ok))
            pack = op == "packbits"
            out.append(f"| {case} | " + " | ".join(f"{m * 1e3:.1f} | {100 * x.nbytes / m / 1e6 / ceiling:.1f}%"
                                                  for m, _ in res)
                       + " | -" * (len(variants) - len(res)) * 2
                       + (f" | {100 * roof / ceiling:.1f}% | {100 * x.nbytes / res[0][0] / 1e6 / roof:.1f}%" if pack
                          else " | - | -")
                       + f" | {'ok' if all(k for _, k in res) else '**WRONG**'} |")
            print(out[-1], flush=True)
        u8 = f32 = None
        cp.get_default_memory_pool().free_all_blocks()
    return out


def bits_only(args):
    """--bits: only bits_table; writes <out>/bits_<GPU>.md and its rows into latest.json."""
    import cupy as cp

    from benchmarks.common import short_device

    info, timer = cuda_start(cp)
    dev = short_device(info["name"])
    ceiling = fresh_read_ceiling(cp, timer, info)
    rows = []
    lines = bits_table(cp, timer, rows, ceiling)
    data = merge_results(args.out, info, rows, {f"read_gbps_{dev}": round(ceiling, 1)}, partial=True)
    with open(os.path.join(args.out, f"bits_{dev}.md"), "w") as fh:
        fh.write(f"# packbits and count_nonzero: {info['name']}, {data['date']} (read ceiling {ceiling:.0f} GB/s, "
                 "1 GiB, 16-byte loads, same run)\n" + "\n".join(lines) + "\n")
    if any(r.get("correct") is False for r in rows):
        print("WRONG results")
        sys.exit(1)


def binstat_cases(cp, timer, rows, ceiling, torch=None):
    """binned_statistic on 32M float64 (and float32) points: every statistic
    at 1,000 bins and mean/std at 4,096, gpusync's auto (the lock-free
    privatized strategy) against the seed's mutex strategy ("shared") and a
    PyTorch recipe.  Bytes: x and values once (the bin numbers gpusync also
    writes, 8 bytes a point, and the min/max pass over x for the edges are
    not counted); the roof rows time a kernel with that traffic and no work
    (benchmarks.common.binstat_roof)."""
    rs = cp.random.RandomState(7)
    out = []

    def one(case, impl, fn, nbytes, check=None):
        ms = _measure_row(cp, timer, rows, out, ceiling, case, "binned_statistic", impl, fn, nbytes, reps=7,
                          inner=3, check=check)
        if ms is not None:
            rows[-1]["pct_read"] = round(100 * nbytes / ms / 1e6 / ceiling, 1)

    from benchmarks.common import binstat_roof

    for dt, sfx in ((cp.float64, ""), (cp.float32, "-f32")):
        x = rs.standard_normal(1 << 25).astype(dt)
        v = (rs.standard_normal(1 << 25) * 3 + 1).astype(dt)
        nbytes = x.nbytes + v.nbytes
        # the traffic's own roof: x and v read, the int64 bin number written, no work (count: x alone read)
        for stat, rv in (("mean", True), ("count", False)):
            ms = binstat_roof(cp, timer, x, v, rv)
            case = f"binstat-{stat}-1000-32M{sfx}"
            rows.append({"op": "binned_statistic", "case": case, "impl": "roof:read-write-binnumber", "ms": round(ms, 5),
                         "gbps": round(nbytes / ms / 1e6, 1), "pct_read": round(100 * nbytes / ms / 1e6 / ceiling, 1)})
            out.append(f"| {case} | roof: {'x, v' if rv else 'x'} read, int64 bin number written, no work | "
                       f"{ms * 1e3:.1f} | {100 * nbytes / ms / 1e6 / ceiling:.1f}% |")
            print(out[-1], flush=True)
        for nb, stats in ((1000, ("mean", "std", "count", "sum", "min", "max")), (4096, ("mean", "std"))):
            for stat in stats:
                case = f"binstat-{stat}-{nb}-32M{sfx}"
                mutex = "shared" if nb <= 2048 else "global"  # ('shared' keeps at most 2048 bins a block)
                ref = gs.binned_statistic(x, v, stat, bins=nb, strategy=mutex).statistic

                def check(stat=stat, nb=nb, ref=ref):
                    got = gs.binned_statistic(x, v, stat, bins=nb).statistic
                    if stat in ("count", "min", "max"):
                        return cp.array_equal(got, ref, equal_nan=True)
                    return cp.allclose(got, ref, rtol=1e-9, atol=1e-9, equal_nan=True)

                one(case, "gpusync:auto", lambda stat=stat, nb=nb: gs.binned_statistic(x, v, stat, bins=nb), nbytes,
                    check)
                one(case, f"gpusync:{mutex}(mutex)",
                    lambda stat=stat, nb=nb, mutex=mutex: gs.binned_statistic(x, v, stat, bins=nb, strategy=mutex),
                    nbytes)
                one(case, "gpusync:auto(range given)",
                    lambda stat=stat, nb=nb: gs.binned_statistic(x, v, stat, bins=nb, range=(-6, 6)), nbytes)
                for w, label in (("1", "guess window"), ("0", "no guess window")):  # the device rule's A/B
                    with env(GPUSYNC_BINSTAT_WINDOW=w):
                        one(case, f"gpusync:auto(range given, {label})",
                            lambda stat=stat, nb=nb: gs.binned_statistic(x, v, stat, bins=nb, range=(-6, 6)), nbytes)
        if torch is not None and sfx == "":
            tx, tv = torch.as_tensor(x, device="cuda"), torch.as_tensor(v, device="cuda")
            for stat in ("mean", "std"):
                def torch_binstat(stat=stat):  # bucketize + index_add_ (what a PyTorch user writes)
                    lo, hi = tx.min(), tx.max()
                    b = ((tx - lo) / (hi - lo) * 1000).long().clamp_(0, 999)
                    cnt = torch.zeros(1000, device="cuda", dtype=torch.float64).index_add_(0, b, torch.ones_like(tv))
                    s1 = torch.zeros(1000, device="cuda", dtype=torch.float64).index_add_(0, b, tv)
                    mean = s1 / cnt
                    if stat == "mean":
                        return mean
                    d = tv - mean[b]
                    return torch.sqrt(torch.zeros(1000, device="cuda", dtype=torch.float64).index_add_(0, b, d * d)
                                      / cnt)

                one(f"binstat-{stat}-1000-32M", "torch:index_add_", torch_binstat, nbytes)
            del tx, tv
        del x, v
    return out


def binstat_only(args):
    """--binstat: only the binned_statistic rows (they replace the same cases in latest.json)."""
    import cupy as cp

    from benchmarks.common import short_device

    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    gs.use_backend("cuda")
    info = gs.device_info()
    timer = Timer(cp)
    buf = cp.random.randint(0, 256, GIB, dtype=cp.uint8)
    ceiling = read_ceiling(cp, timer, buf)
    del buf
    print(f"device {info['name']}  read ceiling {ceiling:.0f} GB/s", flush=True)
    rows = []
    lines = binstat_cases(cp, timer, rows, ceiling, torch)
    merge_results(args.out, info, rows, ceilings={"read_gbps": round(ceiling, 1)}, partial=True)
    dev = short_device(info["name"])
    with open(os.path.join(args.out, f"binstat_{dev}.md"), "w") as f:
        f.write(f"# binned_statistic on {info['name']} (read ceiling {ceiling:.0f} GB/s)\n\n"
                "| case | impl | us | % of read |\n|---|---|---|---|\n" + "\n".join(lines) + "\n")


def dist_sweep(args):
    """uint8, 256 bins: every distribution at 32 MiB, 256 MiB and 1 GiB, against CUB and the read ceiling."""
    import cupy as cp

    from benchmarks.common import short_device

    info, timer = cuda_start(cp)
    dev = short_device(info["name"])
    cub = build_peers()
    ceiling = fresh_read_ceiling(cp, timer, info)
    rows, lines = [], []
    sizes = [(32 << 20, "32MiB"), (256 << 20, "256MiB"), (GIB, "1GiB")]
    for dname in ("uniform", "text", "same", "zipf", "runs", "alternating"):
        for n, label in sizes:
            x = make_dist(cp, dname, n)
            ref = cp.bincount(x, minlength=256).get()
            case = f"u8-256-{dname}-{label}"
            res = {}
            for impl, fn in (("gpusync:auto", lambda: gs.histogram(x, bins=256, range=(0, 256))[0]),
                             ("gpusync:bincount", lambda: gs.bincount(x, minlength=256))):
                ok = bool(np.array_equal(cp.asnumpy(fn()), ref))
                if impl == "gpusync:auto":  # device time: a CUDA graph of 5 calls, replayed
                    ms = timer.graph(fn, reps=9, inner=5)
                else:  # bincount finds the largest value first (a host sync): not capturable
                    impl += "(events)"
                    ms = timer.gpu(fn, reps=9, inner=5)
                res[impl.replace("(events)", "")] = ms
                rows.append({"op": "histogram", "case": case, "impl": impl, "ms": round(ms, 5),
                             "gbps": round(n / ms / 1e6, 1), "correct": ok})
            # the 8-bit kernel of hist_small.cu at every size (auto: only up to 3 MiB), same graph replay
            with env(GPUSYNC_HIST_SMALL="2"):
                fb = lambda: gs.histogram(x, bins=256, range=(0, 256))[0]  # noqa: E731
                okb = bool(np.array_equal(cp.asnumpy(fb()), ref))
                bms = timer.graph(fb, reps=9, inner=5)
            rows.append({"op": "histogram", "case": case, "impl": "gpusync:u8 kernel(GPUSYNC_HIST_SMALL=2)",
                         "ms": round(bms, 5), "gbps": round(n / bms / 1e6, 1), "correct": okb})
            ms = timer.gpu(lambda: gs.histogram(x, bins=256, range=(0, 256))[0], reps=9, inner=5)
            rows.append({"op": "histogram", "case": case, "impl": "gpusync:auto(events)",
                         "ms": round(ms, 5), "gbps": round(n / ms / 1e6, 1)})
            hout = np.zeros(256, np.int64)
            cms = cub.cub_hist_u8(x.data.ptr, n, 256, 0, 256, hout.ctypes.data, 9)
            if cms > 0:
                rows.append({"op": "histogram", "case": case, "impl": "cub", "ms": round(cms, 5),
                             "gbps": round(n / cms / 1e6, 1)})
            a = res["gpusync:auto"]
            line = (f"| {case} | {a * 1e3:.1f} | {100 * n / a / 1e6 / ceiling:.1f}% | {100 * n / bms / 1e6 / ceiling:.1f}% | "
                    f"{100 * n / res['gpusync:bincount'] / 1e6 / ceiling:.1f}% | {100 * n / ms / 1e6 / ceiling:.1f}% | "
                    f"{100 * n / cms / 1e6 / ceiling:.1f}% | {cms / a:.2f}x | "
                    f"{'ok' if all(r.get('correct', True) for r in rows[-5:]) else '**WRONG**'} |")
            lines.append(line)
            print(line, flush=True)
            x = None
            cp.get_default_memory_pool().free_all_blocks()
    try:  # a run cut short (SIGINT) still writes what it measured
        if args.sweeps:
            lines += issue14_sweeps(cp, timer, rows, ceiling)
        lines += ["", "Other cases (CUDA events around 5 back-to-back calls, median of 9; % of read):", "",
                  "| case | impl | us | % of read |", "|---|---|---:|---:|"]
        lines += extra_cases(cp, timer, rows, ceiling)
    except KeyboardInterrupt:
        lines += ["", "(interrupted)"]
    data = merge_results(args.out, info, rows, {f"read_gbps_{dev}": round(ceiling, 1)}, partial=True)
    text = [f"# uint8 histogram, 256 bins, by distribution: {info['name']}, {data['date']}", "",
            "gpusync: CUDA-graph replay of 5 calls (device time), median of 9; 'auto, events': events around 5 "
            "back-to-back Python calls (host dispatch included); CUB: events around one call; 'u8 kernel': the 8-bit "
            "kernel of hist_small.cu at this size (GPUSYNC_HIST_SMALL=2), graph replay, same run.  Read ceiling "
            f"**{ceiling:.0f} GB/s** (1 GiB, 16-byte loads, same run).", "",
            "| case | auto us | auto % of read | u8 kernel % of read | bincount % of read | auto, events % | CUB % | "
            "CUB time / auto time | check |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"] + lines
    with open(os.path.join(args.out, f"histogram_dist_{dev}.md"), "w") as fh:
        fh.write("\n".join(text) + "\n")
    if any(r.get("correct") is False for r in rows):
        print("WRONG results")
        sys.exit(1)



def _gpu_session(peers=True):
    """What every device-only mode starts with: CuPy, PyTorch (None when absent), the device facts and
    timer, the short device name, the CUB peers (None without `peers`: no build) and a fresh read ceiling."""
    import cupy as cp

    from benchmarks.common import short_device

    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    info, timer = cuda_start(cp)
    return (cp, torch, info, timer, short_device(info["name"]), build_peers() if peers else None,
            fresh_read_ceiling(cp, timer, info))

def float_sweep(args):
    """float32 / float64 on equal-width bins (issue 14: >= 90% of read and faster than CUB): several sizes,
    bin counts and distributions; the kernel's launch shapes (GPUSYNC_HIST_REAL_CFG) and the generic shared
    kernel it replaced (GPUSYNC_HIST_SMALL=0) in the same run; writes <out>/histogram_float_<GPU>.md."""
    cp, torch, info, timer, dev, cub, ceiling = _gpu_session()
    rs = cp.random.RandomState(11)
    rows, lines = [], []
    shapes = {0: "512x2, 4 loads", 1: "512x3, 3 loads", 2: "512x2, 4 loads, no FMA"}
    cases = []
    for n, label in (((1 << 25), "32M"), ((1 << 28), "256M"), (200_000_003, "200M")):
        cases.append((f"f32-100-range-{label}", lambda n=n: rs.random_sample(n, dtype=cp.float32), 100, (0.0, 1.0)))
    cases.append(("f32-1000-normal-256M", lambda: rs.standard_normal(1 << 28, dtype=cp.float32), 1000, (-4.0, 4.0)))
    cases.append(("f32-10-normal-256M", lambda: rs.standard_normal(1 << 28, dtype=cp.float32), 10, (-1.0, 1.0)))
    # past the shared edge table (GS_HIST_SMEM_EDGES - 1 = 512 bins): bin counts and sizes not tuned for
    cases.append(("f32-4096-range-128M", lambda: rs.random_sample(1 << 27, dtype=cp.float32), 4096, (0.0, 1.0)))
    cases.append(("f64-2000-normal-64M", lambda: rs.standard_normal(64_000_001), 2000, (-4.0, 4.0)))
    cases.append(("f64-100-range-128M", lambda: rs.random_sample(1 << 27), 100, (0.0, 1.0)))
    cases.append(("f64-500-normal-100M", lambda: rs.standard_normal(100_000_007), 500, (-3.0, 3.0)))
    for case, make, bins, rng in cases:
        x = make()
        nbytes = x.nbytes
        ref = np.histogram(cp.asnumpy(x), bins=bins, range=rng)[0]
        res = {}

        def one(impl, fn, graph=True, envs=None):
            with env(**(envs or {})):
                got = fn()
                ok = bool(np.array_equal(cp.asnumpy(got[0]), ref))
                ms = timer.graph(fn, reps=9, inner=5) if graph else timer.gpu(fn, reps=9, inner=5)
            rows.append({"op": "histogram", "case": case, "impl": impl, "ms": round(ms, 5),
                         "gbps": round(nbytes / ms / 1e6, 1), "correct": ok})
            res[impl] = (ms, ok)

        call = lambda: gs.histogram(x, bins=bins, range=rng)  # noqa: E731
        one("gpusync:auto", call)
        for c in shapes:
            one(f"gpusync:shape {c}", call, envs={"GPUSYNC_HIST_REAL_CFG": str(c)})
        one("gpusync:before (generic shared kernel)", call, envs={"GPUSYNC_HIST_SMALL": "0"})
        one("gpusync:auto(events)", call, graph=False)
        hout = np.zeros(bins, np.int64)
        cfn = cub.cub_hist_f32 if x.dtype == cp.float32 else cub.cub_hist_f64
        cms = cfn(x.data.ptr, x.size, bins, rng[0], rng[1], hout.ctypes.data, 9)
        if cms > 0:
            rows.append({"op": "histogram", "case": case, "impl": "cub", "ms": round(cms, 5),
                         "gbps": round(nbytes / cms / 1e6, 1)})
        pms = {}
        for impl, fn in (("cupy:histogram", lambda: cp.histogram(x, bins=bins, range=rng)),
                         ("torch:histc", (lambda t=torch.as_tensor(x, device="cuda"):
                                          torch.histc(t, bins=bins, min=rng[0], max=rng[1])) if torch else None)):
            if fn is None:
                continue
            ms = timer.gpu(fn, reps=5, inner=3)
            pms[impl] = ms
            rows.append({"op": "histogram", "case": case, "impl": impl, "ms": round(ms, 5),
                         "gbps": round(nbytes / ms / 1e6, 1)})
        pct = lambda ms: f"{100 * nbytes / ms / 1e6 / ceiling:.1f}%"  # noqa: E731
        a = res["gpusync:auto"][0]
        line = (f"| {case} | {a * 1e3:.1f} | {pct(a)} | "
                + " | ".join(pct(res[f'gpusync:shape {c}'][0]) for c in shapes)
                + f" | {pct(res['gpusync:before (generic shared kernel)'][0])} | {pct(res['gpusync:auto(events)'][0])}"
                + f" | {pct(cms) if cms > 0 else '-'} | {(cms / a if cms > 0 else float('nan')):.2f}x"
                + f" | {pct(pms['cupy:histogram'])} | {pct(pms['torch:histc']) if 'torch:histc' in pms else '-'}"
                + f" | {'ok' if all(v[1] for v in res.values()) else '**WRONG**'} |")
        lines.append(line)
        print(line, flush=True)
        x = None
        cp.get_default_memory_pool().free_all_blocks()
    data = merge_results(args.out, info, rows, {f"read_gbps_{dev}": round(ceiling, 1)}, partial=True)
    head = " | ".join(f"shape {c} ({shapes[c]})" for c in shapes)
    text = [f"# float histograms on equal-width bins: {info['name']}, {data['date']}", "",
            "gpusync: CUDA-graph replay of 5 calls (device time), median of 9, % of the read ceiling "
            f"(**{ceiling:.0f} GB/s**, 1 GiB, 16-byte loads, same run); 'before': the generic shared kernel "
            "(GPUSYNC_HIST_SMALL=0); 'events': events around 5 back-to-back Python calls; CUB "
            "(DeviceHistogram::HistogramEven): events around one call; CuPy and torch.histc: events.", "",
            f"| case | auto us | auto % | {head} | before % | auto, events % | CUB % | CUB time / auto time | "
            "CuPy % | torch.histc % | check |",
            "|---|---:|---:|" + "---:|" * len(shapes) + "---:|---:|---:|---:|---:|---:|---|"] + lines
    with open(os.path.join(args.out, f"histogram_float_{dev}.md"), "w") as fh:
        fh.write("\n".join(text) + "\n")
    if any(r.get("correct") is False for r in rows):
        print("WRONG results")
        sys.exit(1)


def many_bins_sweep(args):
    """Histograms of 65,536 bins and more (issue 14: >= 2x the best of CUB and torch.bincount) and
    16-bit bincounts (issue 14: at histogram speed): the 16-bit shared halves
    (strategy shared / auto) against the cluster and global strategies, CUB, torch and CuPy in the
    same run; writes <out>/histogram_manybins_<GPU>.md."""
    cp, torch, info, timer, dev, cub, ceiling = _gpu_session()
    rs = cp.random.RandomState(13)
    rows, lines = [], []
    n16, n32 = (1 << 24, 1 << 23) if args.quick else (1 << 28, 1 << 27)

    def one(case, impl, fn, nbytes, ref=None, graph=False):
        return _measure_row(cp, timer, rows, lines, ceiling, case, "bincount" if "bincount" in case else "histogram",
                            impl, fn, nbytes, ref, graph, reps=7, inner=3, strict=True)

    def peers_bincount(case, x, minlength):
        one(case, "cupy:bincount", lambda: cp.bincount(x, minlength=minlength), x.nbytes)
        if torch is not None:
            t = torch.as_tensor(x if x.dtype != cp.uint16 else x.astype(cp.int32), device="cuda")
            one(case, "torch:bincount" + (" (int32 copy)" if x.dtype == cp.uint16 else ""),
                lambda: torch.bincount(t, minlength=minlength), x.nbytes)

    # 16-bit bincounts: one count of the values 0 .. 4095 that also finds the largest value (NumPy's length),
    # and where that is 4,096 or more a count of max + 1 bins after it
    for top, dt, name in ((4096, cp.uint16, "u16"), (65536, cp.uint16, "u16"), (4096, cp.int16, "i16")):
        x = rs.randint(0, top, n16, dtype=dt)
        ref = cp.bincount(x, minlength=top).get()
        case = f"{name}-bincount-{top}-{n16 >> 20}M"
        one(case, "gpusync:bincount", lambda: gs.bincount(x, minlength=top), x.nbytes, ref)
        one(case, "gpusync:bincount (no minlength)", lambda: gs.bincount(x), x.nbytes)
        if top <= 32768:
            one(case, "gpusync:histogram (bins given, graph)", lambda: gs.histogram(x, bins=top, range=(0, top)),
                x.nbytes, ref, graph=True)
        peers_bincount(case, x, top)
        x = None
    # int64 values on 1M .. 16M bins (hist_global.cu): the partition into digits counted in shared memory;
    # without it, global atomics into 32-bit counters in passes whose counters fit half the L2 where the int64
    # counts would not, and one pass into the int64 counts; uniform values, the same sorted (the sampler's one
    # pass), and skewed (nb * u^4: a third of the values in the lowest 1/64 of the bins)
    n64 = 1 << 22 if args.quick else 1 << 26
    for nb in (1 << 20, 1 << 22, 1 << 24):
        for dist in ("uniform", "sorted", "skewed"):
            if dist == "skewed":
                x = (rs.random_sample(n64) ** 4 * nb).astype(cp.int64)
            else:
                x = rs.randint(0, nb, n64, dtype=cp.int64)
            if dist == "sorted":
                x = cp.sort(x)
            ref = cp.bincount(x, minlength=nb).get()
            case = f"i64-bincount-{nb >> 20}M-{dist}-{n64 >> 20}M"
            one(case, "gpusync:bincount", lambda: gs.bincount(x, minlength=nb), x.nbytes, ref)
            if case == "i64-bincount-1M-uniform-64M":  # (the main run's case, same data)
                one("i64-bincount-1M-64M", "gpusync:auto", lambda: gs.bincount(x, minlength=nb), x.nbytes, ref)
                peers_bincount("i64-bincount-1M-64M", x, nb)
            one(case, "gpusync:histogram (bins given, graph)", lambda: gs.histogram(x, bins=nb, range=(0, nb)),
                x.nbytes, ref, graph=True)
            with env(GPUSYNC_HIST_PART="0"):
                one(case, "gpusync:histogram (bins given, graph, no partition)",
                    lambda: gs.histogram(x, bins=nb, range=(0, nb)), x.nbytes, ref, graph=True)
                with env(GPUSYNC_HIST_GLOBAL_L2="0"):
                    one(case, "gpusync:histogram (bins given, graph, int64 counters)",
                        lambda: gs.histogram(x, bins=nb, range=(0, nb)), x.nbytes, ref, graph=True)
            peers_bincount(case, x, nb)
            if dist == "uniform" and nb == 1 << 24:  # weighted: passes over ranges of the float64 sums
                w = rs.random_sample(n64)
                wref = cp.bincount(x, w, minlength=nb).get()
                wcase = f"i64-bincount-weighted-{nb >> 20}M-{dist}-{n64 >> 20}M"
                for impl, l2 in (("gpusync:bincount", "1"), ("gpusync:bincount (one pass)", "0")):
                    with env(GPUSYNC_HIST_GLOBAL_L2=l2):
                        _measure_row(cp, timer, rows, lines, ceiling, wcase, "bincount", impl,
                                     lambda: gs.bincount(x, w, minlength=nb), x.nbytes + w.nbytes, reps=7, inner=3,
                                     strict=True, check=lambda: np.allclose(
                                         cp.asnumpy(gs.bincount(x, w, minlength=nb)), wref, rtol=1e-9, atol=1e-9))
                if torch is not None:
                    t, tw = torch.as_tensor(x, device="cuda"), torch.as_tensor(w, device="cuda")
                    one(wcase, "torch:bincount", lambda: torch.bincount(t, tw, minlength=nb), x.nbytes + w.nbytes)
                    t = tw = None
                w = wref = None
            x = ref = None
            cp.get_default_memory_pool().free_all_blocks()
    # 32-bit values on 65,536 bins: every strategy, and the one-value case (every add to one word)
    for dist in ("uniform", "same"):
        x = rs.randint(0, 65536, n32, dtype=cp.int32) if dist == "uniform" else cp.full(n32, 12345, cp.int32)
        ref = cp.bincount(x, minlength=65536).get()
        case = f"i32-65536-{dist}-{n32 >> 20}M"
        for s in ("auto", "shared", "cluster", "global"):
            one(case, f"gpusync:{s} (graph)", lambda s=s: gs.histogram(x, bins=65536, range=(0, 65536), strategy=s),
                x.nbytes, ref, graph=True)
        one(case, "gpusync:bincount", lambda: gs.bincount(x, minlength=65536), x.nbytes, ref)
        hout = np.zeros(65536, np.int64)
        cms = cub.cub_hist_i32(x.data.ptr, x.size, 65536, 0, 65536, hout.ctypes.data, 7)
        if cms > 0:
            rows.append({"op": "histogram", "case": case, "impl": "cub", "ms": round(cms, 5),
                         "gbps": round(x.nbytes / cms / 1e6, 1)})
            lines.append(f"| {case} | cub{'' if np.array_equal(hout, ref) else ' **WRONG**'} | {cms * 1e3:.1f} | "
                         f"{100 * x.nbytes / cms / 1e6 / ceiling:.1f}% |")
            print(lines[-1], flush=True)
        peers_bincount(case, x, 65536)
        x = None
    # float32 on 65,536 and 100,000 equal-width bins
    for bins in (65536, 100_000):
        x = rs.random_sample(n32, dtype=cp.float32)
        ref = np.histogram(cp.asnumpy(x), bins=bins, range=(0, 1))[0]
        case = f"f32-{bins}-range-{n32 >> 20}M"
        for s in ("auto", "cluster", "global"):
            one(case, f"gpusync:{s} (graph)", lambda s=s: gs.histogram(x, bins=bins, range=(0, 1), strategy=s),
                x.nbytes, ref, graph=True)
        hout = np.zeros(bins, np.int64)
        cms = cub.cub_hist_f32(x.data.ptr, x.size, bins, 0.0, 1.0, hout.ctypes.data, 7)
        if cms > 0:
            rows.append({"op": "histogram", "case": case, "impl": "cub", "ms": round(cms, 5),
                         "gbps": round(x.nbytes / cms / 1e6, 1)})
            lines.append(f"| {case} | cub | {cms * 1e3:.1f} | {100 * x.nbytes / cms / 1e6 / ceiling:.1f}% |")
            print(lines[-1], flush=True)
        if torch is not None:
            t = torch.as_tensor(x, device="cuda")
            one(case, "torch:histc", lambda: torch.histc(t, bins=bins, min=0, max=1), x.nbytes)
            t = None
        one(case, "cupy:histogram", lambda: cp.histogram(x, bins=bins, range=(0, 1)), x.nbytes)
        x = None
        cp.get_default_memory_pool().free_all_blocks()
    _finish_sweep(args, info, dev, ceiling, rows, lines, "histogram_manybins",
                  "histograms of 65,536+ bins and 16-bit bincounts",
                  "gpusync '(graph)': CUDA-graph replay of 3 calls (device time), median of 7; other gpusync rows and "
                  "the peers: CUDA events around 3 back-to-back calls (host work and, for bincount, its one wait "
                  "included); CUB: events around one call.")


def _finish_sweep(args, info, dev, ceiling, rows, lines, name, title, method):
    """The end of a device-only sweep: its rows merged into latest.json, its table written to
    <out>/<name>_<GPU>.md under `title` with the run's read ceiling and timing `method`, exit 1 on a
    wrong result."""
    data = merge_results(args.out, info, rows, {f"read_gbps_{dev}": round(ceiling, 1)}, partial=True)
    text = [f"# {title}: {info['name']}, {data['date']}", "",
            f"Read ceiling **{ceiling:.0f} GB/s** (1 GiB, 16-byte loads, same run).  {method}",
            "", "| case | impl | us | % of read |", "|---|---|---:|---:|"] + lines
    with open(os.path.join(args.out, f"{name}_{dev}.md"), "w") as fh:
        fh.write("\n".join(text) + "\n")
    if any(r.get("correct") is False for r in rows):
        print("WRONG results")
        sys.exit(1)


def labels_sweep(args):
    """bincount of integer labels on the device (int64, NumPy's default, and int32 beside it): values
    0 .. 999, 0 .. 4,095, 0 .. 65,535 and identifiers 10^6 .. 10^6 + 999, 10^6 to 64M of them.  Below 4,096
    the first count (ops->bincount_first: the counts of 0 .. 4,095 and the extremes, one read) is the
    result; past it a count follows.  int64 histograms of unit-width bins (bins given) take the integer
    kernel too (the generic shared kernel before: its row with GPUSYNC_HIST_SMALL=0).  int64 bincounts
    took a min/max read and a count before (session 41); the
    '(two reads)' row runs that count with GPUSYNC_HIST_SMALL=0 (the shared strategy and a min/max read):
    for int64 the old path's traffic, for int32 what its first count replaced in session 35.  Writes <out>/bincount_labels_<GPU>.md and rows in latest.json."""
    cp, torch, info, timer, dev, _, ceiling = _gpu_session(peers=False)
    rs = cp.random.RandomState(41)
    rows, lines = [], []

    def one(case, impl, fn, nbytes, ref=None, graph=False):
        return _measure_row(cp, timer, rows, lines, ceiling, case, "bincount", impl, fn, nbytes, ref, graph,
                            reps=7, inner=3, strict=True)

    sizes = (1 << 20, 1 << 22) if args.quick else (10**6, 10**7, 1 << 26)
    for dt, name in ((cp.int64, "i64"), (cp.int32, "i32")):
        for lo, hi, tag in ((0, 1000, "1000"), (0, 4096, "4096"), (0, 65536, "65536"),
                            (10**6, 10**6 + 1000, "ids1000")):
            for n in sizes:
                x = rs.randint(lo, hi, n, dtype=dt)
                ref = cp.bincount(x).get()
                size = f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n:.0e}".replace("+0", "")
                case = f"{name}-bincount-{tag}-{size}"
                one(case, "gpusync:bincount", lambda: gs.bincount(x), x.nbytes, ref)
                if hi <= 4096:
                    with env(GPUSYNC_HIST_SMALL="0"):
                        one(case, "gpusync:bincount (two reads)", lambda: gs.bincount(x), x.nbytes, ref)
                if hi - lo <= 4096:  # (bins given: the counting kernel alone; int64 on the generic kernel before)
                    h_ref = cp.bincount(x, minlength=hi).get()[lo:hi]
                    one(case, "gpusync:histogram (bins given, graph)",
                        lambda: gs.histogram(x, bins=hi - lo, range=(lo, hi)), x.nbytes, h_ref, graph=True)
                    if name == "i64":
                        with env(GPUSYNC_HIST_SMALL="0"):
                            one(case, "gpusync:histogram (bins given, graph, generic shared kernel)",
                                lambda: gs.histogram(x, bins=hi - lo, range=(lo, hi)), x.nbytes, h_ref, graph=True)
                one(case, "cupy:bincount", lambda: cp.bincount(x), x.nbytes)
                if torch is not None:
                    t = torch.as_tensor(x, device="cuda")
                    one(case, "torch:bincount", lambda: torch.bincount(t), x.nbytes)
                    t = None
                x = ref = None
        cp.get_default_memory_pool().free_all_blocks()
    _finish_sweep(args, info, dev, ceiling, rows, lines, "bincount_labels", "bincount of integer labels on the device",
                  "gpusync '(graph)': CUDA-graph replay of 3 calls (device time), median of 7; other rows: CUDA events "
                  "around 3 back-to-back calls (host work and bincount's one wait for NumPy's length included).  % of "
                  "read: the input's bytes once.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="smaller inputs (smoke test)")
    ap.add_argument("--no-numpy-large", action="store_true", help="skip NumPy on the 1 GiB inputs")
    ap.add_argument("--replot", action="store_true", help="only redraw the plots from <out>/latest.json")
    ap.add_argument("--dist", action="store_true",
                    help="only the 8-bit distributions (uniform, text, same, zipf, runs, alternating) at 32 MiB, "
                         "256 MiB, 1 GiB against CUB; writes <out>/histogram_dist_<GPU>.md")
    ap.add_argument("--sweeps", action="store_true",
                    help="with --dist: also the 8-bit kernel shapes, a size sweep and packbits (issue 14)")
    ap.add_argument("--float", action="store_true", help="only float32/float64 on equal-width bins (sizes, bin "
                    "counts, distributions, kernel shapes) against CUB; writes <out>/histogram_float_<GPU>.md")
    ap.add_argument("--binstat", action="store_true", help="only the binned_statistic rows; writes "
                    "<out>/binstat_<GPU>.md")
    ap.add_argument("--many-bins", action="store_true", help="only 65,536+ bins and 16-bit bincounts against "
                    "CUB, torch and CuPy; writes <out>/histogram_manybins_<GPU>.md")
    ap.add_argument("--bits", action="store_true", help="only packbits / count_nonzero; writes <out>/bits_<GPU>.md")
    ap.add_argument("--labels", action="store_true", help="only bincounts of int64 / int32 labels against torch and "
                    "CuPy; writes <out>/bincount_labels_<GPU>.md")
    args = ap.parse_args()
    if args.labels:
        return labels_sweep(args)
    if args.bits:
        return bits_only(args)
    if args.many_bins:
        return many_bins_sweep(args)
    if args.dist:
        return dist_sweep(args)
    if args.float:
        return float_sweep(args)
    if args.binstat:
        os.makedirs(args.out, exist_ok=True)
        return binstat_only(args)
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        with open(os.path.join(args.out, "latest.json")) as f:
            data = json.load(f)
        rows = [r for r in data["rows"] if r["op"] in ("histogram", "bincount")]
        plot(args.out, rows, data["sweeps"]["histogram_blocks_u8_64MiB"], data["ceilings"]["read_gbps"])
        return

    import cupy as cp

    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    try:
        from tqdm import tqdm
    except Exception:  # pragma: no cover
        def tqdm(x, **k):
            return x

    info, timer = cuda_start(cp)
    big = (GIB // 16) if args.quick else GIB
    f32n = (1 << 24) if args.quick else (1 << 28)
    cub = build_peers()
    strategies = ["auto", "global", "shared", "warp"] + (["cluster"] if info["compute_capability"][0] >= 9 else [])

    rows, checks = [], []
    uni = cp.random.randint(0, 256, big, dtype=cp.uint8)
    ceiling = read_ceiling(cp, timer, uni)
    print(f"device {info['name']}  read ceiling {ceiling:.0f} GB/s", flush=True)

    cases = []
    cases.append(("u8-256-uniform-1GiB", "histogram", lambda: uni, 256, (0, 256)))
    cases.append(("u8-256-text-1GiB", "histogram", lambda: make_text(cp, big), 256, (0, 256)))
    cases.append(("u8-256-same-1GiB", "histogram", lambda: cp.full(big, ord("e"), cp.uint8), 256, (0, 256)))
    cases.append(("f32-100-range-256M", "histogram", lambda: cp.random.random(f32n, dtype=cp.float32), 100, (0, 1)))
    cases.append(("i32-bincount-65536-256M", "bincount", lambda: cp.random.randint(0, 65536, f32n, dtype=cp.int32),
                  65536, (0, 65536)))
    cases.append(("u8-128-text-5.7M", "histogram", lambda: cp.asarray(seed_text_host()), 128, (0, 128)))

    def add(case, op, impl, ms, nbytes, ok=None):
        row = {"op": op, "case": case, "impl": impl, "ms": round(ms, 5), "gbps": round(nbytes / ms / 1e6, 1)}
        if ok is not None:
            row["correct"] = bool(ok)
        rows.append(row)
        print(f"  {case:24s} {impl:26s} {ms:9.4f} ms {row['gbps']:8.0f} GB/s"
              + ("" if ok is None else f"  correct={ok}"), flush=True)

    def peer(case, op, impl, nbytes, fn, reps, inner):
        try:
            add(case, op, impl, timer.gpu(fn, reps, inner), nbytes)
        except Exception as e:  # a peer that cannot run this case is reported, not fatal
            print(f"  {case} {impl}: {type(e).__name__}: {e}")

    for case, op, make, bins, rng in tqdm(cases, desc="cases"):
        x = make()
        cp.cuda.Device().synchronize()
        nbytes = x.nbytes
        small = x.size < (1 << 24)
        reps = 20 if small else 7
        # back-to-back calls: the host prepares call i+1 while the GPU runs
        # call i, so the figure is the device's throughput, not Python's
        inner = 20 if small else 5
        host = cp.asnumpy(x)
        ref = np.bincount(host, minlength=bins) if op == "bincount" else \
            np.histogram(host, bins=bins, range=rng)[0] if host.dtype != np.uint8 else \
            np.bincount(host, minlength=256)[: rng[1]].copy()
        if op == "histogram" and host.dtype == np.uint8 and rng[1] < 256:
            ref[-1] += np.count_nonzero(host == rng[1])  # NumPy's closed last bin

        for s in strategies:
            if op == "bincount":
                fn = lambda s=s: gs.bincount(x, minlength=bins, strategy=s)  # noqa: E731
            else:
                fn = lambda s=s: gs.histogram(x, bins=bins, range=rng, strategy=s)  # noqa: E731
            try:
                got = fn()
                got = got if op == "bincount" else got[0]
                ok = np.array_equal(cp.asnumpy(got), ref)
                slow = s == "global" and not small
                ms = timer.gpu(fn, reps=3 if slow else reps, inner=1 if slow else inner)
                add(case, op, f"gpusync:{s}", ms, nbytes, ok)
                checks.append((case, s, ok))
                if small and op == "histogram":
                    add(case, op, f"gpusync:{s}(graph)", timer.graph(fn, reps=reps), nbytes, ok)
            except (ValueError, gs.GpusyncError) as e:  # e.g. too many bins for this strategy
                print(f"  {case} gpusync:{s}: {type(e).__name__}: {e}")

        # peers
        if op == "histogram":
            peer(case, op, "cupy:histogram", nbytes, lambda: cp.histogram(x, bins=bins, range=rng), reps, inner)
        if x.dtype != cp.float32:
            peer(case, op, "cupy:bincount", nbytes, lambda: cp.bincount(x, minlength=bins), reps, inner)
        if torch is not None:
            t = torch.as_tensor(x, device="cuda")
            if x.dtype != cp.float32:
                peer(case, op, "torch:bincount", nbytes, lambda: torch.bincount(t, minlength=bins), reps, inner)
            tf = t if t.dtype.is_floating_point else t.float() if x.size < (1 << 29) else None
            if tf is not None:  # histc takes floats only: integer cases are timed on a float copy
                peer(case, op, "torch:histc", nbytes * tf.element_size() // x.itemsize,
                     lambda: torch.histc(tf, bins=bins, min=rng[0], max=rng[1]), reps, inner)
        hout = np.zeros(bins, np.int64)
        fn = {"uint8": cub.cub_hist_u8, "float32": cub.cub_hist_f32, "int32": cub.cub_hist_i32}[x.dtype.name]
        ms = fn(x.data.ptr, x.size, bins, rng[0], rng[1], hout.ctypes.data, reps)
        if ms > 0:
            add(case, op, "cub", ms, nbytes)
        if not (args.no_numpy_large and x.size >= (1 << 28)):
            npfn = (lambda: np.bincount(host, minlength=bins)) if op == "bincount" else \
                (lambda: np.histogram(host, bins=bins, range=rng))
            add(case, op, "numpy", Timer.host(npfn, reps=3 if small else 1), nbytes)
        x = host = None  # free the GPU memory before the next case
        cp.get_default_memory_pool().free_all_blocks()

    # seed 001's block-count sweep: shared vs global atomics on 64 MiB of uniform bytes
    sweep = []
    xs = uni[: 64 << 20]
    for blocks in [1, 2, 4, 8, 16, 32, 66, 132, 264, 528, 1056, 2112]:
        os.environ["GPUSYNC_HIST_GRID"] = str(blocks)
        for s in ("global", "shared"):
            ms = timer.gpu(lambda s=s: gs.histogram(xs, bins=256, range=(0, 256), strategy=s), reps=3)
            sweep.append({"blocks": blocks, "strategy": s, "ms": round(ms, 4)})
    del os.environ["GPUSYNC_HIST_GRID"]

    write_results(args.out, info, ceiling, rows, sweep)
    bad = [c for c in checks if not c[2]]
    if bad:
        print("MISMATCH against NumPy:", bad)
        sys.exit(1)


def write_results(outdir, info, ceiling, rows, sweep):
    data = merge_results(outdir, info, rows, {"read_gbps": round(ceiling, 1)}, {"histogram_blocks_u8_64MiB": sweep})
    text = table(f"Histogram benchmark: {info['name']}, {data['date']}", ceiling, rows)
    with open(os.path.join(outdir, "histogram.md"), "w") as f:
        f.write(text)
    print(text)
    try:
        plot(outdir, rows, sweep, ceiling)
    except Exception as e:  # plots are a convenience; the numbers are in the JSON
        print("plot failed:", e)


def plot(outdir, rows, sweep, ceiling):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    speed_plot(os.path.join(outdir, "histogram_speed.png"), rows,
               "Histogram on one GPU: speed relative to gpusync:auto (device time; log scale)")

    fig, ax = plt.subplots(figsize=(8, 5))
    for s in ("global", "shared"):
        pts = [(p["blocks"], p["ms"]) for p in sweep if p["strategy"] == s]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"gpusync:{s}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("blocks")
    ax.set_ylabel("ms (64 MiB of uniform bytes, 256 bins)")
    ax.set_title("Block-count sweep (seed 001): global atomics vs shared-memory privatization")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "histogram_blocks.png"), dpi=110)


if __name__ == "__main__":
    main()
