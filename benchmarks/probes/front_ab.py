"""A/B of per-call wall time of the C front (session 37): python3 -m benchmarks.probes.front_ab <label> -> one JSON
line {"label", "us": {case: us}}.  Run the old and the new build alternately in fresh processes (host: NumPy
inputs; device: CuPy, with and without a sync after each call; CuPy itself as a reference)."""
import json, sys, time
import numpy as np
import gpusync as gs

def per_call(fn, reps, sync=None, rounds=7):
    best = 1e9
    for _ in range(rounds):
        if sync: sync()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        if sync: sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6

rng = np.random.default_rng(0)
res = {}
f32k = rng.standard_normal(1000).astype(np.float32); f64k = rng.standard_normal(1000)
u8 = rng.integers(0, 256, 100, dtype=np.uint8); i64 = rng.integers(0, 1000, 100); i32k = rng.integers(0, 9, 1000).astype(np.int32)
host = {"sum-f32-1000": lambda: gs.sum(f32k), "dot-f64-1000": lambda: gs.dot(f64k, f64k),
        "count_nonzero-u8-100": lambda: gs.count_nonzero(u8), "bincount-i64-100": lambda: gs.bincount(i64),
        "histogram-u8-256-100": lambda: gs.histogram(u8, bins=256, range=(0, 256)),
        "cumsum-i32-1000": lambda: gs.cumsum(i32k), "packbits-u8-100": lambda: gs.packbits(u8)}
for k, f in host.items():
    f(); f()
    res["host:" + k] = per_call(f, 3000)
try:
    import cupy as cp
    d32 = cp.asarray(rng.standard_normal(10_000).astype(np.float32)); d64 = cp.asarray(rng.standard_normal(10_000))
    di64 = cp.asarray(rng.integers(0, 1000, 316)); du8 = cp.asarray(rng.integers(0, 2, 10_000, dtype=np.uint8))
    di32 = cp.asarray(rng.integers(0, 1000, 10_000).astype(np.int32))
    sync = cp.cuda.Device().synchronize
    dev = {"sum-f32-10k": lambda: gs.sum(d32), "sum-i64-316": lambda: gs.sum(di64), "dot-f64-10k": lambda: gs.dot(d64, d64),
           "count_nonzero-u8-10k": lambda: gs.count_nonzero(du8), "cumsum-f64-10k": lambda: gs.cumsum(d64),
           "packbits-u8-10k": lambda: gs.packbits(du8), "bincount-i32-10k": lambda: gs.bincount(di32)}
    for k, f in dev.items():
        f(); f(); sync()
        res["device-nosync:" + k] = per_call(f, 2000, sync)
        res["device-sync:" + k] = per_call(lambda: (f(), sync()), 1000)
    ref = {"cupy:sum-f32-10k": lambda: d32.sum(), "cupy:sum-i64-316": lambda: di64.sum(), "cupy:dot-f64-10k": lambda: cp.dot(d64, d64)}
    for k, f in ref.items():
        f(); sync()
        res["device-sync:" + k] = per_call(lambda: (f(), sync()), 1000)
except ImportError:
    pass
print(json.dumps({"label": sys.argv[1], "us": {k: round(v, 3) for k, v in res.items()}}))
