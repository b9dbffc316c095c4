"""Reduction benchmark: gs.sum / gs.dot with every strategy and
gs.binned_statistic, side by side with NumPy, CuPy, PyTorch, CUB
(DeviceReduce::Sum), cuBLAS (Sdot/Ddot) and SciPy, in one run, against the
read ceiling measured in the same run.

    python benchmarks/reduce.py [--out benchmarks/results] [--quick] [--sweep [--sweep-max N]]

--sweep times gs.sum / gs.dot (strategy auto, and deterministic=True) against
CUB DeviceReduce::Sum and cuBLAS {S,D}dot from 10^4 to 2*10^9 elements in
half-decades, every one as a CUDA-graph replay (device time, no host launch
gaps; the peers likewise), and writes rows `sweep-<op>-device-<n>` to
<out>/latest.json and <out>/reduce_sweep_<GPU>.md.  --quick stops at 10^8.

Writes <out>/latest.json (ops sum, dot, binned_statistic; other rows kept),
<out>/reduce.md and <out>/reduce_speed.png.  Each float result's relative
error against a float64 reference is recorded too (column "rel err").
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import (GIB, Timer, build_peers, cuda_start, fresh_read_ceiling, half_decades,  # noqa: E402
                               merge_results, short_device, speed_plot, table)

STRATS = ["auto", "atomic", "mutex", "two-pass", "threadfence", "grid", "warp"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="smaller inputs (smoke test)")
    ap.add_argument("--sweep", action="store_true", help="size sweep of sum/dot against CUB/cuBLAS only")
    ap.add_argument("--sweep-max", type=float, default=None, help="largest sweep size (default 2e9, 1e8 with --quick)")
    ap.add_argument("--sweep-ops", default="sum-f32,sum-f64,sum-i32,sum-i64,dot-f32,dot-f64")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.sweep:
        return sweep(args)

    import ctypes

    import cupy as cp

    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    try:
        import scipy.stats as ss
    except Exception:  # pragma: no cover
        ss = None

    info, timer = cuda_start(cp)
    peers = build_peers()
    scale = 16 if args.quick else 1
    n256, n128, n64 = (1 << 28) // scale, (1 << 27) // scale, (1 << 26) // scale
    rows = []

    ceiling = fresh_read_ceiling(cp, timer, info, GIB // scale)

    def add(op, case, impl, ms, nbytes, err=None, ok=None):
        row = {"op": op, "case": case, "impl": impl, "ms": round(ms, 5), "gbps": round(nbytes / ms / 1e6, 1)}
        if err is not None:
            row["rel_err"] = float(f"{err:.3g}")
        if ok is not None:
            row["correct"] = bool(ok)
        rows.append(row)
        print(f"  {case:22s} {impl:30s} {ms:9.4f} ms {row['gbps']:8.0f} GB/s"
              + ("" if err is None else f"  rel err {err:.2e}") + ("" if ok is None else f"  ok={ok}"), flush=True)

    def timed(op, case, impl, fn, nbytes, ref=None, exact=False, reps=7, inner=5):
        try:
            val = fn()
            val = float(val.item() if hasattr(val, "item") else val)
            err = None if ref is None or exact else abs(val - ref) / abs(ref)
            ok = None if ref is None or not impl.startswith("gpusync") else (val == ref if exact else err < 1e-5)
            add(op, case, impl, timer.gpu(fn, reps=reps, inner=inner), nbytes, err, ok)
        except Exception as e:  # a peer that cannot run a case is reported, not fatal
            print(f"  {case} {impl}: {type(e).__name__}: {e}", flush=True)

    def host(op, case, impl, fn, nbytes, ref=None, exact=False):
        val = float(fn())
        err = None if ref is None or exact else abs(val - ref) / abs(ref)
        add(op, case, impl, Timer.host(fn, reps=1), nbytes, err)

    # --- sum and dot --------------------------------------------------------
    rs = cp.random.RandomState(1)
    cases = [
        ("sum", "f32-sum-256M", lambda: (rs.standard_normal(n256, dtype=cp.float32) + 1,)),
        ("dot", "f32-dot-256M", lambda: (rs.standard_normal(n256, dtype=cp.float32),
                                         rs.standard_normal(n256, dtype=cp.float32))),
        ("dot", "f64-dot-128M", lambda: (rs.standard_normal(n128), rs.standard_normal(n128))),
        ("sum", "i32-sum-256M", lambda: (rs.randint(-1000, 1000, n256, dtype=cp.int32),)),
    ]
    for op, case, make in cases:
        arrs = make()
        cp.cuda.Device().synchronize()
        nbytes = sum(a.nbytes for a in arrs)
        isint = arrs[0].dtype.kind == "i"
        hosts = [cp.asnumpy(a) for a in arrs]
        if op == "sum":
            ref = float(hosts[0].sum(dtype=np.int64)) if isint else float(hosts[0].astype(np.float64).sum())
        else:
            ref = float(np.dot(hosts[0].astype(np.float64), hosts[1].astype(np.float64)))
        f = gs.sum if op == "sum" else gs.dot
        for s in STRATS:
            timed(op, case, f"gpusync:{s}", lambda s=s: f(*arrs, strategy=s), nbytes, ref, isint)
        timed(op, case, "gpusync:auto(deterministic)", lambda: f(*arrs, deterministic=True), nbytes, ref, isint)
        timed(op, case, f"cupy:{op}", (lambda: cp.sum(arrs[0])) if op == "sum" else (lambda: cp.dot(*arrs)),
              nbytes, ref, isint)
        if torch is not None:
            ts = [torch.as_tensor(a, device="cuda") for a in arrs]
            timed(op, case, f"torch:{op}", (lambda: torch.sum(ts[0])) if op == "sum" else (lambda: torch.dot(*ts)),
                  nbytes, ref, isint)
        res = np.zeros(1, arrs[0].dtype)
        peer = {"f32-sum-256M": ("cub:DeviceReduce::Sum", peers.cub_sum_f32),
                "i32-sum-256M": ("cub:DeviceReduce::Sum", peers.cub_sum_i32),
                "f32-dot-256M": ("cublas:Sdot", peers.cublas_sdot),
                "f64-dot-128M": ("cublas:Ddot", peers.cublas_ddot)}[case]
        ms = peer[1](arrs[0].data.ptr, arrs[1].data.ptr if len(arrs) > 1 else None, arrs[0].size,
                     res.ctypes.data_as(ctypes.c_void_p), 7)
        if ms > 0:
            val = float(res[0])
            add(op, case, peer[0], ms, nbytes, None if isint else abs(val - ref) / abs(ref),
                (val == ref) if isint else None)
        host(op, case, f"numpy:{op}", (lambda: np.sum(hosts[0])) if op == "sum" else (lambda: np.dot(*hosts)),
             nbytes, ref, isint)
        arrs = hosts = None  # free the GPU memory before the next case
        cp.get_default_memory_pool().free_all_blocks()

    # --- binned_statistic ---------------------------------------------------
    x = rs.standard_normal(n64)
    v = rs.standard_normal(n64) * 3 + 1
    xh, vh = cp.asnumpy(x), cp.asnumpy(v)
    nbytes = x.nbytes + v.nbytes  # input bytes (binnumber writes come on top)
    for stat in ("mean", "std"):
        case = f"binstat-{stat}-100-{n64 >> 20}M"
        ref = ss.binned_statistic(xh, vh, stat, bins=100) if ss is not None else None
        # ("global", one global lock per value, is left out here: 64 M lock
        # hand-overs on 100 words take seconds -- the point of privatizing)
        for s in ("auto", "shared"):
            fn = lambda s=s: gs.binned_statistic(x, v, stat, bins=100, strategy=s)  # noqa: E731
            got = fn()
            ok = ref is None or (np.allclose(got.statistic.get(), ref.statistic, rtol=1e-9, equal_nan=True)
                                 and np.array_equal(got.binnumber.get(), ref.binnumber))
            add("binned_statistic", case, f"gpusync:{s}", timer.gpu(fn, reps=5), nbytes, ok=ok)

        def cupy_binstat():  # what a CuPy user writes: digitize + bincount with weights
            lo, hi = float(x.min()), float(x.max())
            e = cp.linspace(lo, hi, 101)
            b = cp.searchsorted(e, x, side="right")
            b[x == hi] = 100
            cnt = cp.bincount(b, minlength=102)
            s1 = cp.bincount(b, weights=v, minlength=102)
            mean = s1 / cnt
            if stat == "mean":
                return mean[1:101]
            d = v - mean[b]
            return cp.sqrt(cp.bincount(b, weights=d * d, minlength=102) / cnt)[1:101]

        add("binned_statistic", case, "cupy:digitize+bincount", timer.gpu(cupy_binstat, reps=5), nbytes)
        if ss is not None:
            add("binned_statistic", case, "scipy:binned_statistic",
                Timer.host(lambda: ss.binned_statistic(xh, vh, stat, bins=100), reps=1), nbytes)
    x = v = None

    data = merge_results(args.out, info, rows, {"read_gbps": round(ceiling, 1)})
    text = table(f"Reduction benchmark: {info['name']}, {data['date']}", ceiling, rows)
    text += "\nrel err: |result - float64 reference| / |reference| (float cases).\n"
    for r in rows:
        if "rel_err" in r:
            text = text.replace(f"| {r['case']} | {r['impl']} | {r['ms']:.4f} |",
                                f"| {r['case']} | {r['impl']} (err {r['rel_err']:.1e}) | {r['ms']:.4f} |", 1)
    with open(os.path.join(args.out, "reduce.md"), "w") as f:
        f.write(text)
    print(text)
    try:
        speed_plot(os.path.join(args.out, "reduce_speed.png"), rows,
                   "sum, dot, binned_statistic: speed relative to gpusync:auto (log scale)")
    except Exception as e:
        print("plot failed:", e)
    bad = [r for r in rows if r.get("correct") is False]
    if bad:
        print("WRONG results:", bad)
        sys.exit(1)


SWEEP_PEERS = {"sum-f32": "cub_sum_f32", "sum-f64": "cub_sum_f64", "sum-i32": "cub_sum_i32",
               "sum-i64": "cub_sum_i64", "dot-f32": "cublas_sdot", "dot-f64": "cublas_ddot"}


def sweep(args):
    """sum / dot device time against CUB / cuBLAS at every half-decade size."""
    import ctypes

    import cupy as cp

    info, timer = cuda_start(cp)
    dev = short_device(info["name"])
    peers = build_peers()
    ceiling = fresh_read_ceiling(cp, timer, info)
    hi = args.sweep_max or (1e8 if args.quick else 2e9)
    sizes = half_decades(10**4, int(hi))
    free = cp.cuda.Device().mem_info[1]
    rows, lines = [], []
    rs = cp.random.RandomState(7)
    for op in args.sweep_ops.split(","):
        kind, dt = op.split("-")
        dtype = {"f32": cp.float32, "f64": cp.float64, "i32": cp.int32, "i64": cp.int64}[dt]
        narr = 2 if kind == "dot" else 1
        f = gs.sum if kind == "sum" else gs.dot
        peer = getattr(peers, SWEEP_PEERS[op])
        for n in sizes:
            if narr * n * np.dtype(dtype).itemsize > 0.4 * free:
                print(f"  {op} n={n}: skipped (memory)", flush=True)
                continue
            if dt[0] == "f":
                arrs = [rs.standard_normal(n, dtype=dtype) + (1 if kind == "sum" else 0) for _ in range(narr)]
                ref = float((arrs[0].astype(cp.float64) * (arrs[1] if narr == 2 else 1)).sum())
            else:
                arrs = [rs.randint(-100, 100, n, dtype=dtype) for _ in range(narr)]
                ref = int((arrs[0].astype(cp.int64) * (arrs[1].astype(cp.int64) if narr == 2 else 1)).sum())
            nbytes = sum(a.nbytes for a in arrs)
            inner = int(max(1, min(50, 2e8 / nbytes)))
            reps = 15 if nbytes < 1e9 else 5
            case = f"sweep-{op}-device-{n}"
            got = {}
            for impl, kw in (("gpusync:auto", {}), ("gpusync:auto(deterministic)", {"deterministic": True})):
                fn = lambda kw=kw: f(*arrs, **kw)  # noqa: E731
                val = fn()
                v = float(val.item() if hasattr(val, "item") else val)
                ok = (v == ref) if dt[0] == "i" else abs(v - ref) <= 1e-6 * abs(ref) + 1e-6
                if kw and dt[0] == "f":  # deterministic: the same bits every call
                    ok = ok and all(float(fn().item() if hasattr(val, "item") else fn()) == v for _ in range(3))
                ms = timer.graph(fn, reps=reps, inner=inner)
                got[impl] = ms
                rows.append({"op": "sweep", "case": case, "impl": impl + "(graph)", "ms": round(ms, 5),
                             "gbps": round(nbytes / ms / 1e6, 1), "correct": bool(ok), "n": n, "dtype": dt})
            res = np.zeros(1, np.dtype(dtype))
            peers.set_graph_inner(inner)
            pms = peer(arrs[0].data.ptr, arrs[1].data.ptr if narr == 2 else None, n,
                       res.ctypes.data_as(ctypes.c_void_p), reps)
            peers.set_graph_inner(0)
            pname = ("cub:DeviceReduce::Sum" if kind == "sum" else "cublas:" + SWEEP_PEERS[op][7:].capitalize())
            if pms > 0:
                rows.append({"op": "sweep", "case": case, "impl": pname + "(graph)", "ms": round(pms, 5),
                             "gbps": round(nbytes / pms / 1e6, 1), "n": n, "dtype": dt})
            a_ms, d_ms = got["gpusync:auto"], got["gpusync:auto(deterministic)"]
            line = (f"| {op} | {n:,} | {a_ms * 1e3:.1f} | {d_ms * 1e3:.1f} | {pms * 1e3:.1f} | "
                    f"{pms / a_ms:.2f}x | {pms / d_ms:.2f}x | {100 * nbytes / a_ms / 1e6 / ceiling:.0f}% | "
                    f"{'ok' if all(r.get('correct', True) for r in rows[-3:]) else '**WRONG**'} |")
            lines.append(line)
            print(line, flush=True)
            arrs = None
            cp.get_default_memory_pool().free_all_blocks()
    data = merge_results(args.out, info, rows, {f"read_gbps_{dev}": round(ceiling, 1)}, partial=True)
    text = [f"# sum / dot size sweep: {info['name']}, {data['date']}", "",
            f"Device time per call, CUDA-graph replay (gpusync and the peers alike); read ceiling "
            f"**{ceiling:.0f} GB/s** (1 GiB, 16-byte loads, same run).  Peer: CUB DeviceReduce::Sum "
            "(sum) or cuBLAS {S,D}dot (dot).  Ratios: peer time / gpusync time (>= 1: gpusync is as fast or "
            "faster).", "",
            "| op | n | auto us | deterministic us | peer us | auto vs peer | det vs peer | auto % of read | check |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"] + lines
    with open(os.path.join(args.out, f"reduce_sweep_{dev}.md"), "w") as fh:
        fh.write("\n".join(text) + "\n")
    bad = [r for r in rows if r.get("correct") is False]
    if bad:
        print("WRONG results:", bad)
        sys.exit(1)


if __name__ == "__main__":
    main()
